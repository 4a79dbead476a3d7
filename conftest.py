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
