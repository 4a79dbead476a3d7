"""What ``%%msdiff`` and ``msdebug diff`` compare with: each rank of a ``%%msrun`` job its own saved
run, and the rank, iteration and graph of a real GRAPH-mode training dump (several graphs), chosen
or taken by default and said in the notes; a choice that is not there is one line listing those
that are. (The real two-rank job is in tests/test_ranks.py.)"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from IPython.core.error import UsageError
from test_diff_msprobe import write_msprobe

from msdebug.cli import main
from msdebug.dumps.diff import read_any_run
from msdebug.dumps.runs import run_from_new_iterations
from msdebug.errors import InvalidValueError

from helpers import run_python

# GRAPH mode, as a notebook trains without @jit: a forward pass alone, then two steps whose
# gradients and optimizer update are graphs of their own. MindSpore 2.10 writes graph 0 (the
# forward pass, 5 kernels, iteration 0), graph 1 (forward and backward, 18 kernels, iteration 1)
# and graph 2 (Adam, 9 kernels, iterations 1 and 2).
TRAIN = """\
import sys
from msdebug.recorders import datadump
datadump.enable(sys.argv[1], inputs=True)
import numpy as np
import mindspore as ms
from mindspore import nn
ms.set_context(mode=ms.GRAPH_MODE)
ms.set_seed(0)


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Dense(4, 8, weight_init="normal", bias_init="zeros")
        self.relu = nn.ReLU()
        self.fc2 = nn.Dense(8, 2, weight_init="normal", bias_init="zeros")

    def construct(self, x):
        return self.fc2(self.relu(self.fc1(x)))


net = Net()
loss_fn = nn.MSELoss()
opt = nn.Adam(net.trainable_params(), 0.01)


def forward(x, y):
    return loss_fn(net(x), y)


grad_fn = ms.value_and_grad(forward, None, opt.parameters)


def train_step(x, y):
    loss, grads = grad_fn(x, y)
    opt(grads)
    return loss


x = ms.Tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4))
y = ms.Tensor(np.zeros((3, 2), np.float32))
net(x)
for _ in range(2):
    train_step(x, y)
"""


@pytest.fixture(scope="module")
def dump(tmp_path_factory):
    """The training dump above, and a copy with a second rank whose first MatMul's output differs."""
    root = tmp_path_factory.mktemp("choices")
    script = root / "train.py"  # GRAPH mode compiles from source: a file
    script.write_text(TRAIN)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)  # what MindSpore writes beside the dump (rank_0/om after a failed compile) stays here
        done = run_python(f"import runpy, sys; sys.argv = ['{script}', '{root}/dump']; runpy.run_path('{script}')")
    assert done.returncode == 0, done.stderr[-3000:]
    two = root / "two"
    shutil.copytree(root / "dump", two / "dump")
    shutil.copytree(two / "dump" / "rank_0", two / "dump" / "rank_1")
    for path in [*(two / "dump").rglob("*")]:  # MindSpore writes 0400 files
        path.chmod(0o700 if path.is_dir() else 0o600)
    for path in (two / "dump" / "rank_1" / "Net" / "1" / "1").glob("MatMul.Default_fc1-Dense_MatMul-*.output.0.*"):
        np.save(path, np.load(path) + 1)
    yield root / "dump", two / "dump"
    for path in root.rglob("*"):
        if path.is_dir() and not path.is_symlink():
            path.chmod(0o700)


# --------------------------------------------------------------------------- a data dump


def test_a_training_dump_gives_the_step_with_the_most_kernels_not_the_first_graph_and_says_so(dump):
    path, _ = dump
    run = read_any_run(path)
    assert (run.meta["graph"], run.meta["iteration"]) == (1, 1), run.notes
    assert len(run.ops) == 18 and run.ops[-1].name.startswith("Gradients/")
    assert run.label == "dump (rank 0, graph 1, iteration 1)"
    assert (
        f"graph 1 taken, the one with the most kernels (18); rank 0 of {path} also has graph 0 (5 kernels), "
        "2 (9 kernels): choose with --graph G"
    ) in run.notes
    # MindSpore 2.10 writes the second step's gradient graph into the first one's iteration folder.
    assert any(note.startswith("65 tensor files of") and "matched no kernel of graph 1" in note for note in run.notes)


GRAPH_NOTE = "graph 1 taken, the one with the most kernels (18)"


@pytest.mark.parametrize(
    ("where", "choices", "taken", "notes"),
    [
        ("", {"graph": 2}, (0, 2, 1), ["iteration 1 of graph 2 taken, its first; it also ran at iteration 2"]),
        ("", {"graph": 2, "iteration": 2}, (0, 2, 2), []),
        ("", {"iteration": 0}, (0, 0, 0), []),
        ("", {"iteration": 1}, (0, 1, 1), ["also has graph 2 (9 kernels) at iteration 1: choose with --graph G"]),
        ("rank_0/Net/2/2", {}, (0, 2, 2), []),  # the folder names them
        ("rank_0/Net/2", {}, (0, 2, 1), ["it also ran at iteration 2"]),
        ("two:", {"rank": 1}, (1, 1, 1), [GRAPH_NOTE]),
        ("two:rank_1", {}, (1, 1, 1), [GRAPH_NOTE]),
        ("two:", {}, (0, 1, 1), ["(it has rank 0, 1): choose another with --rank R", GRAPH_NOTE]),
    ],
)
def test_rank_iteration_and_graph_choose_what_they_say(dump, where, choices, taken, notes):
    one, two = dump
    root, _, inside = where.rpartition(":")
    run = read_any_run((two if root else one) / inside, **choices)
    assert (run.meta["rank"], run.meta["graph"], run.meta["iteration"]) == taken
    said = [note for note in run.notes if "choose" in note]  # a note for each choice made for the person
    assert len(said) == len(notes) and all(any(part in note for note in said) for part in notes), run.notes


@pytest.mark.parametrize(
    ("where", "choices", "message"),
    [
        (
            "",
            {"graph": 7},
            "--graph 7: rank 0 of {root} has no graph 7; it has graph 0 (5 kernels), 1 (18 kernels), 2 (9 kernels).",
        ),  # fmt: skip
        ("", {"iteration": 9}, "--iteration 9: rank 0 of {root} has no iteration 9; it has iteration 0, 1, 2."),
        (
            "",
            {"graph": 2, "iteration": 0},
            "--iteration 0: graph 2 of rank 0 of {root} has no iteration 0; it has iteration 1, 2.",
        ),  # fmt: skip
        ("", {"rank": 3}, "--rank 3: {root} has no rank 3; it has rank 0."),
        ("", {"rank": 10}, "--rank 10: {root} has no rank 10; it has rank 0."),
        ("rank_0", {"rank": 1}, "--rank 1: {root}/rank_0 is rank 0 of the dump; give one of the two."),
        ("", {"job_rank": 2}, None),  # the one rank there is: every rank of a job compares with it
    ],
)
def test_a_choice_the_dump_does_not_have_is_one_line_listing_what_it_has(dump, where, choices, message):
    root, _ = dump
    if message is None:
        run = read_any_run(root / where, **choices)
        assert f"{root} has rank 0 only: rank 2 of this msrun job compares with it" in run.notes
        return
    with pytest.raises(InvalidValueError) as raised:
        read_any_run(root / where, **choices)
    assert str(raised.value).startswith(message.format(root=root)) and "\n" not in str(raised.value)


def test_a_rank_of_a_job_missing_from_a_dump_of_several_ranks_is_named(dump):
    _, two = dump
    with pytest.raises(InvalidValueError, match=r"has rank 0, 1 but not 2, this process's rank in its msrun job"):
        read_any_run(two, job_rank=2)
    assert read_any_run(two, job_rank=1).meta["rank"] == 1


def test_a_graph_cell_in_a_rank_of_a_job_reads_its_own_rank(dump):
    _, two = dump
    assert run_from_new_iterations(two, set(), "GRAPH", rank=1).meta["rank"] == 1
    assert run_from_new_iterations(two, set(), "GRAPH").meta["rank"] == 0


# --------------------------------------------------------------------------- msdebug diff


def _cli(capsys, *args: str) -> tuple[int, str, str]:
    status = main(["diff", *map(str, args)])
    out, err = capsys.readouterr()
    return status, out, err


def test_the_cli_chooses_in_both_sides_or_per_side_by_folder(dump, capsys):
    one, two = dump
    status, out, err = _cli(capsys, one, one, "--graph", "2", "--iteration", "2")
    assert status == 0 and "dump (rank 0, graph 2, iteration 2) (data dump) against dump (rank 0, graph 2, " in out
    # Adam's second step against its first: the step counter it adds to comes in different.
    status, out, err = _cli(capsys, one / "rank_0/Net/2/2", one / "rank_0/Net/2/1")
    assert status == 1 and "First difference at Default/AssignAdd-op0 (AssignAdd), input 0" in out, out + err
    status, out, err = _cli(capsys, two / "rank_1", two)  # rank 1 (by its folder) against rank 0 (the first)
    assert status == 1 and "First difference at Default/fc1-Dense/MatMul-op0 (MatMul), output 0" in out, out + err
    assert f"rank 0 of {two} taken (it has rank 0, 1): choose another with --rank R" in out
    status, out, err = _cli(capsys, two, two, "--rank", "1")
    assert status == 0 and "(rank 1, graph 1, iteration 1)" in out, out + err


def test_the_cli_applies_a_choice_where_a_side_has_it_and_refuses_one_neither_has(dump, capsys, tmp_path):
    from msdebug.recorders.diff import save_run

    one, _ = dump
    saved = save_run(read_any_run(one), tmp_path / "saved", "saved").root  # graph 1, as a run msdebug saved
    status, out, err = _cli(capsys, saved, one, "--graph", "1")
    assert status == 0 and "They agree: 18 aligned ops" in out, out + err
    assert f"--graph 1 chose in B only: {saved} is a run msdebug saved (one run)" in out
    status, out, err = _cli(capsys, saved, one, "--graph", "0")
    assert "saved (msdebug run) against dump (rank 0, graph 0, iteration 0)" in out, out + err
    status, out, err = _cli(capsys, saved, saved, "--graph", "1")
    assert status == 2 and out == "" and err.count("\n") == 1, err
    assert err.startswith("msdebug diff: --graph 1: neither A (a run msdebug saved (one run)) nor B (a run msdebug ")
    assert err.rstrip().endswith("--graph chooses the graph of a data dump.")
    for option, value, message in (
        ("--graph", "9", "msdebug diff: --graph 9: rank 0 of {one} has no graph 9; it has graph 0 (5 kernels), "),
        ("--iteration", "5", "msdebug diff: --iteration 5: rank 0 of {one} has no iteration 5; it has iteration 0, 1"),
    ):
        status, out, err = _cli(capsys, one, one, option, value)
        assert status == 2 and err.startswith(message.format(one=one)) and err.count("\n") == 1, err
    with pytest.raises(SystemExit) as exited:
        _cli(capsys, one, one, "--rank", "-1")
    assert exited.value.code == 2
    assert "argument --rank: expected a whole number from 0, got '-1'" in capsys.readouterr().err


# --------------------------------------------------------------------------- msprobe dumps


def test_an_msprobe_dump_of_steps_and_ranks_chooses_by_iteration_and_rank(tmp_path):
    for name, scale, place in (("a", 1.0, "step0/rank0"), ("b", 2.0, "step0/rank1"), ("c", 3.0, "step1/rank0")):
        write_msprobe(tmp_path / name, scale=scale)
        (tmp_path / "dump" / place).parent.mkdir(parents=True, exist_ok=True)
        shutil.move(tmp_path / name / "step0" / "rank", tmp_path / "dump" / place)
    dump = tmp_path / "dump"
    run = read_any_run(dump)
    assert run.label == "msprobe step0/rank0"
    assert f"step 0 of {dump} taken, the first (it has step 0, 1): choose another with --iteration N" in run.notes
    assert f"rank 0 of step 0 of {dump} taken (it has rank 0, 1): choose another with --rank R" in run.notes
    assert read_any_run(dump, rank=1).label == "msprobe step0/rank1"
    assert read_any_run(dump, job_rank=1).label == "msprobe step0/rank1"
    assert read_any_run(dump, iteration=1).label == "msprobe step1/rank0"
    assert read_any_run(dump / "step1" / "rank0").label == "msprobe step1/rank0"
    for choices, message in (
        ({"iteration": 2}, f"--iteration 2: {dump} has no step2; it has step 0, 1."),
        ({"iteration": 1, "rank": 1}, f"--rank 1: step 1 of {dump} has no rank 1; it has rank 0."),
        ({"graph": 0}, f"--graph 0: {dump} is an msprobe dump, with no graph to choose; --graph chooses the graph"),
        ({"rank": 0}, None),
    ):
        if message is None:
            with pytest.raises(InvalidValueError, match="is rank 1 of an msprobe dump; give one of the two"):
                read_any_run(dump / "step0" / "rank1", **choices)
            continue
        with pytest.raises(InvalidValueError) as raised:
            read_any_run(dump, **choices)
        assert str(raised.value).startswith(message)


# --------------------------------------------------------------------------- %%msdiff in a rank


CELL = "ops.exp(ms.Tensor(np.full(4, scale, np.float32)))"


def _as_rank(monkeypatch, rank: int | None) -> None:
    """This process as msrun starts a worker (what msdebug.backend.process.msrun_rank reads), or not."""
    if rank is None:
        monkeypatch.delenv("MS_ROLE", raising=False)
        monkeypatch.delenv("RANK_ID", raising=False)
    else:
        monkeypatch.setenv("MS_ROLE", "MS_WORKER")
        monkeypatch.setenv("RANK_ID", str(rank))


def _msdiff(ip, line: str, scale: float):
    ip.user_ns["scale"] = scale
    return ip.run_cell_magic("msdiff", line, CELL)


def test_in_a_rank_of_a_job_save_and_against_use_its_own_folder_and_outside_rank_0_is_said(ip, monkeypatch):
    ip.run_cell("import numpy as np, mindspore as ms\nfrom mindspore import ops")
    for rank in (0, 1):
        _as_rank(monkeypatch, rank)
        saved = _msdiff(ip, "--save job", float(rank))  # each rank's values differ
        assert saved.run.root == Path("msdiff_runs", "job", f"rank_{rank}"), saved.run.root
        assert saved.run.label == f"job/rank_{rank}"
    assert sorted(p.name for p in Path("msdiff_runs/job").iterdir()) == ["rank_0", "rank_1"]
    _as_rank(monkeypatch, 1)
    own = _msdiff(ip, "--against job", 1.0)
    assert not own.differs and own.compared_tensors == 2 and own.b.label == "job/rank_1"
    assert _msdiff(ip, "--against job --rank 0", 1.0).differs  # --rank says which, also in a job
    with pytest.raises(UsageError, match=r"msdiff_runs/job/rank_1 exists and msdebug never writes over a run; use "):
        _msdiff(ip, "--save job", 1.0)
    _as_rank(monkeypatch, 2)
    with pytest.raises(UsageError, match=r"msdiff_runs/job has rank 0, 1 but not 2, this process's rank in its msrun"):
        _msdiff(ip, "--against job", 2.0)
    _as_rank(monkeypatch, None)
    first = _msdiff(ip, "--against job", 0.0)
    assert not first.differs and first.b.label == "job/rank_0"
    assert "rank 0 of msdiff_runs/job taken (it has rank 0, 1): choose another with --rank R" in first.notes
    assert "choose another with --rank R" in repr(first)
    chosen = _msdiff(ip, "--against job --rank 1", 1.0)
    assert not chosen.differs and chosen.b.label == "job/rank_1" and not chosen.notes
    plain = _msdiff(ip, "--save plain", 0.0)
    _as_rank(monkeypatch, 1)
    with pytest.raises(UsageError, match=r"msdiff_runs/plain exists and msdebug never writes over a run"):
        _msdiff(ip, "--save plain", 0.0)  # never a rank's folder inside a run saved outside msrun
    every = _msdiff(ip, "--against plain", 0.0)
    assert not every.differs and every.b.root == plain.run.root
    assert "every rank of the msrun job compares with msdiff_runs/plain, one run saved outside %%msrun" in every.notes


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("--against job --rank 5", "--rank 5: msdiff_runs/job has no rank 5; it has rank 0, 1."),
        (
            "--against job --graph 1",
            "--graph 1: msdiff_runs/job is runs msdebug saved by rank (rank_<R>/), with no "
            "graph to choose; --graph chooses the graph of a data dump.",
        ),  # fmt: skip
        ("--against job --rank one", "%%msdiff: --rank needs a whole number from 0, got 'one'."),
        ("--repeat --rank 1", "%%msdiff: --rank chooses in what --against names; add --against NAME|PATH."),
        ("--save other --iteration 1 --graph 0", "%%msdiff: --iteration and --graph choose in what --against names"),
    ],
)
def test_a_choice_in_msdiff_that_is_not_there_is_one_line(ip, monkeypatch, line, message):
    _as_rank(monkeypatch, None)
    for rank in (0, 1):
        check = Path("msdiff_runs/job") / f"rank_{rank}" / "run.json"
        check.parent.mkdir(parents=True)
        check.write_text('{"format": "msdebug-run", "version": 1, "ops": []}')
    with pytest.raises(UsageError) as raised:
        _msdiff(ip, line, 0.0)
    assert str(raised.value).startswith(message) and "\n" not in str(raised.value), raised.value


def test_msdiff_against_a_dump_passes_graph_and_iteration_on(ip, monkeypatch, dump):
    _as_rank(monkeypatch, None)
    one, _ = dump
    ip.run_cell("import numpy as np, mindspore as ms\nfrom mindspore import ops")
    report = _msdiff(ip, f"--against {one} --graph 2 --iteration 2", 0.0)
    assert report.b.label == "dump (rank 0, graph 2, iteration 2)"
    with pytest.raises(UsageError, match=r"^--graph 7: rank 0 of .* has no graph 7; it has graph 0 \(5 kernels\)"):
        _msdiff(ip, f"--against {one} --graph 7", 0.0)
