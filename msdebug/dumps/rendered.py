"""The one way a reader's model shows itself: ``_repr_html_`` and ``__repr__`` through its view functions.

Readers never import views at module level. A reader module makes one :class:`Views` from a function
that imports its view module; each model class picks its pair of view functions from that module
with a function, run the first time a model of the class is shown::

    @Views
    def _VIEWS():
        from ..views import explorer

        return explorer

    class GraphView(Rendered):
        _views = _VIEWS.pick(lambda v: (v.html_graph, v.text_graph))
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any, ClassVar

Render = Callable[[Any], str]
Pair = tuple[Render, Render]

__all__ = ["Rendered", "ViewPair", "Views"]


class Views:
    """A reader module's view module, imported by ``load`` the first time one of its models is shown."""

    def __init__(self, load: Callable[[], ModuleType]) -> None:
        self._load = load
        self._module: ModuleType | None = None

    def module(self) -> ModuleType:
        if self._module is None:
            self._module = self._load()
        return self._module

    def pick(self, pick: Callable[[ModuleType], Pair]) -> ViewPair:
        """One model class's ``(html, text)`` functions: ``pick(view module)``, when first needed."""
        return ViewPair(self, pick)


class ViewPair:
    """The ``(html, text)`` view functions of one model class, picked from its view module on first use."""

    def __init__(self, views: Views, pick: Callable[[ModuleType], Pair]) -> None:
        self._views = views
        self._pick = pick
        self._pair: Pair | None = None

    def pair(self) -> Pair:
        if self._pair is None:
            self._pair = self._pick(self._views.module())
        return self._pair


class Rendered:
    """A model shown through the pair of view functions its class names in ``_views``."""

    _views: ClassVar[ViewPair]

    def _repr_html_(self) -> str:
        return self._views.pair()[0](self)

    def __repr__(self) -> str:
        return self._views.pair()[1](self)
