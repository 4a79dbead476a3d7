"""The one way a reader's model renders itself: ``_repr_html_`` and ``__repr__`` through its view functions.

Readers never import views at module level: a reader module hands :class:`Views` a function that
imports its view module and returns ``{model class: (html function, text function)}``; it runs the
first time one of the module's models is shown.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

Render = Callable[[Any], str]

__all__ = ["Rendered", "Views"]


class Views:
    """A reader module's table of view functions, built by ``load`` on first use."""

    def __init__(self, load: Callable[[], dict[type, tuple[Render, Render]]]) -> None:
        self._load = load
        self._table: dict[type, tuple[Render, Render]] | None = None

    def of(self, model: object) -> tuple[Render, Render]:
        """``(html, text)`` for ``model``: those of its class, or of the nearest base class listed."""
        if self._table is None:
            self._table = self._load()
        for cls in type(model).__mro__:
            if cls in self._table:
                return self._table[cls]
        raise TypeError(f"no view renders {type(model).__name__}")


class Rendered:
    """A model shown through the view functions its module's :class:`Views` lists for its class."""

    _views: ClassVar[Views]

    def _repr_html_(self) -> str:
        return self._views.of(self)[0](self)

    def __repr__(self) -> str:
        return self._views.of(self)[1](self)
