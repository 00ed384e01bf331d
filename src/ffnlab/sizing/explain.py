"""Which width rules reproduce a given d_ff, and how well it is aligned for hardware.

Each rule reads ``d_ff = round(multiplier x d_model)`` to a multiple of ``multiple_of``: for
ratio rules ``multiplier`` is the ratio (x2/3 when parameter-matched), for the LLaMA rule it is
8/3 x ``ffn_dim_multiplier`` (the rule also truncates to integers along the way).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from ffnlab.sizing.kinds import get_kind
from ffnlab.sizing.widths import (
    WidthRule,
    alignment,
    check_width,
    param_matched_ratio,
    resolve_d_ff,
)

# Ratios people actually use: plain MLPs 1-8x, 8/3 (SwiGLU parity), 7/2 (Mistral's 14336/4096).
COMMON_RATIOS = tuple(Fraction(x) for x in ("1", "2", "8/3", "3", "7/2", "4", "16/3", "6", "8"))
# ffn_dim_multiplier values of published LLaMA-family models (Meta's params.json files).
LLAMA_MULTIPLIERS: tuple[Fraction | None, ...] = (None, Fraction(6, 5), Fraction(13, 10), Fraction(3, 2))
MULTIPLES = tuple(2**i for i in range(0, 14))  # 1 .. 8192


def _num(x: Fraction | None) -> float | None:
    return None if x is None else float(x)


def _txt(x: Fraction | None) -> str | None:
    if x is None:
        return None
    return str(x.numerator) if x.denominator == 1 else f"{x.numerator}/{x.denominator}"


def _reproducing(d_model: int, d_ff: int, kind: str, make: Any) -> list[int]:
    return [m for m in MULTIPLES if resolve_d_ff(d_model, kind, make(m)) == d_ff]


def explain(d_model: int, d_ff: int, kind: str = "gelu") -> dict[str, Any]:
    """Rules that produce ``d_ff`` from ``d_model`` for ``kind``, and its alignment."""
    check_width(d_model, "d_model")
    check_width(d_ff, "d_ff")
    gated = get_kind(kind).gated
    raw = Fraction(d_ff, d_model)
    rules: list[dict[str, Any]] = [{
        "rule": "ratio", "ratio": _txt(raw), "multiplier": float(raw), "ffn_dim_multiplier": None, "multiple_of": 1,
        "multiples_of": [1], "rounding": "exact", "describe": f"d_ff = {_txt(raw)} x d_model exactly",
    }]
    rule_kinds = ["ratio", "param-matched"] if gated else ["ratio"]
    for rule in rule_kinds:
        for r in COMMON_RATIOS:
            for rounding in ("up", "nearest"):
                ms = _reproducing(d_model, d_ff, kind,
                                  lambda m, r=r, rule=rule, rounding=rounding: WidthRule(rule, ratio=r, multiple_of=m, rounding=rounding))
                ms = [m for m in ms if not (rule == "ratio" and r == raw)]
                if ms:
                    scale = r * 2 / 3 if rule == "param-matched" else r
                    rules.append({
                        "rule": rule, "ratio": _txt(r), "multiplier": float(scale), "ffn_dim_multiplier": None,
                        "multiple_of": max(ms),
                        "multiples_of": ms, "rounding": rounding,
                        "describe": f"{'raw' if rule == 'ratio' else rule} ratio {_txt(r)} (x{float(scale):.4g}), rounded {rounding} to a multiple of {max(ms)}",
                    })
    if gated:
        for mult in LLAMA_MULTIPLIERS:
            ms = _reproducing(d_model, d_ff, kind,
                              lambda m, mult=mult: WidthRule("llama", ratio=Fraction(4), multiplier=mult, multiple_of=m))
            if ms:
                rules.append({
                    "rule": "llama", "ratio": "4", "multiplier": float(Fraction(8, 3) * (mult or 1)),
                    "ffn_dim_multiplier": _num(mult), "multiple_of": max(ms), "multiples_of": ms, "rounding": "up",
                    "describe": f"LLaMA rule int(8d/3){'' if mult is None else f' x {float(mult):g}'}, "
                                f"rounded up to a multiple of {max(ms)}",
                })
    return {
        "d_model": d_model, "d_ff": d_ff, "ffn_kind": kind, "gated": gated,
        "ratio_raw": float(raw), "ratio_raw_exact": _txt(raw),
        "ratio_param_matched": float(param_matched_ratio(d_model, d_ff, gated)),
        "rules": rules, "alignment": alignment(d_ff),
    }
