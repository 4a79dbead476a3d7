"""msprobe's MindSpore dumps as runs: ``dump.json`` with its ``.npy`` tensors, read without msprobe.

Layout (msprobe's data-dump guide for MindSpore, PyNative levels L0, L1 and mix)::

    <dump_path>/step<N>/rank<R>/          ("rank" alone without distributed training)
      dump.json           {"task", "level", "framework": "mindspore", "dump_data_dir", "data": {entry: ...}}
      stack.json          the Python stack of each forward entry
      construct.json      child entry -> parent Cell entry (L0, mix)
      dump_tensor_data/   <data_name>.npy, for task "tensor" (statistics only without it)

Entries of ``data`` are in execution order: APIs ``Functional.relu.0.forward``,
``Tensor.__add__.3.forward``, ``Primitive.norm.RmsNorm.0.forward``; Cells
``Cell.fc1.Dense.forward.0`` (counter after the direction); backward entries and
``Cell.<path>.<Class>.parameters_grad.<k>``. Each tensor record has ``dtype``, ``shape``,
``Max``/``Min``/``Mean``/``Norm`` and, where saved, ``data_name`` (bfloat16 is saved as float32).
Everything here is untrusted: names are checked to be plain file names, sizes are bounded.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from ..errors import DumpError, DumpFormatError, InvalidValueError, did_you_mean
from ..files import read_regular
from .runs import STAT_KEYS, Run, RunOp, TensorRef, choose_rank

__all__ = ["DUMP_FILE", "choose_msprobe_dump", "find_msprobe_dump", "read_msprobe_dump"]

DUMP_FILE = "dump.json"
_MAX_DUMP_JSON = 512 << 20
_MAX_SIDE_JSON = 128 << 20
_MAX_ENTRIES = 1_000_000
_MAX_DEPTH = 4
_STEP = re.compile(r"^step(\d+)$", re.ASCII)
_RANK = re.compile(r"^rank(\d*)$", re.ASCII)
_FRAME = re.compile(r"^File (.*), line (\d+), in (.*?), \n (.*)$", re.DOTALL)
_API = re.compile(r"^(?P<prefix>[A-Za-z]+)\.(?P<body>.+)\.(?P<n>\d+)\.(?P<dir>forward|backward)$", re.ASCII)
_CELL = re.compile(r"^Cell\.(?P<body>.+)\.(?P<dir>forward|backward|parameters_grad)(?:\.(?P<n>\d+))?$", re.ASCII)


def _rank_number(name: str) -> int:
    digits = _RANK.match(name)
    return int(digits.group(1)) if digits and digits.group(1) else 0


def find_msprobe_dump(path: str | os.PathLike, rank: int | None = None) -> Path | None:
    """The ``rank<R>`` directory holding ``dump.json`` at or under ``path`` (a dump path, one of
    its ``step<N>`` folders or a rank folder): the first step, and rank ``rank`` or the first."""
    root = Path(path)
    if (root / DUMP_FILE).is_file():
        return root
    for _, ranks in _layout(root):
        if rank is not None:
            ranks = {r: p for r, p in ranks.items() if r == rank}
        if ranks:
            return ranks[min(ranks)]
    return None


def choose_msprobe_dump(path: str | os.PathLike, rank: int | None = None, step: int | None = None,
                        job_rank: int | None = None) -> tuple[Path, list[str]] | None:  # fmt: skip
    """The rank folder of an msprobe dump to read as a run, and notes on the choice (None when
    ``path`` holds no msprobe dump): step ``step`` (``--iteration``) or the first, and the rank
    :func:`~msdebug.dumps.runs.choose_rank` picks (``rank``, else ``job_rank``, else the first).
    A rank folder given as ``path`` is that rank of that step.

    Raises
    ------
    InvalidValueError
        For a step or rank the dump does not have; the message lists those it has.
    """
    root = Path(path)
    if (root / DUMP_FILE).is_file():
        named = {"rank": _rank_number(root.name) if _RANK.match(root.name) else None,
                 "iteration": int(root.parent.name[4:]) if _STEP.match(root.parent.name) else None}  # fmt: skip
        for option, given in (("rank", rank), ("iteration", step)):
            if given is not None and given != named[option]:
                what = f"{option} {named[option]}" if named[option] is not None else f"the one {option} it holds"
                raise InvalidValueError(
                    f"--{option} {given}: {root} is {what} of an msprobe dump; give one of the two."
                )
        return root, []
    layout = [(number, ranks) for number, ranks in _layout(root) if ranks]
    if not layout:
        return None
    steps = [number for number, _ in layout]
    notes = []
    if step is not None:
        if step not in steps:
            listed = ", ".join(str(n) for n in steps if n is not None)
            raise InvalidValueError(f"--iteration {step}: {root} has no step{step}; it has "
                                    + (f"step {listed}." if listed else "no step<N> folders.")
                                    + did_you_mean(str(step), [str(n) for n in steps if n is not None]))  # fmt: skip
        number, ranks = layout[steps.index(step)]
    else:
        number, ranks = layout[0]
        if len(layout) > 1:
            notes.append(f"step {number} of {root} taken, the first (it has step "
                         f"{', '.join(str(n) for n in steps[:12])}): choose another with --iteration N")  # fmt: skip
    where = f"step {number} of {root}" if number is not None else str(root)
    chosen, rank_notes = choose_rank(sorted(ranks), rank, job_rank, where)
    return ranks[chosen], notes + rank_notes


def _layout(root: Path) -> list[tuple[int | None, dict[int, Path]]]:
    """``[(step, {rank: folder with dump.json})]`` under ``root`` (a dump path or one step),
    steps in order; the step is None where ``root`` has no ``step<N>`` folders."""
    steps = sorted((p for p in _dirs(root) if _STEP.match(p.name)), key=lambda p: int(p.name[4:]))
    holders = [(int(p.name[4:]), p) for p in steps]
    if not holders:
        holders = [(int(root.name[4:]) if _STEP.match(root.name) else None, root)]
    found = []
    for number, holder in holders:
        ranks: dict[int, Path] = {}
        for folder in sorted(_dirs(holder), key=lambda p: p.name):
            if _RANK.match(folder.name) and (folder / DUMP_FILE).is_file():
                ranks.setdefault(_rank_number(folder.name), folder)
        found.append((number, ranks))
    return found


def _dirs(path: Path) -> list[Path]:
    try:
        return [p for p in path.iterdir() if p.is_dir() and not p.is_symlink()][:10_000]
    except OSError:
        return []


def _json(path: Path, limit: int, required: bool) -> object:
    if not required and not path.exists():
        return None
    text = read_regular(path, limit, DumpError, what=path.name, follow=False)
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as error:
        raise DumpFormatError(f"{path}: not JSON ({str(error)[:120]}).") from None


def read_msprobe_dump(path: str | os.PathLike) -> Run:
    """The rank folder ``path`` (with ``dump.json``) as a run: its entries in execution order."""
    root = Path(path)
    data = _json(root / DUMP_FILE, _MAX_DUMP_JSON, True)
    if not isinstance(data, dict) or not isinstance(data.get("data"), dict):
        raise DumpFormatError(f'{root / DUMP_FILE}: not an msprobe dump (no "data" object).')
    framework = data.get("framework")
    notes = []
    if framework not in ("mindspore", None):
        notes.append(f"{root / DUMP_FILE} was made with {str(framework)[:40]}; its API names follow that framework")
    stacks = _stacks(_json(root / "stack.json", _MAX_SIDE_JSON, False), notes)
    parents = _json(root / "construct.json", _MAX_SIDE_JSON, False)
    parents = parents if isinstance(parents, dict) else {}
    tensors = root / "dump_tensor_data"
    ops = []
    for name, entry in list(data["data"].items())[:_MAX_ENTRIES]:
        if not isinstance(entry, dict):
            continue
        op_type, scope = _type_and_scope(name, parents)
        inputs, outputs = [], []
        for key, value in entry.items():
            if key in ("input_args", "input"):
                _collect(value, "input", inputs, tensors, 0)
            elif key == "input_kwargs" and isinstance(value, dict):
                for kw, item in list(value.items())[:256]:
                    _collect(item, f"input {str(kw)[:40]}", inputs, tensors, 1, keyed=True)
            elif key == "parameters" and isinstance(value, dict):
                for param, item in list(value.items())[:256]:
                    _collect(item, f"input {str(param)[:40]}", inputs, tensors, 1, keyed=True)
            elif key == "output":
                _collect(value, "output", outputs, tensors, 0)
            elif ".parameters_grad" in name and isinstance(value, list):
                _collect(value, f"output {str(key)[:40]}", outputs, tensors, 1, keyed=True)
        source, code = stacks.get(name, ("", ""))
        ops.append(RunOp(len(ops), name[:4096], op_type, scope, inputs, outputs, source, code))
    if data.get("task") == "statistics" or not tensors.is_dir():
        notes.append(
            f"{root} holds statistics only (task {str(data.get('task'))[:20]!r}): tensors are compared by them"
        )
    label = f"msprobe {root.parent.name}/{root.name}" if _STEP.match(root.parent.name) else f"msprobe {root.name}"
    meta = {"task": data.get("task"), "level": data.get("level"), "framework": framework}
    return Run(root, "msprobe dump", label, ops, meta, notes)


def _type_and_scope(name: str, parents: dict) -> tuple[str, str]:
    """``("relu", "Default/fc1-Dense")`` for an API entry inside ``fc1``; Cells by class."""
    cell = _CELL.match(name)
    if cell is not None:
        path, _, cls = cell.group("body").rpartition(".")
        op_type = cls if cell.group("dir") == "forward" else f"{cls}.{cell.group('dir')}"
        return op_type, _scope(parents.get(name), parents)
    api = _API.match(name)
    if api is None:
        return name.split(".")[0][:64] or "unknown", "Default"
    body = api.group("body")
    op_type = body.rpartition(".")[2] if api.group("prefix") == "Primitive" else body
    if api.group("dir") == "backward":
        op_type += ".backward"
    return op_type[:128], _scope(parents.get(name), parents)


def _scope(parent: object, parents: dict) -> str:
    """``Default/outer-Outer/fc1-Dense``: the chain of Cell entries above an entry."""
    labels = []
    seen = set()
    while isinstance(parent, str) and parent and parent not in seen and len(labels) < 64:
        seen.add(parent)
        cell = _CELL.match(parent)
        if cell is None:
            break
        path, _, cls = cell.group("body").rpartition(".")
        labels.append(f"{path.rpartition('.')[2]}-{cls}")
        parent = parents.get(parent)
        if isinstance(parent, list):  # Megatron runs: [parent, micro step]
            parent = parent[0] if parent else None
    return "/".join(["Default", *reversed(labels)])


def _collect(value: object, slot: str, into: list, tensors: Path, depth: int, keyed: bool = False) -> None:
    """Tensor records of an argument, nested lists flattened (``input 1.0``)."""
    if depth > _MAX_DEPTH or len(into) > 4096:
        return
    if isinstance(value, list):
        for position, item in enumerate(value[:4096]):
            inner = f"{slot}.{position}" if (depth or keyed) else f"{slot} {position}"
            _collect(item, inner, into, tensors, depth + 1)
        return
    if not isinstance(value, dict) or "shape" not in value or not isinstance(value.get("dtype"), str):
        return  # numbers, strings, None, slices: not tensors
    shape = value.get("shape")
    if (
        not isinstance(shape, list)
        or len(shape) > 32
        or not all(isinstance(n, int) and 0 <= n < 1 << 62 for n in shape)
    ):
        return
    name = value.get("data_name")
    path = None
    if (
        isinstance(name, str)
        and name
        and "/" not in name
        and "\\" not in name
        and name not in (".", "..")
        and "\0" not in name
    ):
        path = tensors / name
    stats = {
        key: value[key]
        for key in STAT_KEYS
        if isinstance(value.get(key), (int, float)) and not isinstance(value.get(key), bool)
    }
    into.append(TensorRef(slot, path, tuple(shape), value["dtype"][:32], stats or None))


def _stacks(value: object, notes: list[str]) -> dict[str, tuple[str, str]]:
    """``{entry: (path:line, code)}``: the first frame of each entry's stack (innermost first)
    that is the person's code rather than a library's; both forms of ``stack.json``."""
    found: dict[str, tuple[str, str]] = {}
    if not isinstance(value, dict):
        return found
    groups = list(value.items())[:_MAX_ENTRIES]
    if "0" in value and isinstance(value["0"], list) and len(value["0"]) == 2 and isinstance(value["0"][0], list):
        groups = [(name, item[1]) for _, item in groups if isinstance(item, list) and len(item) == 2
                  and isinstance(item[0], list) for name in item[0][:_MAX_ENTRIES] if isinstance(name, str)]  # fmt: skip
    for name, frames in groups:
        if isinstance(frames, list):
            place = _user_frame([f for f in frames[:256] if isinstance(f, str)])
            if place is not None:
                found[name] = place
    return found


def _user_frame(frames: list[str]) -> tuple[str, str] | None:
    parsed = [match for match in (_FRAME.match(f[:8192]) for f in frames) if match is not None]
    for match in parsed:
        path = match.group(1)
        if "site-packages" not in path and "dist-packages" not in path and "<frozen" not in path:
            return f"{path}:{match.group(2)}", match.group(4).strip()[:400]
    if parsed:
        return f"{parsed[0].group(1)}:{parsed[0].group(2)}", parsed[0].group(4).strip()[:400]
    return None
