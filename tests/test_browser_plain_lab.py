"""msdebug in a JupyterLab that has no status-bar extension (msdebug installed without Node, or a
JupyterLab of another environment): the kernel side must not talk to a front end that is not
there. Driven through Debian's Chromium (see lab.py).
"""

from __future__ import annotations

import json

from lab import browser_marks, chromium, jupyterlab, labextension_env, on, open_notebook, run_cell, write_notebook

pytestmark = browser_marks

CELLS = ["%load_ext msdebug", "import mindspore", "%mscontext mode=graph", "%unload_ext msdebug"]


def test_loading_msdebug_where_the_extension_is_missing_logs_nothing_in_the_browser(tmp_path):
    from playwright.sync_api import expect

    errors: list[str] = []
    # A JupyterLab with msdebug's extension turned off, whether or not it would find one.
    config = tmp_path / "config" / "labconfig"
    config.mkdir(parents=True)
    (config / "page_config.json").write_text(json.dumps({"disabledExtensions": {"msdebug": True}}))
    with jupyterlab(tmp_path, env=labextension_env(tmp_path)) as lab:
        write_notebook(lab.root / "plain.ipynb", CELLS)
        with chromium(width=1280, height=720) as page:
            on(page, "console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
            on(page, "pageerror", lambda error: errors.append(f"page error: {error}"))
            cells = open_notebook(page, lab, "plain.ipynb", cells=len(CELLS))
            for index in range(len(CELLS)):
                run_cell(page, cells, index)
            expect(cells.nth(len(CELLS) - 1).locator(".jp-InputPrompt")).to_have_text("[4]:")
            expect(page.locator(".msdebug-StatusItem")).to_have_count(0)  # the extension is indeed absent
            # The kernel has handled every message of the cells (a comm_open would come before idle).
            expect(page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']")).to_have_count(1)
            page.goto("about:blank")  # this JupyterLab stops next: the page must not call it back
    assert errors == []
