"""The audit row: one frozen dataclass, :class:`AuditRow`, for every way a model is counted.

:func:`ffnlab.sizing.audit.audit_config` builds it from a translated config,
:func:`ffnlab.sizing.hf.fallback.structure_row` from a structure counted through transformers
(which adds the parts of its parameters, its layer layout and ``counted_by``),
:func:`ffnlab.sizing.audit.audit_entry` from a zoo entry (an estimate without an architecture
leaves most fields None). ``ffnlab audit`` adds ``memory``, ``finetune`` and their errors with
``dataclasses.replace``. :meth:`AuditRow.as_dict` is the row the JSON shows, keys and order
unchanged from the dicts it replaces.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ffnlab.sizing.result import Result

if TYPE_CHECKING:
    from ffnlab.sizing.finetune import FinetuneSummary
    from ffnlab.sizing.memory.parallel import MemorySummary
    from ffnlab.sizing.widths import Alignment

# the fields only a row counted from a structure has (its JSON keys, where they fall)
COUNTED_FIELDS = frozenset({
    "d_ff_dense", "params_attention", "params_embedding", "params_norms", "params_other",
    "params_linear_attention", "params_ssm", "params_short_conv", "params_outside_lm", "layer_layout",
    "layer_counts", "zero_expert_slots", "params_zero_experts", "counted_by"})


@dataclass(frozen=True, kw_only=True)
class AuditRow(Result):
    """One model's audit: shape, parameters, ratios against the 4x convention, alignment, the
    verdict, the MoE columns (None for a dense model), FLOPs per token and training states.

    A row counted from a structure (``counted_by`` "transformers") also has the fields of
    ``COUNTED_FIELDS``, the others leave them out; ``memory`` is a key once the ``audit``
    command has modelled it (a :class:`~ffnlab.sizing.memory.parallel.MemorySummary`) or said
    why not (``memory_error``; the value is then None), ``finetune`` likewise with ``--finetune``.
    """

    name: str
    family: str = ""
    model_type: str | None
    d_model: int | None
    d_ff: int | None  # a routed expert's, for an MoE
    d_ff_dense: int | None = None  # counted: the dense FFN's beside the experts
    ffn_kind: str | None
    gated: bool | None
    n_layers: int | None
    n_heads: int | None
    n_kv_heads: int | None
    vocab_size: int | None
    n_experts: int | None
    top_k: int | None
    params_total: int | None
    params_non_embedding: int | None
    params_ffn: int | None
    params_attention: int | None = None  # counted: the parts of the total
    params_embedding: int | None = None
    params_norms: int | None = None
    params_other: int | None = None
    params_linear_attention: int | None = None
    params_ssm: int | None = None
    params_short_conv: int | None = None
    params_outside_lm: int | None = None  # counted: a multimodal model's encoders, not counted
    params_active: int | None
    ffn_share: float | None
    ratio_raw: float | None
    ratio_param_matched: float | None
    deviation_raw: float | None
    deviation_param_matched: float | None
    alignment: Alignment | None
    verdict: str
    source: str | None
    note: str | None
    params_ffn_active: int | None
    params_mtp: int | None
    # the MoE columns (:func:`ffnlab.sizing.audit_rules.moe_fields`; MOE_KEYS)
    expert_granularity: float | None = None
    expert_design: str | None = None
    moe_layers: int | None = None
    n_shared_experts: int | None = None
    d_shared: int | None = None
    params_ffn_routed: int | None = None
    params_ffn_shared: int | None = None
    params_ffn_router: int | None = None
    params_ffn_dense_layers: int | None = None
    shared_share: float | None = None
    routed_share: float | None = None
    ratio_active_param_matched: float | None = None
    layer_layout: tuple[str, ...] | None = None  # counted: each layer's mixer and FFN kinds
    layer_counts: dict[str, int] | None = None  # counted
    zero_expert_slots: int | None = None  # counted
    params_zero_experts: int | None = None  # counted
    flops_per_token: int | None
    flops_seq_len: int
    training_memory_bytes: float | None  # weights, gradients and AdamW states (whole bytes)
    training_memory_dtype: str | None
    counted_by: str | None = None  # "transformers" for a row counted from a structure
    # set by ``ffnlab audit``
    memory: MemorySummary | None = None
    finetune: FinetuneSummary | None = None  # :func:`ffnlab.sizing.finetune.finetune_summary`
    finetune_error: str | None = None
    memory_error: str | None = None

    OMITTED_WHEN_NONE = frozenset({"counted_by", "finetune_error", "memory_error"})

    def _shown(self, name: str) -> bool:
        if name in COUNTED_FIELDS and self.counted_by is None:
            return False
        if name in ("memory", "finetune"):  # a key once asked for: modelled, or why not
            return getattr(self, name) is not None or getattr(self, f"{name}_error") is not None
        return super()._shown(name)


__all__ = ["COUNTED_FIELDS", "AuditRow"]
