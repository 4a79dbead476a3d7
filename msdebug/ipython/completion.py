"""Tab completion for ``%mscontext`` (key names, then allowed values after ``key=``) and
``%msprint`` (its actions).

Uses IPython's Matcher API v2 and only the key catalog, so completing never imports
MindSpore.
"""

from __future__ import annotations

from IPython.core.completer import SimpleCompletion, context_matcher

from .. import backend
from .magics.context import FLAGS

__all__ = ["mscontext_matcher", "msprint_matcher", "register", "unregister"]

_NO_MATCH = {"completions": [], "suppress": False}


def _settable_names() -> list[str]:
    from ..keys import CATALOG, SHORTHANDS

    version = backend.installed_version()
    names = [
        name
        for name, key in CATALOG.items()
        if key.available_in(version) and not key.ignored
    ]
    return [*SHORTHANDS, *names]


@context_matcher(identifier="msdebug.mscontext")
def mscontext_matcher(context):
    """Complete after ``%mscontext `` (or on the first line of ``%%mscontext``)."""
    lines = context.text_until_cursor.split("\n")
    line = lines[-1].lstrip()
    if not (line.startswith("%mscontext ") or (len(lines) == 1 and line.startswith("%%mscontext "))):
        return _NO_MATCH
    fragment = "" if line[-1].isspace() else line.split()[-1]
    if fragment.startswith("-"):
        found = [SimpleCompletion(flag, type="param") for flag in FLAGS if flag.startswith(fragment)]
    elif "=" in fragment:
        from ..keys import CATALOG, SHORTHANDS

        name, _, typed = fragment.partition("=")
        key = CATALOG.get(name) or SHORTHANDS.get(name)
        values = key.kind.completions() if key is not None else ()
        found = [SimpleCompletion(value, type="value") for value in values if value.lower().startswith(typed.lower())]
        fragment = typed
    else:
        found = [SimpleCompletion(f"{name}=", type="param") for name in _settable_names() if name.startswith(fragment)]
    return {"completions": found, "suppress": bool(found), "matched_fragment": fragment}


@context_matcher(identifier="msdebug.msprint")
def msprint_matcher(context):
    """``%msprint on|off|status|--help``; ``%%msprint --file``."""
    lines = context.text_until_cursor.split("\n")
    line = lines[-1].lstrip()
    if line.startswith("%msprint "):
        actions = ("on", "off", "status", "--help")
    elif len(lines) == 1 and line.startswith("%%msprint "):
        actions = ("--file",)
    else:
        return _NO_MATCH
    fragment = "" if line[-1].isspace() else line.split()[-1]
    if len(line.split()) > (1 if line[-1].isspace() else 2):
        return _NO_MATCH
    found = [SimpleCompletion(action, type="param") for action in actions if action.startswith(fragment)]
    return {"completions": found, "suppress": bool(found), "matched_fragment": fragment}


_MATCHERS = (mscontext_matcher, msprint_matcher)


def register(shell) -> None:
    """Add the matchers to ``shell.Completer`` (once)."""
    matchers = shell.Completer.custom_matchers
    for matcher in _MATCHERS:
        if matcher not in matchers:
            matchers.append(matcher)


def unregister(shell) -> None:
    """Remove what :func:`register` added."""
    matchers = shell.Completer.custom_matchers
    for matcher in _MATCHERS:
        while matcher in matchers:
            matchers.remove(matcher)
