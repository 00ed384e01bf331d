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
                   rounded *up* to ``multiple_of`` (256 by default; Meta always rounds up,
                   ``rounding`` may ask for nearest or down instead).
``golden``         the golden-ratio note's law (docs/sources.md): raw ratio exactly 4 for every kind.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from ffnlab.errors import FfnlabError, require
from ffnlab.sizing.kinds import get_kind
from ffnlab.sizing.result import Result
from ffnlab.validation import fraction, show

RULES = ("explicit", "ratio", "param-matched", "llama", "golden")
ROUNDINGS = ("up", "nearest", "down")
GOLDEN_RATIO = Fraction(4)
MAX_WIDTH = 2**31 - 1  # a width past the int32 range is a typo, not a model (and overflows floats)


MAX_RATIO = 10**6  # no FFN is a million times wider than its model


def parse_ratio(text: str | float | int | Fraction, what: str = "ratio") -> Fraction:
    """Parse ``"4"``, ``"8/3"``, ``"2.6875"`` or a number into an exact fraction in (0, 10**6]."""
    return fraction(text, what, 0, MAX_RATIO)


def rounding_quotient(value: Fraction | int, multiple: int, mode: str = "up") -> int:
    """How many ``multiple``s ``value`` rounds to (up, nearest with halves up, or down), before
    :func:`round_to_multiple` clamps a 0 up to 1."""
    require(isinstance(multiple, int) and multiple >= 1, f"multiple_of must be an integer >= 1, got {show(multiple)}")
    require(mode in ROUNDINGS, f"rounding must be one of {ROUNDINGS}, got {show(mode)}")
    q = Fraction(value) / multiple
    if mode == "up":
        return math.ceil(q)
    if mode == "down":
        return math.floor(q)
    return math.floor(q + Fraction(1, 2))


def round_to_multiple(value: Fraction | int, multiple: int, mode: str = "up") -> int:
    """Round ``value`` to a multiple of ``multiple``; a width never rounds to 0 (one multiple)."""
    return max(1, rounding_quotient(value, multiple, mode)) * multiple


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
            tail = f", multiple_of={self.multiple_of} ({self.rounding})" if self.multiple_of != 1 else ""
            return f"golden (raw ratio 4, the seed's law{tail})"
        parts = [self.rule]
        if self.ratio is not None:
            parts.append(f"ratio={fraction_text(self.ratio)}")
        if self.multiplier is not None:
            parts.append(f"multiplier={fraction_text(self.multiplier)}")
        if self.multiple_of != 1:
            parts.append(f"multiple_of={self.multiple_of} ({self.rounding})")
        return " ".join(parts)


def fraction_text(x: Fraction) -> str:
    """An exact ratio as people write it: ``4``, ``8/3``."""
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
    require(rule in RULES, f"unknown width rule {show(rule)}; choose one of: {', '.join(RULES)}")
    require(rounding in ROUNDINGS, f"rounding must be one of {ROUNDINGS}, got {show(rounding)}")
    if multiple_of is not None:
        require(not isinstance(multiple_of, bool) and isinstance(multiple_of, int) and multiple_of >= 1,
                f"multiple_of must be an integer >= 1, got {show(multiple_of)}")
    if rule == "explicit":
        require(d_ff is not None, "the explicit rule needs d_ff")
        check_width(d_ff, "d_ff")
        return WidthRule("explicit", d_ff=d_ff)
    require(d_ff is None, f"d_ff={d_ff} cannot be combined with the {show(rule)} rule")
    if rule == "golden":
        require(ratio is None or parse_ratio(ratio) == GOLDEN_RATIO, "the golden rule fixes the ratio at 4")
        return WidthRule("golden", ratio=GOLDEN_RATIO, multiple_of=multiple_of or 1, rounding=rounding)
    if rule == "llama":
        r = parse_ratio(ratio) if ratio is not None else Fraction(4)
        m = parse_ratio(multiplier, "multiplier") if multiplier is not None else None
        return WidthRule("llama", ratio=r, multiplier=m, multiple_of=multiple_of or 256, rounding=rounding)
    require(ratio is not None, f"the {show(rule)} rule needs a ratio (e.g. --ratio 4 or --ratio 8/3)")
    require(multiplier is None, "multiplier applies to the llama rule only")
    assert ratio is not None  # the require above
    return WidthRule(rule, ratio=parse_ratio(ratio), multiple_of=multiple_of or 1, rounding=rounding)


def check_width(value: object, what: str) -> int:
    """Validate a positive integer width; return it."""
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise FfnlabError(f"{what} must be a positive integer, got {show(value)}")
    require(value > 0, f"{what} must be a positive integer, got {value}")
    require(value <= MAX_WIDTH, f"{what} must be at most {MAX_WIDTH:,}, got {short_int(value)}")
    return value


def unrounded_width(d_model: int, kind: str, rule: WidthRule) -> Fraction:
    """The width ``rule`` asks for before rounding to ``multiple_of`` (LLaMA's rule truncates
    to integers on the way, as Meta's ``model.py`` does)."""
    check_width(d_model, "d_model")
    gated = get_kind(kind).gated
    if rule.rule == "explicit":
        assert rule.d_ff is not None
        return Fraction(rule.d_ff)
    assert rule.ratio is not None
    if rule.rule == "llama":
        hidden = int(Fraction(2) * rule.ratio * d_model / 3)
        if rule.multiplier is not None:
            hidden = int(rule.multiplier * hidden)
        return Fraction(hidden)
    target = rule.ratio * d_model
    if rule.rule == "param-matched" and gated:
        target = target * 2 / 3
    return target


def resolve_d_ff(d_model: int, kind: str, rule: WidthRule) -> int:
    """Apply ``rule`` to ``d_model`` for an FFN of ``kind``; return the integer width."""
    target = unrounded_width(d_model, kind, rule)
    if rule.rule == "explicit":
        return rule.d_ff  # type: ignore[return-value]
    width = round_to_multiple(target, rule.multiple_of, rule.rounding)
    require(width <= MAX_WIDTH, f"the {rule.rule} rule gives d_ff = {short_int(width)} for d_model {d_model}, "
                                f"beyond any model (at most {MAX_WIDTH:,}); check the ratio or multiplier")
    return width


def short_int(n: int) -> str:
    """A huge integer in a few characters (``1.0e+308``) without float overflow."""
    digits = str(n)
    return f"{digits[0]}.{digits[1:3]}e+{len(digits) - 1}" if len(digits) > 12 else f"{n:,}"


def raw_ratio(d_model: int, d_ff: int) -> Fraction:
    return Fraction(d_ff, d_model)


def param_matched_ratio(d_model: int, d_ff: int, gated: bool) -> Fraction:
    """The raw ratio of the plain MLP with as many FFN weights: x3/2 for gated FFNs."""
    r = Fraction(d_ff, d_model)
    return r * 3 / 2 if gated else r


def largest_power_of_two_dividing(n: int) -> int:
    return n & -n


@dataclass(frozen=True)
class Alignment(Result):
    """How well a width suits tiled matmul hardware (the ``alignment`` object of the JSON)."""

    pow2_divisor: int  # the largest power of two dividing d_ff
    div64: bool
    div128: bool
    div256: bool

    @classmethod
    def of(cls, d_ff: int) -> Alignment:
        return cls(largest_power_of_two_dividing(d_ff), d_ff % 64 == 0, d_ff % 128 == 0, d_ff % 256 == 0)


def alignment(d_ff: int) -> dict[str, object]:
    """How well a width suits tiled matmul hardware (:class:`Alignment` as its JSON object)."""
    return Alignment.of(d_ff).as_dict()
