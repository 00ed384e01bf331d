"""Audit real models: ratios, FFN share, parameter totals, alignment and a one-line verdict."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ffnlab.errors import FfnlabError
from ffnlab.sizing.config import ModelConfig
from ffnlab.sizing.counting import count_params, ffn_breakdown
from ffnlab.sizing.flops import flops_per_token, training_memory
from ffnlab.sizing.hf import (
    MULTIMODAL,
    MULTIMODAL_NOTE,
    SUPPORTED_MODEL_TYPES,
    load_hf_config,
    unknowns,
)
from ffnlab.sizing.hf_fallback import Counter, audit_untranslated, row_of
from ffnlab.sizing.hf_structure import Structure
from ffnlab.sizing.widths import alignment, param_matched_ratio
from ffnlab.sizing.zoo import ZooEntry, find, is_zoo_name

CONVENTION = 4  # the plain-MLP ratio of Vaswani et al. 2017, and the seed's "golden" law
PARITY_TOLERANCE = 0.02
# the audit's FLOPs per token are at this context length (forward pass, ffnlab.sizing.flops
# conventions); its training memory is bf16 weights and gradients, fp32 AdamW moments and
# master weights, activations excluded (ffnlab.sizing.flops.training_memory)
AUDIT_SEQ_LEN = 4096
AUDIT_DTYPE = "bf16"
# experts no wider than d_model are "fine-grained" (DeepSeekMoE, Dai et al. 2024, splits each
# expert into m narrower ones); wider ones are "coarse" (Mixtral, DBRX)
FINE_GRAINED_MAX = 1.0


def moe_summary(cfg: ModelConfig) -> dict[str, Any]:
    """MoE figures of the audit (None for a dense model).

    ``expert_granularity`` is a routed expert's width over d_model; ``params_ffn_active`` the
    FFN parameters one token uses (router, top_k routed and the shared experts, summed over
    layers); ``ratio_active_param_matched`` the width, in multiples of d_model, of a plain
    two-matrix MLP holding the active FFN parameters of an average layer; ``shared_share`` and
    ``routed_share`` split the active expert parameters between shared and routed experts."""
    f, d = cfg.ffn, cfg.d_model
    keys = ("expert_granularity", "expert_design", "moe_layers", "n_shared_experts", "d_shared",
            "params_ffn_routed", "params_ffn_shared", "params_ffn_router",
            "params_ffn_dense_layers",
            "shared_share", "routed_share", "ratio_active_param_matched")
    if not f.is_moe:
        return dict.fromkeys(keys)
    parts = ffn_breakdown(cfg)
    active_experts = parts["routed_active"] + parts["shared"]
    granularity = f.d_ff / d
    c = count_params(cfg)
    layers = cfg.n_layers + cfg.encoder_layers
    return {
        "expert_granularity": granularity,
        "expert_design": "fine-grained" if granularity <= FINE_GRAINED_MAX else "coarse",
        "moe_layers": cfg.moe_layers, "n_shared_experts": f.n_shared_experts,
        "d_shared": (f.d_shared or f.d_ff) if f.n_shared_experts else None,
        "params_ffn_routed": parts["routed"], "params_ffn_shared": parts["shared"],
        "params_ffn_router": parts["router"], "params_ffn_dense_layers": parts["dense"],
        "shared_share": parts["shared"] / active_experts if active_experts else 0.0,
        "routed_share": parts["routed_active"] / active_experts if active_experts else 0.0,
        "ratio_active_param_matched": c.ffn_active / layers / (2 * d * d),
    }


def verdict(cfg: ModelConfig) -> str:
    """One line on how this FFN compares with a 4x plain MLP (for MoE: each expert, then what
    a token uses per layer)."""
    f = cfg.ffn
    raw = f.d_ff / cfg.d_model
    pm = float(param_matched_ratio(cfg.d_model, f.d_ff, f.gated))
    dev = pm / CONVENTION - 1
    unit = "experts" if f.is_moe else "FFN"
    what = f"{f.kind} {'gated ' if f.gated else ''}{unit} at {raw:.3g}x"
    if f.gated:
        what += f" (= {pm:.3g}x in plain-MLP parameters{' each' if f.is_moe else ''})"
    params = "parameters per expert" if f.is_moe else "FFN parameters"
    if abs(dev) <= PARITY_TOLERANCE:
        line = f"{what}: matches the 4x convention in {params} ({dev:+.1%})"
    else:
        line = f"{what}: {abs(dev):.0%} {'more' if dev > 0 else 'fewer'} {params} than a 4x MLP"
    if f.is_moe:
        design = "fine-grained" if f.d_ff / cfg.d_model <= FINE_GRAINED_MAX else "coarse"
        shared = f" + {f.n_shared_experts} shared" if f.n_shared_experts else ""
        active = moe_summary(cfg)["ratio_active_param_matched"]
        line += (f"; MoE {f.n_experts} {design} experts of {f.d_ff / cfg.d_model:.3g}x d_model, "
                 f"top-{f.top_k}{shared} active: {active:.3g}x in plain-MLP parameters per token "
                 f"and layer ({active / CONVENTION - 1:+.0%} vs 4x)")
    if f.d_ff % 128:
        line += f"; width not a multiple of 128 (largest power-of-two divisor {f.d_ff & -f.d_ff})"
    return line


UNKNOWN_TOP_K_NOTE = ("no top-k in config.json (num_experts_per_tok): parameters counted; active "
                      "parameters and FLOPs need it and are unknown")
TOP_K_FIELDS = ("top_k", "params_active", "params_ffn_active", "ratio_active_param_matched", "shared_share",
                "routed_share", "flops_per_token")


def audit_config(cfg: ModelConfig, *, name: str, model_type: str | None, source: str | None = None,
                 family: str = "", note: str | None = None, unknown: tuple[str, ...] = ()) -> dict[str, Any]:
    """The audit row of a translated config; ``unknown`` names what its config.json leaves open
    (``top_k``): those figures are None and the note says why."""
    row = _audit_config(cfg, name=name, model_type=model_type, source=source, family=family, note=note)
    if "top_k" in unknown:
        row.update(dict.fromkeys(TOP_K_FIELDS))
        row["note"] = "; ".join(x for x in (row["note"], UNKNOWN_TOP_K_NOTE) if x)
        row["verdict"] = row["verdict"].split("; MoE")[0] + (
            f"; MoE {cfg.ffn.n_experts} experts of {cfg.ffn.d_ff / cfg.d_model:.3g}x d_model, top-k not in "
            "the config: active parameters and FLOPs unknown")
    return row


def _audit_config(cfg: ModelConfig, *, name: str, model_type: str | None, source: str | None = None,
                  family: str = "", note: str | None = None) -> dict[str, Any]:
    c = count_params(cfg)
    f = cfg.ffn
    raw = f.d_ff / cfg.d_model
    pm = float(param_matched_ratio(cfg.d_model, f.d_ff, f.gated))
    mem = training_memory(cfg, AUDIT_DTYPE)
    return {
        "name": name, "family": family, "model_type": model_type, "d_model": cfg.d_model, "d_ff": f.d_ff,
        "ffn_kind": f.kind, "gated": f.gated, "n_layers": cfg.n_layers + cfg.encoder_layers,
        "n_heads": cfg.attn.n_heads, "n_kv_heads": cfg.n_kv_heads, "vocab_size": cfg.vocab_size,
        "n_experts": f.n_experts, "top_k": f.top_k,
        "params_total": c.total, "params_non_embedding": c.non_embedding, "params_ffn": c.ffn,
        "params_active": c.total_active, "ffn_share": c.ffn_share,
        "ratio_raw": raw, "ratio_param_matched": pm,
        "deviation_raw": raw / CONVENTION - 1, "deviation_param_matched": pm / CONVENTION - 1,
        "alignment": alignment(f.d_ff), "verdict": verdict(cfg), "source": source, "note": note,
        "params_ffn_active": c.ffn_active, "params_mtp": c.mtp, **moe_summary(cfg),
        "flops_per_token": flops_per_token(cfg, AUDIT_SEQ_LEN).forward,
        "flops_seq_len": AUDIT_SEQ_LEN, "training_memory_bytes": mem.total,
        "training_memory_dtype": f"{AUDIT_DTYPE} + AdamW, no activations",
    }


def entry_basis(e: ZooEntry) -> ModelConfig | Structure | None:
    """What a zoo entry's figures come from: its config, its stored structure, or None."""
    return e.config() or e.structure()


def entry_shape(e: ZooEntry) -> tuple[int | None, int | None, str | None]:
    """(d_model, d_ff, FFN kind) of a zoo entry, for the zoo listing (d_ff: a routed expert's)."""
    cfg = e.config()
    if cfg is not None:
        return cfg.d_model, cfg.ffn.d_ff, cfg.ffn.kind
    s = e.structure()
    if s is not None:
        row = audit_entry(e)
        return row["d_model"], row["d_ff"], row["ffn_kind"]
    est = e.estimate or {}
    return est.get("d_model"), est.get("d_ff"), None


def audit_entry(e: ZooEntry) -> dict[str, Any]:
    s = e.structure()
    if s is not None:
        return row_of(s, name=e.name, model_type=e.model_type, source=e.source, family=e.family, note=e.note)
    cfg = e.config()
    if cfg is not None:
        return audit_config(cfg, name=e.name, model_type=e.model_type, source=e.source, family=e.family,
                            note=e.note)
    est = e.estimate or {}
    d, ff = est.get("d_model"), est.get("d_ff")
    raw = ff / d if d and ff else None
    return {
        "name": e.name, "family": e.family, "model_type": None, "d_model": d, "d_ff": ff, "ffn_kind": None,
        "gated": None, "n_layers": None, "n_heads": None, "n_kv_heads": None, "vocab_size": None,
        "n_experts": None, "top_k": None, "params_total": None, "params_non_embedding": None,
        "params_ffn": None, "params_active": None, "ffn_share": None, "ratio_raw": raw,
        "ratio_param_matched": None, "deviation_raw": raw / CONVENTION - 1 if raw else None,
        "deviation_param_matched": None, "alignment": alignment(ff) if ff else None,
        "verdict": "unverifiable: no published architecture (estimate from a secondary text)",
        "source": e.source, "note": e.note, "params_ffn_active": None, "params_mtp": None,
        **moe_summary_empty(), "flops_per_token": None, "flops_seq_len": AUDIT_SEQ_LEN,
        "training_memory_bytes": None, "training_memory_dtype": None,
    }


def moe_summary_empty() -> dict[str, Any]:
    return dict.fromkeys(moe_summary(ModelConfig()))


def audit(target: str, counter: Counter | None = None) -> dict[str, Any]:
    """Audit a zoo name or a path to a config.json (or a folder holding one).

    ``counter`` counts a config.json whose model_type has no translator (the ``audit`` command
    passes :func:`ffnlab.training.hf_count.count_with_transformers`); without one such a config
    is an error naming the supported types.
    """
    return audit_target(target, counter)[0]


def audit_target(target: str, counter: Counter | None = None
                 ) -> tuple[dict[str, Any], ModelConfig | Structure | None]:
    """:func:`audit`'s row and what it was computed from: the config, the structure of a model
    counted through transformers, or None for an estimate without a shape; callers that need
    both (the memory section) read the config once."""
    if is_zoo_name(target):
        e = find(target)
        return audit_entry(e), entry_basis(e)
    p = Path(target)
    if p.exists() or target.endswith(".json") or "/" in target:
        try:
            cfg, raw = load_hf_config(p)
        except FfnlabError:  # a model_type without a translator: transformers counts it
            found = audit_untranslated(p, SUPPORTED_MODEL_TYPES, counter)
            if found is None:
                raise
            return found
        note = MULTIMODAL_NOTE if raw.get("model_type") in MULTIMODAL else None
        return audit_config(cfg, name=cfg.name, model_type=raw.get("model_type"), source=str(p), note=note,
                            unknown=unknowns(raw)), cfg
    e = find(target)  # not a file either: find() names close zoo names
    return audit_entry(e), entry_basis(e)
