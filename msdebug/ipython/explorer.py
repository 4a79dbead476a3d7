"""``msdebug.open_dump(...)`` in JupyterLab: one interactive explorer (ipywidgets).

The explorer model (:mod:`msdebug.dumps.explorer`) stays a plain object whose methods
return static, bounded, escaped views. Here, in the IPython layer, a display formatter makes
a displayed explorer an :class:`ExplorerWidget` in a kernel with ipywidgets: the summary
with the chart of nodes per stage, the stages in pipeline order, a click on a kernel of the
execution order shows its IR node, a click on a stage opens its graph with a search box and
an op filter, two stages are diffed. The display bundle keeps the static summary as
``text/html`` and its text as ``text/plain``: what nbval compares, exported HTML shows and a
terminal prints.

The same layer names notebook cells: it gives :mod:`msdebug.dumps.cells` a namer that asks
the shell which execution count a cell file belongs to, so source lines read
"cell [14], line 12".
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..dumps import cells
from ..errors import MsDebugError
from ..views._html import NOTE, esc, tag

if TYPE_CHECKING:
    from ..dumps.explorer import Explorer

# By name: registering the formatter at %load_ext must not import the readers and views.
_EXPLORER = "msdebug.dumps.explorer.Explorer"

__all__ = ["CellNames", "ExplorerWidget", "register", "show_as_widget", "unregister"]

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
_MAX_OPTIONS = 300  # files per family in the list; a dump of thousands stays a small message
_ERROR = "color:#b00020;white-space:normal;overflow-wrap:anywhere"
_ROWS = 10


class CellNames:
    """Which ``In [N]`` a cell file belongs to: IPython's own map, the one its tracebacks use
    for "Cell In[14], line 12" (filled when a cell is compiled, so a view in the same cell
    already names it)."""

    def __init__(self, shell) -> None:
        self.shell = shell

    def __call__(self, path: str) -> int | None:
        number = (getattr(self.shell.compile, "_filename_map", None) or {}).get(path)
        return number if isinstance(number, int) else None


_hooks: dict[int, CellNames] = {}


def _bundle_for(shell, make):
    def bundle(model) -> dict[str, Any] | None:
        """The widget view where a front end can show widgets; None leaves the static views."""
        if getattr(shell, "kernel", None) is None:
            return None  # a terminal: text/plain is all there is
        try:
            widget = make(model)
        except ImportError:
            return None  # no ipywidgets: the static HTML is shown
        data = widget.widget._repr_mimebundle_()
        return {WIDGET_VIEW: data[WIDGET_VIEW]} if WIDGET_VIEW in data else None

    return bundle


def widget_formatter(shell, type_name: str, make) -> None:
    """Display models of the class ``type_name`` (by name: nothing is imported) as the widget
    ``make(model).widget`` in ``shell``, keeping their static HTML and text; a second call is
    harmless. The explorer and the diff walker are shown this way."""
    formatter = shell.display_formatter.mimebundle_formatter
    try:
        current = formatter.lookup_by_type(type_name)
    except KeyError:
        current = None
    if not getattr(current, "msdebug", False):
        formatter.pop(type_name, None)
        printer = _bundle_for(shell, make)
        printer.msdebug = True
        formatter.for_type_by_name(*type_name.rsplit(".", 1), printer)


def show_as_widget(shell) -> None:
    """Display explorers as :class:`ExplorerWidget` in ``shell`` (also without ``%load_ext``)."""
    widget_formatter(shell, _EXPLORER, ExplorerWidget)


def register(shell) -> None:
    """Show explorers as widgets in ``shell`` and name its cells; a second call is harmless."""
    show_as_widget(shell)
    if id(shell) in _hooks:
        return
    names = CellNames(shell)
    cells.add_namer(names)
    _hooks[id(shell)] = names


def unregister(shell) -> None:
    """Undo :func:`register`."""
    names = _hooks.pop(id(shell), None)
    if names is not None:
        cells.remove_namer(names)
    shell.display_formatter.mimebundle_formatter.pop(_EXPLORER, None)


def _views():
    from ..views import explorer

    return explorer


def _option(text: str, width: int = 44) -> str:
    """A list entry short enough for its box (a list that scrolls sideways hides the counts)."""
    return text if len(text) <= width else text[: width // 2 - 1] + "…" + text[-(width - width // 2) :]


def _error_html(error: Exception) -> str:
    text = str(error) if isinstance(error, MsDebugError) else f"{type(error).__name__}: {error}"
    return tag("div", esc(text), style=_ERROR)


class ExplorerWidget:
    """The explorer of one dump as ipywidgets; :attr:`widget` is what a notebook displays.

    Every control is an attribute, so tests (and people) can drive it by setting ``.value``
    as a click would: :attr:`stage_list` and :attr:`search` / :attr:`op` open a graph,
    :attr:`kernels` picks a kernel of the execution order, :attr:`before` / :attr:`after`
    choose the diff.
    """

    def __init__(self, explorer: Explorer, limit: int = 200, rank: int | None = None) -> None:
        import ipywidgets as w

        self._w = w
        self.explorer = explorer
        self.limit = limit
        self.rank = rank
        self.timings: dict[str, float] = {}
        self._quiet = False
        started = time.perf_counter()
        self.tabs = w.Tab(layout=w.Layout(width="auto"))
        self._panes: list[tuple[str, Any, Any]] = []  # title, box, fill (called on first view)
        if explorer.kind == "ir":
            self._graph_pane(single=True)
        else:
            self._summary_pane()
            if explorer.tree is not None:
                self._exec_pane()
            self._graph_pane()
            self._diff_pane()
            if explorer.tree is not None:
                self._memory_pane()
            if explorer.saved is not None and explorer.saved.family("dot"):
                self._dot_pane()
        self.tabs.children = [box for _, box, _ in self._panes]
        for number, (title, _, _) in enumerate(self._panes):
            self.tabs.set_title(number, title)
        self._filled: set[int] = set()
        self.tabs.observe(self._on_tab, names="selected_index")
        self.tabs.selected_index = 0
        self._fill(0)
        head = []
        ranks = [r.rank for r in explorer.tree.ranks] if explorer.tree is not None else []
        if len(ranks) > 1:  # a cluster's tree: one rank at a time, the same panes for each
            self.rank_choice = w.Dropdown(
                options=[(f"rank {r}", r) for r in ranks], value=rank if rank in ranks else ranks[0], description="rank"
            )
            self.rank_choice.observe(lambda change: self._switch_rank(change["new"]), names="value")
            head.append(self.rank_choice)
        self.widget = w.VBox([*head, self.tabs], layout=w.Layout(width="auto", max_width="100%"))
        self.widget.add_class("msdebug-explorer")
        self.timings["first render"] = time.perf_counter() - started

    # -- panes

    def _pane(self, title: str, children: list, fill=None) -> Any:
        box = self._w.VBox(children, layout=self._w.Layout(width="auto", overflow="hidden"))
        self._panes.append((title, box, fill))
        return box

    def _html(self, value: str = "") -> Any:
        return self._w.HTML(value, layout=self._w.Layout(width="auto", overflow="hidden"))

    def _summary_pane(self) -> None:
        self.summary = self._html()

        def fill() -> None:
            self.summary.value = self._guard(
                lambda: _views().html_explorer(self.explorer.summary(), self.explorer.stage_nodes(self.rank))
            )

        self._pane("Summary", [self.summary], fill)

    def _families(self) -> list[tuple[str, list[tuple[str, str]]]]:
        """(family title, [(label, name)]) of the IR files a person can open, stages first."""
        e = self.explorer
        out: list[tuple[str, list[tuple[str, str]]]] = []
        counts = dict(e.stage_nodes(self.rank).stages)
        stages = [
            (_option(f"{name}  ({counts[name]} nodes)" if name in counts else name), name)
            for name in e.stages(self.rank)
        ]
        if stages:
            out.append(("pipeline stages", stages))
        if e.tree is not None:
            rank = e.tree.rank(self.rank)
            kernel = [(_option(f.label), f.label) for f in rank.of_kind("graph")]
            if kernel:
                out.append(("kernel graphs", kernel))
        elif e.saved is not None:
            from ..dumps.graphs import FAMILIES

            for family, title in FAMILIES.items():
                if family in ("stage", "dot", "pb", "other", "actor_set"):
                    continue
                files = [f for f in e.saved.family(family) if f.ext == "ir" or f.family == "trace"]
                if files:
                    out.append(
                        (title, [(_option(f.relative if family == "verbose" else f.stem), f.relative) for f in files])
                    )
        return out

    def _graph_pane(self, single: bool = False) -> None:
        w = self._w
        self.graph_view = self._html()
        self.search = w.Text(
            placeholder="search nodes, scopes, source lines",
            continuous_update=False,
            description="search",
            layout=w.Layout(width="96%"),
        )
        self.op = w.Dropdown(options=[("all ops", "")], value="", description="op", layout=w.Layout(width="96%"))
        self.search.observe(lambda _: self._show_graph(), names="value")
        self.op.observe(lambda _: self._show_graph(), names="value")
        if single:
            self.family = self.stage_list = None
            self._pane("Graph", [w.HBox([self.search, self.op]), self.graph_view], self._graph_fill)
            return
        families = self._families()
        self._family_files = {title: files for title, files in families}
        self.family = w.Dropdown(
            options=[(f"{title} ({len(files)})", title) for title, files in families] or [("no IR files", "")],
            layout=w.Layout(width="96%"),
        )
        self.stage_list = w.Select(options=[], rows=_ROWS, layout=w.Layout(width="96%"))
        self.more_files = self._html()
        self.family.observe(lambda _: self._list_family(), names="value")
        self.stage_list.observe(lambda _: self._open_graph(), names="value")
        left = w.VBox([self.family, self.stage_list, self.more_files], layout=w.Layout(width="44%"))
        right = w.VBox(
            [
                self.search,
                self.op,
                self._html(tag("div", esc("click a file to open its graph; search and op filter it"), style=NOTE)),
            ],
            layout=w.Layout(width="54%"),
        )
        self._pane("Graphs", [w.HBox([left, right], layout=w.Layout(width="auto")), self.graph_view], self._graph_fill)

    def _graph_fill(self) -> None:
        if self.stage_list is None:
            self._set_ops(None)
            self._show_graph()
            return
        self._list_family()

    def _list_family(self) -> None:
        files = self._family_files.get(self.family.value, [])
        shown = files[:_MAX_OPTIONS]
        self.more_files.value = (
            tag(
                "div",
                esc(f"showing {len(shown)} of {len(files)} files; msdebug.open_dump(...).files() lists all"),
                style=NOTE,
            )
            if len(shown) < len(files)
            else ""
        )
        with self._quietly():
            self.stage_list.options = shown
            if shown:
                self.stage_list.value = shown[0][1]
        self._open_graph()

    def _open_graph(self) -> None:
        if self._quiet:
            return
        name = self.stage_list.value if self.stage_list is not None else None
        if self.stage_list is not None and not name:
            self.graph_view.value = ""
            return
        self._set_ops(name)
        self._show_graph()

    def _set_ops(self, name: str | None) -> None:
        """The op filter offers the ops of the graph shown, most frequent first."""

        def ops() -> list[tuple[str, str]]:
            view = self.explorer.graph(name, rank=self.rank, limit=1)
            return [(f"{op} ({n})", op) for op, n in getattr(view, "op_counts", ())]

        try:
            options = [("all ops", ""), *ops()]
        except MsDebugError:
            options = [("all ops", "")]
        with self._quietly():
            self.op.options = options
            self.op.value = ""

    def _show_graph(self) -> None:
        if self._quiet:
            return
        started = time.perf_counter()
        name = self.stage_list.value if self.stage_list is not None else None
        self.graph_view.value = self._guard(
            lambda: self.explorer.graph(
                name, search=self.search.value, op=self.op.value, rank=self.rank, limit=self.limit
            )._repr_html_()
        )
        self.timings["graph"] = time.perf_counter() - started

    def open(self, name: str, search: str = "") -> None:
        """Open graph ``name`` in the Graphs tab (what a click on a stage does)."""
        for title, files in self._family_files.items():
            if any(value == name for _, value in files):
                self.family.value = title
                break
        self._fill(self._index("Graphs"))
        self.stage_list.value = name
        self.search.value = search
        self.tabs.selected_index = self._index("Graphs")

    def _exec_pane(self) -> None:
        w = self._w
        self.kernels = w.Select(options=[], rows=_ROWS, layout=w.Layout(width="96%"))
        self.node_detail = self._html()
        self.exec_table = self._html()
        self.show_in_graph = w.Button(
            description="show in its graph", icon="sitemap", disabled=True, layout=w.Layout(width="auto")
        )
        self._exec_rows: list = []
        self.kernels.observe(lambda _: self._show_kernel(), names="value")
        self.show_in_graph.on_click(lambda _: self._kernel_in_graph())

        def fill() -> None:
            try:
                view = self.explorer.exec_order(rank=self.rank, limit=self.limit)
            except MsDebugError as error:
                self.exec_table.value = _error_html(error)
                return
            self._exec_rows = list(view.rows)
            self.exec_table.value = tag(
                "details", tag("summary", esc("the whole table")) + view._repr_html_(), style="max-width:100%"
            )
            with self._quietly():
                self.kernels.options = [
                    (_option(f"{row.index:>3}  {row.op}  {row.fullname or row.name}", 96), number)
                    for number, row in enumerate(view.rows)
                ]
                self.kernels.rows = max(2, min(_ROWS, len(view.rows)))
                if view.rows:
                    self.kernels.value = 0
            self._show_kernel()

        head = self._html(
            tag("div", esc("click a kernel to see its IR node, inputs, output and source line"), style=NOTE)
        )
        self._pane("Execution order", [head, self.kernels, self.node_detail, self.show_in_graph, self.exec_table], fill)

    def _show_kernel(self) -> None:
        if self._quiet:
            return
        number = self.kernels.value
        if number is None or number >= len(self._exec_rows):
            self.node_detail.value = ""
            self.show_in_graph.disabled = True
            return
        row = self._exec_rows[number]
        self.node_detail.value = _views().html_exec_row(row)
        self.show_in_graph.disabled = not (row.ir_file and row.fullname)

    def _kernel_in_graph(self) -> None:
        row = self._exec_rows[self.kernels.value]
        label = next(
            (f.label for f in self.explorer.tree.rank(self.rank).of_kind("graph") if f.path.name == row.ir_file), None
        )
        if label:
            self.open(label, search=row.fullname)

    def _diff_pane(self) -> None:
        w = self._w
        self.diff_view = self._html()
        self.before = w.Dropdown(options=[], description="before", layout=w.Layout(width="47%"))
        self.after = w.Dropdown(options=[], description="after", layout=w.Layout(width="47%"))

        def fill() -> None:
            names = [name for _, files in self._families()[:2] for _, name in files][:_MAX_OPTIONS]
            counts = list(self.explorer.stage_nodes(self.rank).stages)
            pair = (names[0], names[min(1, len(names) - 1)]) if names else ("", "")
            if len(counts) > 1:  # open on the stage that changed the graph most
                change = [counts[i][1] - counts[i - 1][1] for i in range(len(counts))]
                # The biggest change; on a tie a cut (what the optimizer does) before a growth.
                i = max(range(1, len(counts)), key=lambda i: (abs(change[i]), change[i] < 0, -i))
                pair = (counts[i - 1][0], counts[i][0])
            with self._quietly():
                self.before.options = names
                self.after.options = names
                if names:
                    self.before.value, self.after.value = pair
            self._show_diff()

        self.before.observe(lambda _: self._show_diff(), names="value")
        self.after.observe(lambda _: self._show_diff(), names="value")
        self._pane("Diff", [w.HBox([self.before, self.after], layout=w.Layout(width="auto")), self.diff_view], fill)

    def _show_diff(self) -> None:
        if self._quiet:
            return
        if not self.before.value or not self.after.value:
            self.diff_view.value = ""
            return
        self.diff_view.value = self._guard(
            lambda: self.explorer.diff(
                self.before.value, self.after.value, rank=self.rank, limit=self.limit
            )._repr_html_()
        )

    def _memory_pane(self) -> None:
        self.memory_view = self._html()

        def fill() -> None:
            self.memory_view.value = self._guard(
                lambda: self.explorer.memory(rank=self.rank, limit=self.limit)._repr_html_()
            )

        self._pane("Memory", [self.memory_view], fill)

    def _dot_pane(self) -> None:
        w = self._w
        self.dot_view = self._html()
        dots = self.explorer.saved.family("dot")
        self.dot_list = w.Select(
            options=[(_option(f.stem, 96), f.stem) for f in dots[:_MAX_OPTIONS]],
            rows=_ROWS,
            layout=w.Layout(width="96%"),
        )
        self.dot_list.observe(lambda _: self._show_dot(), names="value")

        def fill() -> None:
            if self.dot_list.options and self.dot_list.value is None:
                self.dot_list.value = self.dot_list.options[0][1]
            self._show_dot()

        self._pane(".dot files", [self.dot_list, self.dot_view], fill)

    def _show_dot(self) -> None:
        name = self.dot_list.value
        self.dot_view.value = self._guard(lambda: self.explorer.dot(name)._repr_html_()) if name else ""

    def _switch_rank(self, rank: int) -> None:
        """Show rank ``rank``: the panes are built again for it, the rank list stays."""
        other = ExplorerWidget(self.explorer, self.limit, rank)
        self.__dict__.update({k: v for k, v in other.__dict__.items() if k not in ("widget", "rank_choice")})
        self.widget.children = [self.rank_choice, self.tabs]

    # -- plumbing

    @contextlib.contextmanager
    def _quietly(self) -> Iterator[None]:
        """Change controls without each change re-rendering (the caller renders once after)."""
        quiet, self._quiet = self._quiet, True
        try:
            yield
        finally:
            self._quiet = quiet

    def _index(self, title: str) -> int:
        return next(i for i, (t, _, _) in enumerate(self._panes) if t == title)

    def _on_tab(self, change) -> None:
        if change["new"] is not None:
            self._fill(change["new"])

    def _fill(self, index: int) -> None:
        if index in self._filled:
            return
        self._filled.add(index)
        fill = self._panes[index][2]
        if fill is not None:
            try:
                fill()
            except Exception as error:  # noqa: BLE001 - a widget callback must never fail the cell
                self._panes[index][1].children = (*self._panes[index][1].children, self._html(_error_html(error)))

    @staticmethod
    def _guard(render) -> str:
        """``render()``, or the error as one line: a click never raises into the front end."""
        try:
            return render()
        except Exception as error:  # noqa: BLE001 - shown in the widget instead
            return _error_html(error)

    def html_size(self) -> int:
        """Characters of HTML and option labels the widget holds: what it sends to the browser."""
        total, stack = 0, [self.widget]
        while stack:
            widget = stack.pop()
            stack.extend(getattr(widget, "children", ()))
            value = getattr(widget, "value", None)
            total += len(value) if isinstance(value, str) else 0
            total += sum(len(label) for label in getattr(widget, "_options_labels", ()))
        return total

    def _repr_mimebundle_(self, **kwargs) -> dict:
        return self.widget._repr_mimebundle_(**kwargs)

    def __repr__(self) -> str:
        return repr(self.explorer)
