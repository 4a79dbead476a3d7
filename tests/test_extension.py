"""Loading and unloading the extension; each scenario in a fresh shell (helpers.fresh_shell)."""

from __future__ import annotations

from helpers import ShellOutput, fresh_shell, kernel_env


def lines(code: str) -> ShellOutput:
    """``fresh_shell`` without GLOG_v in its environment: these tests watch msdebug set it."""
    return fresh_shell(code, env={k: v for k, v in kernel_env().items() if k != "GLOG_v"})


def test_loading_does_not_import_mindspore_and_sets_its_log_level():
    out = lines(
        """
import msdebug
print("after import:", "mindspore" in sys.modules)
ip.run_line_magic("load_ext", "msdebug")
print("after load:", "mindspore" in sys.modules, os.environ.get("GLOG_v"))
from IPython.core.completer import provisionalcompleter
with provisionalcompleter():  # completion works from the catalog alone
    list(ip.Completer.completions("%mscontext mo", 13))
    list(ip.Completer.completions("%mscontext mode=", 16))
print("after completion:", "mindspore" in sys.modules)
ip.run_line_magic("mscontext", "mode=graph")
print("after first magic:", "mindspore" in sys.modules)
"""
    )
    assert out == [
        "after import: False",
        "after load: False 2",
        "after completion: False",
        "after first magic: True",
    ]


def test_loading_twice_is_harmless_and_unloading_undoes_everything():
    out = lines(
        """
from msdebug.ipython import extension, hooks
def state():
    return (
        "mscontext" in ip.magics_manager.magics["line"],
        ip.Completer.custom_matchers.count(extension.complete),
        sum(isinstance(cb, hooks.CellFiles) for cb in ip.events.callbacks["pre_run_cell"]),
        sum(type(c).__name__ == "MsDebug" for c in ip.configurables),
        os.environ.get("GLOG_v"),
        any(type(f).__name__ == "_ImportWatcher" for f in sys.meta_path),
    )
print("before:", state())
ip.run_line_magic("load_ext", "msdebug")
import msdebug
msdebug.load_ipython_extension(ip)  # a second load, even called directly
print("loaded:", state())
ip.run_line_magic("unload_ext", "msdebug")
print("unloaded:", state())
ip.run_line_magic("load_ext", "msdebug")
print("reloaded:", state())
"""
    )
    assert out == [
        "before: (False, 0, 0, 0, None, False)",
        "loaded: (True, 1, 1, 1, '2', True)",
        "unloaded: (False, 0, 0, 0, None, False)",
        "reloaded: (True, 1, 1, 1, '2', True)",
    ]


# What %load_ext msdebug must not import: MindSpore and the libraries behind views and widgets,
# the key catalog and settings (read at the first %mscontext), the readers, recorders and views,
# the magics' own modules (imported at a magic's first use or help) and completion's specs.
HEAVY = ("mindspore", "numpy", "ipywidgets", "msdebug.keys", "msdebug.settings", "msdebug.recorders.print")
HEAVY_PACKAGES = ("msdebug.recorders", "msdebug.ranks", "msdebug.ipython.magics.", "msdebug.views.")
HEAVY_MODULES = ("msdebug.dumps.ir", "msdebug.dumps.explorer", "msdebug.ipython.completion", "msdebug.ipython.panel")


def test_loading_imports_nothing_heavy_and_every_magic_still_works():
    out = lines(
        f"""
before = set(sys.modules)
ip.run_line_magic("load_ext", "msdebug")
new = set(sys.modules) - before
heavy = sorted(
    m for m in new
    if m.partition(".")[0] in {HEAVY!r} or m in {HEAVY!r} or m in {HEAVY_MODULES!r}
    or (m.startswith({HEAVY_PACKAGES!r}) and m != "msdebug.views._html")
)
print("heavy:", heavy)
print("ms magics:", sorted(n for kind in ("line", "cell") for n in ip.magics_manager.magics[kind] if n.startswith("ms")))
from IPython.core.completer import provisionalcompleter
with provisionalcompleter():
    print("completes:", [c.text for c in ip.Completer.completions("%mscontext mo", 13) if c.text == "mode="])
ip.run_cell("%msdump?")  # help of a magic whose class is not imported yet
print(ip.run_line_magic("mscontext", "mode=graph"))
"""
    )
    assert out[:4] == [
        "heavy: []",
        "ms magics: ['mscontext', 'mscontext', 'msdiff', 'msdump', 'msgraphs', 'msnan', 'msprint', 'msprint', 'msprofile', 'msrdr', 'msrun', 'msrun', 'mswatch']",
        "completes: ['mode=']",
        "Docstring:",
    ]
    assert "MindSpore's data dump: switch it on before the first graph compile, see what it wrote." in out
    assert "mode: PYNATIVE_MODE (1) → GRAPH_MODE (0)" in out


def test_the_declared_magics_are_exactly_what_their_classes_provide():
    from msdebug.ipython.magics import DECLARED, MAGICS

    provided = {}
    for magics in MAGICS:
        for kind in ("line", "cell"):
            for name in magics.magics[kind]:
                kinds, spec = provided.setdefault(name, ((), f"{magics.__module__}:{magics.__name__}"))
                provided[name] = ((*kinds, kind), spec)
    assert provided == DECLARED


def test_preferences_are_traitlets_for_percent_config():
    out = lines(
        """
ip.run_line_magic("load_ext", "msdebug")
ip.run_line_magic("config", "MsDebug.log_level = 'ERROR'")
print(os.environ["GLOG_v"])
ip.run_cell("%config MsDebug.log_level = 'LOUD'")   # IPython logs the TraitError, keeps the value
print(os.environ["GLOG_v"])
import mindspore as ms
print(ms.log.get_level())
"""
    )
    assert out == ["3", "3", "3"]
    assert "The 'log_level' trait of a MsDebug instance expected any of ['DEBUG'," in out.stderr


def test_preferences_from_a_config_file_take_effect_at_load():
    """``c.MsDebug.log_level = "ERROR"`` in ipython_config.py (or ``--MsDebug.log_level=ERROR`` on
    a kernel's command line) reaches the preferences inside their own construction."""
    out = lines(
        """
ip.config.MsDebug.log_level = "ERROR"
ip.config.MsDebug.print_capture = True
ip.config.MsDebug.cell_files = False
ip.run_line_magic("load_ext", "msdebug")
from msdebug.ipython.prefs import preferences
prefs = preferences(ip)
print(os.environ["GLOG_v"], prefs.prints.every_cell, prefs.files in ip.events.callbacks["pre_run_cell"])
ip.run_line_magic("unload_ext", "msdebug")
print("GLOG_v" in os.environ)
"""
    )
    assert out == ["3 True False", "False"], out.stderr


def test_reset_goes_back_to_mindspores_start_up_context_when_loaded_first():
    out = lines(
        """
ip.run_line_magic("load_ext", "msdebug")
import mindspore as ms                         # the user imports it, not msdebug
ms.set_context(mode=ms.GRAPH_MODE, max_call_depth=5, exec_order="dfs")
print(repr(ip.run_line_magic("mscontext", "--reset")).replace("\\n", " | "))
print(ms.get_context("mode"), ms.get_context("max_call_depth"), ms.get_context("exec_order"))
"""
    )
    assert out == [
        "mode: GRAPH_MODE (0) → PYNATIVE_MODE (1) | exec_order: dfs → bfs | max_call_depth: 5 → 1000",
        "1 1000 bfs",
    ]


def test_reset_goes_back_to_the_context_at_load_time_when_mindspore_came_first():
    # MindSpore comes first here: a warm interpreter (it has imported MindSpore) is the same.
    out = fresh_shell(
        """
import mindspore as ms
ms.set_context(mode=ms.GRAPH_MODE)
ip.run_line_magic("load_ext", "msdebug")
ip.run_line_magic("mscontext", "mode=pynative save_graphs=1")
ip.run_line_magic("mscontext", "--reset")
print(ms.get_context("mode"), ms.get_context("save_graphs"))
"""
    )
    assert out == ["0 0"]


def test_without_mindspore_the_extension_loads_and_the_first_magic_says_how_to_install():
    # This machine has MindSpore; its absence is simulated by hiding both the module and its
    # package metadata, which are the two things msdebug consults.
    out = lines(
        """
import importlib.metadata as md
real_version = md.version
def version(name):
    if name == "mindspore":
        raise md.PackageNotFoundError(name)
    return real_version(name)
md.version = version
sys.modules["mindspore"] = None               # import mindspore -> ImportError
ip.run_line_magic("load_ext", "msdebug")
print("loaded")
for line in ("", "mode=graph", "--changed"):
    try:
        ip.run_line_magic("mscontext", line)
    except UsageError as error:
        print("usage error:", error)
print(repr(ip.run_line_magic("mscontext", "mode")).splitlines()[-1])
from IPython.core.completer import provisionalcompleter
with provisionalcompleter():
    print([c.text for c in ip.Completer.completions("%mscontext mode=", 16)])
"""
    )
    assert out[0] == "loaded"
    for line in out[1:4]:
        assert line.startswith("usage error: MindSpore is not installed in this environment (")
        assert line.endswith('install it with: pip install "msdebug[mindspore]"  (MindSpore 2.7.0-2.10.x with numpy<2)')
    assert (
        out[4]
        == '  note        MindSpore is not installed here; pip install "msdebug[mindspore]"  (MindSpore 2.7.0-2.10.x with numpy<2)'
    )
    assert out[5] == "['graph', 'pynative']"


def test_a_log_level_that_cannot_take_effect_says_so():
    out = lines(
        """
import warnings
import mindspore
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    ip.run_line_magic("load_ext", "msdebug")      # WARNING is MindSpore's own level: nothing to say
    print("at load:", [str(w.message) for w in caught])
    ip.run_line_magic("config", "MsDebug.log_level = 'ERROR'")
    print("later:", [str(w.message) for w in caught])
"""
    )
    assert out == [
        "at load: []",
        "later: ['msdebug: MindSpore was imported before msdebug, so its log level can no longer change in "
        "this process; for ERROR, put %env GLOG_v=3 in the first cell.']",
    ]
