"""GPUs as sets of CUDA compute capabilities, and how the release notes name them.

A compute capability is written ``major * 10 + minor`` (9.0 is 90, 12.1 is 121). A set of GPUs
is a frozenset of such numbers drawn from `EVERY_GPU` (majors 3 to 15, minors 0 to 9: every
capability CUDA has named, and room for the next ones), so that what a test of the
capability selects can be computed by trying each one.
"""

from __future__ import annotations

import re

__all__ = ["EVERY_GPU", "GpusError", "gpus_named", "said"]

EVERY_GPU: frozenset[int] = frozenset(m * 10 + n for m in range(3, 16) for n in range(10))

_ITEM = re.compile(r"(<=|>=|<|>)?(\d{1,2})\.(\d|x)")


class GpusError(ValueError):
    """A GPU set spelled in a way `gpus_named` does not read."""


def gpus_named(items: list[str] | tuple[str, ...]) -> frozenset[int]:
    """The GPUs a list of items names, each ``"9.0"`` (that capability), ``"10.x"`` (every
    minor of major 10), ``"<10.0"``, ``"<=9.0"``, ``">9.0"`` or ``">=10.0"``: their union."""
    out: set[int] = set()
    for item in items:
        match = _ITEM.fullmatch(item.strip()) if isinstance(item, str) else None
        if match is None:
            raise GpusError(f"{item!r} is not a compute capability (9.0, 10.x, <10.0, >=12.0)")
        op, major, minor = match.group(1) or "", int(match.group(2)), match.group(3)
        if minor == "x":
            if op:
                raise GpusError(f"{item!r}: a family (10.x) takes no comparison")
            out.update(c for c in EVERY_GPU if c // 10 == major)
            continue
        at = major * 10 + int(minor)
        test = {
            "": at.__eq__,
            "<": at.__gt__,
            "<=": at.__ge__,
            ">": at.__lt__,
            ">=": at.__le__,
        }[op]
        out.update(c for c in EVERY_GPU if test(c))
    return frozenset(out)


def said(gpus: frozenset[int]) -> str:
    """A set of GPUs as a person reads it: ``SM90``, ``SM100-SM103``, ``SM10x``, ``below
    SM100``, ``SM120 and newer``."""
    if gpus >= EVERY_GPU:
        return "any GPU"
    runs: list[tuple[int, int]] = []
    for c in sorted(gpus):
        if runs and c == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], c)
        else:
            runs.append((c, c))
    low, high = min(EVERY_GPU), max(EVERY_GPU)

    def run(a: int, b: int) -> str:
        if a == low:
            return f"below SM{b + 1}"
        if b == high:
            return f"SM{a} and newer"
        if a % 10 == 0 and b == a + 9:
            return f"SM{a // 10}x"
        return f"SM{a}" if a == b else f"SM{a}-SM{b}"

    return ", ".join(run(a, b) for a, b in runs)
