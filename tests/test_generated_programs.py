"""Generated programs are the proof: %%msnan and %%msdiff give the right answer on ordinary code.

Each program (``tests/programs.py``) is a few notebook cells of MindSpore code: elementwise,
reduction, matmul and shape ops, results kept or thrown away, tensors reused, Parameters
updated in place, nested Cells, functions and Cells from earlier cells, loops and branches,
@jit functions, GRAPH-mode networks. One constant or weight is changed at a known op; the
answer follows from where, never from running msdebug: %%msnan must name the op that made
the NaN or Inf (its name, so its occurrence, and its notebook line), %%msdiff --against the op
where the runs part; the program without the change is all finite and agrees with its saved run.

The PyNative programs run in a fresh interpreter's in-process shell with MindSpore's blocking
launch (one-way, so set before its first op): msdebug reads every op's values, and each read of
an asynchronous launch waits on MindSpore's queue, milliseconds a read on a loaded machine. A
few run in the session's shell as it is. GRAPH and @jit programs each run in a fresh kernel:
MindSpore takes the data dump's config at a process's first graph compile.
``benchmarks/soak_answers.py --programs 5000`` runs many more.

The tests after the first three are wrong answers the generated programs found, each kept as
the program shape that found it: a later graph of the same kernel (dump files numbered
process-wide), a @jit function from an earlier cell, a GRAPH-mode cell's own ops before its
network, a cell that starts with an empty line, a terminal IPython's cell in a GRAPH location.
"""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from programs import (
    Assign,
    Call,
    CellClass,
    Const,
    Fault,
    For,
    Instance,
    KernelRunner,
    Op,
    Program,
    Return,
    ShellRunner,
    Site,
    Var,
    check_in_kernel,
    check_nan,
    check_pynative,
    describe,
    faults,
    programs,
    trace,
)

from helpers import run_python

TESTS = Path(__file__).resolve().parent
PYNATIVE_PROGRAMS = 200
# Each example runs whole programs, some in kernels of their own: hypothesis's own limits on
# slow or filtered examples say nothing here, and shrinking would rerun programs for minutes;
# a wrong answer prints the program instead.
QUIET = [
    HealthCheck.too_slow,
    HealthCheck.function_scoped_fixture,
    HealthCheck.data_too_large,
    HealthCheck.filter_too_much,
]


def _fail(wrong: list[str], program, *shown) -> None:
    """Fail with the program, the lines its faults change, and each wrong answer."""
    if wrong:
        pytest.fail(f"{describe(program, *shown)}\n\n" + "\n".join(f"WRONG {w}" for w in wrong), pytrace=False)


# --------------------------------------------------------------------------- PyNative


def test_pynative_programs_get_right_answers():
    """About 200 programs, each under %%msnan with its NaN or Inf (and, one in three, without),
    and under %%msdiff --against its own saved run with one constant or weight changed, and
    unchanged. With CI=true the same programs every run."""
    code = f"""
    import sys
    sys.path.insert(0, {str(TESTS)!r})
    import programs
    programs.main_json({PYNATIVE_PROGRAMS}, derandomize={bool(os.environ.get("CI"))})
    """
    result = run_python(textwrap.dedent(code), timeout=900)
    assert result.returncode == 0, result.stderr[-4000:]
    tally = json.loads(result.stdout.strip().splitlines()[-1])
    assert tally["programs"] == PYNATIVE_PROGRAMS and tally["checked"]["msdiff"] == PYNATIVE_PROGRAMS, tally
    assert tally["wrong_programs"] == 0, "\n\n========\n\n".join(tally["examples"])


@pytest.mark.filterwarnings("ignore:The recursion limit will not be reset")  # MindSpore raises it on first use
@settings(max_examples=4, deadline=None, phases=(Phase.explicit, Phase.generate), suppress_health_check=QUIET)
@given(data=st.data())
def test_programs_in_the_sessions_shell_with_its_asynchronous_launch(shell, data):
    """The same checks in the session's shell, where MindSpore launches ops asynchronously."""
    runner = ShellRunner(shell)
    try:
        program = data.draw(programs("pynative"), label="program")
        nan, diff = data.draw(faults(program), label="faults")
        name = f"async{shell.execution_count}"
        checks = check_pynative(runner, program, nan, diff, name)
    finally:
        runner.close()
    _fail(checks["msnan"] + checks["msdiff"], program, nan, diff)


def test_a_run_kept_in_memory_keeps_what_a_parameter_held_before_it_was_assigned(shell):
    """Found by the generated programs: on CPU ``asnumpy()`` is a view of the tensor's memory,
    and the run %%msdiff keeps in memory held views. After ``ops.assign(p0, ...)`` every op that
    had read ``p0`` seemed to have read its new value, so a program compared with its own saved
    run "differed" at the first op that read ``p0``."""
    setup = (
        "import numpy as np, mindspore as ms\nfrom mindspore import ops, Parameter\n"
        'p0 = Parameter(ms.Tensor(np.full((2, 4), 0.25, np.float32)), name="p0")'
    )
    body = "h4 = p0 * 2.0\nops.assign(p0, ops.tanh(h4))"
    name = f"assigned{shell.execution_count}"
    reports = []
    for magic in (f"%%msdiff --save {name}", f"%%msdiff --against {name}"):
        assert shell.run_cell(setup, store_history=True).error_in_exec is None
        result = shell.run_cell(f"{magic}\n{body}", store_history=True)
        assert result.error_in_exec is None, result.error_in_exec
        reports.append(result.result)
    report = reports[-1]
    assert not report.differs, f"differs at {report.first.a.name}: {[t.summary for t in report.first.tensors]}"
    assert report.compared_ops == 3 and report.compared_tensors == 7


# --------------------------------------------------------------------------- GRAPH and @jit, in kernels


@pytest.mark.kernel
@settings(max_examples=8, deadline=None, phases=(Phase.explicit, Phase.generate), suppress_health_check=QUIET)
@given(program=programs("graph"), data=st.data())
def test_graph_programs_get_right_answers(program, data):
    """A GRAPH-mode network whose construct chains its statements (a graph drops what does not
    reach its output), with Cells, Denses, helper functions and unrolled loops; %%msnan's dump
    is set up by the program's own cell, the first graph of a fresh kernel."""
    nan, _ = data.draw(faults(program), label="faults")
    _fail(check_in_kernel(program, nan), program, nan)


@pytest.mark.kernel
@settings(max_examples=5, deadline=None, phases=(Phase.explicit, Phase.generate), suppress_health_check=QUIET)
@given(program=programs("jit"), data=st.data())
def test_jit_functions_called_from_pynative_get_right_answers(program, data):
    """PyNative statements around an @ms.jit function defined in the magic's cell: the hooks see
    the PyNative ops, the data dump %%msnan sets up the function's."""
    nan, _ = data.draw(faults(program), label="faults")
    _fail(check_in_kernel(program, nan), program, nan)


# --------------------------------------------------------------------------- wrong answers found


def _faulted(strategy, where=lambda program, event: True):
    """Programs with a nan fault on a constant that an op which runs takes (where ``where``
    holds for that op): else the program proves nothing."""

    def pick(program):
        consts = sorted({e.const for e in trace(program) if e.makes and where(program, e)})
        return st.sampled_from(consts).map(lambda c: (program, Fault("nan", const=c))) if consts else st.nothing()

    return strategy.flatmap(pick)


@pytest.mark.kernel
def test_a_later_graph_of_the_same_kernel_is_named_right():
    """Two programs of the generator's GRAPH shape in one kernel: one Sqrt, then a loop of three
    whose third pass makes the NaN (Default/Sqrt-op2; its file is Sqrt-op3, and Sqrt-op1 and
    Sqrt-op2's files are the first two passes')."""
    runner = KernelRunner(graph=True)
    try:
        for passes in (1, 3):
            program, nan = _sqrt_loop(passes)
            _fail(check_nan(runner, program, nan), program, nan)
    finally:
        runner.close()


def _sqrt_loop(passes: int) -> tuple[Program, Fault]:
    """``h = ops.sqrt(ops.tanh(h) + c)`` for ``c`` in ``passes`` constants, the last making the NaN."""
    consts = [Const(i, 2.0, -2.0, 2.5) for i in range(passes)]
    loop = For("c", tuple(consts), [Assign("h", Site("sqrt", "tanh", Var("h"), Var("c")))])
    net = CellClass("Net", {}, {}, {}, [Assign("h", Op("sin", (Var("a"),))), loop, Return(Var("h"))])
    body = [Assign("out", Call("net", (Var("x"),)))]
    program = Program("graph", {"x": (-1.0, 1.0)}, {}, {}, [[net, Instance("net", net)]], body, consts, [])
    return program, Fault("nan", const=consts[-1].id)


@pytest.mark.kernel
@settings(max_examples=3, deadline=None, derandomize=True, phases=(Phase.generate,), suppress_health_check=QUIET)
@given(data=st.data())
def test_a_jit_function_defined_in_an_earlier_cell(data):
    in_the_function = programs("jit", jit_earlier=True)
    program, nan = data.draw(_faulted(in_the_function, lambda p, e: bool(e.graph)), label="program")
    _fail(check_in_kernel(program, nan), program, nan)


@pytest.mark.kernel
@settings(max_examples=2, deadline=None, derandomize=True, phases=(Phase.generate,), suppress_health_check=QUIET)
@given(data=st.data())
def test_the_ops_of_a_graph_mode_cell_before_its_network(data):
    program = data.draw(programs("graph", pynative_first=True), label="program")
    first = program.body[0].value
    assert isinstance(first, Site)
    nan = Fault("nan", const=first.const.id)
    _fail(check_in_kernel(program, nan), program, nan)


@pytest.mark.kernel
@settings(max_examples=2, deadline=None, derandomize=True, phases=(Phase.generate,), suppress_health_check=QUIET)
@given(data=st.data())
def test_cells_that_start_with_an_empty_line(data):
    in_a_definition = programs("pynative", blank_first=True)
    program, nan = data.draw(_faulted(in_a_definition, lambda p, e: 0 < e.cell <= len(p.defs)), label="program")
    _fail(check_in_kernel(program, nan), program, nan)


def test_a_graph_location_in_a_terminal_ipython_cell_keeps_its_line():
    from msdebug.dumps.ir import SourceLocation

    location = SourceLocation.parse("      # In file <ipython-input-3-d9565745a763>:6, 21~26/")
    assert location is not None and (location.path, location.line) == ("<ipython-input-3-d9565745a763>", 6)
