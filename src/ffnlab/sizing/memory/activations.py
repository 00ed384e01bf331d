"""Memory beyond the weights: the tensors autograd keeps for backward, the KV cache, and the rows
that show both. Every figure is an integer number of bytes built from :class:`Term` rows, each
naming the tensor it counts, the arithmetic, and what it is (part, shape in s, dtype, role) for
the filters; the rule for each part of the model sits in the docstring of the function that
counts it (norms, attention, FFN and MoE, LoRA's frozen layers, dropout, the head, the recompute
policies, the KV cache). Activations are counted tensor by tensor as a PyTorch implementation
keeps them (ffnlab's own modules in ``ffnlab.training.nn``, measured with saved-tensor hooks in
the tests); quantised weights are :mod:`ffnlab.sizing.memory.quant`'s.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from typing import Literal, TypedDict

from ffnlab.errors import require
from ffnlab.sizing.config import FFNSpec, ModelConfig
from ffnlab.sizing.counting import dense_ffn_params
from ffnlab.sizing.memory import byte_rules
from ffnlab.sizing.memory.byte_rules import ACTIVATION_DTYPES, KV_DTYPES, dtype_bytes
from ffnlab.sizing.memory.quant import WEIGHT_FORMATS, WeightBytes, matmul_params, weight_bytes
from ffnlab.validation import show

__all__ = ["WEIGHT_FORMATS", "WeightBytes", "matmul_params", "weight_bytes"]

RECOMPUTE = ("none", "selective", "full", "op-selective")
OP_POLICIES = "op_checkpoint_policies.json"
ATTENTION = ("fused", "eager")
MLA_FORMS = ("latent", "expanded")
STAT_BYTES = byte_rules.STAT_BYTES  # the byte rules' (imported from here by step and workload)
INDEX_BYTES = byte_rules.INDEX_BYTES
DROPOUT_MASK_BYTES = byte_rules.DROPOUT_MASK_BYTES

# tensors of width d_ff a dense FFN keeps for backward, by kind (see _ffn_terms)
FFN_KEEPS: dict[str, int] = {
    "relu": 1, "gelu": 2, "gelu_tanh": 2, "silu": 2, "relu2": 2,
    "swiglu": 4, "geglu": 4, "reglu": 4, "glu": 4, "bilinear": 3,
}
# (tensors of width d, fp32 statistics per token) a norm keeps
NORM_KEEPS: dict[str, tuple[int, int]] = {
    "layernorm": (1, 2), "layernorm-nobias": (1, 2), "none": (1, 2), "rmsnorm": (2, 1),
}
# LoRA (a frozen base): norms that keep only their fp32-upcast input (and statistics). RMSNorm's
# normalised input is the other factor of ``w * x_hat``, kept only for the weight's gradient;
# transformers' RMSNorm upcasts its input to fp32 first and keeps the upcast. LayerNorm's one op
# keeps its input and statistics whatever requires grad.
FROZEN_NORM_UPCAST = frozenset({"rmsnorm"})
# FFN kinds whose activation keeps the down projection's input itself (ReLU keeps its output)
DOWN_INPUT_KEPT_BY_ACTIVATION = frozenset({"relu"})


@dataclass(frozen=True)
class FrozenLayer:
    """A layer of a LoRA model: the base frozen; adapters of rank ``rank`` on the attention's and/or
    the FFN's linear layers; ``grad_below``: a gradient flows into the layer's input (an adapter in
    a lower layer, or the embeddings' output made to require grad); the adapters' dtype
    (``adapter_bytes``, fp32 as peft keeps them)."""

    attention: bool = False
    ffn: bool = False
    rank: int = 0
    grad_below: bool = True
    adapter_bytes: float = 4
    # routed experts run as transformers 5's grouped_mm experts (combined by a sum: the weighted
    # copy is not kept); False: one expert at a time, combined by index_add_ (ffnlab's MoEFFN),
    # which keeps the weighted copy as well
    grouped_experts: bool = True
    # bytes per element of what a norm hands the frozen projections when wider than the activation
    # dtype (4 under peft's prepare_model_for_kbit_training: the fp32 norm's output is fp32 and
    # bitsandbytes returns each projection's output in its input's dtype, so the adapters' input and
    # a dense FFN's gate, up and activation output are fp32; the attention kernel still keeps its
    # 16-bit casts); None: the activation dtype
    branch_bytes: float | None = None
    # peft's lora_dropout > 0: each adapter drops out its own copy of its (cast) input, which its A
    # keeps, and the dropout keeps its mask of this many bytes per element; None: lora_dropout 0
    # (nn.Identity: the adapters share their input)
    dropout_mask_bytes: float | None = None
    # the attention's adapters sit on the query and value projections only (the LoRA paper's choice:
    # two adapters reading the attention input, one on a fused q|k|v; none on the output projection)
    qv_only: bool = False

    def branch(self, b: float) -> float:
        """Bytes per element of the frozen projections' inputs and a dense FFN's hidden tensors."""
        return max(b, self.branch_bytes) if self.branch_bytes else b

    @property
    def own_copies(self) -> bool:
        """Each adapter keeps a tensor of its own (its dropped-out input and the mask)."""
        return self.dropout_mask_bytes is not None

    def input_bytes(self, b: float, copies: int) -> tuple[float, str]:
        """Bytes per element of an adapted layer's kept input and its rule: the tensor itself when
        the activations are in the adapters' dtype, else one cast copy per adapter reading it; with
        lora_dropout, per adapter its dropped-out copy (in the adapters' dtype) and the mask."""
        if self.dropout_mask_bytes is not None:
            m = self.dropout_mask_bytes
            return copies * (self.adapter_bytes + m), (f"{copies} dropped-out cop{'y' if copies == 1 else 'ies'} "
                                                       f"x ({self.adapter_bytes:g} B + mask {m:g} B)")
        if b >= self.adapter_bytes:
            return b, f"{b:g} B"
        return copies * self.adapter_bytes, (f"{copies} fp32 cop{'y' if copies == 1 else 'ies'} "
                                             f"x {self.adapter_bytes:g} B")


# where in the model a kept tensor belongs: a layer's attention or FFN sublayer (each with its
# pre-norm and adapters), the residual stream between them (dropout masks of the branches, post-norms,
# a checkpointed block's input), the embedding, the LM head (final norm, head input) or the loss
TermPart = Literal["attention", "ffn", "residual", "embedding", "head", "loss"]
# how its bytes grow with the sequence length s: with the tokens (linear), or with tokens x s (the
# s x s tensors of eager attention, which selective recomputation drops)
TermShape = Literal["linear", "quadratic"]
# what sets its bytes per element: the activation dtype, fp32 (statistics, upcasts), int64 (indices),
# the dropout mask's bytes, the adapters' dtype (peft's fp32 copies, where wider), or several of these
TermDtype = Literal["activation", "fp32", "int64", "mask", "adapter", "mixed"]
# the terms the step timeline treats apart: the loss's log-softmax (its own moments hold it) and the
# LM head's input (freed once the head's backward is done)
TermRole = Literal["log-softmax", "head input", "targets", "final norm"]


@dataclass(frozen=True)
class Term:
    """One line of a memory table: what is held, how many bytes, and the arithmetic; and what it is
    (``part``, ``shape``, ``dtype``, ``role``), which every filter reads (the ``name`` is for people)."""

    name: str
    bytes: int
    rule: str
    split: str = ""  # which parallelism divides it: "tp" (heads/d_ff), "sp" (sequence), "" (none)
    part: TermPart = field(kw_only=True)
    shape: TermShape = field(default="linear", kw_only=True)
    dtype: TermDtype = field(default="activation", kw_only=True)
    role: TermRole | None = field(default=None, kw_only=True)
    # op-level checkpointing: the block's full set holds it too (False: a row-parallel output the
    # residual add keeps nothing of, saved by the policy only)
    in_full_set: bool = field(default=True, kw_only=True)

    def as_dict(self) -> dict[str, object]:
        return {"term": self.name, "bytes": self.bytes, "rule": self.rule, "split": self.split}


def _ffn_keeps(spec: FFNSpec) -> int:
    # every kind has its entry (tests/sizing/memory/test_memory_rules.py)
    return FFN_KEEPS[spec.kind] + spec.act_extra_keeps


def _t(name: str, per_token: float, tokens: int, rule: str, split: str = "", *, part: TermPart,
       shape: TermShape = "linear", dtype: TermDtype = "activation", role: TermRole | None = None,
       in_full_set: bool = True) -> Term:
    return Term(name, math.ceil(per_token * tokens), f"{tokens:,} tokens x {rule}", split, part=part, shape=shape,
                dtype=dtype, role=role, in_full_set=in_full_set)


def _norm_terms(cfg: ModelConfig, where: str, part: TermPart, tokens: int, b: float,
                frozen: bool = False, role: TermRole | None = None) -> list[Term]:
    """A norm's kept tensors. Per token: its input (``d``) and per-token statistics in fp32
    (LayerNorm: mean and rstd). RMSNorm computed as ``x * rsqrt(mean(x^2) + eps) * w`` (as
    ``nn.RMSNorm`` and transformers' ``LlamaRMSNorm`` do) keeps rstd and also the normalised ``x``
    before the weight (``2d``). Frozen (LoRA), an RMSNorm keeps its input (upcast to fp32, as
    transformers does) and statistics but not the normalised input, which only its weight's
    gradient needs; LayerNorm keeps what it keeps in training."""
    widths, stats = NORM_KEEPS[cfg.norm]  # every norm has its entry
    what = "input and normalised input" if widths == 2 else "input"
    dtype: TermDtype = "activation"
    if frozen and cfg.norm in FROZEN_NORM_UPCAST:
        widths, what, b = 1, "input (upcast to fp32)", max(b, STAT_BYTES)
        dtype = "fp32"
    return [_t(f"{where} norm {what}", widths * cfg.d_model * b, tokens,
               f"{widths} x d {cfg.d_model} x {b:g} B", "sp", part=part, dtype=dtype, role=role),
            _t(f"{where} norm statistics", stats * STAT_BYTES, tokens,
               f"{stats} x {STAT_BYTES} B (fp32)", "sp", part=part,
               dtype="fp32", role=role)]


def _dropout_terms(cfg: ModelConfig, tokens: int, seq_len: int, b: float, attention: str, mask: float) -> list[Term]:
    """Dropout in the GPT-2 / Megatron placement (the one Korthikanti et al. 2022 count): each
    dropout keeps its mask, ``mask`` bytes per element (one on CUDA, where ``torch.native_dropout``
    returns a bool mask; the input's dtype in PyTorch's unfused CPU dropout): the two residual
    branches' masks (``2d``) per layer and, with eager attention, the attention-probability mask
    (``a s``) plus the dropped-out probabilities the value matmul keeps (``a s`` x the activation
    dtype). Fused attention regenerates its dropout from the RNG state and keeps no mask."""
    d, a = cfg.d_model, cfg.attn.n_heads
    out = [_t("dropout masks of the two residual branches", 2 * d * mask, tokens, f"2 x d {d} x {mask:g} B", "sp",
              part="residual", dtype="mask")]
    if attention == "eager":
        out += [_t("attention dropout mask (s x s)", a * seq_len * mask, tokens,
                   f"heads {a} x s {seq_len} x {mask:g} B", "tp", part="attention", shape="quadratic", dtype="mask"),
                _t("dropped-out probabilities (s x s)", a * seq_len * b, tokens,
                   f"heads {a} x s {seq_len} x {b:g} B", "tp", part="attention", shape="quadratic")]
    return out


def attention_adapters(cfg: ModelConfig, qv_only: bool = False) -> int:
    """Linear layers of one attention that peft adapts: q|k|v and the output (fused), q, k, v and
    the output, or MLA's projections; ``qv_only`` (``--lora-targets qv``): q and v, or the fused
    q|k|v alone."""
    if cfg.is_mla:
        return (2 if cfg.attn.q_lora_rank else 1) + 3
    if qv_only:
        return 1 if cfg.attn.qkv_fused else 2
    return 2 if cfg.attn.qkv_fused else 4


def ffn_adapters(spec: FFNSpec) -> int:
    """Linear layers of a dense FFN that peft adapts: gate, up and down (up and down, plain)."""
    return 3 if spec.gated else 2


def _adapter_terms(where: str, part: TermPart, n: int, fz: FrozenLayer, tokens: int) -> Term:
    return _t(f"{where} adapters' rank-r inputs of B", n * fz.rank * fz.adapter_bytes, tokens,
              f"{n} adapters x r {fz.rank} x {fz.adapter_bytes:g} B", part=part, dtype="adapter")


def _attention_terms(cfg: ModelConfig, tokens: int, seq_len: int, b: float, attention: str,
                     fz: FrozenLayer | None = None) -> list[Term]:
    """Attention's kept tensors per token (``dq`` = n_heads x head_dim, ``dkv`` = n_kv_heads x
    head_dim, ``a`` = n_heads, ``s`` = sequence length). Fused (flash / memory-efficient SDPA): the
    q|k|v projection output (``dq + 2 dkv``), the rotated q and k with RoPE (``dq + dkv``), the
    attention output (``dq``, also the output projection's input) and the softmax log-sum-exp
    (``a``, fp32); no ``s x s`` tensor. Eager (PyTorch's math SDPA): contiguous q (scaled), k and v
    at query width (``3 dq``; GQA's k and v repeated to every head), the softmax probabilities
    (``a s``) and the output (``dq``). The projection after a norm keeps the norm's output
    (``d``)."""
    a, d = cfg.attn, cfg.d_model
    if fz is None:
        out = [_t("attention input (norm output)", d * b, tokens, f"d {d} x {b:g} B", "sp", part="attention")]
    elif fz.attention or (cfg.norms_per_block == 1 and fz.ffn):  # kept by the adapters' A (not the frozen W)
        readers = (2 if cfg.is_mla else 1 if a.qkv_fused else 2 if fz.qv_only else 3) + \
            (1 if cfg.norms_per_block == 1 and fz.ffn else 0)
        per, how = fz.input_bytes(fz.branch(b), readers)
        out = [_t("attention input (norm output), kept by the adapters", d * per, tokens, f"d {d} x {how}", "sp",
                  part="attention", dtype="adapter")]
    else:
        out = []
    latent_widths = 2 if fz is None or fz.attention else 1  # the latent's norm output: kept by an adapter only
    if cfg.is_mla:
        nope, rope = a.qk_nope_head_dim or 0, a.qk_rope_head_dim or 0
        vdim = a.v_head_dim or cfg.head_dim
        dqk, dv = a.n_heads * (nope + rope), a.n_heads * vdim
        latent = (a.kv_lora_rank or 0) + rope
        if a.q_lora_rank:
            out.append(_t("MLA q latent and its norm", latent_widths * a.q_lora_rank * b, tokens,
                          f"{latent_widths} x q_lora_rank {a.q_lora_rank} x {b:g} B", "sp", part="attention"))
        out += [_t("MLA kv latent and its norm", latent_widths * latent * b, tokens,
                   f"{latent_widths} x (kv_lora_rank + rope) {latent} x {b:g} B", "sp", part="attention"),
                _t("MLA expanded q, k, v", (2 * dqk + dv) * b, tokens,
                   f"(2 x {dqk} + {dv}) x {b:g} B", "tp", part="attention")]
        dq_out = dv
    else:
        dq, dkv = cfg.d_attn, cfg.d_kv
        dq_out = dq
        if attention == "eager":
            out.append(_t("q, k, v copies at query width", 3 * dq * b, tokens, f"3 x dq {dq} x {b:g} B", "tp",
                          part="attention"))
        elif not a.qkv_fused and cfg.positions == "rope":
            out.append(_t("q, k, v (three projections; q and k rotated)", (dq + 2 * dkv) * b, tokens,
                          f"(dq {dq} + 2 dkv {dkv}) x {b:g} B", "tp", part="attention"))
        else:
            out.append(_t("qkv projection output", (dq + 2 * dkv) * b, tokens,
                          f"(dq {dq} + 2 dkv {dkv}) x {b:g} B", "tp", part="attention"))
            if cfg.positions == "rope":
                out.append(_t("rotated q and k", (dq + dkv) * b, tokens, f"(dq {dq} + dkv {dkv}) x {b:g} B", "tp",
                              part="attention"))
    if attention == "eager":
        out.append(_t("softmax probabilities (s x s)", a.n_heads * seq_len * b, tokens,
                      f"heads {a.n_heads} x s {seq_len} x {b:g} B", "tp", part="attention",
                      shape="quadratic"))
    else:
        out.append(_t("softmax log-sum-exp", a.n_heads * STAT_BYTES, tokens,
                      f"heads {a.n_heads} x {STAT_BYTES} B", "tp",
                      part="attention", dtype="fp32"))
    out.append(_t("attention output", dq_out * b, tokens, f"{dq_out} x {b:g} B", "tp", part="attention"))
    if fz is not None and fz.attention:
        # the output projection's adapter keeps its own copy (no adapter there with qv)
        if (b < fz.adapter_bytes or fz.own_copies) and not fz.qv_only:
            per, how = fz.input_bytes(b if fz.own_copies else fz.adapter_bytes, 1)
            out.append(_t("attention output, " + ("dropped-out copy" if fz.own_copies else "fp32 copy")
                          + " for its adapter", dq_out * per, tokens, f"{dq_out} x {how}", "tp", part="attention",
                          dtype="adapter"))
        out.append(_adapter_terms("attention", "attention", attention_adapters(cfg, fz.qv_only), fz, tokens))
    return out


def _frozen_ffn_terms(cfg: ModelConfig, spec: FFNSpec, tokens: int, b: float, capacity_factor: float | None,
                      fz: FrozenLayer) -> list[Term]:
    """A LoRA layer's FFN: the adapters' inputs (the FFN input, the down projection's input) and
    rank-r intermediates when adapted; the activation's own tensors either way."""
    d, f = cfg.d_model, spec.d_ff
    shared_input = spec.kind in DOWN_INPUT_KEPT_BY_ACTIVATION
    own = _ffn_keeps(spec) - (0 if shared_input else 1)  # what the activation keeps, the down input aside
    out = []
    if fz.ffn and cfg.norms_per_block != 1:
        per, how = fz.input_bytes(fz.branch(b), 2 if spec.gated else 1)
        out.append(_t("FFN input (norm output), kept by the adapters", d * per, tokens, f"d {d} x {how}", "sp",
                      part="ffn", dtype="adapter"))
    if spec.is_moe:
        require(not fz.ffn, "LoRA on routed MoE experts is not modelled yet: adapt the attention only")
        e, k = spec.n_experts, spec.top_k
        copies = k if capacity_factor is None else capacity_factor * k
        how = f"top_k {k}" if capacity_factor is None else f"capacity {capacity_factor:g} x top_k {k}"
        outs = 1 if fz.grouped_experts else 2
        out += [
            _t("router probabilities", e * STAT_BYTES, tokens,
               f"experts {e} x {STAT_BYTES} B", part="ffn", dtype="fp32"),
            _t("router top-k indices and weights", k * INDEX_BYTES + (k + 1) * STAT_BYTES, tokens,
               f"(top_k {k} x {INDEX_BYTES} B + (top_k + 1) x {STAT_BYTES} B)", part="ffn", dtype="mixed"),
            _t("dispatched tokens' index (frozen experts keep no copy)", copies * INDEX_BYTES, tokens,
               f"{how} x {INDEX_BYTES} B",
               part="ffn", dtype="int64"),
            _t(f"expert hidden ({spec.kind}, frozen)", copies * own * f * b, tokens,
               f"{how} x {own} x d_ff {f} x {b:g} B", "tp", part="ffn"),
            _t("expert outputs (for the routing weights' gradient)" + ("" if fz.grouped_experts else
                                                                        ", weighted copy") + ", weights, index",
               copies * (outs * d * b + STAT_BYTES + INDEX_BYTES), tokens,
               f"{how} x ({outs} x d {d} x {b:g} B + 4 B + 8 B)", part="ffn", dtype="mixed"),
        ]
        if spec.n_shared_experts:
            ws = spec.d_shared or f
            out.append(_t(f"shared experts hidden ({spec.kind}, frozen)", spec.n_shared_experts * own * ws * b, tokens,
                          f"{spec.n_shared_experts} x {own} x d_shared {ws} x {b:g} B", "tp", part="ffn"))
        return out
    hb = fz.branch(b)  # the dense FFN's hidden tensors: fp32 behind an fp32 norm (upcast QLoRA)
    if not fz.ffn:
        return out + [_t(f"FFN hidden ({spec.kind}, frozen down projection)", own * f * hb, tokens,
                         f"{own} x d_ff {f} x {hb:g} B", "tp", part="ffn")]
    down, down_rule = fz.input_bytes(hb, 1)
    if shared_input and hb >= fz.adapter_bytes and not fz.own_copies:
        down, down_rule = 0, "0 B (the activation's own output)"
    return out + [_t(f"FFN hidden ({spec.kind}) and the down adapter's input", own * f * hb + f * down, tokens,
                     f"({own} x {hb:g} B + {down_rule}) x d_ff {f}", "tp", part="ffn", dtype="mixed"),
                  _adapter_terms("FFN", "ffn", ffn_adapters(spec), fz, tokens)]


def _ffn_terms(cfg: ModelConfig, spec: FFNSpec, tokens: int, b: float,
               capacity_factor: float | None, fz: FrozenLayer | None = None) -> list[Term]:
    """A dense or MoE FFN's kept tensors per token. Dense, in units of ``d_ff``
    (:data:`FFN_KEEPS`): a plain MLP keeps the pre-activation (GELU, SiLU, ReLU^2 backward need it;
    ReLU keeps only its output) and the down projection's input; a gated FFN keeps the gate|up
    projection (``2 d_ff``), ``act(gate)`` and the product (bilinear: ``act(gate)`` is the gate).
    MoE (ffnlab's dropless dispatch, :class:`ffnlab.training.nn.MoEFFN`): router probabilities
    (``E``, fp32), the top-k indices (int64) and renormalised weights (``k + 1``, fp32), the
    gathered tokens (``k d``) with their index, each routed copy's dense-FFN tensors (``k`` x the
    table), the expert outputs and their weighted copy (``2 k d``), the combine weights and index.
    With a capacity factor ``c`` (GShard/Switch-style padded buffers) every per-routed-copy term
    holds ``c k`` copies instead of ``k``."""
    if fz is not None:
        return _frozen_ffn_terms(cfg, spec, tokens, b, capacity_factor, fz)
    d = cfg.d_model
    keeps = _ffn_keeps(spec)
    out = ([_t("FFN input (norm output)", d * b, tokens, f"d {d} x {b:g} B", "sp", part="ffn")]
           if cfg.norms_per_block != 1 else [])
    if not spec.is_moe:
        return out + [_t(f"FFN hidden ({spec.kind})", keeps * spec.d_ff * b, tokens,
                         f"{keeps} x d_ff {spec.d_ff} x {b:g} B", "tp", part="ffn")]
    e, k = spec.n_experts, spec.top_k
    copies = k if capacity_factor is None else capacity_factor * k
    how = f"top_k {k}" if capacity_factor is None else f"capacity {capacity_factor:g} x top_k {k}"
    out += [
        _t("router probabilities", e * STAT_BYTES, tokens, f"experts {e} x {STAT_BYTES} B", part="ffn", dtype="fp32"),
        _t("router top-k indices and weights", k * INDEX_BYTES + (k + 1) * STAT_BYTES, tokens,
           f"(top_k {k} x {INDEX_BYTES} B + (top_k + 1) x {STAT_BYTES} B)", part="ffn", dtype="mixed"),
        _t("dispatched tokens and index", copies * (d * b + INDEX_BYTES), tokens,
           f"{how} x (d {d} x {b:g} B + 8 B)", part="ffn", dtype="mixed"),
        _t(f"expert hidden ({spec.kind})", copies * keeps * spec.d_ff * b, tokens,
           f"{how} x {keeps} x d_ff {spec.d_ff} x {b:g} B", "tp", part="ffn"),
        _t("expert outputs, weighted copy, weights, index",
           copies * (2 * d * b + STAT_BYTES + INDEX_BYTES), tokens,
           f"{how} x (2 x d {d} x {b:g} B + 4 B + 8 B)", part="ffn", dtype="mixed"),
    ]
    if spec.n_shared_experts:
        ws = spec.d_shared or spec.d_ff
        out.append(_t(f"shared experts hidden ({spec.kind})", spec.n_shared_experts * keeps * ws * b, tokens,
                      f"{spec.n_shared_experts} x {keeps} x d_shared {ws} x {b:g} B", "tp", part="ffn"))
    return out


def graph_kept_inputs(cfg: ModelConfig, layer: int, fz: FrozenLayer, tokens: int, b: float, *,
                      out_copied: bool = False) -> int:
    """Bytes of the inputs layer ``layer``'s frozen 4-bit projections keep as ``ctx`` attributes
    under bitsandbytes before 0.43.2 (``MatMul4Bit`` kept its input ``A`` whenever an input needed
    grad: bitsandbytes/autograd/_functions.py at 0.42.0; (None, B) from 0.43.2), where no other op
    keeps the same tensor: the attention's input (unless its adapters keep it: no lora_dropout and
    the adapters' dtype), the FFN's input and the down projection's input (the same rule for the
    FFN's adapters). A ``ctx`` attribute is not a saved tensor, so backward never frees it: it lives
    as long as the graph. Dense FFNs only.

    The output projection's input is the attention kernel's output re-assembled to ``(b, s, heads x
    head_dim)``: a view of the kernel's saved output when the kernel's output is laid out token-major
    (transformers' Llama, whose q is a transposed view of the projection), so not counted; a copy of
    its own (``d_attn`` per token) with ``out_copied``, when q is head-major in memory and the
    kernel's output follows q's layout (LitGPT's ``torch.cat`` of the roped q makes q contiguous
    ``(b, heads, s, head_dim)``; the CUDA flash kernel allocates its output ``empty_like`` of q and
    the ``transpose(1, 2)`` before the reshape is then not contiguous)."""
    spec = cfg.layer_ffn(layer)
    require(not spec.is_moe and not cfg.is_mla,
            "bitsandbytes before 0.43.2 keeping its inputs is modelled for dense FFNs and q/k/v attention only")
    if not (fz.grad_below or fz.attention):  # no input of this layer needs grad: MatMul4Bit keeps nothing
        return 0
    shared = not fz.own_copies and b >= fz.adapter_bytes  # an adapter keeps the very tensor
    d = cfg.d_model
    attn_in = 0 if (fz.attention and shared) or not fz.grad_below else d
    out_in = cfg.d_attn if out_copied else 0
    ffn_in = 0 if cfg.norms_per_block == 1 or (fz.ffn and shared) else d
    down_in = 0 if fz.ffn and shared else spec.d_ff
    return math.ceil(tokens * (attn_in + out_in + ffn_in + down_in) * b)


def layer_activation_terms(cfg: ModelConfig, layer: int, *, seq_len: int, batch: int, dtype: str = "bf16",
                           attention: str = "fused", capacity_factor: float | None = None, dropout: bool = False,
                           dropout_mask_bytes: float = DROPOUT_MASK_BYTES,
                           frozen: FrozenLayer | None = None) -> list[Term]:
    """What decoder layer ``layer`` keeps for backward with no recomputation.

    ``frozen``: a LoRA layer (the base frozen, adapters beside some linear layers, peft's
    ``lora_dropout=0``, which makes the adapter's dropout ``nn.Identity``). Autograd keeps a tensor
    only for a gradient it will compute, so a frozen linear layer keeps nothing of its input (its
    resident weight gives the input's gradient); an adapted one keeps its input (for ``A``'s
    gradient; peft first casts it to the adapter's fp32, so below 32-bit each adapted layer keeps
    its own fp32 copy) and the rank-``r`` output of ``A`` (for ``B``'s gradient). Activation
    functions, attention and the loss keep what they keep in training wherever an input gradient
    flows through them; below the first adapter nothing requires grad and nothing is kept
    (``grad_below`` False: layer 0, unless the embeddings' output is made to require grad, as
    transformers' ``gradient_checkpointing_enable`` does). The FFN's hidden set loses the down
    projection's input when the down projection is frozen (ReLU's output stays: it is what ReLU
    keeps)."""
    b = dtype_bytes(dtype, ACTIVATION_DTYPES, "activation dtype")
    require(attention in ATTENTION, f"attention must be one of {', '.join(ATTENTION)}, got {show(attention)}")
    tokens = seq_len * batch
    spec = cfg.layer_ffn(layer)
    fz = frozen
    attn_grad = fz is None or fz.grad_below or fz.attention  # the attention's output requires grad
    # the FFN's input requires grad (a parallel block's FFN reads the layer's input, not the attention's output)
    ffn_grad = fz is None or fz.grad_below or (fz.attention and cfg.norms_per_block != 1)
    terms = []
    if fz is None or fz.grad_below:
        terms += _norm_terms(cfg, "attention", "attention", tokens, b, frozen=fz is not None)
    if attn_grad:
        terms += _attention_terms(cfg, tokens, seq_len, b, attention, fz)
    elif cfg.norms_per_block == 1 and fz is not None and fz.ffn:  # parallel block: the FFN adapters' input only
        terms += _attention_terms(cfg, tokens, seq_len, b, attention, fz)[:1]
    if cfg.norms_per_block != 1 and ffn_grad:  # parallel blocks (GPT-J) share one norm
        terms += _norm_terms(cfg, "FFN", "ffn", tokens, b, frozen=fz is not None)
    for i in range(max(0, cfg.norms_per_block - 2)):  # Gemma-2 sandwich post-norms, on the branches' outputs
        if ffn_grad:
            terms += _norm_terms(cfg, f"post-norm {i + 1}", "residual", tokens, b, frozen=fz is not None)
    if dropout and attn_grad:
        terms += _dropout_terms(cfg, tokens, seq_len, b, attention, dropout_mask_bytes)
    elif dropout and fz is not None and (ffn_grad or fz.ffn):  # only the FFN branch's output requires grad
        terms.append(_t("dropout mask of the FFN branch", cfg.d_model * dropout_mask_bytes, tokens,
                        f"d {cfg.d_model} x {dropout_mask_bytes:g} B", "sp", part="residual", dtype="mask"))
    if fz is None or ffn_grad or fz.ffn:
        terms += _ffn_terms(cfg, spec, tokens, b, capacity_factor, fz)
    return terms


def each_layer_terms(cfg: ModelConfig, frozen: Callable[[int], FrozenLayer | None] | None = None, *, seq_len: int,
                     batch: int, dtype: str = "bf16", attention: str = "fused", capacity_factor: float | None = None,
                     dropout: bool = False, dropout_mask_bytes: float = DROPOUT_MASK_BYTES) -> list[list[Term]]:
    """:func:`layer_activation_terms` of every layer, decoder then encoder (an encoder layer as the
    last decoder layer), worked out once per distinct (FFN, ``frozen``) pair and shared by the
    layers that have it (so O(n_layers) and no per-layer recomputation; do not mutate the lists)."""
    memo: dict[tuple[int, FrozenLayer | None], list[Term]] = {}
    out = []
    for i in range(cfg.n_layers + cfg.encoder_layers):
        j = min(i, cfg.n_layers - 1)
        fz = frozen(i) if frozen is not None else None
        key = (id(cfg.layer_ffn(j)), fz)
        if key not in memo:
            memo[key] = layer_activation_terms(cfg, j, seq_len=seq_len, batch=batch, dtype=dtype, attention=attention,
                                               capacity_factor=capacity_factor, dropout=dropout,
                                               dropout_mask_bytes=dropout_mask_bytes, frozen=fz)
        out.append(memo[key])
    return out


def head_activation_terms(cfg: ModelConfig, *, seq_len: int, batch: int, dtype: str = "bf16", dropout: bool = False,
                          dropout_mask_bytes: float = DROPOUT_MASK_BYTES,
                          frozen: FrozenLayer | None = None) -> list[Term]:
    """Embedding and LM head: indices, final norm, head input, fp32 log-softmax, targets. With
    ``frozen`` (LoRA) the frozen head keeps no input and the final norm keeps its frozen set;
    ``frozen.grad_below``: the embeddings' output requires grad (its dropout keeps a mask)."""
    b = dtype_bytes(dtype, ACTIVATION_DTYPES, "activation dtype")
    tokens, d = seq_len * batch, cfg.d_model
    terms = [_t("token indices", INDEX_BYTES, tokens, f"{INDEX_BYTES} B (int64)", part="embedding", dtype="int64")]
    if dropout and (frozen is None or frozen.grad_below):
        terms.append(_t("embedding dropout mask", d * dropout_mask_bytes, tokens, f"d {d} x {dropout_mask_bytes:g} B",
                        "sp", part="embedding", dtype="mask"))
    if cfg.positions == "learned":
        terms.append(Term("position indices", INDEX_BYTES * seq_len,
                          f"s {seq_len} x {INDEX_BYTES} B (shared by the batch)", part="embedding", dtype="int64"))
    if cfg.final_norm:
        terms += _norm_terms(cfg, "final", "head", tokens, b, frozen=frozen is not None, role="final norm")
    if frozen is None:
        terms.append(_t("LM head input", (cfg.embed_proj_dim or d) * b, tokens, f"d x {b:g} B", "sp", part="head",
                        role="head input"))
    return terms + [
        _t("log-softmax of the logits (fp32)", cfg.vocab_size * STAT_BYTES, tokens,
           f"vocab {cfg.vocab_size} x {STAT_BYTES} B", "tp", part="loss", dtype="fp32", role="log-softmax"),
        _t("targets", INDEX_BYTES, tokens, f"{INDEX_BYTES} B (int64)", part="loss", dtype="int64", role="targets"),
    ]


def selective_kept(terms: list[Term]) -> list[Term]:
    """What selective recomputation keeps of a layer: everything but the ``s x s`` tensors (the
    terms quadratic in the sequence length).

    The recompute policies (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
    Transformer Models"): ``none`` keeps everything; ``selective`` recomputes the attention core,
    so eager attention's ``s x s`` probabilities are not kept (with fused attention it equals
    ``none``); ``full`` keeps only each layer's input (``d``) and recomputes one layer at a time in
    backward (``L x input + one layer's full set + head``); ``op-selective``:
    :func:`op_selective_terms`."""
    return [t for t in terms if t.shape != "quadratic"]


class _PolicySource(TypedDict):
    repo: str
    ref: str  # the tag
    path: str
    where: str  # the function or lines


class PolicySource(_PolicySource, total=False):
    """A file of the engine's repository at a tag (and the tag's commit, where given)."""

    commit: str


class OpPolicy(TypedDict):
    """One version of an engine's op-level checkpointing policy (data/op_checkpoint_policies.json)."""

    version: str
    source: PolicySource  # the save list
    rule_source: PolicySource  # the rule that applies it
    saved_ops: list[str]  # the ops whose outputs are saved (``aten.mm.default``, ...)
    mm_recompute_every: int  # every n-th matmul of a block is recomputed, the others saved
    mm_rule: str
    scope: str
    block_source: PolicySource  # the block whose matmuls are counted


class EnginePolicies(TypedDict):
    versions: list[OpPolicy]  # newest first


class OpPoliciesFile(TypedDict):
    """data/op_checkpoint_policies.json: per engine, its policy's versions."""

    about: str
    policies: dict[str, EnginePolicies]


@functools.cache
def op_checkpoint_policies() -> OpPoliciesFile:
    """The parsed ``data/op_checkpoint_policies.json``."""
    data: OpPoliciesFile = json.loads(
        resources.files("ffnlab.data").joinpath(OP_POLICIES).read_text(encoding="utf-8"))
    return data


def op_policy(engine: str = "torchtitan", version: str | None = None) -> OpPolicy:
    """One version of an engine's op-level checkpointing policy (``version`` None: the newest)."""
    versions = op_checkpoint_policies()["policies"][engine]["versions"]
    return next((v for v in versions if v["version"] == version), versions[0])


def _block_matmuls(cfg: ModelConfig, spec: FFNSpec) -> list[tuple[str, int, str, TermPart]]:
    """A dense decoder block's matmuls in forward order: (output, width, split, part)."""
    dq, dkv, d = cfg.d_attn, cfg.d_kv, cfg.d_model
    attn: list[tuple[str, int, str, TermPart]] = (
        [("q|k|v projection output", dq + 2 * dkv, "tp", "attention")] if cfg.attn.qkv_fused else
        [("q projection output", dq, "tp", "attention"), ("k projection output", dkv, "tp", "attention"),
         ("v projection output", dkv, "tp", "attention")])
    ffn: list[tuple[str, int, str, TermPart]] = (
        [("FFN gate projection output", spec.d_ff, "tp", "ffn"), ("FFN up projection output", spec.d_ff, "tp", "ffn")]
        if spec.gated else [("FFN up projection output", spec.d_ff, "tp", "ffn")])
    # the row-parallel outputs: whole d on each tensor-parallel rank before the reduction
    return [*attn, ("attention output projection's output", d, "", "attention"), *ffn,
            ("FFN down projection's output", d, "", "ffn")]


def op_selective_terms(cfg: ModelConfig, layer: int, *, seq_len: int, batch: int, dtype: str = "bf16",
                       attention: str = "fused", policy: OpPolicy | None = None) -> list[Term]:
    """What one checkpointed block keeps under an op-level selective checkpointing ``policy``
    (default: torchtitan's newest): its input, kept by the checkpoint, and the outputs of the
    saved ops. A term with ``in_full_set`` False (named ``... (not in the full set)``) is not also
    kept when the block runs without checkpointing (a row-parallel output: the residual add keeps
    nothing).

    torchtitan's op-level selective activation checkpointing (``selective_ac_option = "op"``, the
    default of its shipped Llama recipes), kept as data with its source in
    ``data/op_checkpoint_policies.json``: each block is checkpointed, and in forward the outputs
    of the ops on the policy's save list are kept (the attention kernel's output and log-sum-exp,
    and every matmul whose count within the block is odd: the second, fourth, ... are
    recomputed); a dense Llama block keeps its input, q, v, the attention output and log-sum-exp,
    the FFN's gate output and its down projection's output. In backward one block's full set is
    recomputed around what was saved. Tensor parallelism's reduce-scatter outputs (also on the
    save list) are not counted."""
    pol = policy or op_policy()
    ops = set(pol["saved_ops"])
    spec = cfg.layer_ffn(layer)
    require(not spec.is_moe and not cfg.is_mla and cfg.norms_per_block == 2,
            "--recompute op-selective prices dense decoder blocks with one attention and one FFN norm "
            "(torchtitan's Llama block); this model has MoE, MLA or another block layout: give --recompute "
            "none, selective or full")
    require(attention == "fused", "--recompute op-selective needs --attention fused (torchtitan calls SDPA)")
    b = dtype_bytes(dtype, ACTIVATION_DTYPES, "activation dtype")
    tokens, d, every = seq_len * batch, cfg.d_model, int(pol["mm_recompute_every"])
    out = [_t("block input (kept by the checkpoint)", d * b, tokens, f"d {d} x {b:g} B", "sp", part="residual")]
    mms = _block_matmuls(cfg, spec)
    for count, (name, width, split, part) in enumerate(mms, start=1):
        if "aten.mm.default" not in ops or count % every == 0:
            continue
        in_full_set = split != ""  # a row-parallel output: the full set keeps nothing of it
        extra = "" if in_full_set else " (not in the full set)"
        out.append(_t(f"saved mm {count}: {name}{extra}", width * b, tokens, f"{width} x {b:g} B", split, part=part,
                      in_full_set=in_full_set))
    if any("scaled_dot_product" in op for op in ops):  # the SDPA kernel's outputs
        a = cfg.attn.n_heads
        out.append(_t("saved attention kernel output and log-sum-exp", cfg.d_attn * b + a * STAT_BYTES, tokens,
                      f"(dq {cfg.d_attn} x {b:g} B + heads {a} x {STAT_BYTES} B)", "tp", part="attention",
                      dtype="mixed"))
    return out


def op_selective_overlap(terms: list[Term]) -> list[Term]:
    """The saved terms that a recomputed block's full set also holds (they are not made again)."""
    return [t for t in terms if t.in_full_set]


@dataclass(frozen=True)
class Activations:
    """Activation bytes of one micro-batch: per layer (after the recompute policy) and in total."""

    per_layer: list[int]
    head: int
    recompute_peak: int  # full recompute: one layer's full set held while it is recomputed
    terms: list[Term]  # the widest layer's terms, for a table

    @property
    def total(self) -> int:
        return sum(self.per_layer) + self.head + self.recompute_peak


def divide_terms(terms: list[Term], tp: int, sp: bool) -> int:
    """Bytes of ``terms`` on one GPU: tp-split terms / tp, and d-sized ones too with sequence parallelism."""
    return sum(math.ceil(t.bytes / tp) if (t.split == "tp" or (sp and t.split == "sp")) else t.bytes for t in terms)


def activation_memory(cfg: ModelConfig, *, seq_len: int, batch: int = 1, dtype: str = "bf16",
                      recompute: str = "none", attention: str = "fused", capacity_factor: float | None = None,
                      tp: int = 1, sp: bool = False, dropout: bool = False,
                      dropout_mask_bytes: float = DROPOUT_MASK_BYTES) -> Activations:
    """Activation bytes for ``batch`` sequences of ``seq_len`` tokens under a recompute policy.

    With tensor parallelism ``tp`` the head- and d_ff-sized terms are divided by ``tp``
    (Megatron-LM); with sequence parallelism ``sp`` the d-sized terms are divided too
    (Korthikanti et al. 2022).
    """
    require(recompute in RECOMPUTE, f"recompute must be one of {', '.join(RECOMPUTE)}, got {show(recompute)}")
    require(seq_len >= 1 and batch >= 1, "seq_len and batch must be >= 1")
    require(capacity_factor is None or capacity_factor > 0, "capacity factor must be > 0")
    b = dtype_bytes(dtype, ACTIVATION_DTYPES, "activation dtype")
    n_layers = cfg.n_layers + cfg.encoder_layers  # encoder-decoders: both stacks as decoder layers
    layers = each_layer_terms(cfg, seq_len=seq_len, batch=batch, dtype=dtype, attention=attention,
                              capacity_factor=capacity_factor, dropout=dropout, dropout_mask_bytes=dropout_mask_bytes)
    distinct = list({id(ts): ts for ts in layers}.values())  # identical layers share one list
    full = {id(ts): divide_terms(ts, tp, sp) for ts in distinct}
    kept = [full[id(ts)] for ts in layers]
    widest = max(range(n_layers), key=lambda i: kept[i])
    head = divide_terms(head_activation_terms(cfg, seq_len=seq_len, batch=batch, dtype=dtype, dropout=dropout,
                                         dropout_mask_bytes=dropout_mask_bytes), tp, sp)
    if recompute == "selective":
        selective = {id(ts): divide_terms(selective_kept(ts), tp, sp) for ts in distinct}
        kept = [selective[id(ts)] for ts in layers]
    peak = 0
    if recompute == "op-selective":
        n_dec = cfg.n_layers
        saved = [op_selective_terms(cfg, min(i, n_dec - 1), seq_len=seq_len, batch=batch, dtype=dtype,
                                    attention=attention) for i in range(n_layers)]
        peak = max(full[id(ts)] - divide_terms(op_selective_overlap(sv), tp, sp) for ts, sv in zip(layers, saved,
                                                                                                   strict=True))
        kept = [divide_terms(sv, tp, sp) for sv in saved]
    if recompute == "full":
        layer_input = math.ceil(seq_len * batch * cfg.d_model * b / (tp if sp else 1))
        peak = max(full.values())
        kept = [layer_input] * n_layers
    return Activations(per_layer=kept, head=head, recompute_peak=peak, terms=list(layers[widest]))


# -- KV cache -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class KVCache:
    per_token_per_layer: list[float]  # bytes one cached token takes in each layer (kv_dtype)
    cached_tokens: list[int]  # tokens each layer holds (sliding windows hold at most the window)
    batch: int
    bytes_per_element: float
    rule: str

    @property
    def per_layer(self) -> list[int]:
        return [math.ceil(p * t * self.batch) for p, t in zip(self.per_token_per_layer, self.cached_tokens,
                                                              strict=True)]

    @property
    def total(self) -> int:
        return sum(self.per_layer)

    @property
    def bytes_per_token(self) -> int:
        """Bytes one token of context adds with every layer full (no window reached)."""
        return math.ceil(sum(self.per_token_per_layer))


def kv_elements_per_token(cfg: ModelConfig, mla: str = "latent") -> tuple[int, str]:
    """Cached elements per token and layer, and the rule that gives them: 2 x n_kv_heads x
    head_dim (MHA, GQA, MQA alike); multi-head latent attention (DeepSeek-V2/V3) caches the
    compressed latent ``kv_lora_rank + qk_rope_head_dim`` (what vLLM and SGLang store) or,
    expanded, ``n_heads x (qk_nope + qk_rope + v_head_dim)``. Sliding-window layers hold at most
    ``window`` tokens (:func:`kv_cache`)."""
    require(mla in MLA_FORMS, f"MLA cache form must be one of {', '.join(MLA_FORMS)}, got {show(mla)}")
    a = cfg.attn
    if cfg.is_mla:
        rope = a.qk_rope_head_dim or 0
        if mla == "latent":
            return (a.kv_lora_rank or 0) + rope, f"MLA latent: kv_lora_rank {a.kv_lora_rank} + qk_rope {rope}"
        nope, v = a.qk_nope_head_dim or 0, a.v_head_dim or cfg.head_dim
        return (a.n_heads * (nope + rope + v),
                f"MLA expanded: heads {a.n_heads} x (qk_nope {nope} + qk_rope {rope} + v {v})")
    kind = "MHA" if cfg.n_kv_heads == a.n_heads else ("MQA" if cfg.n_kv_heads == 1 else "GQA")
    return 2 * cfg.d_kv, f"{kind}: 2 (K, V) x kv_heads {cfg.n_kv_heads} x head_dim {cfg.head_dim}"


def kv_cache(cfg: ModelConfig, *, batch: int, context: int, kv_dtype: str = "bf16", mla: str = "latent",
             tp: int = 1) -> KVCache:
    """KV cache of ``batch`` sequences of ``context`` tokens.

    With tensor parallelism the KV heads are split over ``tp`` GPUs, and replicated when there are
    fewer KV heads than GPUs (each GPU keeps ``ceil(kv_heads / tp)``); the MLA latent is replicated.
    """
    require(batch >= 1 and context >= 1, "batch and context must be >= 1")
    b = dtype_bytes(kv_dtype, KV_DTYPES, "kv dtype")
    elems, rule = kv_elements_per_token(cfg, mla)
    if tp > 1 and not (cfg.is_mla and mla == "latent"):
        elems = math.ceil(elems / tp) if cfg.is_mla else 2 * math.ceil(cfg.n_kv_heads / tp) * cfg.head_dim
        rule += f", split over tp {tp}"
    kinds = cfg.attention_layers()
    if cfg.encoder_layers:  # cross-attention caches the encoder's keys and values too
        kinds = kinds + ["full"] * cfg.n_layers
    window = cfg.attn.sliding_window or context
    tokens = [min(context, window) if k == "sliding" else context for k in kinds]
    per_tok = [elems * b] * len(kinds)
    return KVCache(per_token_per_layer=per_tok, cached_tokens=tokens, batch=batch, bytes_per_element=b,
                   rule=f"{rule} x {b:g} B")


# -- weights at inference: ffnlab.sizing.memory.quant (re-exported here) --------------------------------


@functools.lru_cache(maxsize=16)  # a walk over every layer, asked for by every layout fit prices
def routed_expert_params(cfg: ModelConfig) -> int:
    """Parameters of the routed experts in all layers (what expert parallelism splits)."""
    return sum(spec.n_experts * dense_ffn_params(cfg.d_model, spec.d_ff, spec.gated, spec.bias)
               for spec in cfg.layer_ffns() if spec.is_moe)
