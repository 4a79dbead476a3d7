"""Loaded first by every pytest process of this repository: the controller and each worker.

jsonschema, when it is imported, builds the grammar of the optional ``rfc3987_syntax`` (an
Earley parser: 3 to 5 CPU-seconds here) to check the "iri" string format. nbval's plugin
imports nbformat, and so jsonschema, in every pytest process, and no schema those processes
validate uses that format (nbformat's notebook schema, msdebug's status schema). So the import
is blocked here, before nbval loads: jsonschema then leaves that one format unchecked. That is
why nbval is loaded from this file (``pytest_plugins``) with its entry point off (``-p
no:nbval`` in pyproject.toml). Kernels, JupyterLab and nbconvert run as processes of their own
and import jsonschema as they always do.
"""

import sys

sys.modules.setdefault("rfc3987_syntax", None)  # None in sys.modules: "import" raises ImportError

pytest_plugins = ["nbval.plugin"]


def pytest_configure(config):
    """msdebug's bytecode is written once, before any test starts (by the controller).

    The tests start about 400 Python processes that import msdebug: kernels, fresh interpreters,
    ranks, CLI runs. Where PYTHONDONTWRITEBYTECODE is set (some machines set it for everyone), no
    import writes ``__pycache__``, and every one of them compiled msdebug's source again: about 30 s
    of a run on 2 cores, in every fresh clone. Bytecode that exists is still read.
    """
    if hasattr(config, "workerinput") or not sys.dont_write_bytecode:
        return
    import compileall
    from pathlib import Path

    import msdebug

    compileall.compile_dir(Path(msdebug.__file__).parent, quiet=1)
