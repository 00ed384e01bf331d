"""Find a model shape near a target parameter count.

Constraints (all adjustable): d_model a multiple of ``d_multiple``; head_dim from
``head_dims``; depth such that the aspect ratio d_model / n_layers lies in ``aspect_band``;
d_ff by the kind's convention unless a rule is given. Each candidate also says which habits of
published shapes (:data:`CONVENTIONS`) it breaks, and the planner prefers shapes that keep them.
Parameters grow linearly with depth at fixed width, so for each (d_model, head_dim) the best
depth is solved directly rather than searched.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import TypedDict

from ffnlab.errors import FfnlabError, require
from ffnlab.sizing.config import ModelConfig, make_config
from ffnlab.sizing.counting import count_params
from ffnlab.sizing.kinds import get_kind
from ffnlab.sizing.widths import WidthRule, make_rule, resolve_d_ff, short_int
from ffnlab.validation import count as read_count
from ffnlab.validation import show


def parse_count(text: str | int | float, where: str = "parameter count") -> int:
    """Parse ``"125M"``, ``"7B"``, ``"1.3e9"`` or a number into an integer count: a total, its
    suffix decimal in any case (:func:`ffnlab.validation.count`, ``total=True``)."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        require(math.isfinite(text), f"{where} must be finite, got {show(text)}")
        n = round(Fraction(text))
    else:
        n = read_count(text, where, total=True)[0]
    require(n >= 1, f"{where} must be >= 1, got {show(text)}")
    return n


@dataclass(frozen=True)
class Convention:
    """A habit of published shapes that a candidate may trade for a smaller budget error."""

    name: str  # short, for the table column
    meaning: str
    holds: Callable[[ModelConfig], bool]


# Shapes people build (LLaMA 7B-65B, GPT-2/3, Pythia, Mistral: see ffnlab zoo): widths that
# tile tensor cores, a d_ff by the kind's convention, heads that split evenly over ranks.
CONVENTIONS = (
    Convention("d_model%128", "d_model a multiple of 128 (tensor-core tiles)", lambda c: c.d_model % 128 == 0),
    Convention("d_ff%256", "d_ff a multiple of 256 (the LLaMA rule's multiple_of)", lambda c: c.ffn.d_ff % 256 == 0),
    Convention("heads%4", "a head count divisible by 4 (an even split over 2 or 4 tensor-parallel ranks)",
               lambda c: c.attn.n_heads % 4 == 0),
)
MAX_D_MODEL = 32768
SHOWN_TRADES = 2  # alternatives that trade a convention for a smaller error, shown after the rest


def default_rule(kind: str) -> WidthRule:
    """The width people use for ``kind``: the LLaMA rule (multiple of 256) when gated, 4x when plain."""
    return make_rule("llama") if get_kind(kind).gated else make_rule("ratio", ratio=4)


def trades(cfg: ModelConfig) -> tuple[str, ...]:
    """The conventions ``cfg`` breaks (empty: a shape people build)."""
    return tuple(c.name for c in CONVENTIONS if not c.holds(cfg))


class PlanRow(TypedDict):
    """A candidate's JSON object (``ffnlab plan``'s rows)."""

    d_model: int
    n_layers: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    d_ff: int
    ratio_raw: float  # d_ff / d_model
    aspect: float  # d_model / n_layers
    params: int
    error: float
    trades: list[str]
    conventional: bool  # no convention broken


@dataclass(frozen=True)
class PlanCandidate:
    config: ModelConfig
    params: int
    error: float  # relative, (params - target) / target
    trades: tuple[str, ...] = ()  # conventions broken (see CONVENTIONS)

    def as_dict(self) -> PlanRow:
        c = self.config
        return {
            "d_model": c.d_model, "n_layers": c.n_layers, "n_heads": c.attn.n_heads,
            "n_kv_heads": c.n_kv_heads, "head_dim": c.head_dim, "d_ff": c.ffn.d_ff,
            "ratio_raw": c.ffn.d_ff / c.d_model, "aspect": c.d_model / c.n_layers,
            "params": self.params, "error": self.error, "trades": list(self.trades),
            "conventional": not self.trades,
        }


def plan(
    target: int,
    kind: str,
    rule: WidthRule | None = None,
    *,
    vocab_size: int = 50257,
    count: str = "total",
    d_multiple: int = 64,
    head_dims: tuple[int, ...] = (64, 128),
    aspect_band: tuple[float, float] = (32.0, 160.0),
    aspect: float = 96.0,
    tolerance: float = 0.02,
    kv_groups: int = 1,
    max_d_model: int = MAX_D_MODEL,
    n_candidates: int = 8,
    tied: bool = True,
    seq_len: int = 2048,
) -> list[PlanCandidate]:
    """Return candidates, best first.

    The best is within ``tolerance`` of the target, breaks the fewest :data:`CONVENTIONS`, and
    has the aspect ratio closest to ``aspect``; the rest are the nearest shapes, always including
    up to :data:`SHOWN_TRADES` that trade a convention for a smaller error than the best's, listed
    within ``tolerance`` first, shapes that keep every convention first, then by error. Raises
    :class:`ffnlab.errors.FfnlabError` when no shape comes within ``tolerance``. ``rule`` defaults to
    :func:`default_rule`; a learned position table (plain kinds) has ``seq_len`` rows.
    """
    require(count in ("total", "non-embedding"), "count must be 'total' or 'non-embedding'")
    require(d_multiple >= 1 and aspect_band[0] > 0 and aspect_band[0] <= aspect_band[1],
            "bad plan constraints: need d_multiple >= 1 and 0 < aspect_lo <= aspect_hi")
    require(kv_groups >= 1, "kv_groups must be >= 1")
    require(0 < tolerance < 1, f"tolerance must be between 0 and 1 (0.02 = 2%), got {tolerance}")
    rule = rule or default_rule(kind)
    found: list[PlanCandidate] = []
    for d in range(d_multiple, max_d_model + 1, d_multiple):
        lo = max(1, math.ceil(d / aspect_band[1]))
        hi = math.floor(d / aspect_band[0])
        if hi < lo:
            continue
        for hd in dict.fromkeys(head_dims):  # a size given twice is tried once
            if d % hd or (d // hd) % kv_groups:
                continue
            n_heads = d // hd
            d_ff = resolve_d_ff(d, kind, rule)
            base = make_config(d, 1, n_heads, d_ff, kind=kind, vocab_size=vocab_size,
                               n_kv_heads=n_heads // kv_groups if kv_groups > 1 else None,
                               tied_embeddings=tied, max_positions=seq_len)
            p1 = _measure(base, count)
            p2 = _measure(replace(base, n_layers=2), count)
            per_layer, fixed = p2 - p1, 2 * p1 - p2
            below, above = (target - fixed) // per_layer, -((fixed - target) // per_layer)  # exact ints
            broken = trades(base)
            for n_layers in {min(hi, max(lo, below)), min(hi, max(lo, above))}:
                cfg = replace(base, n_layers=n_layers)
                p = fixed + per_layer * n_layers
                found.append(PlanCandidate(cfg, p, (p - target) / target, broken))
    require(bool(found), "no shape satisfies the constraints; widen the aspect band or lower d_multiple")

    def score(c: PlanCandidate) -> tuple[bool, int, float]:
        return (abs(c.error) > tolerance, len(c.trades),
                abs(math.log((c.config.d_model / c.config.n_layers) / aspect)) if abs(c.error) <= tolerance
                else abs(c.error))

    best = min(found, key=score)
    if abs(best.error) > tolerance:
        closest = min(found, key=lambda c: abs(c.params - target))
        raise FfnlabError(_miss(closest, target, count, tolerance, max_d_model, aspect_band))
    def order(c: PlanCandidate) -> tuple[bool, bool, float]:
        return (abs(c.error) > tolerance, bool(c.trades), abs(c.error))

    others = sorted((c for c in found if c is not best), key=order)
    traded = sorted((c for c in others if c.trades and abs(c.error) < abs(best.error)),
                    key=lambda c: abs(c.error))[:SHOWN_TRADES]
    kept = [c for c in others if c not in traded][: max(0, n_candidates - 1 - len(traded))]
    return [best, *sorted([*kept, *traded], key=order)][:n_candidates]


def _miss(best: PlanCandidate, target: int, count: str, tolerance: float, max_d_model: int,
          aspect_band: tuple[float, float]) -> str:
    c = best.config
    hint = ("the smallest shape allowed is already bigger: lower --vocab, --d-multiple or use "
            "--count non-embedding (the embedding alone is vocab x d_model)" if best.error > 0 else
            f"d_model stops at {max_d_model:,} and depth at d_model/{aspect_band[0]:g}: this target "
            "is beyond the shapes these constraints allow")
    error = f"{best.error:+,.0%}" if best.error < 1e6 else f"{best.params / target:.3g}x the target"
    return (f"no shape comes within {tolerance:.0%} of {short_int(target)} {count} parameters: the "
            f"closest, d_model {c.d_model} x {c.n_layers} layer{'s' if c.n_layers > 1 else ''}, "
            f"has {best.params:,} ({error}); {hint}")


def _measure(cfg: ModelConfig, count: str) -> int:
    c = count_params(cfg)
    return c.total if count == "total" else c.non_embedding
