"""The ``msdebug`` comm behind JupyterLab's status bar, in a real kernel.

The test plays the front end: it opens a comm from the client side (a ``comm_open`` on
the shell channel, as JupyterLab's ``kernel.createComm`` does), sends commands on it, and
reads the ``comm_msg`` messages the kernel publishes on iopub. Every message either side
sends is checked against the protocol's one description, ``msdebug/views/status.schema.json``;
the messages jest parses (``extension/test/messages.json``) are the ones Python writes here.

``MSDEBUG_UPDATE_FIXTURES=1`` rewrites ``extension/test/messages.json`` after a change to
the messages (jest then checks ``extension/src/protocol.ts`` against the new ones).
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import jsonschema  # comes with nbformat (a test dependency); msdebug itself never validates
import pytest

from msdebug.ipython.comm import MIN_INTERVAL_S
from msdebug.views.status import PROTOCOL, reply_message, schema, state_message, unloaded_state

from helpers import Kernel

pytestmark = pytest.mark.kernel

FIXTURES = Path(__file__).resolve().parent.parent / "extension" / "test" / "messages.json"
_VALIDATOR = jsonschema.Draft202012Validator(schema())


def valid(message: dict) -> dict:
    """``message`` if the protocol's schema accepts it; else the test fails with every reason."""
    problems = sorted(
        f"{'/'.join(map(str, e.absolute_path)) or '(message)'}: {e.message}" for e in _VALIDATOR.iter_errors(message)
    )
    assert not problems, f"{message} breaks status.schema.json: {problems}"
    return message


class Frontend:
    """One kernel and the comm a front end opened to it."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self.comm_id = ""

    def _messages(self, msg_id: str, timeout: float):
        """The iopub messages of one request as they come, until the kernel is idle again."""
        while True:
            msg = self.kernel.client.get_iopub_msg(timeout=timeout)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                return
            yield msg

    def _collect(self, msg_id: str, timeout: float = 300) -> list[dict]:
        """Every iopub message of one request, until the kernel is idle again."""
        return list(self._messages(msg_id, timeout))

    def _request(self, msg_type: str, content: dict) -> list[dict]:
        client = self.kernel.client
        msg = client.session.msg(msg_type, content)
        client.shell_channel.send(msg)
        return self._collect(msg["header"]["msg_id"])

    def open(self) -> list[dict]:
        """Open a comm to the ``msdebug`` target; returns what the kernel sent on it."""
        self.comm_id = uuid.uuid4().hex
        sent = self._request("comm_open", {"comm_id": self.comm_id, "target_name": "msdebug", "data": {"protocol": 1}})
        return self.mine(sent)

    def comm_info(self) -> dict:
        """The kernel's ``comm_info`` for the target, as the extension asks for it."""
        return self.kernel.reply(self.kernel.client.comm_info("msdebug"), 60)["comms"]

    def command(self, request_id: int, action: str, **fields) -> list[dict]:
        data = {"protocol": PROTOCOL, "kind": "command", "id": request_id, "action": action, **fields}
        return self.mine(self._request("comm_msg", {"comm_id": self.comm_id, "data": data}))

    def run(self, code: str) -> tuple[list[dict], list[dict]]:
        """Run a cell; returns the messages on this comm and all iopub messages of the cell."""
        ((sent, messages),) = self.run_queued(code)
        return sent, messages

    def run_queued(self, *cells: str) -> list[tuple[list[dict], list[dict]]]:
        """Send every cell at once (the kernel runs each straight after the one before, as
        Run All does); returns what :meth:`run` returns, for each cell."""
        client = self.kernel.client
        ids = [client.execute(code) for code in cells]
        results = [self._collect(msg_id) for msg_id in ids]
        for msg_id, messages in zip(ids, results, strict=True):
            assert self.kernel.reply(msg_id, 300)["status"] == "ok", messages
        return [(self.mine(messages), messages) for messages in results]

    def next_state(self, msg_id: str, timeout: float = 120) -> dict | None:
        """The next state sent on this comm while the request ``msg_id`` runs; None at its end
        (queue.Empty when the kernel sends nothing for ``timeout`` seconds)."""
        for msg in self._messages(msg_id, timeout):
            found = states(self.mine([msg]))
            if found:
                return found[0]
        return None

    def mine(self, messages: list[dict]) -> list[dict]:
        """The data of every comm_msg on this front end's comm, each checked against the schema."""
        return [
            valid(m["content"]["data"])
            for m in messages
            if m["msg_type"] == "comm_msg" and m["content"]["comm_id"] == self.comm_id
        ]


def states(sent: list[dict]) -> list[dict]:
    return [m["state"] for m in sent if m["kind"] == "state"]


@pytest.fixture(scope="module")
def frontend():
    """One kernel for the module: msdebug loaded, MindSpore imported, a front end connected."""
    kernel = Kernel(warm=False)  # its first state says MindSpore is not imported yet
    front = Frontend(kernel)
    try:
        yield front
    finally:
        kernel.close()


def test_loading_lists_a_sign_opens_nothing_and_connecting_sends_the_state(frontend):
    assert frontend.comm_info() == {}
    _, messages = frontend.run("%load_ext msdebug")
    # The kernel opens no comm (a JupyterLab without the extension would log an error for it);
    # comm_info lists a sign under the target, which is how the extension finds msdebug loaded.
    assert [m["msg_type"] for m in messages if m["msg_type"].startswith("comm")] == []
    assert list(frontend.comm_info().values()) == [{"target_name": "msdebug"}]

    sent = frontend.open()
    assert len(sent) == 1 and sent[0]["protocol"] == PROTOCOL and sent[0]["kind"] == "state"
    # MindSpore is not imported yet: the state says so without importing it.
    assert sent[0]["state"]["mindspore"] is None
    assert sent[0]["state"]["installed"]
    # Loading and connecting stay cheap: neither the settings nor the key catalog is imported.
    _, messages = frontend.run("import sys; print(sorted({'msdebug.settings', 'msdebug.keys'} & set(sys.modules)))")
    assert [m["content"]["text"] for m in messages if m["msg_type"] == "stream"] == ["[]\n"]

    sent, _ = frontend.run("import mindspore")
    (state,) = states(sent)
    assert state["mindspore"] == state["installed"]
    assert (state["mode"], state["device"], state["sync"], state["print_capture"]) == (
        "PYNATIVE",
        "CPU:0",
        False,
        False,
    )
    assert state["summary"].startswith(f"MindSpore {state['mindspore']} · PYNATIVE · CPU:0 · sync off")
    assert state["first_cell"] == "import mindspore; mindspore.set_device('CPU', 0)"


def test_nothing_is_sent_when_nothing_changed(frontend):
    for code in ("x = 1", "%mscontext mode=pynative", "import mindspore; mindspore.set_context(mode=1)", ""):
        sent, _ = frontend.run(code)
        assert sent == [], code


@pytest.mark.parametrize(
    ("code", "mode"),
    [
        ("%mscontext mode=graph", "GRAPH"),
        ("import msdebug; msdebug.set(mode='pynative')", "PYNATIVE"),
        ("mindspore.set_context(mode=mindspore.GRAPH_MODE)", "GRAPH"),  # behind msdebug's back
        ("p = msdebug.panel(); p.controls['mode'].value = 'pynative'; p.close()", "PYNATIVE"),
    ],
    ids=["magic", "msdebug.set", "raw set_context", "panel"],
)
def test_every_kind_of_change_sends_one_message(frontend, code, mode):
    sent, _ = frontend.run(code)
    assert [s["mode"] for s in states(sent)] == [mode]


def test_a_scoped_cell_shows_while_it_runs_and_its_restore_follows(frontend):
    # The scoped cell runs straight after a cell that sent a state: the interval between
    # messages counts within one cell only, so the scope still shows before the body runs.
    (before, _), (_, messages) = frontend.run_queued(
        "%mscontext mode=graph",
        "%%mscontext mode=pynative pynative_synchronize=on\nprint('body', flush=True)",
    )
    assert [s["mode"] for s in states(before)] == ["GRAPH"]
    order = [
        ("state", m["content"]["data"]["state"]["mode"], m["content"]["data"]["state"]["sync"])
        if m["msg_type"] == "comm_msg"
        else ("stream", m["content"]["text"])
        for m in messages
        if (m["msg_type"] == "stream" and m["content"]["name"] == "stdout")
        or (m["msg_type"] == "comm_msg" and m["content"]["comm_id"] == frontend.comm_id)
    ]
    assert order == [("state", "PYNATIVE", True), ("stream", "body\n"), ("state", "GRAPH", False)]
    sent, _ = frontend.run("%mscontext mode=pynative")
    assert [s["mode"] for s in states(sent)] == ["PYNATIVE"]


def test_a_loop_of_scoped_settings_sends_few_messages(frontend):
    code = (
        "import time, msdebug\n"
        "start = time.monotonic()\n"
        "for _ in range(200):\n"
        "    with msdebug.context(mode='graph'):\n"
        "        pass\n"
        "print(time.monotonic() - start)"
    )
    sent, messages = frontend.run(code)
    printed = "".join(
        m["content"]["text"] for m in messages if m["msg_type"] == "stream" and m["content"]["name"] == "stdout"
    )
    loop_s = float(printed)
    shown = [s["mode"] for s in states(sent)]
    assert shown[:1] == ["GRAPH"], shown  # the first change of a cell shows at once
    assert shown[-1:] == ["PYNATIVE"], shown  # the end of the cell always sends the final state
    # In between, at most one message per MIN_INTERVAL_S of the loop's own run time, on a
    # machine of any speed (400 changes without the throttle).
    assert len(shown) <= 2 + loop_s / MIN_INTERVAL_S, (len(shown), loop_s)


def test_print_capture_follows_msprint(frontend):
    sent, _ = frontend.run("%msprint on")
    assert [s["print_capture"] for s in states(sent)] == [True]
    sent, _ = frontend.run("%msprint off")
    assert [s["print_capture"] for s in states(sent)] == [False]


def test_commands_go_through_the_validated_path(frontend):
    sent = frontend.command(1, "set", values={"mode": "graph"})
    assert reply_message(1) in sent
    assert [s["mode"] for s in states(sent)] == ["GRAPH"]
    sent, _ = frontend.run("print(mindspore.get_context('mode'))")
    sent = frontend.command(2, "set", values={"pynative_synchronize": "on", "mode": "pynative"})
    assert reply_message(2) in sent
    assert [(s["mode"], s["sync"]) for s in states(sent)] == [("PYNATIVE", True)]
    sent = frontend.command(3, "print_capture", value=True)
    assert reply_message(3) in sent and [s["print_capture"] for s in states(sent)] == [True]
    frontend.command(4, "set", values={"pynative_synchronize": "off"})
    frontend.command(5, "print_capture", value=False)
    _, messages = frontend.run("print(mindspore.get_context('mode'), mindspore.get_context('pynative_synchronize'))")
    printed = "".join(m["content"]["text"] for m in messages if m["msg_type"] == "stream")
    assert printed == "1 False\n"


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"action": "set", "values": {"mode": "fast"}}, "mode"),
        ({"action": "set", "values": {"mdoe": "graph"}}, "Did you mean 'mode'?"),
        ({"action": "set", "values": {}}, "expected values"),
        ({"action": "print_capture", "value": "yes"}, "expected true or false"),
        ({"action": "reboot"}, "allowed: set, print_capture"),
    ],
    ids=["bad value", "typo", "no values", "bad flag", "unknown action"],
)
def test_refused_commands_answer_with_one_line_and_change_nothing(frontend, fields, expected):
    sent = frontend.command(9, **fields)
    (reply,) = [m for m in sent if m["kind"] == "reply"]
    assert reply["id"] == 9 and reply["ok"] is False
    assert expected in reply["error"] and "\n" not in reply["error"]
    assert states(sent) == []


def test_what_is_not_a_command_is_answered_not_raised(frontend):
    def send(data):
        return frontend.mine(frontend._request("comm_msg", {"comm_id": frontend.comm_id, "data": data}))

    assert send({"hello": 1}) == [reply_message(None, "msdebug: expected a command message")]
    (reply,) = send({"protocol": 2, "kind": "command", "id": 11, "action": "set", "values": {"mode": "graph"}})
    assert reply["id"] == 11 and reply["ok"] is False
    assert "this kernel speaks protocol 1, the front end 2" in reply["error"]
    sent, _ = frontend.run("print(mindspore.get_context('mode'))")
    assert sent == []  # nothing was changed


def test_a_front_end_that_closed_its_comm_gets_nothing_more(frontend):
    gone = frontend.comm_id
    frontend._request("comm_close", {"comm_id": gone, "data": {}})
    _, messages = frontend.run("%mscontext mode=graph")
    assert not [m for m in messages if m["msg_type"] == "comm_msg" and m["content"]["comm_id"] == gone]
    sent = frontend.open()  # a new one gets the state at once
    assert [s["mode"] for s in states(sent)] == ["GRAPH"]
    sent, _ = frontend.run("%mscontext mode=pynative")
    assert [s["mode"] for s in states(sent)] == ["PYNATIVE"]


def test_unloading_closes_the_comm_and_drops_the_target(frontend):
    _, messages = frontend.run("%unload_ext msdebug")
    closed = [m["content"]["comm_id"] for m in messages if m["msg_type"] == "comm_close"]
    assert closed == [frontend.comm_id]  # and nothing for the sign, which no front end knows
    assert frontend.comm_info() == {}
    # No target any more: a new front end's comm is closed by the kernel at once.
    frontend.comm_id = uuid.uuid4().hex
    sent = frontend._request("comm_open", {"comm_id": frontend.comm_id, "target_name": "msdebug", "data": {}})
    assert [m["msg_type"] for m in sent if m["msg_type"].startswith("comm")] == ["comm_close"]
    # Loading again registers it again (and a changed context is sent to the new comm).
    frontend.run("%load_ext msdebug")
    assert len(frontend.open()) == 1
    sent, _ = frontend.run("%mscontext mode=graph")
    assert [s["mode"] for s in states(sent)] == ["GRAPH"]


def test_the_views_package_names_what_views_context_renders():
    """views/__init__ imports views.context lazily (the status bar's views.status must not pull
    in the key catalog), so it lists the names itself: the same ones."""
    from msdebug import views
    from msdebug.views import context

    assert views.__all__ == context.__all__
    assert all(getattr(views, name) is getattr(context, name) for name in views.__all__)


def test_a_terminal_ipython_has_no_comm(ip):
    from msdebug import settings
    from msdebug.ipython import comm
    from msdebug.views import status

    assert getattr(ip, "kernel", None) is None
    assert id(ip) not in comm._active
    assert comm.TARGET == status.TARGET == "msdebug"
    ip.run_line_magic("mscontext", "mode=graph")
    assert settings.get("mode") == 0  # the magic worked ...
    # ... and the listener machinery is not involved: no status comm, none following the context.
    assert id(ip) not in comm._active
    listeners = [ref() for ref in settings._eager + settings._listeners]
    assert not [f for f in listeners if isinstance(getattr(f, "__self__", None), comm.StatusComm)]
    hooks = [f for callbacks in ip.events.callbacks.values() for f in callbacks]
    assert not [f for f in hooks if isinstance(getattr(f, "__self__", None), comm.StatusComm)]


# --------------------------------------------------------------------------- the pure view


class _Device:
    target, device_id, started = "CPU", 0, True

    def __str__(self) -> str:
        return "CPU:0"


class _State:
    """A ContextState as the view sees it (duck typing: views import no models)."""

    version, device, sync, launch_blocking = "2.10.0", _Device(), False, True
    mode = "GRAPH"

    def summary_parts(self, capture=None) -> dict[str, str]:
        parts = {
            "version": "MindSpore 2.10.0",
            "mode": self.mode,
            "device": "CPU:0",
            "sync": "sync on (launch_blocking)",
        }
        if capture is not None:
            parts["capture"] = f"print capture {'on' if capture else 'off'}"
        return {**parts, "runtime": "runtime started", "changed": "0 changed"}

    def summary(self) -> str:
        return "MindSpore 2.10.0 · GRAPH · CPU:0 · sync on (launch_blocking) · runtime started"


def test_the_state_message_has_what_the_front_end_parses():
    message = state_message(
        _State(),
        print_capture=True,
        device_fixed="the runtime started",
        first_cell="import mindspore",
        parallel_mode="data_parallel",
        ranks=(3, 2),
        busy=(3, 5),
    )
    assert message == {
        "protocol": PROTOCOL,
        "kind": "state",
        "state": {
            "mindspore": "2.10.0",
            "installed": "2.10.0",
            "mode": "GRAPH",
            "device": "CPU:0",
            "device_fixed": "the runtime started",
            "sync": True,  # launch_blocking makes it synchronous, for good
            "sync_fixed": "mindspore.runtime.launch_blocking() was called; it cannot be undone in this process",
            "runtime_started": True,
            "print_capture": True,
            "summary": _State().summary(),
            "first_cell": "import mindspore",
            "parallel_mode": "data_parallel",
            "ranks": [2, 3],  # in order
            "busy_ranks": [3],  # only ranks %msrun runs
        },
    }
    assert unloaded_state(None, print_capture=False)["state"]["summary"] == "MindSpore is not installed"
    assert reply_message("x", "bad") == {"protocol": PROTOCOL, "kind": "reply", "id": -1, "ok": False, "error": "bad"}


def test_what_the_views_build_is_what_the_schema_describes():
    message = state_message(_State(), print_capture=False, device_fixed="", first_cell="", parallel_mode="stand_alone")
    valid(message)
    valid(state_message(_State(), print_capture=False, device_fixed="", first_cell="", parallel_mode="", ranks=(0, 1)))
    valid(unloaded_state("2.10.0", print_capture=True, ranks=(0, 1), busy=(1,)))
    valid(unloaded_state("2.10.0", print_capture=True))
    valid(unloaded_state(None, print_capture=False))
    valid(reply_message(3))
    valid(reply_message(None, "mode: expected graph or pynative"))
    # Renamed, missing or mistyped fields, and another version, are what the schema is for.
    state = message["state"]
    for broken in (
        {**message, "protocol": PROTOCOL + 1},
        {**message, "state": {**state, "sync": "off"}},
        {**message, "state": {k: v for k, v in state.items() if k != "first_cell"}},
        {**message, "state": {**state, "device_fix": ""}},
        {**message, "state": {**state, "ranks": ["0"]}},
        {**message, "state": {**state, "busy_ranks": 1}},
    ):
        assert list(_VALIDATOR.iter_errors(broken)), broken


def test_the_schema_is_the_one_for_this_protocol_and_these_commands():
    from msdebug.ipython import comm

    jsonschema.Draft202012Validator.check_schema(schema())
    definitions = schema()["$defs"]
    assert definitions["protocol"]["const"] == PROTOCOL
    actions = [variant["properties"]["action"]["const"] for variant in definitions["command"]["oneOf"]]
    assert tuple(actions) == comm._ACTIONS
    # What the kernel carries out is what the schema allows the front end to send.
    valid({"protocol": PROTOCOL, "kind": "command", "id": 1, "action": "set", "values": {"mode": "graph"}})
    valid({"protocol": PROTOCOL, "kind": "command", "id": 2, "action": "print_capture", "value": True})


def python_messages() -> dict[str, dict]:
    """The messages jest parses (extension/test/messages.json), built by the real code:
    msdebug's ContextState and device facts, the views' message functions."""
    from msdebug import backend, keys, settings

    def context(
        mode: int, device: backend.DeviceState, sync: bool, launch_blocking: bool, capture: bool, **parallel
    ) -> dict:
        row = settings.Row(key=keys.CATALOG["mode"], value=mode, default=1, changed=mode != 1, applies=True)
        state = settings.ContextState(
            version="2.10.0", device=device, sync=sync, launch_blocking=launch_blocking, rows=(row,)
        )
        return state_message(
            state,
            print_capture=capture,
            device_fixed=settings.device_lock(device),
            first_cell=backend.first_cell(device.target, device.device_id),
            **{"parallel_mode": "stand_alone", **parallel},
        )

    fresh = backend.DeviceState("CPU", 0, configured=False, started=False, supported=("CPU",))
    started = fresh._replace(configured=True, started=True)
    return {
        "state": context(1, fresh, sync=False, launch_blocking=False, capture=False),
        "state_fixed": context(0, started, sync=False, launch_blocking=True, capture=True),
        "state_not_imported": unloaded_state("2.10.0", print_capture=False),
        "state_not_installed": unloaded_state(None, print_capture=True),
        "state_msrun": context(
            0,
            started,
            sync=False,
            launch_blocking=False,
            capture=False,
            parallel_mode="data_parallel",
            ranks=(0, 1),
            busy=(1,),
        ),
        "state_msrun_not_imported": unloaded_state("2.10.0", print_capture=False, ranks=(0, 1), busy=(0, 1)),
        "reply_ok": reply_message(4),
        "reply_error": reply_message(5, "mode: 'fast' is not allowed; allowed: graph, pynative"),
        "reply_without_id": reply_message(None, "msdebug: expected a command message"),
    }


def test_jest_parses_the_messages_python_writes():
    """extension/test/messages.json is what the views build today (MSDEBUG_UPDATE_FIXTURES=1
    rewrites it); jest reads it with extension/src/protocol.ts."""
    messages = {name: valid(message) for name, message in python_messages().items()}
    if os.environ.get("MSDEBUG_UPDATE_FIXTURES"):
        FIXTURES.write_text(json.dumps(messages, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    stored = json.loads(FIXTURES.read_text(encoding="utf-8"))
    assert stored == messages, (
        "extension/test/messages.json is stale: MSDEBUG_UPDATE_FIXTURES=1 pytest tests/test_status.py -k jest rewrites it"
    )
