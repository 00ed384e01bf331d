"""Width rules: how a d_ff is derived from d_model.

All arithmetic is exact (``fractions.Fraction``) so that ``8/3`` means eight thirds and a
rule reproduces published widths to the unit.

Rules
-----
``explicit``       d_ff given.
``ratio``          d_ff = r * d_model (the *raw* ratio), rounded to a multiple.
``param-matched``  a gated FFN gets 2r/3 * d_model so that its 3 matrices hold as many
                   parameters as a plain 2-matrix MLP of ratio r (Shazeer 2020); a plain
                   FFN gets r * d_model.
``llama``          Meta's rule (LLaMA ``model.py``): h = int(2 * r * d / 3) with r = 4,
                   then h = int(ffn_dim_multiplier * h) if a multiplier is set, then
                   rounded *up* to ``multiple_of`` (256 by default).
``golden``         the first seed document's law: raw ratio exactly 4 for every kind.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from ffnlab.errors import FfnlabError, require
from ffnlab.sizing.kinds import get_kind
from ffnlab.validation import fraction

RULES = ("explicit", "ratio", "param-matched", "llama", "golden")
ROUNDINGS = ("up", "nearest", "down")
GOLDEN_RATIO = Fraction(4)


MAX_RATIO = 10**6  # no FFN is a million times wider than its model


def parse_ratio(text: str | float | int | Fraction, what: str = "ratio") -> Fraction:
    """Parse ``"4"``, ``"8/3"``, ``"2.6875"`` or a number into an exact fraction in (0, 10**6]."""
    return fraction(text, what, 0, MAX_RATIO)


def round_to_multiple(value: Fraction | int, multiple: int, mode: str = "up") -> int:
    """Round ``value`` to a multiple of ``multiple`` (up, nearest with halves up, or down)."""
    require(isinstance(multiple, int) and multiple >= 1, f"multiple_of must be an integer >= 1, got {multiple!r}")
    require(mode in ROUNDINGS, f"rounding must be one of {ROUNDINGS}, got {mode!r}")
    q = Fraction(value) / multiple
    if mode == "up":
        n = math.ceil(q)
    elif mode == "down":
        n = math.floor(q)
    else:
        n = math.floor(q + Fraction(1, 2))
    return max(1, n) * multiple


@dataclass(frozen=True)
class WidthRule:
    """How to derive d_ff from d_model. ``ratio`` is exact; see module docstring."""

    rule: str = "ratio"
    ratio: Fraction | None = None
    d_ff: int | None = None
    multiplier: Fraction | None = None  # LLaMA's ffn_dim_multiplier
    multiple_of: int = 1
    rounding: str = "up"

    def describe(self) -> str:
        if self.rule == "explicit":
            return f"explicit d_ff={self.d_ff}"
        if self.rule == "golden":
            return "golden (raw ratio 4, the seed's law)"
        parts = [self.rule]
        if self.ratio is not None:
            parts.append(f"ratio={_fmt(self.ratio)}")
        if self.multiplier is not None:
            parts.append(f"multiplier={_fmt(self.multiplier)}")
        if self.multiple_of != 1:
            parts.append(f"multiple_of={self.multiple_of} ({self.rounding})")
        return " ".join(parts)


def _fmt(x: Fraction) -> str:
    return str(x.numerator) if x.denominator == 1 else f"{x.numerator}/{x.denominator}"


def make_rule(
    rule: str | None = None,
    *,
    ratio: str | float | Fraction | None = None,
    d_ff: int | None = None,
    multiplier: str | float | Fraction | None = None,
    multiple_of: int | None = None,
    rounding: str = "up",
) -> WidthRule:
    """Build and validate a :class:`WidthRule` from loose user input."""
    if rule is None:
        rule = "explicit" if d_ff is not None else "ratio"
    require(rule in RULES, f"unknown width rule {rule!r}; choose one of: {', '.join(RULES)}")
    require(rounding in ROUNDINGS, f"rounding must be one of {ROUNDINGS}, got {rounding!r}")
    if multiple_of is not None:
        require(not isinstance(multiple_of, bool) and isinstance(multiple_of, int) and multiple_of >= 1,
                f"multiple_of must be an integer >= 1, got {multiple_of!r}")
    if rule == "explicit":
        require(d_ff is not None, "the explicit rule needs d_ff")
        check_width(d_ff, "d_ff")
        return WidthRule("explicit", d_ff=d_ff)
    require(d_ff is None, f"d_ff={d_ff} cannot be combined with the {rule!r} rule")
    if rule == "golden":
        require(ratio is None or parse_ratio(ratio) == GOLDEN_RATIO, "the golden rule fixes the ratio at 4")
        return WidthRule("golden", ratio=GOLDEN_RATIO, multiple_of=multiple_of or 1, rounding=rounding)
    if rule == "llama":
        r = parse_ratio(ratio) if ratio is not None else Fraction(4)
        m = parse_ratio(multiplier, "multiplier") if multiplier is not None else None
        return WidthRule("llama", ratio=r, multiplier=m, multiple_of=multiple_of or 256, rounding="up")
    require(ratio is not None, f"the {rule!r} rule needs a ratio (e.g. --ratio 4 or --ratio 8/3)")
    require(multiplier is None, "multiplier applies to the llama rule only")
    return WidthRule(rule, ratio=parse_ratio(ratio), multiple_of=multiple_of or 1, rounding=rounding)


def check_width(value: object, what: str) -> int:
    """Validate a positive integer width; return it."""
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise FfnlabError(f"{what} must be a positive integer, got {value!r}")
    require(value > 0, f"{what} must be a positive integer, got {value}")
    return value


def resolve_d_ff(d_model: int, kind: str, rule: WidthRule) -> int:
    """Apply ``rule`` to ``d_model`` for an FFN of ``kind``; return the integer width."""
    check_width(d_model, "d_model")
    gated = get_kind(kind).gated
    if rule.rule == "explicit":
        assert rule.d_ff is not None
        return rule.d_ff
    assert rule.ratio is not None
    if rule.rule == "llama":
        hidden = int(Fraction(2) * rule.ratio * d_model / 3)
        if rule.multiplier is not None:
            hidden = int(rule.multiplier * hidden)
        return round_to_multiple(hidden, rule.multiple_of, "up")
    target = rule.ratio * d_model
    if rule.rule == "param-matched" and gated:
        target = target * 2 / 3
    return round_to_multiple(target, rule.multiple_of, rule.rounding)


def raw_ratio(d_model: int, d_ff: int) -> Fraction:
    return Fraction(d_ff, d_model)


def param_matched_ratio(d_model: int, d_ff: int, gated: bool) -> Fraction:
    """The raw ratio of the plain MLP with as many FFN weights: x3/2 for gated FFNs."""
    r = Fraction(d_ff, d_model)
    return r * 3 / 2 if gated else r


def largest_power_of_two_dividing(n: int) -> int:
    return n & -n


def alignment(d_ff: int) -> dict[str, object]:
    """How well a width suits tiled matmul hardware."""
    return {
        "pow2_divisor": largest_power_of_two_dividing(d_ff),
        "div64": d_ff % 64 == 0,
        "div128": d_ff % 128 == 0,
        "div256": d_ff % 256 == 0,
    }
