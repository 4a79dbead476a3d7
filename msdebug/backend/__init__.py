"""The only code that imports MindSpore, lazily; it absorbs the differences between 2.7 and 2.10.

* :mod:`.version`: which MindSpore is installed, whether it is imported (never imports it);
* :mod:`.context`: :class:`Backend`, the context read without freezing and written after validation;
* :mod:`.process`: the first import, the one Backend, compile tracking, queued work;
* :mod:`.protos`: MindSpore's own generated protobuf modules;
* :mod:`.datadump`: the data-dump variable and when MindSpore took it; :mod:`.hooks`: PyNative op hooks;
* :mod:`.profile`: MindSpore's profiler API (the only module that imports ``mindspore.profiler``).
"""

from __future__ import annotations

from .context import Backend, DeviceState, first_cell, machine_default
from .process import (
    capture_pristine,
    get_backend,
    graph_compiled,
    synchronize,
    track_compiles,
    untrack_compiles,
    unwatch,
    watch_first_import,
)
from .protos import anf_ir_model
from .version import INSTALL_HINT, installed_version, is_imported, package_version

__all__ = [
    "Backend",
    "DeviceState",
    "INSTALL_HINT",
    "anf_ir_model",
    "capture_pristine",
    "first_cell",
    "get_backend",
    "graph_compiled",
    "installed_version",
    "is_imported",
    "machine_default",
    "package_version",
    "synchronize",
    "track_compiles",
    "untrack_compiles",
    "unwatch",
    "watch_first_import",
]
