"""A real JupyterLab and a real browser for tests: JupyterLab on 127.0.0.1 with a token, and
Debian's Chromium driven by Playwright.

Playwright cannot download its own browsers here, so it drives the system Chromium
(``.ci/run`` installs Debian's ``chromium`` where it is missing); tests that use this module
mark themselves with :data:`browser_marks` and are skipped without it.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest

from helpers import kernel_env

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


def write_notebook(path: Path, cells: list[str]) -> Path:
    """A notebook of code cells with the standard Python 3 kernel."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    nbformat.write(nb, path)
    return path


@dataclass
class Lab:
    """A running JupyterLab: its address, token, and the directory it serves."""

    url: str
    token: str
    root: Path

    def notebook_url(self, name: str) -> str:
        return f"{self.url}/lab/tree/{name}?token={self.token}"


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
    port, token = free_port(), secrets.token_hex(16)
    environment = {
        **kernel_env(),
        "JUPYTER_CONFIG_DIR": str(scratch / "config"),
        "JUPYTER_RUNTIME_DIR": str(scratch / "run"),
        **(env or {}),
    }
    command = [
        python, "-m", "jupyter", "lab",
        "--ip=127.0.0.1", f"--port={port}", "--no-browser", "--ServerApp.open_browser=False",
        f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
        f"--LabApp.workspaces_dir={scratch / 'workspaces'}", f"--LabApp.user_settings_dir={scratch / 'settings'}",
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
            yield Lab(url, token, root)
        finally:
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


@contextlib.contextmanager
def chromium(width: int = 1280, height: int = 1400):
    """A headless page of Debian's Chromium, with Playwright's waits set to a cell's timeout."""
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            page.set_default_timeout(CELL_TIMEOUT_MS)
            # expect() has its own timeout (5 s by default), which page.set_default_timeout does not change.
            expect.set_options(timeout=CELL_TIMEOUT_MS)
            yield page
        finally:
            browser.close()


def open_notebook(page, lab: Lab, name: str, cells: int):
    """Open ``name`` and wait for its ``cells`` cells and an idle kernel; returns the cell locator."""
    from playwright.sync_api import expect

    page.goto(lab.notebook_url(name))
    locator = page.locator(".jp-NotebookPanel:visible .jp-Cell")
    expect(locator).to_have_count(cells)
    # Wait for the kernel before running anything.
    expect(page.locator(".jp-NotebookPanel:visible .jp-Notebook-ExecutionIndicator[data-status='idle']")).to_have_count(
        1
    )
    return locator


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


def press_shift_enter(cell) -> None:
    """Click into ``cell``'s editor, wait until it has the keyboard, press Shift+Enter, and wait
    until JupyterLab has queued the cell (``[*]``, or ``[N]`` once done).

    On a busy machine a click can land before the page is ready for it and the keypress then
    goes nowhere: the editor's focus is the event that says the keypress will reach it. Only a
    cell still at ``[ ]`` with its editor unfocused is pressed again, so none runs twice.
    """
    from playwright.sync_api import expect

    prompt = cell.locator(".jp-InputPrompt")
    editor = cell.locator(".jp-InputArea-editor")
    for attempt in range(3):
        answer_dialogs(cell.page)
        editor.click()
        expect(editor.locator(".cm-content")).to_be_focused()
        cell.page.keyboard.press("Shift+Enter")
        try:
            expect(prompt).not_to_have_text("[ ]:", timeout=60_000)
            return
        except AssertionError:
            if attempt == 2:
                raise
