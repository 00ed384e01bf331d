"""Which width rules explain a given d_ff, and how well it is aligned for hardware.

Each rule reads ``d_ff = round(multiplier x d_model)`` to a multiple of ``multiple_of``: for
ratio rules ``multiplier`` is the ratio (x2/3 when parameter-matched), for the LLaMA rule it is
8/3 x ``ffn_dim_multiplier`` (the rule also truncates to integers along the way).

Only rules a person would call an explanation are kept:

* an exact ratio only when it is a simple fraction (denominator <= 3, at most 16x): every width
  is *some* ratio of d_model, and "43/16 exactly" explains nothing;
* a rounded rule only when the multiple is well below d_ff (``d_ff / multiple_of`` >=
  :data:`MIN_MULTIPLES`) and the rounding moves the width by at most :data:`MAX_ROUNDING_SHIFT`
  (so "raw ratio 1, rounded up to a multiple of 8192" for 8192 is gone), when it needs no clamp
  of a width that rounds to 0 up to one multiple, and when "nearest" does not hinge on a tie
  (a value exactly half-way, which only rounds the right way by the half-up convention);
* one row per distinct arithmetic, read with the simplest ratio (a gated 8/3 is "param-matched
  4", a gated 4 is "raw 4"; the LLaMA rule and "param-matched 4, rounded up" give the same
  numbers: the named rule is kept), and a rounded rule only where the rounding moved the
  width (ratio 4 "rounded up to 256" for 4 x 768 = 3072 is the exact rule again),

ranked simplest first: exact before rounded, no ``ffn_dim_multiplier`` before one, rounding up
(the convention) before nearest, whole-number ratios before fractions, then the named rule
(LLaMA, param-matched, raw) and the smaller ratio.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, NamedTuple

from ffnlab.sizing.kinds import get_kind
from ffnlab.sizing.result import Result
from ffnlab.sizing.widths import (
    Alignment,
    WidthRule,
    check_width,
    fraction_text,
    param_matched_ratio,
    rounding_quotient,
    unrounded_width,
)

# Ratios people actually use: plain MLPs 1-8x, 8/3 (SwiGLU parity), 7/2 (Mistral's 14336/4096).
COMMON_RATIOS = tuple(Fraction(x) for x in ("1", "2", "8/3", "3", "7/2", "4", "16/3", "6", "8"))
# A parameter-matched ratio names the N x plain MLP a gated FFN matches: whole numbers only
# ("param-matched 16/3" = raw 32/9 is arithmetic, not a design).
PARAM_MATCHED_RATIOS = tuple(r for r in COMMON_RATIOS if r.denominator == 1)
# ffn_dim_multiplier values of published LLaMA-family models (Meta's params.json files).
LLAMA_MULTIPLIERS: tuple[Fraction | None, ...] = (None, Fraction(6, 5), Fraction(13, 10), Fraction(3, 2))
MULTIPLES = tuple(2**i for i in range(0, 14))  # 1 .. 8192
# d_ff must hold at least this many multiples: Llama 2 70B rounds 28398 up to 7 x 4096 = 28672
# (params.json multiple_of 4096), the coarsest published rounding this keeps.
MIN_MULTIPLES = 4
MAX_ROUNDING_SHIFT = Fraction(1, 20)  # a rounding that moves the width > 5% is another width
SIMPLE_DENOMINATORS = (1, 2, 3)
MAX_SIMPLE_RATIO = 16
RULE_ORDER = {"llama": 0, "param-matched": 1, "ratio": 2}
ROUNDING_ORDER = {"exact": 0, "up": 1, "nearest": 2}


def _num(x: Fraction | None) -> float | None:
    return None if x is None else float(x)


def _txt(x: Fraction | None) -> str | None:
    return None if x is None else fraction_text(x)


def is_simple(r: Fraction) -> bool:
    """A ratio a designer would write down: small denominator, not absurdly large."""
    return r.denominator in SIMPLE_DENOMINATORS and r <= MAX_SIMPLE_RATIO


def _untruncated(d_model: int, kind: str, rule: WidthRule) -> Fraction:
    """The rule's width in exact arithmetic (the LLaMA rule without its int() truncations)."""
    if rule.rule != "llama":
        return unrounded_width(d_model, kind, rule)
    assert rule.ratio is not None
    return Fraction(2) * rule.ratio * d_model / 3 * (rule.multiplier or 1)


def explains(d_model: int, d_ff: int, kind: str, rule: WidthRule) -> bool:
    """Whether rounded ``rule`` gives ``d_ff`` by a rounding a person would accept (module doc)."""
    m = rule.multiple_of
    if d_ff % m or d_ff // m < MIN_MULTIPLES:
        return False
    target = unrounded_width(d_model, kind, rule)
    if target == d_ff or _untruncated(d_model, kind, rule) == d_ff:
        return False  # nothing was rounded (LLaMA's int() aside): the exact ratio explains it
    n = rounding_quotient(target, m, rule.rounding)
    if n < 1 or n * m != d_ff:  # n < 1: only a clamp from 0 would give a width
        return False
    if rule.rounding == "nearest" and (target / m - Fraction(1, 2)).denominator == 1:
        return False  # exactly half-way: a tie broken up by convention, not a rule
    return abs(d_ff - target) <= MAX_ROUNDING_SHIFT * d_ff


@dataclass(frozen=True)
class Explanation(Result):
    """One rule that reproduces a width (a row of ``explain``'s ``rules``)."""

    rule: str  # ratio | param-matched | llama
    ratio: str | None  # the ratio the rule names, as a fraction ("8/3")
    multiplier: float  # d_ff before rounding, in multiples of d_model
    ffn_dim_multiplier: float | None  # the LLaMA rule's
    multiple_of: int  # the largest multiple the width is rounded to
    multiples_of: tuple[int, ...]  # every multiple that gives the width
    rounding: str  # exact | up | nearest
    describe: str


class _Candidate(NamedTuple):
    """A rule and how it ranks: ``rank`` (simplest first), ``reading`` (the simplest ratio of one
    arithmetic) and ``same`` (the arithmetic itself)."""

    row: Explanation
    rank: tuple[Any, ...]
    reading: tuple[Any, ...]
    same: tuple[Any, ...]


def _row(rule: str, ratio: Fraction, scale: Fraction, mult: Fraction | None, ms: list[int],
         rounding: str, describe: str) -> _Candidate:
    row = Explanation(rule=rule, ratio=_txt(ratio), multiplier=float(scale), ffn_dim_multiplier=_num(mult),
                      multiple_of=max(ms), multiples_of=tuple(ms), rounding=rounding, describe=describe)
    return _Candidate(row, rank=(rounding != "exact", mult is not None, ROUNDING_ORDER[rounding],
                                 ratio.denominator != 1, RULE_ORDER[rule], ratio),
                      reading=(ratio.denominator != 1, ratio, RULE_ORDER[rule]), same=(scale, rounding, tuple(ms)))


def _exact_rows(d_model: int, d_ff: int, gated: bool) -> list[_Candidate]:
    raw = Fraction(d_ff, d_model)
    readings = [("ratio", raw, raw)]
    if gated:
        readings.append(("param-matched", raw * 3 / 2, raw))
    return [_row(rule, r, scale, None, [1], "exact",
                 f"{'raw ratio' if rule == 'ratio' else 'param-matched ratio'} {_txt(r)} exactly"
                 + (f" (x{float(scale):.4g})" if rule != "ratio" else ""))
            for rule, r, scale in readings if is_simple(r)]


def _rounded_rows(d_model: int, d_ff: int, kind: str, gated: bool) -> list[_Candidate]:
    rows = []
    readings = [("ratio", COMMON_RATIOS)] + ([("param-matched", PARAM_MATCHED_RATIOS)] if gated else [])
    for rule, ratios in readings:
        for r in ratios:
            scale = r * 2 / 3 if rule == "param-matched" else r
            for rounding in ("up", "nearest"):
                ms = [m for m in MULTIPLES
                      if explains(d_model, d_ff, kind, WidthRule(rule, ratio=r, multiple_of=m, rounding=rounding))]
                if ms:
                    name = "raw" if rule == "ratio" else rule
                    rows.append(_row(rule, r, scale, None, ms, rounding,
                                     f"{name} ratio {_txt(r)} (x{float(scale):.4g}), rounded {rounding} "
                                     f"to a multiple of {max(ms)}"))
    if gated:
        for mult in LLAMA_MULTIPLIERS:
            ms = [m for m in MULTIPLES if explains(d_model, d_ff, kind, WidthRule(
                "llama", ratio=Fraction(4), multiplier=mult, multiple_of=m, rounding="up"))]
            if ms:
                rows.append(_row("llama", Fraction(4), Fraction(8, 3) * (mult or 1), mult, ms, "up",
                                 f"LLaMA rule int(8d/3){'' if mult is None else f' x {float(mult):g}'}, "
                                 f"rounded up to a multiple of {max(ms)}"))
    return rows


def explanations(d_model: int, d_ff: int, kind: str) -> tuple[Explanation, ...]:
    """The rules that explain ``d_ff`` (see the module docstring), simplest first."""
    gated = get_kind(kind).gated
    rows = _exact_rows(d_model, d_ff, gated) + _rounded_rows(d_model, d_ff, kind, gated)
    best: dict[tuple[Any, ...], _Candidate] = {}  # one reading per arithmetic: the simplest ratio
    for r in rows:
        if r.same not in best or r.reading < best[r.same].reading:
            best[r.same] = r
    return tuple(r.row for r in sorted(best.values(), key=lambda r: r.rank))


@dataclass(frozen=True)
class WidthExplained(Result):
    """What ``ffnlab explain`` answers (:func:`explain`)."""

    d_model: int
    d_ff: int
    ffn_kind: str
    gated: bool
    ratio_raw: float
    ratio_raw_exact: str | None
    ratio_param_matched: float
    rules: tuple[Explanation, ...]
    alignment: Alignment


def explain(d_model: int, d_ff: int, kind: str = "gelu") -> WidthExplained:
    """Rules that explain ``d_ff`` from ``d_model`` for ``kind``, and its alignment."""
    check_width(d_model, "d_model")
    check_width(d_ff, "d_ff")
    gated = get_kind(kind).gated
    raw = Fraction(d_ff, d_model)
    return WidthExplained(d_model=d_model, d_ff=d_ff, ffn_kind=kind, gated=gated, ratio_raw=float(raw),
                          ratio_raw_exact=_txt(raw),
                          ratio_param_matched=float(param_matched_ratio(d_model, d_ff, gated)),
                          rules=explanations(d_model, d_ff, kind), alignment=Alignment.of(d_ff))
