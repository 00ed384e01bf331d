"""``ffnlab size``: one width rule applied to one d_model, and optionally a whole decoder.

:func:`size_summary` and :func:`size_model` build the documented JSON object, a
:class:`SizeSummary` (``d_ff``, ``ratio_raw``, ``ratio_param_matched``, ``ffn_params_per_layer``,
``alignment`` and, with ``n_layers`` or ``--from``, a ``model`` object, a :class:`ModelSummary`
with parameters, FLOPs per token and training memory). The CLI only renders it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ffnlab.errors import require
from ffnlab.sizing.config import FFNSpec, ModelConfig, make_config, validate
from ffnlab.sizing.counting import ParamCounts, count_params, ffn_params
from ffnlab.sizing.flops import FlopsPerToken, flops_per_token
from ffnlab.sizing.kinds import get_kind
from ffnlab.sizing.result import Result
from ffnlab.sizing.widths import (
    Alignment,
    WidthRule,
    check_width,
    param_matched_ratio,
    resolve_d_ff,
)
from ffnlab.validation import show

if TYPE_CHECKING:  # the memory model is imported only when a whole model is sized
    from ffnlab.sizing.finetune import FinetuneSummary
    from ffnlab.sizing.memory.fit import ServingFigures
    from ffnlab.sizing.memory.optimizers import TrainingMemory
    from ffnlab.sizing.memory.parallel import Layout, MemorySummary
    from ffnlab.sizing.memory.workload import Workload

HEAD_DIM_DEFAULT = 64  # GPT-2/GPT-3/Pythia heads; LLaMA 7B-65B use 128 (give --n-heads)
SIZE_POSITIONS = ("rope", "learned", "none", "alibi")
SIZE_NORMS = ("rmsnorm", "layernorm", "layernorm-nobias", "none")


@dataclass(frozen=True, kw_only=True)
class ModelSummary(Result):
    """The ``model`` object of ``ffnlab size``: the decoder's shape, parameters, FLOPs per token
    and training states; ``memory`` (with the memory options) and ``serving`` (with ``--gpu``)
    only when asked for. :meth:`Result.as_dict` is the JSON object."""

    n_layers: int
    n_heads: int
    n_kv_heads: int
    vocab_size: int
    norm: str
    positions: str
    tied_embeddings: bool
    position_table_rows: int  # a learned position table's rows, else 0
    params: ParamCounts
    flops_per_token: FlopsPerToken
    seq_len: int
    training_memory_bytes: TrainingMemory  # weights, gradients, optimizer: the memory options' optimizer
    dtype: str
    assumed: tuple[str, ...]  # what the numbers assume that the user did not say, one sentence each
    memory: MemorySummary | None = None
    serving: ServingFigures | None = None  # :func:`_serving_on`: fit --mode serve's figures

    OMITTED_WHEN_NONE = frozenset({"memory", "serving"})


@dataclass(frozen=True, kw_only=True)
class SizeSummary(Result):
    """What ``ffnlab size`` computes: the width a rule gives (``size_summary``) or a real model's
    (``size_model``, with ``from``: its name), what the FFN costs, and with a whole model its
    ``model`` object; ``finetune`` (the CLI's ``--finetune``) is set with ``dataclasses.replace``.
    :meth:`Result.as_dict` is the JSON object, keys absent where they do not apply."""

    from_model: str | None = None  # the key "from": size --from's model
    d_model: int
    ffn_kind: str
    gated: bool
    rule: str
    d_ff: int
    ratio_raw: float
    ratio_param_matched: float
    ffn_params_per_layer: int
    alignment: Alignment
    ffn_params_per_layer_active: int | None = None  # an MoE's only
    model: ModelSummary | None = None  # a whole model's only
    finetune: FinetuneSummary | None = None  # :func:`ffnlab.sizing.finetune.finetune_summary`

    OMITTED_WHEN_NONE = frozenset({"from_model", "ffn_params_per_layer_active", "model", "finetune"})
    KEY_OF_FIELD = {"from_model": "from"}


def _assumptions(cfg: ModelConfig, *, heads_given: bool, norm_given: bool, positions_given: bool,
                 seq_len: int) -> list[str]:
    """What the whole-model numbers assume that the user did not say, one sentence each."""
    kind = "a gated FFN" if cfg.gated else "a plain MLP"
    out = []
    if not heads_given:
        out.append(f"n_heads = d_model/{HEAD_DIM_DEFAULT} = {cfg.attn.n_heads} (head_dim {HEAD_DIM_DEFAULT}; "
                   "give --n-heads)")
    defaulted = [(what, flag) for given, what, flag in (
        (norm_given, cfg.norm, "--norm"), (positions_given, f"{cfg.positions} positions", "--positions"))
        if not given]
    if defaulted:
        out.append(f"{' and '.join(w for w, _ in defaulted)}: ffnlab's default{'s' if len(defaulted) > 1 else ''}"
                   f" for {kind} ({', '.join(f for _, f in defaulted)})")
    out.append("embeddings tied: the LM head reuses the token embedding (the default; --untied adds "
               f"vocab x d_model = {cfg.vocab_size * cfg.d_model:,})" if cfg.tied_embeddings else
               f"embeddings untied: a separate LM head of vocab x d_model = {cfg.vocab_size * cfg.d_model:,}")
    if cfg.positions == "learned":
        out.append(f"learned position table of --seq-len {seq_len} rows x d_model = "
                   f"{cfg.max_positions * cfg.d_model:,} parameters (grows with --seq-len)")
    return out


def size_summary(d_model: int, kind: str, rule: WidthRule, *, n_layers: int | None = None,
                 n_heads: int | None = None, n_kv_heads: int | None = None, vocab_size: int = 50257,
                 seq_len: int = 2048, n_experts: int = 0, top_k: int = 2, bias: bool = False,
                 dtype: str = "bf16", tied: bool = True, norm: str | None = None,
                 positions: str | None = None, workload: Workload | None = None, layout: Layout | None = None,
                 serving_on: str | None = None) -> SizeSummary:
    """The width ``rule`` gives for ``d_model`` and ``kind``, and what it costs (a :class:`SizeSummary`).

    With ``n_layers``, a whole decoder: ``n_heads`` defaults to d_model/64, ``norm`` and
    ``positions`` to ffnlab's defaults for the kind (RMSNorm + RoPE when gated, LayerNorm +
    learned positions when plain, the table sized by ``seq_len``), embeddings tied unless
    ``tied`` is False; ``model["assumed"]`` says which of these were assumed. ``workload`` (of the
    same ``seq_len`` and ``dtype``) on ``layout``: ``model.memory``
    (:func:`ffnlab.sizing.memory.parallel.memory_summary`); ``serving_on``: an accelerator's name,
    for ``model.serving`` (:func:`_serving_on`).
    """
    check_width(d_model, "d_model")
    width = resolve_d_ff(d_model, kind, rule)
    gated = get_kind(kind).gated
    require(n_experts >= 0, f"--experts must be >= 0, got {n_experts}")
    require(not n_experts or 1 <= top_k <= n_experts, f"--top-k must be between 1 and --experts={n_experts}")
    require(norm is None or norm in SIZE_NORMS, f"--norm must be one of {', '.join(SIZE_NORMS)}, got {show(norm)}")
    require(positions is None or positions in SIZE_POSITIONS,
            f"--positions must be one of {', '.join(SIZE_POSITIONS)}, got {show(positions)}")
    spec = FFNSpec(kind=kind, d_ff=width, bias=bias, n_experts=n_experts, top_k=top_k if n_experts else 0)
    out = SizeSummary(
        d_model=d_model, ffn_kind=kind, gated=gated, rule=rule.describe(), d_ff=width,
        ratio_raw=width / d_model, ratio_param_matched=float(param_matched_ratio(d_model, width, gated)),
        ffn_params_per_layer=ffn_params(d_model, spec), alignment=Alignment.of(width),
        ffn_params_per_layer_active=ffn_params(d_model, spec, active=True) if n_experts else None,
    )
    if n_layers is None:
        return out
    check_width(n_layers, "n_layers")
    check_width(seq_len, "seq_len")
    heads = n_heads if n_heads is not None else d_model // HEAD_DIM_DEFAULT
    require(heads >= 1, f"d_model < {HEAD_DIM_DEFAULT}: give --n-heads")
    cfg = validate(make_config(d_model, n_layers, heads, width, kind=kind, vocab_size=vocab_size,
                               n_kv_heads=n_kv_heads, bias=bias, n_experts=n_experts,
                               top_k=top_k if n_experts else 0, max_positions=seq_len,
                               tied_embeddings=tied, norm=norm, positions=positions))
    assumed = _assumptions(cfg, heads_given=n_heads is not None, norm_given=norm is not None,
                           positions_given=positions is not None, seq_len=seq_len)
    return replace(out, model=model_summary(cfg, seq_len=seq_len, dtype=dtype, workload=workload, layout=layout,
                                            assumed=assumed, serving_on=serving_on))


def _serving_on(cfg: ModelConfig, accelerator: str, work: Workload, lay: Layout) -> ServingFigures:
    """What ``cfg`` holds and how fast it serves on the layout ``lay`` of ``accelerator``
    (its reported memory less ``fit``'s default reserve): the figures of ``fit --mode serve``
    (:func:`ffnlab.sizing.memory.fit.serving_figures`) at the workload's batch and sequence, with the
    accelerator, its usable memory, the reserve and the batch in front."""
    from ffnlab.sizing.memory.fit import reserve_bytes, serving_figures
    from ffnlab.sizing.memory.hardware import find_accelerator

    acc = find_accelerator(accelerator, otherwise="")  # size takes no --gpu-memory
    reserve = reserve_bytes(acc, None)
    usable = acc.memory_bytes - reserve
    figures = serving_figures(cfg, acc, lay, work, usable_bytes=usable)
    return replace(figures, accelerator=acc.name, usable_bytes=usable, reserve_bytes=reserve, batch=work.batch)


def model_summary(cfg: ModelConfig, *, seq_len: int, dtype: str, workload: Workload | None, assumed: list[str],
                  layout: Layout | None = None, serving_on: str | None = None) -> ModelSummary:
    """The ``model`` object of ``ffnlab size`` (a :class:`ModelSummary`): shape, parameters, FLOPs
    per token and the memory of ``workload`` on ``layout``
    (:func:`ffnlab.sizing.memory.parallel.memory_summary`, its result a ``MemorySummary``)."""
    # the memory model is imported here: a width alone (``size`` without --n-layers) never needs it
    from ffnlab.sizing.memory.optimizers import training_memory
    from ffnlab.sizing.memory.parallel import Layout, memory_summary

    if workload is not None:
        require(workload.seq_len == seq_len and workload.dtype == dtype,
                f"the workload's seq_len {workload.seq_len} and dtype {workload.dtype} must be the model's "
                f"{seq_len} and {dtype}")
    out = ModelSummary(
        n_layers=cfg.n_layers, n_heads=cfg.attn.n_heads, n_kv_heads=cfg.n_kv_heads,
        vocab_size=cfg.vocab_size, norm=cfg.norm, positions=cfg.positions,
        tied_embeddings=cfg.tied_embeddings,
        position_table_rows=cfg.max_positions if cfg.positions == "learned" else 0,
        params=count_params(cfg), flops_per_token=flops_per_token(cfg, seq_len), seq_len=seq_len,
        # the model states of the same optimizer and gradient dtype as ``workload`` (AdamW without it)
        training_memory_bytes=training_memory(cfg, dtype, optimizer=workload.optimizer if workload else "adamw",
                                              grad_dtype=workload.grad_dtype if workload else None),
        dtype=dtype, assumed=tuple(assumed),
    )
    if workload is not None:
        out = replace(out, memory=memory_summary(cfg, workload, layout))
    if serving_on is not None:
        require(workload is not None, "--gpu needs the memory options (a training --dtype)")
        assert workload is not None
        out = replace(out, serving=_serving_on(cfg, serving_on, workload, layout or Layout()))
    return out


def size_model(cfg: ModelConfig, name: str, rule: WidthRule | None = None, kind: str | None = None, *,
               seq_len: int = 2048, dtype: str = "bf16", workload: Workload | None = None,
               layout: Layout | None = None, serving_on: str | None = None) -> SizeSummary:
    """``ffnlab size --from``: a real model's sizes (a :class:`SizeSummary` with ``from``), with its FFN (the routed
    experts' width for an MoE) re-sized by ``rule`` and/or changed to ``kind`` when given; everything else is the
    model's."""
    kind = kind or cfg.ffn.kind
    width = resolve_d_ff(cfg.d_model, kind, rule) if rule is not None else cfg.ffn.d_ff
    changed = (kind, width) != (cfg.ffn.kind, cfg.ffn.d_ff)
    if changed:
        cfg = validate(replace(cfg, ffn=replace(cfg.ffn, kind=kind, d_ff=width)))
    spec = cfg.ffn
    assumed = [f"the architecture of {name}" + (f", its FFN re-sized to {kind} d_ff {width}" if changed else "")]
    return SizeSummary(
        from_model=name, d_model=cfg.d_model, ffn_kind=kind, gated=spec.gated,
        rule=rule.describe() if rule is not None else f"the model's own d_ff {width}", d_ff=width,
        ratio_raw=width / cfg.d_model,
        ratio_param_matched=float(param_matched_ratio(cfg.d_model, width, spec.gated)),
        ffn_params_per_layer=ffn_params(cfg.d_model, spec), alignment=Alignment.of(width),
        ffn_params_per_layer_active=ffn_params(cfg.d_model, spec, active=True) if spec.is_moe else None,
        model=model_summary(cfg, seq_len=seq_len, dtype=dtype, workload=workload, layout=layout, assumed=assumed,
                            serving_on=serving_on),
    )


__all__ = ["HEAD_DIM_DEFAULT", "SIZE_NORMS", "SIZE_POSITIONS", "Alignment", "ModelSummary", "SizeSummary",
           "model_summary", "size_model", "size_summary"]
