"""What an audit row says about a model's FFN, however the model was counted.

A translated config (:mod:`ffnlab.sizing.audit`) and a structure counted through transformers
(:mod:`ffnlab.sizing.hf.fallback`) each reduce their model to one :class:`FFNFacts` (the FFN that
describes it) and, for MoE, one :class:`MoeParts`; the verdict line and the MoE columns are made
from those here, once, with the audit's conventions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

from ffnlab.sizing.widths import param_matched_ratio

CONVENTION = 4  # the plain-MLP ratio of Vaswani et al. 2017, and the source note's "golden" law
PARITY_TOLERANCE = 0.02  # within 2% of 4x in plain-MLP parameters "matches the convention"
# the audit's FLOPs per token are at this context length (forward pass, ffnlab.sizing.flops
# conventions); its states column is bf16 weights and gradients, fp32 AdamW moments and master
# weights, activations excluded (ffnlab.sizing.memory.optimizers.training_memory)
AUDIT_SEQ_LEN = 4096
AUDIT_DTYPE = "bf16"
# experts no wider than d_model are "fine-grained" (DeepSeekMoE, Dai et al. 2024, splits each
# expert into m narrower ones); wider ones are "coarse" (Mixtral, DBRX)
FINE_GRAINED_MAX = 1.0
# where config.json keeps top-k, first present wins (transformers' names across families)
TOP_K_KEYS = ("num_experts_per_tok", "moe_topk", "moe_k", "num_experts_per_token", "top_k", "moe_top_k",
              "n_activated_experts", "router_top_k", "experts_per_token", "num_selected_experts",
              "top_k_experts")


class MoeFields(TypedDict):
    """The audit's MoE columns (:func:`moe_fields`; AuditRow's fields of the same names)."""

    expert_granularity: float | None
    expert_design: str | None
    moe_layers: int | None
    n_shared_experts: int | None
    d_shared: int | None
    params_ffn_routed: int | None
    params_ffn_shared: int | None
    params_ffn_router: int | None
    params_ffn_dense_layers: int | None
    shared_share: float | None
    routed_share: float | None
    ratio_active_param_matched: float | None


NO_MOE: MoeFields = {  # a dense model's
    "expert_granularity": None, "expert_design": None, "moe_layers": None, "n_shared_experts": None,
    "d_shared": None, "params_ffn_routed": None, "params_ffn_shared": None, "params_ffn_router": None,
    "params_ffn_dense_layers": None, "shared_share": None, "routed_share": None, "ratio_active_param_matched": None,
}
MOE_KEYS = tuple(NO_MOE)


@dataclass(frozen=True)
class FFNFacts:
    """The FFN that describes a model (a routed expert's, for MoE) and what a token uses."""

    d_model: int
    d_ff: int
    kind: str  # ffnlab's kind name, or a description for an activation it has no name for
    gated: bool
    moe: bool = False
    n_experts: int = 0
    n_shared: int = 0
    top_k: int | None = None  # None for MoE: not in the config
    zero_slots: int = 0  # zero-computation expert slots (identity experts)
    active_pm: float | None = None  # active FFN parameters per token and layer, in plain-MLP widths


@dataclass(frozen=True)
class MoeParts:
    """An MoE model's FFN parameters by role, summed over layers (``routed_active`` None: top-k unknown)."""

    moe_layers: int
    n_shared: int
    d_shared: int | None
    routed: int
    shared: int
    router: int
    dense: int  # the FFNs of the dense layers
    routed_active: int | None


def design(d_ff: int, d_model: int) -> str:
    return "fine-grained" if d_ff / d_model <= FINE_GRAINED_MAX else "coarse"


def ffn_verdict(f: FFNFacts) -> str:
    """One line on how this FFN compares with a 4x plain MLP (for MoE: each expert, then what
    a token uses per layer), and whether its width is a multiple of 128."""
    raw = f.d_ff / f.d_model
    pm = float(param_matched_ratio(f.d_model, f.d_ff, f.gated))
    dev = pm / CONVENTION - 1
    what = (f"{f.kind} {'gated ' if f.gated and 'gated' not in f.kind else ''}"
            f"{'experts' if f.moe else 'FFN'} at {raw:.3g}x")
    if f.gated:
        what += f" (= {pm:.3g}x in plain-MLP parameters{' each' if f.moe else ''})"
    params = "parameters per expert" if f.moe else "FFN parameters"
    if abs(dev) <= PARITY_TOLERANCE:
        line = f"{what}: matches the 4x convention in {params} ({dev:+.1%})"
    else:
        line = f"{what}: {abs(dev):.0%} {'more' if dev > 0 else 'fewer'} {params} than a 4x MLP"
    if f.moe:
        shared = f" + {f.n_shared} shared" if f.n_shared else ""
        line += f"; MoE {f.n_experts} {design(f.d_ff, f.d_model)} experts of {raw:.3g}x d_model"
        if f.zero_slots:
            line += f" (+ {f.zero_slots} zero-computation slots)"
        if f.top_k is None:
            line += f", top-k not in the config ({', '.join(TOP_K_KEYS[:2])}): active parameters and FLOPs unknown"
        elif f.active_pm is not None:
            line += (f", top-{f.top_k}{shared} active: {f.active_pm:.3g}x in plain-MLP parameters per token "
                     f"and layer ({f.active_pm / CONVENTION - 1:+.0%} vs 4x)")
    if f.d_ff % 128:
        line += f"; width not a multiple of 128 (largest power-of-two divisor {f.d_ff & -f.d_ff})"
    return line


def moe_fields(f: FFNFacts | None, p: MoeParts | None) -> MoeFields:
    """The audit's MoE columns (all None for a dense model).

    ``expert_granularity`` is a routed expert's width over d_model; ``ratio_active_param_matched``
    the width, in multiples of d_model, of a plain two-matrix MLP holding the active FFN
    parameters of an average layer; ``shared_share`` and ``routed_share`` split the active expert
    parameters between shared and routed experts (None when top-k is unknown)."""
    if f is None or p is None or not f.moe:
        return NO_MOE.copy()
    out: MoeFields = {
        "expert_granularity": f.d_ff / f.d_model, "expert_design": design(f.d_ff, f.d_model),
        "moe_layers": p.moe_layers, "n_shared_experts": p.n_shared, "d_shared": p.d_shared,
        "params_ffn_routed": p.routed, "params_ffn_shared": p.shared, "params_ffn_router": p.router,
        "params_ffn_dense_layers": p.dense, "shared_share": None, "routed_share": None,
        "ratio_active_param_matched": f.active_pm,
    }
    if p.routed_active is not None:
        both = p.routed_active + p.shared
        out["shared_share"] = p.shared / both if both else 0.0
        out["routed_share"] = p.routed_active / both if both else 0.0
    return out
