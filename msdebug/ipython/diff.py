"""A diff report in JupyterLab: a walker over the aligned ops (ipywidgets).

The report model (:mod:`msdebug.dumps.diff`) stays a plain object with a static, escaped HTML
view and a text view: what nbval compares, exported HTML shows and a terminal prints. Here, a
display formatter registered by the class's name makes a displayed report, in a kernel with
ipywidgets, the report followed by a walker: a list of the aligned ops (by default only those
that differ), and the chosen op's tensors side by side with their histograms.
"""

from __future__ import annotations

__all__ = ["DiffWidget", "register", "unregister"]

# By name: registering the formatter at %load_ext must not import the reader and views.
_REPORT = "msdebug.dumps.diff.DiffReport"
_MAX_OPTIONS = 500
_SAMPLE = 1 << 22  # values read for one histogram: the first 4 Mi of a tensor


def register(shell) -> None:
    """Show diff reports as :class:`DiffWidget` in ``shell``; a second call is harmless."""
    from .explorer import widget_formatter

    widget_formatter(shell, _REPORT, DiffWidget)


def unregister(shell) -> None:
    """Undo :func:`register`."""
    shell.display_formatter.mimebundle_formatter.pop(_REPORT, None)


def _histogram(ref) -> tuple[list[int], list[float]] | None:
    import numpy as np

    from ..dumps.datadump import histogram
    from ..dumps.runs import open_ref
    from ..errors import MsDebugError

    try:
        array = open_ref(ref)
    except MsDebugError:
        return None
    return histogram(np.asarray(array.reshape(-1)[:_SAMPLE]))


class DiffWidget:
    """The walker of one diff report; :attr:`widget` is what a notebook displays.

    Every control is an attribute, so tests (and people) can drive it by setting ``.value`` as
    a click would: :attr:`only_differing` filters the list, :attr:`ops` picks an op.
    """

    def __init__(self, report) -> None:
        import ipywidgets as w

        self.report = report
        self.only_differing = w.Checkbox(value=report.differs, description="only ops that differ", indent=False)
        self.ops = w.Select(options=[], rows=8, layout=w.Layout(width="auto"))
        self.count = w.HTML()
        self.detail = w.HTML(layout=w.Layout(width="auto", overflow="hidden"))
        self.only_differing.observe(lambda change: self._fill_list(), names="value")
        self.ops.observe(lambda change: self._show(change["new"]), names="value")
        self._fill_list()
        head = w.HTML(report._repr_html_(), layout=w.Layout(width="auto", overflow="hidden"))
        self.widget = w.VBox(
            [head, w.HBox([self.only_differing, self.count]), self.ops, self.detail],
            layout=w.Layout(width="auto", max_width="100%"),
        )
        self.widget.add_class("msdebug-diff-walker")

    def _fill_list(self) -> None:
        from ..views import diff as views

        chosen = [
            (views.op_label(op), index)
            for index, op in enumerate(self.report.ops)
            if not self.only_differing.value or op.first_difference is not None
        ]
        shown = chosen[:_MAX_OPTIONS]
        self.count.value = views.count_html(len(shown), len(chosen), len(self.report.ops))
        self.ops.options = shown
        self.ops.value = shown[0][1] if shown else None
        if not shown:
            self.detail.value = ""

    def _show(self, index: int | None) -> None:
        from ..views import diff as views

        if index is None:
            return
        op = self.report.ops[index]
        histograms = {
            (side, ref.slot): _histogram(ref) for side, run_op in (("a", op.a), ("b", op.b)) for ref in run_op.tensors
        }
        self.detail.value = views.html_op(op, histograms, self.report.a.label, self.report.b.label)
