"""The one way numbers and intervals are written in verdicts, tables and pages."""

from __future__ import annotations

import math
from typing import Any


def finite(x: object) -> bool:
    """Whether ``x`` is a real number (not a bool) that is neither NaN nor infinite."""
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def num(x: Any, spec: str = ".4f") -> str:
    """``x`` formatted with ``spec``; "n/a" for a missing or non-finite value."""
    return format(x, spec) if finite(x) else "n/a"


def bounds(lo: Any, hi: Any, spec: str = "+.4f") -> str:
    """"[lo, hi]"; an infinite side is written as such; "no interval" when neither side is known."""
    def side(v: Any) -> str:
        if isinstance(v, (int, float)) and math.isinf(v):
            return "+inf" if v > 0 else "-inf"
        return format(v, spec)

    if not (_known(lo) and _known(hi)):
        return "no interval"
    return f"[{side(lo)}, {side(hi)}]"


def _known(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and not math.isnan(v)


def interval(point: Any, lo: Any, hi: Any, digits: int = 4, signed: bool = True) -> str:
    """"point [lo, hi]" with ``digits`` decimals (signed by default)."""
    spec = f"{'+' if signed else ''}.{digits}f"
    return f"{num(point, spec)} {bounds(lo, hi, spec)}"
