"""msdebug: see and steer MindSpore's runtime context from a notebook.

In IPython or Jupyter: ``%load_ext msdebug`` then ``%mscontext``. In Python:
``msdebug.get``, ``msdebug.set``, ``with msdebug.context(...)``, ``msdebug.snapshot``.
"""

from __future__ import annotations

import sys
from typing import Any

# ``set`` is deliberately not in __all__: ``from msdebug import *`` must not hide the builtin.
__all__ = [
    "EnvConfig",
    "ProfileEpochs",
    "ProfileSteps",
    "compare_profiles",
    "dynamic_profile",
    "open_profile",
    "profile",
    "profiler_options",
    "step",
    "watch",
    "last_watch",
    "__version__",
    "capture_print",
    "context",
    "describe",
    "diff",
    "dump_status",
    "first_nonfinite",
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


def table(changed: bool = False, all_keys: bool = False):
    """The context as a table (rich HTML in a notebook, text elsewhere); ``all_keys`` unfolds
    the keys that do nothing on this device and names the removed ones."""
    from . import settings

    return settings.state(changed_only=changed, all_keys=all_keys)


def describe(key: str):
    """What one key means, its allowed values, default, current value and status."""
    from . import settings

    return settings.describe(key)


def capture_print(file=None, show: bool = True):
    """``with msdebug.capture_print() as cap:`` every Print operator output (GRAPH, PYNATIVE,
    ``@jit``) and ``print()`` of the block, in order; shown when the block ends, and kept in
    ``cap.log`` (``.text``, ``.items``, ``.tensors``). ``file=`` also writes it to a new file."""
    from .recorders.print import capture_print as _capture

    return _capture(file=file, show=show)


def read_print_file(path, format: str = "auto"):  # noqa: A002 - mirrors the documented parameter name
    """Decode a print file: MindSpore's binary one (Ascend) or msdebug's text one (CPU/GPU)."""
    from .dumps.print import read_print_file as _read

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
    """An inline explorer of an RDR tree, a save_graphs directory, one ``.ir`` file or a data dump."""
    from .dumps.explorer import open_dump as _open_dump

    explorer = _open_dump(path)
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is not None and getattr(shell, "kernel", None) is not None:
        from .ipython.explorer import show_as_widget

        show_as_widget(shell)  # in a notebook it displays as the interactive explorer
    return explorer


def profile(steps=None, output=None, timeline: bool = False, top: int = 15, verbose: bool = False, order: str = "time"):
    """``with msdebug.profile(steps="2:5") as prof:`` profile the block's ops; ``prof.step()`` (or
    ``msdebug.step()``) ends each step; ``prof.report`` is the inline report afterwards."""
    from .recorders.profile import profile as _profile

    return _profile(steps=steps, output=output, timeline=timeline, top=top, verbose=verbose, order=order)


def step(loss=None) -> None:
    """End a step of the running ``msdebug.profile()`` / ``%%msprofile`` and of the running
    ``msdebug.watch()`` / ``%%mswatch`` (nothing outside them); ``loss`` is checked by the watch."""
    from .recorders.profile import step as _step

    _step()
    if "msdebug.recorders.watch" in sys.modules:  # no watch ever started: nothing to import
        sys.modules["msdebug.recorders.watch"].step(loss)


def watch(*conditions: str, every: int = 1, stop: bool = True, net=None, optimizer=None, save=None):
    """``with msdebug.watch("grads:*:vanishing", every=10) as w:`` watch the weights, gradients,
    activations and loss of the training in the block, step by step (``msdebug.step(loss)`` ends
    a step; without it the optimizer's call does); no condition: the recommended set. With
    ``stop`` the block ends at the end of the first step a condition trips. ``w.callback()`` is
    the ``Model.train`` callback; ``w.history`` what was recorded."""
    from .recorders.watch import watch as _watch

    return _watch(*conditions, every=every, stop=stop, net=net, optimizer=optimizer, save=save)


def last_watch():
    """The statistics the last watch recorded: a pandas DataFrame (a list of rows without pandas)."""
    from .recorders.watch import last_watch as _last

    return _last()


def open_profile(path, top: int = 15, order: str = "time"):
    """The report of any profiler output directory, also a cluster copy with ``rank_*`` inside."""
    from .recorders.profile import open_profile as _open

    return _open(path, top=top, order=order)


def compare_profiles(before, after, top: int = 15, order: str = "change"):
    """Two profiles per op type and per op: before / after, speed-up, new and vanished ops."""
    from .recorders.profile import compare_profiles as _compare

    return _compare(before, after, top=top, order=order)


def profiler_options(apply: bool = True, **values: Any):
    """Validate ``MS_PROFILER_OPTIONS`` and set it; says when it is too late and gives a first cell."""
    from .recorders.profile_options import profiler_options as _options

    return _options(apply=apply, **values)


def dynamic_profile(
    cfg_path="./dyn_cfg", output_path="./dyn_profile_data", poll_interval: int = 2, verbose: bool = False
):
    """MindSpore's DynamicProfilerMonitor (``.callback``, ``.step()``) with ``.edit()`` for its config."""
    from .recorders.profile_dynamic import dynamic_profile as _dynamic

    return _dynamic(cfg_path=cfg_path, output_path=output_path, poll_interval=poll_interval, verbose=verbose)


def first_nonfinite(path, rank=None):
    """The first NaN or Inf of a data dump in execution order: its op, kind, statistics and
    source line (what ``msdebug dump PATH --nan`` prints)."""
    from .dumps.nan import scan_dump

    return scan_dump(path, rank=rank)


def diff(a, b, rtol=None, atol=None, rule: str = "allclose", rank=None):
    """The first op where two runs differ: each a directory (a run saved by ``%%msdiff --save``,
    a MindSpore data dump or an msprobe dump) or a run already read. ``b`` is the reference."""
    from .dumps.diff import diff_runs, read_any_run
    from .dumps.runs import Run

    runs = [side if isinstance(side, Run) else read_any_run(side, rank=rank) for side in (a, b)]
    return diff_runs(runs[0], runs[1], rtol, atol, rule)


def dump_status():
    """The data dump of this process: what is configured, what MindSpore took, what it wrote."""
    from .recorders.datadump import dump_status as _status

    return _status()


def _version() -> str:
    """The version in ``extension/package.json``, the one version source of the Python and npm
    packages: read from the source tree when running from a checkout, else from the metadata
    the build wrote (hatch-nodejs-version copies it there)."""
    import json
    from importlib.metadata import PackageNotFoundError, version
    from pathlib import Path

    source = Path(__file__).resolve().parent.parent / "extension" / "package.json"
    try:
        package = json.loads(source.read_text(encoding="utf-8"))
        if package.get("name") == "msdebug":
            return package["version"]
    except (OSError, ValueError, KeyError):
        pass
    try:
        return version("msdebug")
    except PackageNotFoundError:
        return "unknown"


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    """Where ``jupyter labextension develop`` finds the built status-bar extension."""
    return [{"src": "labextension", "dest": "msdebug"}]


def __getattr__(name: str) -> Any:
    if name == "__version__":
        globals()["__version__"] = found = _version()
        return found
    # Classes (and the callback factories, whose classes derive from MindSpore's Callback)
    # are imported on first use, like the functions above.
    if name == "EnvConfig":
        from .recorders.envconfig import EnvConfig

        return EnvConfig
    if name in ("ProfileSteps", "ProfileEpochs"):
        from .recorders import profile as _recorder

        return getattr(_recorder, name)
    raise AttributeError(f"module 'msdebug' has no attribute {name!r}")


def load_ipython_extension(ipython) -> None:
    """``%load_ext msdebug``: registers %mscontext; does not import MindSpore."""
    from .ipython.extension import load

    load(ipython)


def unload_ipython_extension(ipython) -> None:
    """``%unload_ext msdebug``: undoes everything loading did."""
    from .ipython.extension import unload

    unload(ipython)
