"""The one report model (msdebug.views.report): every section kind escapes what comes from a
dump, every list and table is bounded, and the HTML and the text of one report carry the same
facts. Pure: no MindSpore, no kernel."""

from __future__ import annotations

import ast
import html
import importlib
import pkgutil
import re
from pathlib import Path

import msdebug
from msdebug.dumps.rendered import Rendered
from msdebug.views import report as r
from msdebug.views._text import Column, text_width

HOSTILE = "<script>alert('x')</script>\"&<img src=x onerror=1>"
PACKAGE = Path(msdebug.__file__).parent


def every_kind(value: str) -> r.Report:
    """One section of each kind, and each inline piece, holding ``value`` wherever a string goes."""
    return r.Report(
        [
            r.Line(value),
            r.Line((r.Span(value, "bad"), " at ", r.Span(value, "scope"), r.Sep(), value), look="note", title=value),
            r.Line((r.Span(value, "code"), r.Span(value, "name"), r.Span(value, "fit"), r.Span(value, "strong"))),
            r.Line((r.Span(value, "scope-plain"), r.Span(value, "hover", width=12)), look="aside"),
            r.Items([value, (r.Span(value, "name"), ": ", value)], head=value, more=value),
            r.KeyValues([(value, value), ("key", (r.Span(value, "code"),))]),
            r.Table(
                [r.Col(value, Column(value), left=True), r.Col("share", Column("share", right=True))],
                [[value, r.Bar(0.5)], [r.Span(value, "scope-plain"), r.Bar(2.0)]],
            ),
            r.Table([r.Col(value)], [[value], [r.Span(value, "good")]], look="compact"),
            r.Table(
                [r.Col(value, width=30, mono=True), r.Col(value, width=70)],
                [[(value, r.Break(), r.Span(value, "b")), r.Span(value, "hover", width=8)]],
                look="full",
                indent=2,
            ),
            r.Pre(value + "\n" + value, summary=value, look="faded"),
            r.Pre(value),
            r.Figure("<svg></svg>", caption=value, text=[value]),
            r.Figure("<svg></svg>", text=[value], scroll=True),
            r.Fold(value, [r.Line(value), r.Table([r.Col(value)], [[value]], look="full", head=False)], open=True),
            r.Line(
                (
                    r.Span((value, r.Span(value, "hover", width=5)), "note"),
                    r.Block([r.Line(value, look="note", title=value), r.Pre(value, look="source")]),
                ),
                cls=value,
            ),
            r.KeyValues([(value, (r.Span(value, "name"), value))], look="table"),
            r.Table(
                [r.Col(value, Column(value), width=50), r.Col(value, Column(value), width=50)],
                [
                    r.Row([value], cls=value, heading=True),
                    r.Row([r.Cell(value, look="value", title=value, cls=value), value], cls=value, look="faded"),
                    [value, r.Cell((r.Span(value, "name"), r.Block([r.Line(value, cls=value)])))],
                ],
                look="grid",
            ),
        ],
        cls=value,
        style=value,
    )


def test_every_section_kind_escapes_hostile_strings_in_html():
    out = r.html(every_kind(HOSTILE))
    # Nothing of the hostile string survives as markup: no tag, no attribute it opened.
    assert "<script" not in out and "<img" not in out and "onerror=1>" not in out
    assert "alert(&#x27;x&#x27;)" in out  # it is there, escaped
    # The only raw HTML is the figure's picture, which views.svg drew.
    tags = set(re.findall(r"<(\w+)", out))
    assert tags <= {
        "b",
        "br",
        "colgroup",
        "col",
        "div",
        "span",
        "code",
        "wbr",
        "ul",
        "li",
        "table",
        "thead",
        "tbody",
        "tr",
        "th",
        "td",
        "details",
        "summary",
        "pre",
        "svg",
    }, tags
    # Every attribute value is quoted and holds no raw quote of the input.
    for value in re.findall(r'(?:title|class|style)="([^"]*)"', out):
        assert "<" not in value and "'" not in value


def test_text_keeps_hostile_strings_as_they_are():
    """Text is not HTML: the string is shown as it is, in every section kind."""
    out = r.text(every_kind(HOSTILE))
    assert out.count(HOSTILE) >= 12


def test_huge_tables_lists_and_strings_are_bounded():
    count = 200_000
    rows = [[f"op{i}", str(i)] for i in range(count)]
    columns = [r.Col("op", Column("op", fit=True), left=True), r.Col("n", Column("n", right=True))]
    long = "x" * 5_000_000
    report = r.Report(
        [
            r.Table(columns, rows),
            r.Table(columns, rows, look="compact"),
            r.Table(columns, rows, look="full"),
            r.Items([f"item {i}" for i in range(count)]),
            r.KeyValues([(f"key {i}", "value") for i in range(count)]),
            r.Line(long),
            r.Pre(long),
        ]
    )
    page, lines = r.html(report), r.text(report).splitlines()
    assert page.count("<tr>") == 3 * (r.MAX_ROWS + 1)  # each table: its head row and MAX_ROWS rows
    assert page.count("<li>") == r.MAX_ROWS and page.count("key ") == r.MAX_ROWS
    assert len(page) < 5 * r.MAX_CHARS + 3_000 * r.MAX_ROWS
    assert len(lines) == 3 * (r.MAX_ROWS + 2) + 2 * (r.MAX_ROWS + 1) + 2  # tables, lists, the line and the block
    assert max(len(line) for line in lines) <= r.MAX_CHARS
    # A cut says so, in both forms: the reader is never shown part of a list as the whole.
    for what in ("rows", "items"):
        cut = f"showing {r.MAX_ROWS} of {count} {what}"
        assert cut in page and f"({cut})" in lines


def test_a_cut_block_says_what_went_and_a_log_keeps_its_head_and_tail():
    tail = "".join(f"line {i}\n" for i in range(3000))
    page = r.html(r.Report([r.Pre("x" * 50_000 + tail, whole=".text")]))
    assert f"… {50_000 + len(tail) - r.MAX_CHARS} characters before (all of them are in .text) …" in page
    assert "line 2999" in page and len(page) < r.MAX_CHARS + 200
    # ``lines``: the first and the last half, a mark between; text keeps each line whole, as it is.
    body = "\n".join(["y" * 30_000, "\x0cform feed kept", *(f"n{i}" for i in range(1000)), "", ""])
    lines = r.text(r.Report([r.Pre(body, lines=10, whole=".text")])).split("\n")
    assert lines[:5] == ["y" * 30_000, "\x0cform feed kept", "n0", "n1", "n2"]
    assert lines[5] == f"… {len(body.split(chr(10))) - 10} lines hidden (all of them are in .text) …"
    assert lines[6:] == ["n997", "n998", "n999", "", ""]


def test_a_fold_carries_its_class_and_look_and_its_summary_may_be_runs():
    fold = r.Fold(r.Span("Float32 [2]", "code"), [r.Pre("[1 2]")], open=True, box="tensor", cls="ms-tensor")
    page = r.html(r.Report([fold]))
    assert page.startswith('<div><details open class="ms-tensor" style="padding-left:7px"><summary><code>Float32 [2]')
    assert r.text(r.Report([fold])) == "`Float32 [2]`\n[1 2]"


def test_html_and_text_carry_the_same_facts():
    facts = ["Profile /p", "12.5 ms", "MatMul", "Default/net/MatMul-op0", "note one", "key", "value", "print(1)"]
    report = r.Report(
        [
            r.Line((r.Span(facts[0], "strong"), r.Sep(), facts[1])),
            r.Items([facts[4]], prefix="note: "),
            r.KeyValues([(facts[5], facts[6])]),
            r.Table(
                [
                    r.Col("op", Column("op", fit=True), left=True),
                    r.Col("type", Column("type")),
                    r.Col("share", Column("share")),
                ],
                [[r.Span(facts[3], "scope-plain"), facts[2], r.Bar(0.25)]],
            ),
            r.Pre(facts[7]),
            r.Figure("<svg></svg>", text=[facts[1]]),
        ]
    )
    shown = html.unescape(re.sub(r"<[^>]+>", "", r.html(report)))
    words = r.text(report)
    for fact in [*facts, "25.0%"]:
        assert fact in shown and fact in words, fact
    # A section for one form only shows in that form.
    only = r.Report([r.Line("in html", only="html"), r.Line("in text", only="text")])
    assert "in html" in r.html(only) and "in html" not in r.text(only)
    assert "in text" in r.text(only) and "in text" not in r.html(only)


def test_a_fitted_name_gives_way_in_text_and_stays_whole_in_html():
    name = "Default/" + "/".join(f"level{i}" for i in range(40)) + "/MatMul-op7"
    report = r.Report([r.Line((r.Span(name, "fit"), " (MatMul): masked it"), indent=4)])
    with text_width(80):
        line = r.text(report)
    assert len(line) == 80 and line.endswith("/MatMul-op7 (MatMul): masked it") and "…" in line
    assert r.html(report).count("level39") == 1 and "…" not in r.html(report)


def test_the_views_build_one_report_each():
    """nan and profile render through views.report: a hostile name is escaped in one place."""
    from types import SimpleNamespace as NS

    from msdebug.views import nan, profile

    options = NS(json=HOSTILE, applied=False, notes=[HOSTILE], first_cell=HOSTILE)
    built = profile.build_options(options)
    assert isinstance(built, r.Report)
    assert profile.html_options(options) == r.html(built) and profile.text_options(options) == r.text(built)
    assert "<script" not in profile.html_options(options) and HOSTILE in profile.text_options(options)
    finite = NS(
        checked_ops=1,
        checked_tensors=2,
        checked_bytes=0,
        seconds=0.1,
        mode=HOSTILE,
        culprit=None,
        notes=[HOSTILE],
        skipped=[(HOSTILE, HOSTILE)] * 30,
    )
    page = nan.html_report(finite)
    assert "<script" not in page and "(showing 20 of 30)" in page and "(showing 20 of 30)" in nan.text_report(finite)


def test_models_name_their_views_directly():
    """Every Rendered model class picks its view functions as attributes (``v.nan.html_report``),
    never by a name string: no ``getattr`` on the views package anywhere in msdebug."""
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Call):
                continue
            called = getattr(node.func, "id", "")
            if called == "getattr" and node.args:
                target = ast.unparse(node.args[0])
                assert "views" not in target or path.parent.name == "views", f"{path}: getattr({target}, ...)"
            if called == "rendered_by":  # the pick itself: attributes only
                picks = [
                    n for n in ast.walk(node) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "getattr"
                ]
                assert not picks, f"{path}:{node.lineno}: {ast.unparse(node)}"
    classes = []
    for info in pkgutil.walk_packages(msdebug.__path__, "msdebug."):
        if info.name.startswith(("msdebug.ipython", "msdebug.backend")) or info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        classes += [
            c for c in vars(module).values() if isinstance(c, type) and issubclass(c, Rendered) and c is not Rendered
        ]
    assert len(classes) >= 20
    for cls in classes:
        html_view, text_view = cls._views.pair()
        assert html_view.__module__.startswith("msdebug.views.") and text_view.__module__ == html_view.__module__


def test_text_never_draws_a_figure():
    """A figure given as what draws it is drawn for HTML only: text (a terminal, a log) never pays for it."""
    drawn = []

    def draw() -> str:
        drawn.append(1)
        return "<svg>picture</svg>"

    report = r.Report([r.Figure(draw, text=["the listing"], scroll=True)])
    assert r.text(report) == "the listing" and drawn == []
    assert "<svg>picture</svg>" in r.html(report) and drawn == [1]


def test_the_explorer_views_build_one_report_each():
    """Each explorer pair (summary, graph, execution order, one kernel, diff) renders ONE report
    both ways, and what a dump names is escaped in it."""
    import dataclasses

    from msdebug.dumps.explorer import ExecRow
    from msdebug.views import explorer as e

    data = Path(__file__).parent / "data"
    mode2, graphs = msdebug.open_dump(data / "rdr_mode2"), msdebug.open_dump(data / "graphs_l2")
    stages = graphs.stages()
    order = mode2.exec_order()
    row = ExecRow(0, HOSTILE, HOSTILE, HOSTILE, HOSTILE, 3, HOSTILE + ":3", HOSTILE, True, 7, inputs=(HOSTILE,))
    models = {
        "summary": mode2.summary(),
        "graph": graphs.graph(stages[-1]),
        "exec_order": dataclasses.replace(order, rows=(*order.rows[:3], row)),
        "exec_row": row,
        "diff": graphs.diff(stages[0], stages[-1]),
    }
    for name, model in models.items():
        built = getattr(e, f"build_{name}")(model)
        assert isinstance(built, r.Report), name
        page, words = getattr(e, f"html_{name}")(model), getattr(e, f"text_{name}")(model)
        assert page == r.html(built) and words == r.text(built), name
    assert "<script" not in e.html_exec_row(row) and HOSTILE in e.text_exec_row(row)
    assert "<script" not in e.html_exec_order(models["exec_order"])


def test_the_context_views_build_one_report_each():
    """``%mscontext``'s table, ``%mscontext KEY`` and a change report render ONE report both
    ways; a note is escaped."""
    import dataclasses

    from msdebug import settings
    from msdebug.keys import CATALOG, UNSET
    from msdebug.settings import Change, ChangeReport, KeyInfo
    from msdebug.views import context as c

    key = CATALOG["mode"]
    info = KeyInfo(key, "2.10", value=UNSET, default=key.default, device="CPU", extra=(HOSTILE,))
    report = ChangeReport((Change(key, UNSET, key.default, note=HOSTILE),), (HOSTILE,))
    state = settings.state(all_keys=True)
    rows = tuple(dataclasses.replace(x, note=HOSTILE, changed=True) for x in state.rows[:4]) + state.rows[4:]
    state = dataclasses.replace(state, rows=rows, removed=(HOSTILE,))
    pairs = [("key_info", info), ("change_report", report), ("change_report", ChangeReport(())), ("state", state)]
    for name, model in pairs:
        built = getattr(c, f"build_{name}")(model)
        assert isinstance(built, r.Report), name
        page, words = getattr(c, f"html_{name}")(model), getattr(c, f"text_{name}")(model)
        assert page == r.html(built) and words == r.text(built), name
        assert "<script" not in page
    assert HOSTILE in c.text_key_info(info) and c.text_change_report(ChangeReport(())) == "nothing changed"
    assert c.html_state(state).count('class="ms-changed"') >= 4 and HOSTILE in c.text_state(state)
