"""Stored numbers in the tutorials are compared with a tolerance, everything else exactly.

The tutorials' numbers come from MindSpore's float32 kernels, and those add in the order of
the reader's vector unit: oneDNN and MindSpore's own kernels pick AVX-512, AVX2 or SSE code by
the CPU, and numpy does the same. The last bits of an op's output then differ between CPUs, and
what msdebug prints about a difference magnifies them: the max relative error of a MatMul whose
input was changed by 0.1% was 0.00100062 on one CPU and 0.00100132 on another. A regex
sanitizer cannot express a tolerance (rounding to fewer digits still flips at every rounding
boundary), so nbval's comparison is given one here, after its sanitizers have run:

* the text around the numbers must be identical, and so must every integer (counts, indices,
  shapes, op numbers);
* two decimal numbers agree within 1% of the larger, or within half a pixel inside an SVG
  picture (a coordinate);
* ``inf``, ``nan`` and every other word are text, compared exactly.

Where a stored output and a new one agree so, nbval is handed the stored one; otherwise the new
one, and nbval reports the difference as usual.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

__all__ = ["agree", "use_number_tolerance"]

RTOL = 0.01
SVG_ATOL = 0.5  # half a pixel

# A number standing on its own: not the digit of a name (op0, fc1, rank_0, x86), nor the middle
# of a longer number.
NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?(?![\w.])")
SVG = re.compile(r"<svg\b.*?</svg>", re.DOTALL)


def _is_integer(token: str) -> bool:
    return not any(c in token for c in ".eE")


def _close(a: str, b: str, in_svg: bool) -> bool:
    if _is_integer(a) and _is_integer(b):
        return int(a) == int(b)
    x, y = float(a), float(b)
    if in_svg and abs(x - y) <= SVG_ATOL:
        return True
    return math.isclose(x, y, rel_tol=RTOL, abs_tol=0.0)


def agree(stored: str, new: str) -> bool:
    """Whether ``new`` says what ``stored`` says, up to the tolerance of stored numbers."""
    if stored == new:
        return True
    pieces_a, pieces_b = NUMBER.split(stored), NUMBER.split(new)
    numbers_a, numbers_b = NUMBER.findall(stored), NUMBER.findall(new)
    if pieces_a != pieces_b or len(numbers_a) != len(numbers_b):
        return False
    svg = [m.span() for m in SVG.finditer(stored)]
    positions = [m.start() for m in NUMBER.finditer(stored)]
    for a, b, at in zip(numbers_a, numbers_b, positions, strict=True):
        if a != b and not _close(a, b, any(start <= at < end for start, end in svg)):
            return False
    return True


def _tolerate(test: list, ref: list, sanitize: Callable[[str], str]) -> list:
    """``test``'s outputs, with each string that agrees with the stored one replaced by it."""
    import nbformat

    if len(test) != len(ref):
        return test
    out = []
    for new, stored in zip(test, ref, strict=True):
        new = dict(new)
        if new.get("output_type") == stored.get("output_type"):
            if isinstance(new.get("text"), str) and isinstance(stored.get("text"), str):
                if agree(sanitize(stored["text"]), sanitize(new["text"])):
                    new["text"] = stored["text"]
            if isinstance(new.get("data"), dict) and isinstance(stored.get("data"), dict):
                data = dict(new["data"])
                for mime, value in data.items():
                    kept = stored["data"].get(mime)
                    if isinstance(value, str) and isinstance(kept, str) and agree(sanitize(kept), sanitize(value)):
                        data[mime] = kept
                new["data"] = data
        out.append(nbformat.from_dict(new))  # nbval reads outputs by attribute
    return out


def use_number_tolerance() -> None:
    """nbval compares each cell's outputs with the stored ones through :func:`agree`."""
    from nbval.plugin import IPyNbCell

    compare = IPyNbCell.compare_outputs
    if getattr(compare, "with_number_tolerance", False):
        return

    def compare_outputs(self, test, ref, skip_compare=None):
        return compare(self, _tolerate(test, ref, self.sanitize), ref, skip_compare)

    compare_outputs.with_number_tolerance = True
    IPyNbCell.compare_outputs = compare_outputs
