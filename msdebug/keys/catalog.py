"""The one catalog: every context key msdebug describes, the dict keys' entries, the shorthands,
and :func:`lookup`.

It joins the ``set_context`` keys (:mod:`.context`) and the ``set_auto_parallel_context`` keys
(:mod:`.parallel`); the two lists live apart, and only here are they one.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..errors import UnknownKeyError, did_you_mean, echo
from .context import ContextKey, _entries
from .kinds import UNSET, DeviceSpec, Opaque
from .parallel import _parallel_entries

__all__ = ["CATALOG", "ENTRIES", "SHORTHANDS", "lookup"]


CATALOG: dict[str, ContextKey] = {key.name: key for key in [*_entries(), *_parallel_entries()]}

# Dict keys and the catalog keys that are their entries (jit_config -> jit_level, infer_boost).
ENTRIES: dict[str, tuple[str, ...]] = {}
for _entry in CATALOG.values():
    if _entry.part_of:
        ENTRIES[_entry.part_of[0]] = (*ENTRIES.get(_entry.part_of[0], ()), _entry.name)
del _entry

SHORTHANDS: dict[str, ContextKey] = {
    "device": ContextKey(
        "device",
        DeviceSpec(),
        None,
        "device",
        "Shorthand for device_target and device_id together: device=CPU, device=GPU:1. msdebug applies "
        "it with mindspore.set_device(), which can be called once per process, before the first operator.",
        replacement="mindspore.set_device(target, device_id)",
    ),
}


def lookup(name: str, extra: Iterable[str] = ()) -> ContextKey:
    """Return the catalog entry for ``name``.

    Parameters
    ----------
    name : str
        A context key or a shorthand such as ``device``.
    extra : iterable of str
        Live keys of the installed MindSpore that the catalog does not describe; they are
        returned as :class:`Opaque` entries.

    Raises
    ------
    UnknownKeyError
        With a "did you mean" suggestion from every known name.
    """
    entry = CATALOG.get(name) or SHORTHANDS.get(name)
    if entry is not None:
        return entry
    extra = tuple(extra)
    if name in extra:
        return ContextKey(name, Opaque(), UNSET, "other", "Not described by msdebug; passed to MindSpore as is.")
    if not name:
        raise UnknownKeyError("empty key name; write key=value, e.g. mode=graph.")
    hint = did_you_mean(name, [*CATALOG, *SHORTHANDS, *extra])
    raise UnknownKeyError(f"unknown context key {echo(name)}.{hint} %mscontext lists every key.")
