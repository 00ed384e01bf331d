"""The first integer at which a monotone condition holds (doubling, then bisection): pure Python,
shared by the power analysis (seeds needed) and the serving capacity (context and batch that fit)."""

from __future__ import annotations

from collections.abc import Callable


def first_true(holds: Callable[[int], bool], start: int, cap: int) -> int | None:
    """The smallest n >= ``start`` for which ``holds(n)`` (false, then true as n grows); None when
    it does not hold at any doubling of ``start`` up to ``cap``."""
    if holds(start):
        return start
    lo, hi = start, start * 2
    while not holds(hi):
        lo, hi = hi, hi * 2
        if hi > cap:
            return None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if holds(mid):
            hi = mid
        else:
            lo = mid
    return hi


__all__ = ["first_true"]
