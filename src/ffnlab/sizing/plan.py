"""Find a model shape near a target parameter count.

Constraints (all adjustable): d_model a multiple of ``d_multiple``; head_dim from
``head_dims``; depth such that the aspect ratio d_model / n_layers lies in ``aspect_band``.
Parameters grow linearly with depth at fixed width, so for each (d_model, head_dim) the best
depth is solved directly rather than searched.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from typing import Any

from ffnlab.errors import FfnlabError, require
from ffnlab.sizing.config import ModelConfig, make_config
from ffnlab.sizing.counting import count_params
from ffnlab.sizing.widths import WidthRule, resolve_d_ff

_SUFFIX = {"": 1, "k": 10**3, "m": 10**6, "b": 10**9, "g": 10**9, "t": 10**12}


def parse_count(text: str | int | float) -> int:
    """Parse ``"125M"``, ``"7B"``, ``"1.3e9"`` or a number into an integer count."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value = float(text)
    else:
        m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*([kmbgt]?)\s*", str(text).lower())
        if not m:
            raise FfnlabError(f"cannot read parameter count {text!r}; write e.g. 125M, 7B or 1.3e9")
        value = float(m.group(1)) * _SUFFIX[m.group(2)]
    require(math.isfinite(value) and value >= 1, f"parameter count must be >= 1, got {text!r}")
    return int(round(value))


@dataclass(frozen=True)
class PlanCandidate:
    config: ModelConfig
    params: int
    error: float  # relative, (params - target) / target

    def as_dict(self) -> dict[str, Any]:
        c = self.config
        return {
            "d_model": c.d_model, "n_layers": c.n_layers, "n_heads": c.attn.n_heads,
            "n_kv_heads": c.n_kv_heads, "head_dim": c.head_dim, "d_ff": c.ffn.d_ff,
            "ratio_raw": c.ffn.d_ff / c.d_model, "aspect": c.d_model / c.n_layers,
            "params": self.params, "error": self.error,
        }


def plan(
    target: int,
    kind: str,
    rule: WidthRule,
    *,
    vocab_size: int = 50257,
    count: str = "total",
    d_multiple: int = 64,
    head_dims: tuple[int, ...] = (64, 128),
    aspect_band: tuple[float, float] = (32.0, 160.0),
    aspect: float = 96.0,
    tolerance: float = 0.02,
    kv_groups: int = 1,
    max_d_model: int = 32768,
    n_candidates: int = 8,
) -> list[PlanCandidate]:
    """Return candidates sorted best first: within ``tolerance`` of the target, the one whose
    aspect ratio is closest to ``aspect``; otherwise the smallest error."""
    require(count in ("total", "non-embedding"), "count must be 'total' or 'non-embedding'")
    require(d_multiple >= 1 and aspect_band[0] > 0 and aspect_band[0] <= aspect_band[1],
            "bad plan constraints: need d_multiple >= 1 and 0 < aspect_lo <= aspect_hi")
    require(kv_groups >= 1, "kv_groups must be >= 1")
    found: list[PlanCandidate] = []
    for d in range(d_multiple, max_d_model + 1, d_multiple):
        lo = max(1, math.ceil(d / aspect_band[1]))
        hi = math.floor(d / aspect_band[0])
        if hi < lo:
            continue
        for hd in head_dims:
            if d % hd or (d // hd) % kv_groups:
                continue
            n_heads = d // hd
            d_ff = resolve_d_ff(d, kind, rule)
            base = make_config(d, 1, n_heads, d_ff, kind=kind, vocab_size=vocab_size,
                               n_kv_heads=n_heads // kv_groups if kv_groups > 1 else None)
            p1 = _measure(base, count)
            p2 = _measure(replace(base, n_layers=2), count)
            per_layer, fixed = p2 - p1, 2 * p1 - p2
            ideal = (target - fixed) / per_layer
            for n_layers in {min(hi, max(lo, math.floor(ideal))), min(hi, max(lo, math.ceil(ideal)))}:
                cfg = replace(base, n_layers=n_layers)
                p = fixed + per_layer * n_layers
                found.append(PlanCandidate(cfg, p, (p - target) / target))
    require(bool(found), "no shape satisfies the constraints; widen the aspect band or lower d_multiple")

    def score(c: PlanCandidate) -> tuple[float, float]:
        if abs(c.error) <= tolerance:
            return (0.0, abs(math.log((c.config.d_model / c.config.n_layers) / aspect)))
        return (1.0, abs(c.error))

    found.sort(key=score)
    best = found[0]
    rest = sorted(found[1:], key=lambda c: abs(c.error))[: max(0, n_candidates - 1)]
    return [best, *rest]


def _measure(cfg: ModelConfig, count: str) -> int:
    c = count_params(cfg)
    return c.total if count == "total" else c.non_embedding
