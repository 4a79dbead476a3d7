"""nbval runs the tutorials in a kernel started the way a Jupyter server starts one.

pytest sets PYTEST_CURRENT_TEST, nbval's kernel inherits it, and ipykernel then turns its
fd capture off: C++ output would vanish from the cells and the stored outputs would be
compared against less than a person sees. The kernel gets the environment without it.

Stored numbers are compared with a tolerance (``tests/stored_numbers.py``): they come from
MindSpore's float32 kernels, whose last bits depend on the reader's vector unit.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from stored_numbers import use_number_tolerance  # noqa: E402
from warm import use_warm_kernels  # noqa: E402


def pytest_configure(config):
    import nbval.kernel

    use_warm_kernels()  # forked from a kernel that has imported MindSpore (tests/warm.py)
    use_number_tolerance()  # within 1%, integers and text exactly (tests/stored_numbers.py)

    start = nbval.kernel.start_new_kernel

    def start_like_jupyter(*args, **kwargs):
        kwargs.setdefault("env", {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"})
        return start(*args, **kwargs)

    nbval.kernel.start_new_kernel = start_like_jupyter
    nbval.kernel.RunningKernel.get_message = _with_display_updates(nbval.kernel.RunningKernel.get_message)


def _with_display_updates(get_message):
    """nbval ignores ``update_display_data``; JupyterLab and nbconvert (which stores the
    outputs) replace the display it names. So does this: the ``data`` nbval keeps of a display
    is updated in place (``%%mswatch``'s live table, then its report)."""
    import nbformat

    shown = {}

    def get(self, stream, timeout=None):
        msg = get_message(self, stream, timeout=timeout)
        content = msg.get("content", {})
        display_id = (content.get("transient") or {}).get("display_id")
        if msg.get("msg_type") == "display_data" and display_id:
            # a NotebookNode: nbval stores it as it is (any other mapping it copies)
            content["data"] = shown[display_id] = nbformat.from_dict(content["data"])
        elif msg.get("msg_type") == "update_display_data" and display_id in shown:
            shown[display_id].clear()
            shown[display_id].update(content["data"])
            msg = {**msg, "parent_header": {}}  # handled: nbval passes over a message of no cell
        return msg

    return get
