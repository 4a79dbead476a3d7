"""msdebug: see and steer MindSpore's runtime context from a notebook.

In IPython or Jupyter: ``%load_ext msdebug`` then ``%mscontext``. In Python:
``msdebug.get``, ``msdebug.set``, ``with msdebug.context(...)``, ``msdebug.snapshot``.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

# ``set`` is deliberately not in __all__: ``from msdebug import *`` must not hide the builtin.
__all__ = [
    "EnvConfig",
    "__version__",
    "capture_print",
    "context",
    "describe",
    "get",
    "last_print",
    "load_ipython_extension",
    "open_dump",
    "panel",
    "read_print_file",
    "restore",
    "snapshot",
    "table",
    "unload_ipython_extension",
]


def get(key: str) -> Any:
    """The current value of one context key, without freezing it (see ``settings.get``)."""
    from . import settings

    return settings.get(key)


def set(**values: Any):  # noqa: A001 - the public name the docs promise: msdebug.set(mode="graph")
    """Validate and apply context keys, all or none; returns what changed.

    >>> msdebug.set(mode="graph", pynative_synchronize=True)
    """
    from . import settings

    return settings.apply(values)


def context(**values: Any):
    """``with msdebug.context(mode="pynative"):`` the block runs with these settings, then
    every key is as it was before, also after an error."""
    from . import settings

    return settings.context(values)


def snapshot():
    """Every restorable key's value now; ``msdebug.restore(snap)`` puts them back."""
    from . import settings

    return settings.snapshot()


def restore(snap):
    """Put back a :func:`snapshot`; returns what changed."""
    from . import settings

    return settings.restore(snap)


def table(changed: bool = False):
    """The context as a table (rich HTML in a notebook, text elsewhere)."""
    from . import settings

    return settings.state(changed_only=changed)


def describe(key: str):
    """What one key means, its allowed values, default, current value and status."""
    from . import settings

    return settings.describe(key)


def capture_print(file=None, show: bool = True):
    """``with msdebug.capture_print() as cap:`` every Print operator output (GRAPH, PYNATIVE,
    ``@jit``) and ``print()`` of the block, in order; shown when the block ends, and kept in
    ``cap.log`` (``.text``, ``.items``, ``.tensors``). ``file=`` also writes it to a new file."""
    from .capture import capture_print as _capture

    return _capture(file=file, show=show)


def read_print_file(path, format: str = "auto"):  # noqa: A002 - mirrors the documented parameter name
    """Decode a print file: MindSpore's binary one (Ascend) or msdebug's text one (CPU/GPU)."""
    from .printfile import read_print_file as _read

    return _read(path, format)


def last_print():
    """The output the last captured cell printed (``%%msprint`` or ``%msprint on``), or None."""
    from .ipython.prefs import active

    prefs = active()
    return prefs.prints.last if prefs is not None else None


def panel():
    """A settings panel (ipywidgets) for the context, kept in sync with it both ways.

    Raises
    ------
    WidgetsMissingError
        When ipywidgets is not installed; the message says how to install it.
    """
    from .ipython.panel import panel as _panel

    return _panel()


def open_dump(path):
    """An inline explorer of an RDR tree, a save_graphs directory or one ``.ir`` file."""
    from .dumps.explorer import open_dump as _open_dump

    return _open_dump(path)


def __getattr__(name: str) -> Any:
    # EnvConfig is a class: imported on first use, like the functions above.
    if name == "EnvConfig":
        from .recorders.envconfig import EnvConfig

        return EnvConfig
    raise AttributeError(f"module 'msdebug' has no attribute {name!r}")


def load_ipython_extension(ipython) -> None:
    """``%load_ext msdebug``: registers %mscontext; does not import MindSpore."""
    from .ipython.extension import load

    load(ipython)


def unload_ipython_extension(ipython) -> None:
    """``%unload_ext msdebug``: undoes everything loading did."""
    from .ipython.extension import unload

    unload(ipython)
