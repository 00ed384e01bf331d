"""Audit real models: ratios, FFN share, parameter totals, alignment and a one-line verdict."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, TypedDict

from ffnlab.sizing.audit_row import AuditRow
from ffnlab.sizing.audit_rules import (
    AUDIT_DTYPE,
    AUDIT_SEQ_LEN,
    CONVENTION,
    FFNFacts,
    MoeFields,
    MoeParts,
    ffn_verdict,
    moe_fields,
)
from ffnlab.sizing.config import ModelConfig
from ffnlab.sizing.counting import count_params, ffn_breakdown
from ffnlab.sizing.flops import flops_per_token
from ffnlab.sizing.hf import (
    MULTIMODAL,
    MULTIMODAL_NOTE,
    SUPPORTED_MODEL_TYPES,
    defaults_note,
    duplicates_note,
    unknowns,
)
from ffnlab.sizing.hf.fallback import TransformersCounter, audit_untranslated, row_of
from ffnlab.sizing.hf.reference import reference_note
from ffnlab.sizing.hf.structure import Structure
from ffnlab.sizing.memory.optimizers import training_memory
from ffnlab.sizing.models import ResolvedModel, resolve
from ffnlab.sizing.widths import Alignment, param_matched_ratio
from ffnlab.sizing.zoo import ZooEntry

if TYPE_CHECKING:  # the memory model is imported where it is used (memory_of)
    from ffnlab.sizing.memory.parallel import Layout, MemorySummary
    from ffnlab.sizing.memory.workload import Workload


def ffn_facts(cfg: ModelConfig, unknown: tuple[str, ...] = ()) -> FFNFacts:
    """The audit's description of a translated config's FFN (``unknown``: what config.json leaves open)."""
    f = cfg.ffn
    layers = cfg.n_layers + cfg.encoder_layers
    top_k = None if f.is_moe and "top_k" in unknown else f.top_k
    active = count_params(cfg).ffn_active / layers / (2 * cfg.d_model ** 2) if f.is_moe and top_k is not None else None
    return FFNFacts(cfg.d_model, f.d_ff, f.kind, f.gated, moe=f.is_moe, n_experts=f.n_experts,
                    n_shared=f.n_shared_experts, top_k=top_k, active_pm=active)


def moe_parts(cfg: ModelConfig, unknown: tuple[str, ...] = ()) -> MoeParts | None:
    """A translated MoE config's FFN parameters by role (None for a dense model)."""
    f = cfg.ffn
    if not f.is_moe:
        return None
    parts = ffn_breakdown(cfg)
    return MoeParts(moe_layers=cfg.moe_layers, n_shared=f.n_shared_experts,
                    d_shared=(f.d_shared or f.d_ff) if f.n_shared_experts else None, routed=parts["routed"],
                    shared=parts["shared"], router=parts["router"], dense=parts["dense"],
                    routed_active=None if "top_k" in unknown else parts["routed_active"])


def moe_summary(cfg: ModelConfig, unknown: tuple[str, ...] = ()) -> MoeFields:
    """MoE figures of the audit (None for a dense model): :func:`ffnlab.sizing.audit_rules.moe_fields`."""
    return moe_fields(ffn_facts(cfg, unknown), moe_parts(cfg, unknown))


def verdict(cfg: ModelConfig, unknown: tuple[str, ...] = ()) -> str:
    """One line on how this FFN compares with a 4x plain MLP (:func:`ffnlab.sizing.audit_rules.ffn_verdict`)."""
    return ffn_verdict(ffn_facts(cfg, unknown))


UNKNOWN_TOP_K_NOTE = ("no top-k in config.json (num_experts_per_tok): parameters counted; active "
                      "parameters and FLOPs need it and are unknown")


class UnknownTopK(TypedDict):
    """The audit's figures that need top-k, None where config.json leaves it out."""

    top_k: None
    params_active: None
    params_ffn_active: None
    ratio_active_param_matched: None
    shared_share: None
    routed_share: None
    flops_per_token: None


UNKNOWN_TOP_K: UnknownTopK = {"top_k": None, "params_active": None, "params_ffn_active": None,
                              "ratio_active_param_matched": None, "shared_share": None, "routed_share": None,
                              "flops_per_token": None}
TOP_K_FIELDS = tuple(UNKNOWN_TOP_K)


def audit_config(cfg: ModelConfig, *, name: str, model_type: str | None, source: str | None = None,
                 family: str = "", note: str | None = None, unknown: tuple[str, ...] = ()) -> AuditRow:
    """The audit row of a translated config; ``unknown`` names what its config.json leaves open
    (``top_k``): those figures are None and the note says why."""
    c = count_params(cfg)
    f = cfg.ffn
    raw = f.d_ff / cfg.d_model
    pm = float(param_matched_ratio(cfg.d_model, f.d_ff, f.gated))
    mem = training_memory(cfg, AUDIT_DTYPE)
    facts = ffn_facts(cfg, unknown)  # one description for the verdict and the MoE columns
    row = AuditRow(
        name=name, family=family, model_type=model_type, d_model=cfg.d_model, d_ff=f.d_ff,
        ffn_kind=f.kind, gated=f.gated, n_layers=cfg.n_layers + cfg.encoder_layers,
        n_heads=cfg.attn.n_heads, n_kv_heads=cfg.n_kv_heads, vocab_size=cfg.vocab_size,
        n_experts=f.n_experts, top_k=f.top_k,
        params_total=c.total, params_non_embedding=c.non_embedding, params_ffn=c.ffn,
        params_active=c.total_active, ffn_share=c.ffn_share,
        ratio_raw=raw, ratio_param_matched=pm,
        deviation_raw=raw / CONVENTION - 1, deviation_param_matched=pm / CONVENTION - 1,
        alignment=Alignment.of(f.d_ff), verdict=ffn_verdict(facts), source=source,
        note=note, params_ffn_active=c.ffn_active, params_mtp=c.mtp, **moe_fields(facts, moe_parts(cfg, unknown)),
        flops_per_token=flops_per_token(cfg, AUDIT_SEQ_LEN).forward,
        flops_seq_len=AUDIT_SEQ_LEN, training_memory_bytes=mem.total,
        training_memory_dtype=f"{AUDIT_DTYPE} + AdamW, no activations",
    )
    if "top_k" not in unknown:
        return row
    return replace(row, **UNKNOWN_TOP_K, note="; ".join(x for x in (note, UNKNOWN_TOP_K_NOTE) if x))


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
        return row.d_model, row.d_ff, row.ffn_kind
    est = e.estimate or {}
    return est.get("d_model"), est.get("d_ff"), None


def audit_entry(e: ZooEntry) -> AuditRow:
    """The audit row of a zoo entry: from its stored structure, its config, or its estimate."""
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
    return AuditRow(  # an estimate: no architecture, so most figures are None (the MoE columns too)
        name=e.name, family=e.family, model_type=None, d_model=d, d_ff=ff, ffn_kind=None, gated=None,
        n_layers=None, n_heads=None, n_kv_heads=None, vocab_size=None, n_experts=None, top_k=None,
        params_total=None, params_non_embedding=None, params_ffn=None, params_active=None, ffn_share=None,
        ratio_raw=raw, ratio_param_matched=None, deviation_raw=raw / CONVENTION - 1 if raw else None,
        deviation_param_matched=None, alignment=Alignment.of(ff) if ff else None,
        verdict="unverifiable: no published architecture (estimate from a secondary text)",
        source=e.source, note=e.note, params_ffn_active=None, params_mtp=None, flops_per_token=None,
        flops_seq_len=AUDIT_SEQ_LEN, training_memory_bytes=None, training_memory_dtype=None,
    )


def memory_of(model: ModelConfig | Structure, work: Workload | None = None,
              lay: Layout | None = None) -> MemorySummary:
    """An audit row's ``memory`` object for the workload ``work`` on ``lay``, by the rules its
    counting supports: the full training and serving model for a translated config
    (:func:`ffnlab.sizing.memory.parallel.memory_summary`), model states and the KV cache for a
    structure counted through transformers (:func:`ffnlab.sizing.memory.structure.structure_memory`:
    its activations are not modelled)."""
    if isinstance(model, Structure):
        from ffnlab.sizing.memory.structure import structure_memory

        return structure_memory(model, work, lay)
    from ffnlab.sizing.memory.parallel import memory_summary

    return memory_summary(model, work, lay)


# translated types whose reference model in transformers (the class its auto mappings give) is not
# what the translator counts: audit counts them through transformers when it can, and says why
WHOLE_MODEL_TYPES = {
    **dict.fromkeys(MULTIMODAL, "it counts the text_config's language model and head; transformers' "
                                "image-text-to-text model also has the vision encoder and projector"),
    "qwen2_5_vl_text": "it counts an LM head; transformers maps qwen2_5_vl_text to its base model alone",
}


def audit(target: str, counter: TransformersCounter | None = None) -> AuditRow:
    """Audit a zoo name or a path to a config.json (or a folder holding one); a Hub id is not
    fetched here (the ``audit`` command fetches it: :func:`audit_resolved` of
    :func:`ffnlab.sizing.models.resolve`).

    ``counter`` counts a config.json whose model_type has no translator (the ``audit`` command
    passes :func:`ffnlab.training.hf_count.count_with_transformers`); without one such a config
    is an error naming the supported types.
    """
    return audit_resolved(resolve(target, hub=False), counter)[0]


def audit_resolved(model: ResolvedModel, counter: TransformersCounter | None = None
                ) -> tuple[AuditRow, ModelConfig | Structure | None]:
    """:func:`audit`'s row of a resolved model and what it was computed from: the config, the
    structure of a model counted through transformers, or None for an estimate without a shape;
    callers that need both (the memory section) read the config once. A Hub id's row is named by
    the id."""
    if model.entry is not None:
        return audit_entry(model.entry), entry_basis(model.entry)
    row, basis = _audit_file(model, counter)
    duplicated = duplicates_note(model.duplicated)  # read as transformers reads them: said, never silent
    if duplicated is not None:
        row = replace(row, note="; ".join(x for x in (row.note, duplicated) if x))
    if model.hub is not None:
        row = replace(row, name=model.hub.label, source=f"Hugging Face Hub: {model.hub.label}")
    return row, basis


def _audit_file(model: ResolvedModel, counter: TransformersCounter | None
                ) -> tuple[AuditRow, ModelConfig | Structure | None]:
    """The row of a config.json: translated, or counted through transformers where no translator
    reads it (or the one that does would count less than transformers builds)."""
    p, raw, cfg = model.path, model.raw, model.config
    assert p is not None and raw is not None
    if cfg is None:  # no translator, or one refusing this config: transformers judges it
        assert model.refusal is not None
        found = audit_untranslated(p, SUPPORTED_MODEL_TYPES, counter, refused=str(model.refusal))
        if found is None:
            raise model.refusal
        return found
    model_type = raw.get("model_type")
    whole = WHOLE_MODEL_TYPES.get(str(model_type))
    if whole is not None and counter is not None:  # transformers' model is more than the translator counts
        found = audit_untranslated(p, SUPPORTED_MODEL_TYPES, counter, refused=whole)
        if found is not None:
            return found
    multimodal = MULTIMODAL_NOTE if model_type in MULTIMODAL else None
    # the class whose parameters the translator counts, named as a row counted through transformers names it
    reference = reference_note(model_type)
    note = "; ".join(x for x in (multimodal, reference, defaults_note(raw, model.defaulted)) if x) or None
    return audit_config(cfg, name=cfg.name, model_type=model_type if isinstance(model_type, str) else None,
                        source=str(p), note=note, unknown=unknowns(raw)), cfg
