"""Tab completion for every msdebug magic, from the magics' declared specs: bare words, options
and their values; for ``%mscontext`` also key names, then allowed values after ``key=``.

Uses IPython's Matcher API v2 and only the specs and the key catalog, so completing never
imports MindSpore.
"""

from __future__ import annotations

from IPython.core.completer import SimpleCompletion, context_matcher

from .. import backend
from .magics import MAGICS
from .magics._parse import HELP, Form

__all__ = ["magic_matcher", "register", "unregister"]

_NO_MATCH = {"completions": [], "suppress": False}
_SPECS = {spec.magic: spec for magics in MAGICS for spec in magics.SPECS}


def _settable_names() -> list[str]:
    from ..keys import CATALOG, SHORTHANDS

    version = backend.installed_version()
    names = [name for name, key in CATALOG.items() if key.available_in(version) and not key.ignored]
    return [*SHORTHANDS, *names]


def _setting_values(fragment: str) -> tuple[list[SimpleCompletion], str]:
    """After ``key=``: the key's allowed values."""
    from ..keys import CATALOG, SHORTHANDS

    name, _, typed = fragment.partition("=")
    key = CATALOG.get(name) or SHORTHANDS.get(name)
    values = key.kind.completions() if key is not None else ()
    return [SimpleCompletion(v, type="value") for v in values if v.lower().startswith(typed.lower())], typed


def _form_of(context) -> tuple[Form, list[str], str] | None:
    """The form being typed (only on a magic's own line), the words before the cursor's, and the fragment."""
    lines = context.text_until_cursor.split("\n")
    line = lines[-1].lstrip()
    cell = line.startswith("%%")
    if cell and len(lines) > 1:
        return None  # a cell magic's line is the cell's first line; below it the body is Python
    name, space, rest = line.lstrip("%").partition(" ")
    spec = _SPECS.get(name)
    form = spec and (spec.cell if cell else spec.line)
    if not space or form is None:
        return None
    words = rest.split()
    fragment = "" if not rest or rest[-1].isspace() else words.pop()
    return form, words, fragment


@context_matcher(identifier="msdebug.magics")
def magic_matcher(context):
    """Complete on the line of any msdebug magic, from its spec."""
    found_form = _form_of(context)
    if found_form is None:
        return _NO_MATCH
    form, before, fragment = found_form
    option = form.option(before[-1]) if before else None
    if option is not None and not option.flag:
        found = [SimpleCompletion(v, type="value") for v in option.choices if v.startswith(fragment)]
    elif fragment.startswith("-"):
        names = [o.name for o in form.options] + [HELP]
        found = [SimpleCompletion(name, type="param") for name in names if name.startswith(fragment)]
    elif form.settings and "=" in fragment:
        found, fragment = _setting_values(fragment)
    elif form.settings:
        found = [SimpleCompletion(f"{n}=", type="param") for n in _settable_names() if n.startswith(fragment)]
    elif form.words and not any(w in form.words for w in before):
        offered = [*form.words, *([HELP] if not before else [])]
        found = [SimpleCompletion(word, type="param") for word in offered if word.startswith(fragment)]
    else:
        found = [SimpleCompletion(o.name, type="param") for o in form.options if o.name.startswith(fragment)]
    return {"completions": found, "suppress": bool(found), "matched_fragment": fragment}


def register(shell) -> None:
    """Add the matcher to ``shell.Completer`` (once)."""
    if magic_matcher not in shell.Completer.custom_matchers:
        shell.Completer.custom_matchers.append(magic_matcher)


def unregister(shell) -> None:
    """Remove what :func:`register` added."""
    while magic_matcher in shell.Completer.custom_matchers:
        shell.Completer.custom_matchers.remove(magic_matcher)
