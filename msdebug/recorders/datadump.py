"""Data dumps from a notebook: build and check the dump JSON with MindSpore's rules, apply it,
and say what is in effect.

MindSpore 2.10 reads ``MINDSPORE_DUMP_CONFIG`` once, at the first graph compile of the
process (:mod:`msdebug.backend.datadump`), so a dump is set up before that compile or in a fresh
kernel; msdebug says which, and gives the exact first cell. The rules below are MindSpore's
own (``DumpJsonParser``, table 1.2 of the reference), checked before MindSpore sees the file,
plus the settings CPU accepts but ignores or refuses. msdebug always writes
``e2e_dump_settings``: without it MindSpore logs three warnings and sleeps a second after each.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..backend import datadump as _switch
from ..dumps.rendered import Rendered, rendered_by
from ..errors import DumpConfigError, DumpTooLateError, did_you_mean
from ..files import open_regular, read_regular
from ..schema import Field, validate

__all__ = [
    "CONFIG_NAME",
    "DumpStatus",
    "build_config",
    "check_config",
    "check_iteration",
    "check_path",
    "disable",
    "dump_for_cell",
    "dump_status",
    "enable",
    "first_cell",
    "graph_only_reason",
    "read_config",
    "scratch_parent",
    "write_config",
]

CONFIG_NAME = "msdebug_dump.json"
_PATH = re.compile(r"^[A-Za-z0-9_/-]+$")
_NET = re.compile(r"^[A-Za-z0-9_-]+$")
_ITERATION = re.compile(r"^[0-9|-]+$")
_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")
_MAX_CONFIG = 1 << 20


# --------------------------------------------------------------------------- rules


def check_path(value: Any) -> str:
    """An absolute path of ``A-Z a-z 0-9 _ - /`` only (no dots, no ``~``): MindSpore's rule."""
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str) or not value:
        raise DumpConfigError(f"the dump path must be a non-empty string (an absolute directory), got {value!r}.")
    if not value.startswith("/"):
        absolute = os.path.abspath(os.path.expanduser(value))
        if _PATH.match(absolute):
            return absolute.rstrip("/") or "/"
        raise DumpConfigError(
            f"the dump path {value!r} becomes {absolute!r}, and MindSpore allows only letters, digits, '_', '-' "
            "and '/' in it (no dots); give another directory, such as /tmp/dump."
        )
    if not _PATH.match(value):
        bad = sorted({c for c in value if not re.match(r"[A-Za-z0-9_/-]", c)})
        raise DumpConfigError(
            f"the dump path {value!r} has {''.join(bad)!r}; MindSpore allows only letters, digits, '_', '-' and '/' "
            f"(\"Dump path only support alphabets, digit or {{'-', '_', '/'}}\"); "
            f"did you mean {re.sub(r'[^A-Za-z0-9_/-]', '_', value)!r}?"
        )
    return value.rstrip("/") or "/"


def check_iteration(value: Any) -> str:
    """``"all"``, or steps and ranges joined by ``|`` (``"0|2-4"``). MindSpore accepts odd
    strings such as ``"2-1|-"`` and then dumps nothing; msdebug refuses them."""
    if not isinstance(value, str):
        raise DumpConfigError(f'iteration must be a string such as "all" or "0|2-4", got {value!r}.')
    if value == "all":
        return value
    if not value or not _ITERATION.match(value):
        hint = did_you_mean(value, ["all"]) if value else ""
        raise DumpConfigError(
            f"iteration {value!r}: MindSpore takes only \"all\" or digits with '-' and '|' (\"0|2-4\")." + hint
        )
    for part in value.split("|"):
        match = _RANGE.match(part)
        if match is None or (match.group(2) is not None and int(match.group(2)) < int(match.group(1))):
            raise DumpConfigError(
                f"iteration {value!r}: {part!r} is not a step or a range START-END with START <= END; "
                "MindSpore would accept it and dump nothing."
            )
    return value


def check_kernels(value: Any) -> list[str]:
    if isinstance(value, str):
        value = [k.strip() for k in value.split(",") if k.strip()]
    if not isinstance(value, (list, tuple)) or not all(isinstance(k, str) and k for k in value):
        raise DumpConfigError(
            "kernels must be a list of full op names (Default/Sqrt-op0), op types (relu) or 'name-regex(...)', "
            f"got {value!r}."
        )
    return list(value)


def _net_name(value: Any, name: str) -> None:
    if not _NET.match(value):
        raise DumpConfigError(f"net_name {value!r}: only letters, digits, '-' and '_' (it names a folder).")


def _absolute(value: Any, name: str) -> None:
    if value:
        check_path(value)
        if not value.startswith("/"):
            raise DumpConfigError(f"path {value!r} must be absolute (start with '/').")


# MindSpore parses the dump JSON in C++ (DumpJsonParser, mindspore/ccsrc/include/backend/debug/data_dump/
# dump_json_parser.h; the keys of table 1.2 of the reference): no Python list to take them from.
# Keys whose values msdebug never writes nor checks are "any". Every integer key but support_device is
# read only when nlohmann's is_number_unsigned() holds (CheckJsonUnsignedType, dump_json_parser.cc): 2.0,
# true and -1 raise, so "int" here takes no float. support_device's items are converted without a check
# (`uint32_t device_id = device;`: 2.5 is device 2, true device 1); msdebug takes whole numbers only.
SPEC = {
    "common_dump_settings": Field(
        "object",
        fields={
            "dump_mode": Field("int", choices=(0, 1, 2), required=True, says="0 (all ops) or 1 (the kernels list)"),
            "path": Field("str", says="an absolute directory", rule=_absolute),
            "net_name": Field("str", required=True, rule=_net_name),
            "iteration": Field("any", required=True, rule=lambda value, name: check_iteration(value)),
            "saved_data": Field("enum", ("tensor", "statistic", "full")),
            "input_output": Field(
                "int", choices=(0, 1, 2), required=True, says="0 (inputs and outputs), 1 (inputs) or 2 (outputs)"
            ),
            "kernels": Field("list", items="str", required=True),
            "support_device": Field("list", items="uint", required=True, says="a list of device numbers"),
            "op_debug_mode": Field("int", choices=(0, 1, 2, 3, 4), says="0, 3 or 4"),
            "overflow_number": Field("int", low=0),
            # a uint32 in DumpJsonParser: 2**32 + 5 is dumped as iteration 5, 2**64 is refused
            "initial_iteration": Field("int", low=0, high=2**32 - 1),
            "file_format": Field("any"),
            "statistic_category": Field("any"),
        },
    ),
    "e2e_dump_settings": Field(
        "object",
        fields={
            "enable": Field("bool"),
            "trans_flag": Field("bool"),
            # ParseSampleMode / ParseSampleNum: CheckJsonUnsignedType (is_number_unsigned), so 2.0 and true
            # are refused; sample_num is a uint32 and read only with sample_mode 1
            "sample_mode": Field("int", choices=(0, 1), says="0 (whole tensors) or 1 (head and tail)"),
            "sample_num": Field("int", low=1, high=2**32 - 1),
            **dict.fromkeys(("save_kernel_args", "stat_calc_mode", "device_stat_precision_mode"), Field("any")),
        },
    ),
}


def check_config(data: Any, where: str = "the dump config") -> dict:
    """Check a dump JSON as MindSpore 2.10 on CPU would, and refuse what it would refuse or
    silently ignore. Returns ``data``.

    Raises
    ------
    DumpConfigError
        With MindSpore's reason and what is allowed.
    """
    if not isinstance(data, dict):
        validate(SPEC, data, where, DumpConfigError)  # says what the top level must be
    common = data.get("common_dump_settings")
    if not isinstance(common, dict):
        raise DumpConfigError(
            f'{where}: common_dump_settings not found (MindSpore: "Check dump json failed, common_dump_settings '
            'not found").' + did_you_mean("common_dump_settings", [k for k in data if isinstance(k, str)])
        )
    validate(SPEC, data, where, DumpConfigError, extra="keep")
    if common["dump_mode"] == 2:
        raise DumpConfigError(f"{where}: dump_mode 2 (set_dump) works only in Ascend async dump; use 0 or 1.")
    if not common.get("path") and not os.environ.get("MS_DIAGNOSTIC_DATA_PATH"):
        raise DumpConfigError(f"{where}: path is empty and MS_DIAGNOSTIC_DATA_PATH is not set; give an absolute path.")
    saved = common.get("saved_data", "tensor")
    if saved in ("statistic", "full"):
        raise DumpConfigError(
            f'{where}: saved_data {saved!r} needs a GPU or Ascend (MindSpore: "storing statistic dump is only '
            'supported on GPU and Ascend"); use "tensor": msdebug computes statistics from the tensors.'
        )
    if saved != "tensor":
        raise DumpConfigError(
            f'{where}: saved_data must be "tensor" on CPU, got {saved!r}.' + did_you_mean(str(saved), ["tensor"])
        )
    debug = common.get("op_debug_mode", 0)
    if debug == 4:
        raise DumpConfigError(
            f"{where}: op_debug_mode 4 (exception dump) is not supported on CPU: no tensor is written."
        )
    if debug in (1, 2, 3) and common["input_output"] != 0:
        raise DumpConfigError(f"{where}: op_debug_mode {debug} forces input_output 0; set input_output to 0.")
    if "overflow_number" in common and debug not in (1, 2, 3):
        raise DumpConfigError(f"{where}: overflow_number is only read with op_debug_mode 3.")
    return data


def build_config(
    directory: str | os.PathLike,
    *,
    kernels: Any = (),
    iteration: str = "all",
    inputs: bool = False,
    net_name: str = "Net",
) -> dict:
    """A checked dump JSON for CPU: every op (or the ``kernels`` list), its output tensors, and
    its inputs too with ``inputs=True``.

    ``input_output`` is a required key of MindSpore's dump JSON, with no default of its own; msdebug's
    one default is outputs only, as ``%msdump on`` (``--inputs`` adds them) and :func:`enable`: every
    op's output is the next op's input, so the first bad value is found in a third of the files
    (50 npy instead of 145 for a small MLP). The ``%%msnan`` scan asks for inputs itself.
    """
    kernels = check_kernels(kernels) if kernels else []
    config = {
        "common_dump_settings": {
            "dump_mode": 1 if kernels else 0,
            "path": check_path(directory),
            "net_name": net_name,
            "iteration": check_iteration(iteration),
            "saved_data": "tensor",
            "input_output": 0 if inputs else 2,
            "kernels": kernels,
            "support_device": [0],
        },
        "e2e_dump_settings": {"enable": True, "trans_flag": True},
    }
    return check_config(config)


def read_config(path: str | os.PathLike) -> dict:
    """The dump JSON at ``path``, checked (a regular file of at most 1 MB: the variable may name
    anything, a FIFO or a device included)."""
    raw = read_regular(
        path,
        _MAX_CONFIG,
        DumpConfigError,
        what="dump config",
        unreadable="{name}: cannot read the dump config ({reason}).",
    )
    try:
        data = json.loads(raw.decode("utf-8", "replace"))
    except (ValueError, RecursionError) as error:
        raise DumpConfigError(f"{path}: not valid JSON ({str(error)[:200]}).") from None
    return check_config(data, str(path))


def _is_ours(path: Path, text: str) -> bool:
    """Whether ``path`` holds exactly ``text`` (read through the opener, never past its length).

    Raises
    ------
    DumpConfigError
        When ``path`` is a FIFO, a device or a directory: msdebug neither reads nor replaces it.
    """
    wanted = text.encode("utf-8")
    unreadable = "{name}: cannot read it ({reason}); give another directory."
    with open_regular(path, _not_a_config, unreadable) as handle:
        return handle.read(len(wanted) + 1) == wanted


def _not_a_config(message: str) -> DumpConfigError:
    return DumpConfigError(f"{message} msdebug never replaces a file it did not write; give another directory.")


def write_config(config: dict, directory: str | os.PathLike) -> Path:
    """Write ``config`` as ``<directory>/msdebug_dump.json``; an existing different file is kept
    and the config goes to ``msdebug_dump-1.json`` (-2, ...).

    Raises
    ------
    DumpConfigError
        When ``directory`` cannot be a directory (a file, below a file, in ``/proc``) or a file
        where the config goes is no regular file.
    """
    folder = Path(directory)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise DumpConfigError(
            f"the dump directory {folder} exists and is not a directory; give another directory."
        ) from None
    except OSError as error:
        raise DumpConfigError(
            f"the dump directory {folder} cannot be made ({error.strerror or error}); give another directory."
        ) from None
    text = json.dumps(config, indent=2) + "\n"
    stem, suffix = CONFIG_NAME.rsplit(".", 1)
    for number in range(1000):
        path = folder / (CONFIG_NAME if number == 0 else f"{stem}-{number}.{suffix}")
        try:
            # "x": O_EXCL never follows a symlink and never opens what is there.
            with open(path, "x", encoding="utf-8") as handle:
                handle.write(text)
            return path
        except FileExistsError:
            if _is_ours(path, text):
                return path
        except OSError as error:
            raise DumpConfigError(
                f"{path}: cannot write it ({error.strerror or error}); give another directory."
            ) from None
    raise DumpConfigError(f"{folder}: 1000 dump configs already there; give another directory.")


_JIT = re.compile(r"(^|\W)(ms\.)?jit\b|@jit|\bjit\(")
_SINK = re.compile(r"(dataset_sink_mode|sink_mode)\s*=\s*True|data_sink\(")


def graph_only_reason(code: str, namespace: Mapping[str, Any] | None = None) -> str:
    """Why rerunning ``code`` in PyNative would not show its ops to hooks ('' when it would).

    ``namespace``: the notebook's names, for a @jit function (or a Cell whose ``construct`` is
    one) defined in an earlier cell, which the cell calls by name or through a function that
    calls it."""
    if _JIT.search(code):
        return "it calls @jit functions, which run as graphs in PyNative too"
    if _SINK.search(code):
        return "it trains in sink mode, which runs as a graph"
    name = _graph_name(code, namespace or {})
    if name:
        return f"it calls {name}, which runs a @jit function as a graph in PyNative too"
    return ""


def _graph_name(code: str, namespace: Mapping[str, Any]) -> str:
    """A name the cell uses whose value runs as a graph (a @jit function or method, a Cell with a
    @jit ``construct``, or a function of the notebook that calls one), '' when none does."""
    import ast

    try:
        used = {node.id for node in ast.walk(ast.parse(code)) if isinstance(node, ast.Name)}
    except (SyntaxError, ValueError, RecursionError):
        return ""
    return next((name for name in sorted(used) if _runs_graph(namespace.get(name), 2)), "")


def _runs_graph(value: Any, depth: int) -> bool:
    if value is None or isinstance(value, (int, float, str, bytes, bool)):
        return False
    if getattr(value, "__wrapped_by_jit__", False) is True:  # what mindspore.jit leaves on its wrapper
        return True
    construct = getattr(type(value), "construct", None)
    if construct is not None and not isinstance(value, type):  # a Cell: what its construct runs
        return _runs_graph(construct, depth)
    code = getattr(value, "__code__", None)
    found = getattr(value, "__globals__", None)
    if depth and code is not None and isinstance(found, dict):  # a plain function: what it calls by name
        return any(_runs_graph(found.get(name), depth - 1) for name in code.co_names[:256])
    return False


def first_cell(config_file: str | os.PathLike) -> str:
    """The one line to run first in a fresh kernel to dump with ``config_file``."""
    return f'import os; os.environ["{_switch.ENV_VAR}"] = "{os.fspath(config_file)}"'


# --------------------------------------------------------------------------- state


@dataclass(repr=False)
class DumpStatus(Rendered):
    """What is configured, what MindSpore has taken, and what it has written."""

    _views = rendered_by(lambda v: (v.datadump.html_dump_status, v.datadump.text_dump_status))

    config_file: str | None
    config: dict | None
    error: str
    dump_path: str
    compiled: bool
    in_effect: bool
    iterations: int = 0
    tensors: int = 0
    size: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def state(self) -> str:
        if not self.config_file:
            return "off" if not self.compiled else "off (too late to switch on in this process)"
        if self.error:
            return "configured, but MindSpore will refuse it"
        if self.in_effect:
            return "on: MindSpore dumps every graph run"
        if self.compiled:
            return "configured too late: MindSpore read no dump config at its first graph compile"
        return "configured: MindSpore reads it at the first graph compile"


def dump_status(notes: tuple[str, ...] = ()) -> DumpStatus:
    """The data dump of this process now."""
    from ..dumps.datadump import read_data_dump

    config_file = _switch.config_file()
    compiled = _switch.graph_compiled()
    config, error, path = None, "", ""
    if config_file:
        try:
            config = read_config(config_file)
        except DumpConfigError as problem:
            error = str(problem)
        if config is not None:
            path = config["common_dump_settings"].get("path") or os.path.join(
                os.environ.get("MS_DIAGNOSTIC_DATA_PATH", ""), "debug_dump"
            )
    in_effect = bool(path) and _switch.parsed_here(path)
    status = DumpStatus(config_file, config, error, path, compiled, in_effect, notes=list(notes))
    if path and os.path.isdir(path):
        try:
            written = read_data_dump(path)
        except Exception:  # noqa: BLE001 - nothing readable written yet
            written = None
        if written is not None:
            status.iterations = sum(len(r.iterations) for r in written.ranks)
            status.tensors = written.tensor_count
            status.size = written.size
    return status


def _too_late(what: str, config_file: str | os.PathLike) -> DumpTooLateError:
    return DumpTooLateError(
        f"{what}: too late, this process has compiled a graph and MindSpore reads the dump config only at its "
        f"first graph compile. Run this first in a fresh kernel: {first_cell(config_file)}"
    )


def enable(
    directory: str | os.PathLike,
    *,
    kernels: Any = (),
    iteration: str = "all",
    inputs: bool = False,
    net_name: str = "Net",
) -> DumpStatus:
    """Write a checked dump config into ``directory`` and point ``MINDSPORE_DUMP_CONFIG`` at it.

    Raises
    ------
    DumpConfigError
        For a setting MindSpore would refuse or ignore.
    DumpTooLateError
        After the first graph compile (unless this very config is already in effect); the
        message gives the fresh-kernel first cell.
    """
    config = build_config(directory, kernels=kernels, iteration=iteration, inputs=inputs, net_name=net_name)
    path = config["common_dump_settings"]["path"]
    current = _switch.config_file()
    if _switch.graph_compiled():
        if current and _switch.parsed_here(path):
            try:
                same = read_config(current) == config
            except DumpConfigError:
                same = False
            if same:
                return dump_status(("already on with these settings",))
        written = write_config(config, path)
        raise _too_late("%msdump on", written)
    written = write_config(config, path)
    _switch.set_config_file(written)
    return dump_status((f"wrote {written}",))


def disable() -> DumpStatus:
    """Remove ``MINDSPORE_DUMP_CONFIG`` before the first graph compile.

    Raises
    ------
    DumpTooLateError
        When MindSpore has taken the config: it dumps until the process ends.
    """
    if _switch.graph_compiled() and _switch.config_file() and dump_status().in_effect:
        raise DumpTooLateError(
            "%msdump off: too late, MindSpore took the dump config at this process's first graph compile and dumps "
            "every graph run until the process ends; restart the kernel to stop it."
        )
    _switch.set_config_file(None)
    return dump_status(("MINDSPORE_DUMP_CONFIG removed",))


def scratch_parent() -> str:
    """Where msdebug makes the dump directories it sets up itself: the temporary directory when
    MindSpore takes its path (letters, digits, '_', '-' and '/' only: a TMPDIR under
    ``/home/john.doe`` has a dot), else ``/tmp`` or ``/var/tmp``.

    Raises
    ------
    DumpConfigError
        When none of them is a writable directory MindSpore takes: what to set instead.
    """
    candidates = (tempfile.gettempdir(), "/tmp", "/var/tmp")
    for parent in candidates:
        if _PATH.match(parent) and os.path.isdir(parent) and os.access(parent, os.W_OK | os.X_OK):
            return parent
    raise DumpConfigError(
        f"msdebug found no directory for the data dump: MindSpore takes only letters, digits, '_', '-' and '/' "
        f"in a dump path, and none of {', '.join(candidates)} is such a writable directory; set TMPDIR to one "
        "(export TMPDIR=/some/dir before starting Jupyter), or set up the dump yourself with %msdump."
    )


def dump_for_cell(code: str = "", magic: str = "%%msnan", rerun: str = "") -> tuple[str, bool]:
    """The dump a GRAPH-mode ``%%msnan`` or ``%%msdiff`` cell is read from: ``(dump path, set up now)``.

    A dump already configured is used as it is; before the first graph compile msdebug sets
    one up in a new temporary directory. ``rerun`` is the other way out that the error names
    (by default, ``%%msnan --pynative``).

    Raises
    ------
    DumpTooLateError
        When this process compiled a graph without a dump; the message gives the two ways out.
    DumpConfigError
        When the configured dump config is one MindSpore would refuse.
    """
    status = dump_status()
    if status.config_file and status.error:
        raise DumpConfigError(status.error)
    if status.in_effect or (status.config_file and not status.compiled):
        return status.dump_path, False
    if not status.compiled:
        directory = tempfile.mkdtemp(prefix="msdebug_nan_", dir=scratch_parent())
        config = build_config(directory, inputs=True)  # inputs: parameters are judged by the op input
        _switch.set_config_file(write_config(config, directory))
        return config["common_dump_settings"]["path"], True
    directory = os.path.join(scratch_parent(), "msdebug_dump")
    written = write_config(build_config(directory, inputs=True), directory)
    reason = graph_only_reason(code)
    if not rerun:
        rerun = (
            f"rerunning it in PyNative (%%msnan --pynative) would not help: {reason}"
            if reason
            else "or rerun this cell in PyNative under hooks: %%msnan --pynative"
        )
    error = _too_late(magic, written)
    return_message = f"{error}; {rerun}"
    raise DumpTooLateError(return_message)
