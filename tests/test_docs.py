"""README keeps up with the notebooks and the screenshots it shows."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")


def test_readme_names_every_tutorial():
    tutorials = sorted(path.name for path in (REPO / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    assert tutorials, "no tutorials found"
    missing = [name for name in tutorials if f"notebooks/{name}" not in README]
    assert missing == [], f"README's tutorial list lacks {missing}"


def test_readme_screenshots_exist_and_are_small():
    shots = re.findall(r"!\[[^\]]*\]\((docs/screenshots/[^)]+\.png)\)", README)
    assert {"docs/screenshots/explorer_exec_order.png", "docs/screenshots/print_log_scalars.png"} <= set(shots)
    for shot in shots:
        path = REPO / shot
        assert path.is_file(), shot
        assert path.stat().st_size < 200_000, f"{shot} is {path.stat().st_size} bytes"
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", shot


def test_no_tutorial_waits_on_a_clock():
    """The tutorials run as tests (nbval) on loaded machines: a cell waits for the event it needs
    (``dp.wait_read()`` for the profiler's monitor), never for a time that is long enough here."""
    import nbformat

    sleeping = [
        f"{path.name} cell {number}: {line.strip()}"
        for path in sorted((REPO / "notebooks").glob("[0-9][0-9]_*.ipynb"))
        for number, cell in enumerate(nbformat.read(path, as_version=4).cells)
        if cell.cell_type == "code"
        for line in cell.source.splitlines()
        if re.search(r"\bsleep\(", line)
    ]
    assert sleeping == []
