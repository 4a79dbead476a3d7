"""The one way a model shows itself: ``_repr_html_`` and ``__repr__`` through its view functions.

A model class names its pair of view functions directly, in a function of the :mod:`msdebug.views`
package that runs the first time a model of the class is shown (readers never import views at
module level; the package imports a view module when it is first named)::

    class GraphView(Rendered):
        _views = rendered_by(lambda v: (v.explorer.html_graph, v.explorer.text_graph))
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any, ClassVar

Render = Callable[[Any], str]
Pair = tuple[Render, Render]

__all__ = ["Rendered", "ViewPair", "rendered_by"]


class ViewPair:
    """The ``(html, text)`` view functions of one model class, picked from :mod:`msdebug.views` on first use."""

    def __init__(self, pick: Callable[[ModuleType], Pair]) -> None:
        self._pick = pick
        self._pair: Pair | None = None

    def pair(self) -> Pair:
        if self._pair is None:
            from .. import views

            self._pair = self._pick(views)
        return self._pair


def rendered_by(pick: Callable[[ModuleType], Pair]) -> ViewPair:
    """A model class's ``_views``: ``pick(msdebug.views)`` gives its ``(html, text)`` functions."""
    return ViewPair(pick)


class Rendered:
    """A model shown through the pair of view functions its class names in ``_views``."""

    _views: ClassVar[ViewPair]

    def _repr_html_(self) -> str:
        return self._views.pair()[0](self)

    def __repr__(self) -> str:
        return self._views.pair()[1](self)
