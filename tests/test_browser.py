"""The panel in a real JupyterLab, driven through Debian's Chromium with Playwright.

Playwright cannot download its own browsers here, so it drives the system Chromium
(``.ci/run`` installs Debian's ``chromium`` where it is missing). Without a Chromium the
test is skipped.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import nbformat
import pytest

from helpers import kernel_env

CHROMIUM = next((path for path in ("/usr/bin/chromium", shutil.which("chromium")) if path and os.path.exists(path)), None)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="no Chromium (apt-get install chromium)"),
]

# The machine may have two cores: JupyterLab's start and MindSpore's import take a while.
START_TIMEOUT_S = 120
CELL_TIMEOUT_MS = 180_000


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _notebook(path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nb.cells = [
        nbformat.v4.new_code_cell("%load_ext msdebug\n%mscontext --panel"),
        nbformat.v4.new_code_cell('import mindspore\nprint("mode is", mindspore.get_context("mode"))'),
    ]
    nbformat.write(nb, path)


@pytest.fixture
def lab(tmp_path):
    """JupyterLab on 127.0.0.1 with a token, serving a temporary directory with one notebook."""
    root = tmp_path / "lab"
    root.mkdir()
    _notebook(root / "panel.ipynb")
    port, token = _free_port(), secrets.token_hex(16)
    env = {**kernel_env(), "JUPYTER_CONFIG_DIR": str(tmp_path / "config"), "JUPYTER_RUNTIME_DIR": str(tmp_path / "run")}
    command = [
        sys.executable, "-m", "jupyter", "lab",
        "--ip=127.0.0.1", f"--port={port}", "--no-browser", "--ServerApp.open_browser=False",
        f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
        f"--LabApp.workspaces_dir={tmp_path / 'workspaces'}", f"--LabApp.user_settings_dir={tmp_path / 'settings'}",
    ]  # fmt: skip
    if os.geteuid() == 0:
        command.append("--allow-root")
    log = open(tmp_path / "jupyterlab.log", "w")
    server = subprocess.Popen(command, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        try:
            urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=5).read()
            break
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                server.kill()
                log.close()
                pytest.fail("JupyterLab did not start:\n" + (tmp_path / "jupyterlab.log").read_text()[-3000:])
            time.sleep(0.5)
    try:
        yield url, token
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


def test_clicking_graph_in_the_panel_sets_graph_mode(lab, tmp_path):
    from playwright.sync_api import expect, sync_playwright

    url, token = lab
    started = time.monotonic()
    screenshot = tmp_path / "panel.png"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]
        )
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1400})
            page.set_default_timeout(CELL_TIMEOUT_MS)
            # expect() has its own timeout (5 s by default), which page.set_default_timeout does not change.
            expect.set_options(timeout=CELL_TIMEOUT_MS)
            page.goto(f"{url}/lab/tree/panel.ipynb?token={token}")
            cells = page.locator(".jp-NotebookPanel:visible .jp-Cell")
            expect(cells).to_have_count(2)
            # Wait for the kernel before running anything.
            expect(page.locator(".jp-NotebookPanel:visible .jp-Notebook-ExecutionIndicator[data-status='idle']")).to_have_count(1)

            cells.nth(0).locator(".jp-InputArea-editor").click()
            page.keyboard.press("Shift+Enter")
            graph = cells.nth(0).locator(".widget-toggle-button", has_text="GRAPH")
            expect(graph).to_be_visible()
            expect(cells.nth(0).locator(".jp-OutputArea-output")).to_contain_text("PYNATIVE · CPU:0 · sync off")
            graph.click()
            # The kernel answers with the refreshed panel: the summary line follows.
            expect(cells.nth(0).locator(".jp-OutputArea-output")).to_contain_text("GRAPH · CPU:0 · sync off")
            expect(graph).to_have_class(re.compile(r"mod-active"))

            cells.nth(1).locator(".jp-InputArea-editor").click()
            page.keyboard.press("Shift+Enter")
            output = cells.nth(1).locator(".jp-OutputArea-output")
            expect(output).to_contain_text("mode is")
            printed = output.inner_text()
            # The notebook scrolls inside its own panel: photograph the panel's output itself.
            cells.nth(0).locator(".jp-OutputArea-output").screenshot(path=str(screenshot))
        finally:
            browser.close()
    print(f"screenshot: {screenshot} (browser test took {time.monotonic() - started:.1f} s)")
    assert printed.strip() == "mode is 0"
