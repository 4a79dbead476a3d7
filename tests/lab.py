"""A real JupyterLab and a real browser for tests: JupyterLab on 127.0.0.1 with a token, and
Debian's Chromium driven by Playwright.

Playwright cannot download its own browsers here, so it drives the system Chromium
(``.ci/run`` installs Debian's ``chromium`` where it is missing); tests that use this module
mark themselves with :data:`browser_marks` and are skipped without it.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest
from ipykernel.kernelspec import get_kernel_dict

from helpers import kernel_env

# A notebook with this kernel starts it cold (write_notebook).
COLD_KERNEL = "python3-cold"

CHROMIUM = next(
    (path for path in ("/usr/bin/chromium", shutil.which("chromium")) if path and os.path.exists(path)), None
)

browser_marks = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="no Chromium (apt-get install chromium)"),
]

# The machine may have two cores: JupyterLab's start and MindSpore's import take a while.
START_TIMEOUT_S = 120
CELL_TIMEOUT_MS = 180_000
# Chromium flags for a closed network and a root user (see the env skill's notes).
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def write_notebook(path: Path, cells: list[str], warm: bool = True) -> Path:
    """A notebook of code cells with the standard Python 3 kernel; with ``warm=False``, the same
    kernel started cold, for a test about what the kernel has not imported yet (see jupyterlab)."""
    nb = nbformat.v4.new_notebook()
    name = "python3" if warm else COLD_KERNEL
    nb.metadata["kernelspec"] = {"name": name, "display_name": "Python 3 (ipykernel)", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    nbformat.write(nb, path)
    return path


@dataclass
class Lab:
    """A running JupyterLab: its address, token, and a directory it serves (``root``, where a
    test writes its notebooks; ``served``, the server's root, where that is above it)."""

    url: str
    token: str
    root: Path
    served: Path | None = None

    def path(self, name: str) -> str:
        """``root/name`` as the server names it (relative to the directory it serves)."""
        return (self.root / name).relative_to(self.served or self.root).as_posix()

    def notebook_url(self, name: str) -> str:
        """The address that opens ``root/name`` alone: ``reset`` starts from an empty workspace, so
        JupyterLab does not reopen the notebooks of earlier tests (nor reconnect to their kernels)."""
        return f"{self.url}/lab/tree/{self.path(name)}?reset&token={self.token}"

    def shut_down_kernels(self) -> None:
        """Shut down every kernel of this server, and wait until each is gone.

        A kernel still restarting is asked again until it goes: jupyter_client answers a shutdown
        in the middle of a restart with an InvalidStateError (its ``ready`` future is not done),
        and the server's own shutdown then fails the same way and never exits.
        """
        import json

        listing = urllib.request.urlopen(f"{self.url}/api/kernels?token={self.token}", timeout=30).read()
        for kernel in json.loads(listing):
            path = f"/api/kernels/{kernel['id']}"
            request = urllib.request.Request(f"{self.url}{path}?token={self.token}", method="DELETE")
            deadline = time.monotonic() + START_TIMEOUT_S
            while True:
                try:
                    urllib.request.urlopen(request, timeout=60).read()
                    break
                except urllib.error.HTTPError as error:  # 500: the restart has not finished
                    if error.code == 404:  # gone meanwhile
                        break
                    if time.monotonic() > deadline:
                        raise
                time.sleep(0.2)


@contextlib.contextmanager
def jupyterlab(scratch: Path, python: str = sys.executable, env: dict[str, str] | None = None) -> Iterator[Lab]:
    """JupyterLab on 127.0.0.1 with a token, serving ``scratch/lab``, with its own config,
    runtime, workspace and settings directories under ``scratch``; stopped afterwards.

    ``python`` is the interpreter whose JupyterLab (and labextensions) to run.
    """
    root = scratch / "lab"
    root.mkdir(parents=True, exist_ok=True)
    # No "get notified about official Jupyter news?" toast: it takes focus and covers outputs.
    news = scratch / "settings" / "@jupyterlab" / "apputils-extension"
    news.mkdir(parents=True, exist_ok=True)
    (news / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')
    # Its kernels start warm, forked from one that has imported MindSpore (warm.py), as the tests'
    # own kernels do; those of COLD_KERNEL, the same kernel spec with the local provisioner, cold.
    config = scratch / "config"
    config.mkdir(parents=True, exist_ok=True)
    (config / "jupyter_server_config.py").write_text(
        f"import sys\nsys.path.insert(0, {str(Path(__file__).resolve().parent)!r})\n"
        "from warm import use_warm_kernels\nuse_warm_kernels()\n"
    )
    share = scratch / "share" / "jupyter"
    cold = share / "kernels" / COLD_KERNEL
    cold.mkdir(parents=True, exist_ok=True)
    spec = {**get_kernel_dict(), "display_name": "Python 3 (ipykernel)", "language": "python"}
    spec["argv"][0] = python
    spec["metadata"] = {**spec.get("metadata", {}), "kernel_provisioner": {"provisioner_name": "local-provisioner"}}
    (cold / "kernel.json").write_text(json.dumps(spec))
    port, token = free_port(), secrets.token_hex(16)
    environment = {
        **kernel_env(),
        "JUPYTER_CONFIG_DIR": str(config),
        "JUPYTER_RUNTIME_DIR": str(scratch / "run"),
        **(env or {}),
    }
    environment["JUPYTER_PATH"] = os.pathsep.join(
        dict.fromkeys([str(share), *filter(None, environment.get("JUPYTER_PATH", "").split(os.pathsep))])
    )
    command = [
        python, "-m", "jupyter", "lab",
        "--ip=127.0.0.1", f"--port={port}", "--no-browser", "--ServerApp.open_browser=False",
        f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
        f"--LabApp.workspaces_dir={scratch / 'workspaces'}", f"--LabApp.user_settings_dir={scratch / 'settings'}",
        # window.jupyterapp: a test opens its notebook in the page the test before it left (see chromium).
        "--LabApp.expose_app_in_browser=True",
    ]  # fmt: skip
    if os.geteuid() == 0:
        command.append("--allow-root")
    log_path = scratch / "jupyterlab.log"
    with open(log_path, "w") as log:
        server = subprocess.Popen(command, cwd=root, env=environment, stdout=log, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + START_TIMEOUT_S
        try:
            while True:
                try:
                    urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=5).read()
                    break
                except OSError:
                    if server.poll() is not None or time.monotonic() > deadline:
                        pytest.fail("JupyterLab did not start:\n" + log_path.read_text()[-3000:])
                    time.sleep(0.5)
            lab = Lab(url, token, root)
            yield lab
            # A server asked to stop with kernels running waits for them to stop before it exits.
            lab.shut_down_kernels()
        finally:
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


def labextension_env(scratch: Path) -> dict[str, str]:
    """The environment that makes JupyterLab load the labextension of the msdebug under test: the
    one built into the source tree (``pip install -e .`` builds it there), else the installed
    one (a wheel's). Where neither was built (no Node at install), JupyterLab runs without it."""
    import msdebug

    built = Path(msdebug.__file__).resolve().parent / "labextension"
    if not (built / "package.json").is_file():
        return {}
    share = scratch / "share" / "jupyter"
    (share / "labextensions").mkdir(parents=True, exist_ok=True)
    (share / "labextensions" / "msdebug").symlink_to(built, target_is_directory=True)
    return {"JUPYTER_PATH": str(share)}


@pytest.fixture(scope="session")
def shared_lab(tmp_path_factory) -> Iterator[Lab]:
    """One JupyterLab per test process (each xdist worker), with the labextension under test, as
    a user's JupyterLab has it: starting one takes seconds of a 2-core machine's time."""
    scratch = tmp_path_factory.mktemp("shared-lab")
    with jupyterlab(scratch, env=labextension_env(scratch)) as lab:
        yield lab


@pytest.fixture
def lab(shared_lab: Lab, request) -> Iterator[Lab]:
    """The process's JupyterLab with a folder of this test's own (``lab.root``); the kernels the
    test started are shut down after it, so the next test finds none."""
    folder = shared_lab.root / re.sub(r"[^\w.-]+", "_", request.node.name)[:80]
    folder.mkdir()
    yield Lab(shared_lab.url, shared_lab.token, folder, shared_lab.root)
    shared_lab.shut_down_kernels()


@dataclass
class _Window:
    """This test process's browser: one Playwright driver (a node process), one Chromium, one
    page. JupyterLab stays loaded in the page from test to test (booting it costs Chromium about
    10 CPU-seconds); each test opens its own notebook in it (:func:`open_notebook`) and leaves
    nothing open behind it."""

    page: object
    listeners: list
    close: Callable[[], None]


_window: _Window | None = None


def _the_window() -> _Window:
    global _window
    if _window is None or _window.page.is_closed():
        import tempfile

        from playwright.sync_api import sync_playwright

        close_window()
        driver = sync_playwright().start()
        profile = tempfile.mkdtemp(prefix="msdebug-chromium-")
        browser = driver.chromium.launch_persistent_context(
            profile, executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )

        def close() -> None:
            browser.close()
            driver.stop()
            shutil.rmtree(profile, ignore_errors=True)

        _window = _Window(browser.pages[0], [], close)
    return _window


@atexit.register
def close_window() -> None:
    """Close this test process's Chromium, if it is open. The JupyterLab loaded in its page polls
    its server all the time (about 3% of a core): conftest closes it after the last browser test
    of a run of tests; a later browser test opens a new one."""
    global _window
    window, _window = _window, None
    if window is not None:
        window.close()


@contextlib.contextmanager
def chromium(width: int = 1280, height: int = 1400):
    """The page of this test process's headless Chromium (Debian's), at ``width`` x ``height``,
    with Playwright's waits set to a cell's timeout. Afterwards every dialog and notebook the
    test opened is closed, and the handlers it added with :func:`on` are removed."""
    from playwright.sync_api import expect

    window = _the_window()
    page = window.page
    page.set_viewport_size({"width": width, "height": height})
    page.set_default_timeout(CELL_TIMEOUT_MS)
    # expect() has its own timeout (5 s by default), which page.set_default_timeout does not change.
    expect.set_options(timeout=CELL_TIMEOUT_MS)
    try:
        yield page
    finally:
        for event, handler in window.listeners:
            page.remove_listener(event, handler)
        window.listeners.clear()
        if not page.is_closed() and _app_loaded(page):
            dialogs = page.locator(".jp-Dialog")
            for _ in range(5):
                if dialogs.count() == 0:
                    break
                page.keyboard.press("Escape")  # a dialog's own "Cancel"
            page.evaluate(_CLOSE_EVERYTHING)


def on(page, event: str, handler) -> None:
    """``page.on(event, handler)`` for this test only (the page outlives it)."""
    page.on(event, handler)
    _the_window().listeners.append((event, handler))


def _app_loaded(page) -> bool:
    return page.evaluate("() => Boolean(window.jupyterapp && window.jupyterapp.shell)")


# Close every main-area document without asking (the test's kernels are shut down by its
# ``lab`` fixture).
_CLOSE_EVERYTHING = """
() => {
  const app = window.jupyterapp;
  for (const widget of Array.from(app.shell.widgets('main'))) {
    if (widget.context && widget.context.model) {
      widget.context.model.dirty = false;
    }
    widget.dispose();
  }
}
"""


_OPEN = """
async ([folder, path]) => {
  const commands = window.jupyterapp.commands;
  await commands.execute('filebrowser:go-to-path', {path: '/' + folder, dontShowBrowser: true});
  await commands.execute('docmanager:open', {path, factory: 'Notebook'});
}
"""


def open_notebook(page, lab: Lab, name: str, cells: int):
    """Open ``name`` and wait for its ``cells`` cells and an idle kernel; returns the cell locator."""
    from playwright.sync_api import expect

    if page.url.startswith(f"{lab.url}/lab") and _app_loaded(page):
        # JupyterLab is loaded (by an earlier test): open the notebook in it, with the file
        # browser in its folder, as a URL to it would.
        folder = lab.path(name).rpartition("/")[0]
        page.evaluate(_OPEN, [folder, lab.path(name)])
    else:
        page.goto(lab.notebook_url(name))
    locator = page.locator(".jp-NotebookPanel:visible .jp-Cell")
    expect(locator).to_have_count(cells)
    wait_for_kernel(page, lab, name)
    return locator


def wait_for_kernel(page, lab: Lab, name: str) -> None:
    """Wait until the notebook ``name`` has a kernel that is connected and idle.

    The toolbar's execution indicator is no sign of it: it reads "idle" before the session has a
    kernel (and a Shift+Enter then goes nowhere), so this asks the notebook's session itself.
    """
    page.evaluate(_KERNEL_READY, [lab.path(name), CELL_TIMEOUT_MS])


# Resolves once the notebook at ``path`` has a kernel that is connected and idle; rejects after
# ``timeout`` ms saying what it saw (a kernel that died at start must fail the test, not hang it).
_KERNEL_READY = """
async ([path, timeout]) => {
  const panel = Array.from(window.jupyterapp.shell.widgets('main')).find(w => w.context && w.context.path === path);
  if (!panel) {
    throw new Error(`no notebook panel for ${path}`);
  }
  const session = panel.sessionContext;
  const kernel = () => session.session && session.session.kernel;
  const seen = () => (kernel() ? `kernel ${kernel().connectionStatus}, ${kernel().status}` : 'no kernel yet');
  await new Promise((resolve, reject) => {
    const check = () => {
      if (kernel() && kernel().connectionStatus === 'connected' && kernel().status === 'idle') {
        done();
        resolve();
      }
    };
    const timer = setTimeout(() => {
      done();
      reject(new Error(`${path}: no idle kernel after ${timeout} ms (${seen()})`));
    }, timeout);
    const done = () => {
      clearTimeout(timer);
      session.statusChanged.disconnect(check);
      session.connectionStatusChanged.disconnect(check);
      session.kernelChanged.disconnect(check);
    };
    session.statusChanged.connect(check);
    session.connectionStatusChanged.connect(check);
    session.kernelChanged.connect(check);
    check();
  });
}
"""


# JupyterLab's modal dialogs a test may meet on a slow machine, and the button that keeps the
# test's state: the notebook open here is the one to keep ("File Changed" after an autosave
# races the server), and the kernel it asked for is the one to start.
_DIALOG_ANSWERS = {"File Changed": ".jp-mod-accept", "Select Kernel": ".jp-mod-accept"}


def answer_dialogs(page) -> list[str]:
    """Answer JupyterLab's modal dialogs (they take every click meant for the notebook); returns
    their texts. A dialog not in ``_DIALOG_ANSWERS`` is dismissed, and its text printed so that
    the test's output says what it was."""
    texts = []
    dialogs = page.locator(".jp-Dialog:visible")
    for _ in range(5):
        if dialogs.count() == 0:
            break
        dialog = dialogs.first
        text = " ".join(dialog.inner_text().split())
        texts.append(text)
        button = next((b for title, b in _DIALOG_ANSWERS.items() if title in text), None)
        if button is None:
            print(f"lab.py: dismissed a JupyterLab dialog: {text[:500]}", file=sys.stderr)
            button = ".jp-mod-reject"
        dialog.locator(f".jp-Dialog-button{button}").first.click()
        dialog.wait_for(state="detached", timeout=30_000)
    return texts


def run_cell(page, cells, index: int):
    """Run cell ``index`` as a person does (Shift+Enter in its editor); returns its output area."""
    cell = cells.nth(index)
    press_shift_enter(cell)
    return cell.locator(".jp-OutputArea-output")


def run_all_cells(page) -> None:
    """Run every cell of the open notebook as a person does (Run > Run All Cells in the menu
    bar), and wait until JupyterLab has queued its first code cell.

    As with :func:`press_shift_enter`, a click on a busy machine can reach the page before it is
    ready: the menu is used again only while that cell is still at ``[ ]``, so none runs twice.
    """

    def use_the_menu() -> None:
        answer_dialogs(page)
        page.locator("#jp-MainMenu .lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
        page.locator(".lm-Menu:visible .lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()

    first = page.locator(".jp-NotebookPanel:visible .jp-CodeCell").first.locator(".jp-InputPrompt")
    _until_queued(first, use_the_menu)


def press_shift_enter(cell) -> None:
    """Click into ``cell``'s editor, wait until it has the keyboard, press Shift+Enter, and wait
    until JupyterLab has queued the cell (``[*]``, or ``[N]`` once done).

    On a busy machine a click can land before the page is ready for it and the keypress then
    goes nowhere: the editor's focus is the event that says the keypress will reach it. Only a
    cell still at ``[ ]`` with its editor unfocused is pressed again, so none runs twice.
    """
    from playwright.sync_api import expect

    editor = cell.locator(".jp-InputArea-editor")

    def press() -> None:
        answer_dialogs(cell.page)
        editor.click()
        expect(editor.locator(".cm-content")).to_be_focused()
        cell.page.keyboard.press("Shift+Enter")

    _until_queued(cell.locator(".jp-InputPrompt"), press)


def _until_queued(prompt, act) -> None:
    """``act`` (a keypress, a menu click), then wait until ``prompt`` leaves ``[ ]``: up to three
    times, and again only while it is still at ``[ ]``, so nothing is queued twice."""
    from playwright.sync_api import expect

    for attempt in range(3):
        act()
        try:
            expect(prompt).not_to_have_text("[ ]:", timeout=60_000)
            return
        except AssertionError:
            if attempt == 2:
                raise
            # Each retry costs a minute: say so, so that a slow run's log says where it went.
            print("lab.py: the cell was still [ ] after 60 s; acting again", file=sys.stderr)
