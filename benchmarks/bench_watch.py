"""Watching a training: ``msdebug.watch()`` (what ``%%mswatch`` runs) against the same step without it.

1. One training step of a 20-layer MLP (``nn.TrainOneStepCell`` + SGD, ``--width`` 64, batch 32,
   as ``bench_nan.py``), in PyNative and in GRAPH mode. Each round runs a block of ``--block``
   steps without msdebug, then a block of the same steps inside ``msdebug.watch(...)`` (the
   recommended conditions, ``stop=False`` so that a trip does not end the block), alternating;
   the median block time of ``--rounds`` rounds is compared. Entering the watch and its first
   step (where the statistics, and in GRAPH mode the watched step, are compiled) are outside the
   timed block and reported apart as the watch's fixed cost. Twice: every step watched
   (``every=1``), and every 10th step (``every=10``, the block a multiple of 10 steps). In GRAPH
   mode the SequentialCell's layers show no activation (MindSpore compiles no hook for them), so
   the same MLP with its layers called by name is timed too, every step (not a goal): what the
   activations' hooks compiled into the step cost.
2. In GRAPH mode, what MindSpore's CPU runtime costs a watch before any statistic (not goals;
   :func:`bench_floor`): the watched graph alone (its gradients as an extra output), that graph
   with the backend's numpy passes and nothing else, and the step's graph alternated 9:1 with a
   second graph. A GRAPH goal below these cannot be met by msdebug's own code on this machine.
3. The memory of the statistics a watch keeps: the tensors a 100M-parameter model gives to a
   PyNative watch (MindSpore's own ``nn.TransformerEncoder``, BERT-base sized: 12 layers,
   d_model 768, with a 30,522-token embedding; its parameters, their gradients, one activation
   per named sub-cell, the loss) go through the recording path of every step (the conditions'
   :class:`~msdebug.dumps.watch.Evaluator` and :class:`~msdebug.dumps.watch.WatchHistory`) for
   ``--steps-memory`` steps with changing values. Measured with ``tracemalloc`` (Python objects
   and numpy's buffers, which numpy reports to it): the peak above what was allocated before.

Goals: every step watched at most 1.3x the plain step in GRAPH and 2x in PyNative; every 10th
step at most 1.1x in both; the statistics of 1,000 steps under 50 MB. The script exits 1 when it
misses one.

    python benchmarks/bench_watch.py [--rounds 15] [--block 10] [--width 64] [--steps-memory 1000]
                                     [--modes pynative,graph] [--every 1,10]

A goal whose case is left out (``--modes``, ``--every``) is not judged.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np
from goals import verdict

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

GOALS = {("graph", 1): 1.3, ("pynative", 1): 2.0, ("graph", 10): 1.1, ("pynative", 10): 1.1}
MEMORY_MB = 50.0


def _named_mlp(width: int):
    """The same 20 layers, each an attribute called by name: in GRAPH mode the activations' hooks
    a watch compiles into the step reach them (not the layers of a SequentialCell)."""
    from mindspore import nn

    class NamedMLP(nn.Cell):
        def __init__(self) -> None:
            super().__init__()
            names = []
            for i in range(20):
                setattr(self, f"fc{i}", nn.Dense(width, width))
                setattr(self, f"relu{i}", nn.ReLU())
                names += [f"fc{i}", f"relu{i}"]
            self.names = tuple(names)

        def construct(self, x):
            for name in self.names:
                x = getattr(self, name)(x)
            return x

    return NamedMLP()


def _training(mode: str, width: int, batch: int, named: bool = False):
    import mindspore as ms
    from mindspore import nn

    ms.set_context(mode=ms.GRAPH_MODE if mode == "graph" else ms.PYNATIVE_MODE)
    ms.set_seed(0)
    if named:
        net = _named_mlp(width)
    else:
        net = nn.SequentialCell([layer for _ in range(20) for layer in (nn.Dense(width, width), nn.ReLU())])
    step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), nn.SGD(net.trainable_params(), 1e-3))
    x = ms.Tensor(np.random.default_rng(0).standard_normal((batch, width)).astype(np.float32))
    y = ms.Tensor(np.zeros((batch, width), np.float32))
    return net, step, x, y


def bench_steps(mode: str, every: int, args, named: bool = False) -> dict:
    import msdebug

    net, step, x, y = _training(mode, args.width, args.batch, named)
    block = -(-args.block // every) * every  # a whole number of watch periods

    def steps(count: int) -> None:
        for _ in range(count):
            step(x, y).asnumpy()

    steps(3)  # compiled, warm
    times: dict[str, list[float]] = {"plain": [], "watched": [], "fixed": []}
    watched_steps = 0
    for _ in range(args.rounds):
        start = time.perf_counter()
        steps(block)
        times["plain"].append(time.perf_counter() - start)

        start = time.perf_counter()
        with msdebug.watch(every=every, stop=False, net=step) as w:
            steps(every)  # the first watched step compiles; then the period is complete again
            times["fixed"].append(time.perf_counter() - start)
            begin = time.perf_counter()
            steps(block)
            times["watched"].append(time.perf_counter() - begin)
        watched_steps = len(w.history.steps)
        assert w.number == block + every, (w.number, block + every)
    plain, watched = statistics.median(times["plain"]), statistics.median(times["watched"])
    fixed = statistics.median(times["fixed"]) - plain * every / block
    result = {
        "mode": mode,
        "every": every,
        "step_ms": round(plain / block * 1e3, 3),
        "watched_step_ms": round(watched / block * 1e3, 3),
        "ratio": round(watched / plain, 3),
        "fixed_ms": round(fixed * 1e3, 1),
        "tensors": len(w.history.watched),
        "activations": sum(1 for item in w.history.watched if item.kind == "act"),
        "recorded_steps": watched_steps,
        "named": named,
    }
    goal = "not a goal" if named else f"goal <= {GOALS[(mode, every)]}"
    print(
        f"20-layer MLP training step ({mode}{', its layers called by name' if named else ''}, width {args.width}, "
        f"batch {args.batch}), every {every}: median of {args.rounds} blocks of {block} steps\n"
        f"  without msdebug   {result['step_ms']:.3f} ms a step\n"
        f"  msdebug.watch     {result['watched_step_ms']:.3f} ms a step ({result['tensors']} tensors watched, "
        f"{result['activations']} of them activations; {watched_steps} of {block + every} steps recorded)\n"
        f"  ratio {result['ratio']}x ({goal}); entering the watch and its first step: {result['fixed_ms']} ms more"
    )
    return result


def bench_floor(args) -> dict:
    """What MindSpore's CPU runtime costs a GRAPH watch before any statistic, measured beside the
    plain step in the same rounds (not goals: the floor the GRAPH goals are read against).

    * ``gradients out``: the watched step's graph (:class:`~msdebug.backend.watch.WatchedStep`:
      the same step, its gradients laid end to end as an extra output) run back to back;
    * ``and numpy's passes``: that, with the host's statistics of its weights and gradients
      (their copies before the step, one ``packed_rows`` after it), no conditions, no history:
      the backend alone, with the gap it leaves between two graph runs;
    * ``graph switch``: the step's own graph 9 times, then the watched graph once, no statistics:
      what every 10th step watched costs for running a second graph at all.
    """
    import msdebug  # noqa: F401 - the package, as the timed cases import it
    from msdebug.backend import watch as backend
    from msdebug.dumps.watch import Needs, parse_conditions

    net, step, x, y = _training("graph", args.width, args.batch)
    needs = Needs.of(parse_conditions(None))
    wrapper = backend.WatchedStep(step, list(step.weights), needs, True)
    reader = backend._HostStep(wrapper, list(step.weights), needs)
    views = [p.asnumpy().reshape(-1) for p in wrapper.watched]  # CPU: views of the Parameters' memory

    def plain(count: int) -> None:
        for _ in range(count):
            step(x, y).asnumpy()

    def out(count: int) -> None:
        for _ in range(count):
            wrapper(x, y)[0].asnumpy()

    def passes(count: int) -> None:
        for _ in range(count):
            reader.copy(views)
            loss, small, large = wrapper(x, y)
            loss.asnumpy()
            reader.rows(views, small, large)

    def switch(count: int) -> None:
        for i in range(count):
            (wrapper(x, y)[0] if i % 10 == 0 else step(x, y)).asnumpy()

    cases = {"plain": plain, "gradients out": out, "and numpy's passes": passes, "graph switch": switch}
    for run in cases.values():
        run(3)  # compiled, warm
    block = -(-args.block // 10) * 10
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(args.rounds):
        for name, run in cases.items():
            start = time.perf_counter()
            run(block)
            times[name].append(time.perf_counter() - start)
    base = statistics.median(times["plain"])
    ratios = {name: round(statistics.median(t) / base, 3) for name, t in times.items() if name != "plain"}
    print(f"MindSpore's floor for a GRAPH watch (width {args.width}, batch {args.batch}, blocks of {block} "
          f"steps; not goals)\n" + "\n".join(f"  {name:20s} {ratio}x the plain step" for name, ratio in ratios.items()))  # fmt: skip
    return ratios


def _bert_sized_tensors():
    """The tensors a PyNative watch of a BERT-base sized ``nn.TransformerEncoder`` sees, and its
    parameter count (the model itself is built, counted and let go)."""
    import mindspore as ms
    from mindspore import nn

    from msdebug.dumps.watch import Watched

    ms.set_context(mode=ms.PYNATIVE_MODE)

    class Bert(nn.Cell):
        def __init__(self):
            super().__init__()
            self.embedding = nn.Embedding(30522, 768)
            layer = nn.TransformerEncoderLayer(768, 12, 3072, dropout=0.0, batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, 12)
            self.head = nn.Dense(768, 2)

        def construct(self, ids):
            return self.head(self.encoder(self.embedding(ids))[:, 0])

    model = Bert()
    params = model.trainable_params()
    count = sum(int(np.prod(p.shape)) for p in params)
    watched = [Watched(p.name, "weight", tuple(p.shape), "Float32") for p in params]
    watched += [Watched(p.name, "grad", tuple(p.shape), "Float32") for p in params]
    watched += [Watched(name, "act", (), "Float32", name) for name, _ in model.cells_and_names() if name]
    watched.append(Watched("loss", "loss", (), "float"))
    del model, params
    return watched, count


def bench_memory(args) -> dict:
    from msdebug.dumps.watch import STATS, Evaluator, Needs, WatchHistory, parse_conditions

    watched, parameters = _bert_sized_tensors()
    conditions = parse_conditions(None)
    extras = Needs.of(conditions).extras
    rng = np.random.default_rng(0)
    base = rng.uniform(0.1, 1.0, (len(watched), len(STATS) + len(extras)))
    base[:, STATS.index("zero_share")] = 0.01
    base[:, STATS.index("nonfinite")] = 0.0

    tracemalloc.start()
    before, _ = tracemalloc.get_traced_memory()
    tracemalloc.reset_peak()
    start = time.perf_counter()
    evaluator = Evaluator(conditions)
    history = WatchHistory(conditions=[c.token for c in conditions])
    for item in watched:
        history.add(item)
    for number in range(args.steps_memory):
        # each step's statistics, as the backend hands them over: a row per tensor
        values = base * (1.0 + 1e-3 * number)
        values[-1, STATS.index("mean")] = 1.0 / (1 + number)  # the loss goes down
        evaluator.evaluate(number, watched, values)
        history.record(number, values, watched)
    seconds = time.perf_counter() - start
    current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    result = {
        "parameters": parameters,
        "tensors": len(watched),
        "steps": args.steps_memory,
        "recorded_steps": len(history.steps),
        "history_mb": round(history.nbytes / 1e6, 2),
        "peak_extra_mb": round((peak - before) / 1e6, 2),
        "kept_mb": round((current - before) / 1e6, 2),
        "host_ms_per_step": round(seconds / args.steps_memory * 1e3, 2),
    }
    print(
        f"statistics of a {parameters / 1e6:.0f}M-parameter model ({len(watched)} tensors watched) over "
        f"{args.steps_memory} steps, tracemalloc\n"
        f"  history {result['history_mb']} MB of statistics ({result['recorded_steps']} steps kept), "
        f"{result['kept_mb']} MB held at the end, peak {result['peak_extra_mb']} MB above the start "
        f"(goal < {MEMORY_MB:.0f})\n"
        f"  conditions and recording on the host: {result['host_ms_per_step']} ms a step"
    )
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15, help="alternating blocks of each kind")
    parser.add_argument("--block", type=int, default=10, help="steps per timed block")
    parser.add_argument("--width", type=int, default=64, help="the MLP's width")
    parser.add_argument("--batch", type=int, default=32, help="the batch size")
    parser.add_argument("--steps-memory", type=int, default=1000, help="steps of statistics recorded")
    parser.add_argument("--modes", default="pynative,graph", help="the modes timed (pynative, graph)")
    parser.add_argument("--every", default="1,10", help="the watch periods timed")
    args = parser.parse_args()
    from mindspore import set_context

    set_context(device_target="CPU")
    modes = [m for m in ("pynative", "graph") if m in args.modes.split(",")]
    periods = [int(e) for e in args.every.split(",") if e.strip()]
    if not modes or not periods or any(every not in (1, 10) for every in periods):
        parser.error(f"--modes takes pynative and/or graph, --every 1 and/or 10 (the periods with goals); "
                     f"got --modes {args.modes!r} --every {args.every!r}")  # fmt: skip
    timed = [bench_steps(mode, every, args) for mode in modes for every in periods]
    # GRAPH mode sees no activation of a SequentialCell's layers (MindSpore compiles no hook for
    # them): what watching them costs, with the layers called by name
    named = [bench_steps("graph", every, args, named=True) for every in periods if every == 1 and "graph" in modes]
    floor = bench_floor(args) if "graph" in modes else {}
    memory = bench_memory(args)
    print(json.dumps({"steps": timed, "named": named, "floor": floor, "memory": memory}))
    goals = {
        f"{r['mode']} every {r['every']}: at most {GOALS[(r['mode'], r['every'])]}x the plain step ({r['ratio']}x)": (
            r["ratio"] <= GOALS[(r["mode"], r["every"])]
        )
        for r in timed
    }
    goals[f"statistics of {memory['steps']} steps under {MEMORY_MB:.0f} MB ({memory['peak_extra_mb']} MB)"] = (
        memory["peak_extra_mb"] < MEMORY_MB
    )
    return verdict(goals)


if __name__ == "__main__":
    sys.exit(main())
