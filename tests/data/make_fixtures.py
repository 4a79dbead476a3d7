"""Regenerate the real dump fixtures under tests/data/.

The RDR trees need MindSpore 2.7.0 (the last version with RDR; it needs numpy<2), the
saved-graph directories the 2.10 build the tests run against::

    python tests/data/make_fixtures.py --py27 /path/to/venv27/bin/python --py210 /path/to/venv/bin/python

It writes, replacing what is there:

* ``rdr_mode2/rank_0/rdr/``: a normal GRAPH-mode run with ``MS_RDR_MODE=2``;
* ``rdr_mode1/rank_0/rdr/``: a failing GRAPH-mode run (gather with an index out of
  range) with ``MS_RDR_MODE=1``, which exports only because of the failure;
* ``graphs_l2/``: ``MS_DEV_SAVE_GRAPHS=2`` of the same network on 2.10, pruned to keep
  the fixture small: no ``trace_code_graph_*`` or ``actor_set/``, optimizer passes 0-9
  only, and one file per pass in ``verbose_ir_files/``;
* ``graphs_l3_dot/``: the first ``.dot`` file (and its ``.ir`` twin when there is one)
  of a level-3 run.

The network has a UTF-8 argument name and a branch on a tensor, so the graph names carry
``↓``, ``✓`` and ``✗`` and a parameter is called ``фx``. MindSpore writes RDR files with
mode 0400; they are committed writable (git keeps only the executable bit) and the tests
make read-only copies.

Source locations in the dumps point into this file. So that no fixture depends on the
directory it was made in, the paths MindSpore wrote are rewritten: this checkout's root
becomes the relative ``tests/data/make_fixtures.py``, and the interpreter's prefix becomes
``venv/`` (``venv/lib/python3.11/site-packages/mindspore/...``, still an installed package).
"""

from __future__ import annotations

import argparse
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def _network():
    import mindspore as ms
    from mindspore import nn, ops

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.dense = nn.Dense(3, 2)
            self.relu = nn.ReLU()

        def construct(self, фx):
            y = self.dense(фx)
            if y.sum() > 0:
                y = self.relu(y)
            else:
                y = y * 2
            return y

    ms.set_context(mode=ms.GRAPH_MODE)
    return Net(), ms, ops


def child_rdr_mode2() -> None:
    import numpy as np

    net, ms, _ = _network()
    out = net(ms.Tensor(np.ones((1, 3), np.float32)))
    print(out.asnumpy())


def child_rdr_mode1() -> None:
    import numpy as np

    _, ms, ops = _network()

    from mindspore import nn

    # A Cell, not an @ms.jit function: 2.7.0 exported nothing when a jit function failed.
    class Take(nn.Cell):
        def construct(self, table, index):
            return ops.gather(table, index, 0) + 1

    table = ms.Tensor(np.ones((4, 3), np.float32))
    try:
        Take()(table, ms.Tensor(np.array([7], np.int32))).asnumpy()
    except RuntimeError as error:
        print("failed as planned:", str(error).splitlines()[0])
    else:  # pragma: no cover - the fixture would not be a failure run
        raise SystemExit("the out-of-range gather did not fail")


def child_graphs() -> None:
    child_rdr_mode2()


def _run(python: str, child: str, cwd: Path, env: dict[str, str]) -> None:
    full = {**os.environ, "GLOG_v": "3", **env}
    subprocess.run([python, str(Path(__file__).resolve()), "--child", child], cwd=cwd, env=full, check=True)


def _replace(source: Path, target: Path) -> None:
    if target.exists():
        for path in target.rglob("*"):
            path.chmod(path.stat().st_mode | stat.S_IWUSR)
        shutil.rmtree(target)
    shutil.copytree(source, target)
    for path in target.rglob("*"):
        path.chmod(path.stat().st_mode | stat.S_IWUSR | stat.S_IRUSR)


def _portable(tree: Path, python: str) -> None:
    """Rewrite the machine's paths in the text dumps under ``tree`` (see the module docstring)."""
    prefix = subprocess.run([python, "-c", "import sys; print(sys.prefix)"], capture_output=True, text=True, check=True)
    # The interpreter first: it may live inside the checkout (.venv).
    replacements = [(f"{prefix.stdout.strip()}/".encode(), b"venv/"), (f"{ROOT}/".encode(), b"")]
    for path in sorted(tree.rglob("*")):
        if not path.is_file():
            continue
        data = path.read_bytes()
        if path.suffix in (".ir", ".dot"):  # the .pb files hold no paths; rewriting would corrupt them
            for old, new in replacements:
                data = data.replace(old, new)
            path.write_bytes(data)
        if any(old in data for old, _ in replacements):
            raise SystemExit(f"{path}: still names this machine's directories")


def make_rdr(python: str) -> None:
    for mode, child in (("2", "rdr_mode2"), ("1", "rdr_mode1")):
        with tempfile.TemporaryDirectory() as scratch:
            out = Path(scratch) / "rdr"
            _run(python, child, Path(scratch), {"MS_RDR_ENABLE": "1", "MS_RDR_MODE": mode, "MS_RDR_PATH": str(out)})
            _replace(out, HERE / f"rdr_mode{mode}")
            _portable(HERE / f"rdr_mode{mode}", python)


def make_graphs(python: str) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "graphs"
        _run(python, "graphs", Path(scratch), {"MS_DEV_SAVE_GRAPHS": "2", "MS_DEV_SAVE_GRAPHS_PATH": str(out)})
        for path in out.rglob("trace_code_graph*"):
            path.unlink()
        shutil.rmtree(out / "actor_set", ignore_errors=True)
        for path in out.glob("opt_pass_*.ir"):
            if int(path.name.split("_")[2]) >= 10:
                path.unlink()
        seen: set[str] = set()
        for path in sorted((out / "verbose_ir_files").glob("*.ir")):  # keep one dump of each pass
            stem = path.stem.rsplit("_", 1)[0]
            if stem in seen:
                path.unlink()
            seen.add(stem)
        _replace(out, HERE / "graphs_l2")
        _portable(HERE / "graphs_l2", python)
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "graphs"
        _run(python, "graphs", Path(scratch), {"MS_DEV_SAVE_GRAPHS": "3", "MS_DEV_SAVE_GRAPHS_PATH": str(out)})
        keep = Path(scratch) / "keep"
        keep.mkdir()
        for stem in ("00_bootstrap", "graph_build_0"):
            for dot in sorted(out.rglob(f"{stem}*.dot"))[:1]:
                for twin in (dot, dot.with_suffix(".ir")):
                    if twin.exists():
                        shutil.copy(twin, keep / twin.name)
        _replace(keep, HERE / "graphs_l3_dot")
        _portable(HERE / "graphs_l3_dot", python)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--py27", help="a Python with MindSpore 2.7.0 (RDR trees)")
    parser.add_argument("--py210", help="a Python with MindSpore 2.10 (saved-graph directories)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        globals()[f"child_{args.child}"]()
        return
    if not (args.py27 or args.py210):
        parser.error("give --py27 and/or --py210")
    if args.py27:
        make_rdr(args.py27)
    if args.py210:
        make_graphs(args.py210)


if __name__ == "__main__":
    sys.exit(main())
