"""Memory beyond the weights: training activations, KV cache and quantised inference weights.

Every figure is an integer number of bytes built from a list of :class:`Term` rows, each naming
the tensor it counts and the arithmetic, so a table can show where the bytes come from.

**Activations** are the tensors autograd keeps for the backward pass, counted tensor by tensor as
a PyTorch implementation keeps them (ffnlab's own modules in ``ffnlab.training.nn``; the test
``tests/test_memory_saved_tensors.py`` measures them with ``torch.autograd.graph.saved_tensors_hooks``).
Per decoder layer and token, ``d`` = d_model, ``dq`` = n_heads x head_dim, ``dkv`` = n_kv_heads x
head_dim, ``a`` = n_heads, ``s`` = sequence length:

* each norm keeps its input (``d``) and per-token statistics in fp32 (LayerNorm: mean and rstd;
  RMSNorm computed as ``x * rsqrt(mean(x^2) + eps) * w``, as ``nn.RMSNorm`` and Hugging Face's
  ``LlamaRMSNorm`` do, keeps rstd and also the normalised ``x`` before the weight: ``2d``);
  the projection after it keeps the norm's output (``d``);
* attention, fused (flash / memory-efficient SDPA): the q|k|v projection output (``dq + 2 dkv``),
  the rotated q and k with RoPE (``dq + dkv``), the attention output (``dq``, also the output
  projection's input) and the softmax log-sum-exp (``a``, fp32). No ``s x s`` tensor;
* attention, eager (PyTorch's math SDPA): contiguous q (scaled), k and v at query width (``3 dq``;
  GQA's k and v repeated to every head), the softmax probabilities (``a s`` per token) and the
  output (``dq``);
* dense FFN, in units of ``d_ff`` (:data:`FFN_KEEPS`): a plain MLP keeps the pre-activation (GELU,
  SiLU, ReLU^2 backward need it; ReLU keeps only its output) and the down projection's input; a
  gated FFN keeps the gate|up projection (``2 d_ff``), ``act(gate)`` and the product (bilinear:
  ``act(gate)`` is the gate itself);
* MoE FFN (ffnlab's dropless dispatch, :class:`ffnlab.training.nn.MoEFFN`): router probabilities
  (``E``, fp32), the top-k indices (int64) and renormalised weights (``k + 1``, fp32), the gathered
  tokens (``k d``) with their index, each routed copy's dense-FFN tensors (``k`` x the table),
  the expert outputs and their weighted copy (``2 k d``), the combine weights and index. With a
  capacity factor ``c`` (GShard/Switch-style padded buffers) every per-routed-copy term holds
  ``c k`` copies instead of ``k``.

The embedding keeps its indices (int64); the head keeps the final norm, its input (``d``), the fp32
log-softmax of the logits (``V``) and the targets (int64).

**Dropout** (``dropout=True``; GPT-2 / Megatron placement, the one Korthikanti et al. 2022 count):
each dropout keeps its mask, one byte per element on CUDA (``torch.native_dropout`` returns a bool
mask; ``dropout_mask_bytes``): the two residual branches' masks (``2d``) per layer, the embedding's
(``d``) in the head, and with eager attention the attention-probability mask (``a s``) plus the
dropped-out probabilities the value matmul keeps (``a s`` x the activation dtype). Fused (flash /
memory-efficient) attention regenerates its dropout from the RNG state and keeps no mask. On CPU,
PyTorch's unfused dropout keeps a mask of the input's dtype (``tests/test_memory_saved_tensors.py``
measures it with GPT-2).

Recompute policies (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
Transformer Models"): ``none`` keeps everything; ``selective`` recomputes the attention core, so
the ``s x s`` probabilities of eager attention are not kept (with fused attention it equals
``none``); ``full`` keeps only each layer's input (``d``) and recomputes one layer at a time in the
backward pass, so the total is ``L x input + one layer's full set + head``.

**KV cache**: per layer and token 2 x n_kv_heads x head_dim elements (MHA, GQA, MQA alike);
sliding-window layers hold at most ``window`` tokens; multi-head latent attention (DeepSeek-V2/V3)
caches the compressed latent ``kv_lora_rank + qk_rope_head_dim`` (what vLLM and SGLang store) or,
expanded, ``n_heads x (qk_nope + qk_rope + v_head_dim)``.

**Quantised weights**: :mod:`ffnlab.sizing.memory.quant` (AWQ, GPTQ, fp8 per tensor / channel / 128-tile,
NF4, MXFP4 and generic int8/int4, each laid out as its checkpoints store it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ffnlab.errors import require
from ffnlab.sizing.config import FFNSpec, ModelConfig
from ffnlab.sizing.counting import dense_ffn_params
from ffnlab.sizing.memory.byte_rules import ACTIVATION_DTYPES, KV_DTYPES, dtype_bytes
from ffnlab.sizing.memory.quant import WEIGHT_FORMATS, WeightBytes, matmul_params, weight_bytes

__all__ = ["WEIGHT_FORMATS", "WeightBytes", "matmul_params", "weight_bytes"]

RECOMPUTE = ("none", "selective", "full")
ATTENTION = ("fused", "eager")
MLA_FORMS = ("latent", "expanded")
STAT_BYTES = 4  # norm statistics, log-sum-exp, router probabilities, logits: fp32
INDEX_BYTES = 8  # int64 indices and targets
DROPOUT_MASK_BYTES = 1  # torch.native_dropout (the CUDA path of F.dropout) keeps a bool mask

# tensors of width d_ff a dense FFN keeps for backward, by kind (see the module docstring)
FFN_KEEPS: dict[str, int] = {
    "relu": 1, "gelu": 2, "gelu_tanh": 2, "silu": 2, "relu2": 2,
    "swiglu": 4, "geglu": 4, "reglu": 4, "glu": 4, "bilinear": 3,
}
# (tensors of width d, fp32 statistics per token) a norm keeps
NORM_KEEPS: dict[str, tuple[int, int]] = {
    "layernorm": (1, 2), "layernorm-nobias": (1, 2), "none": (1, 2), "rmsnorm": (2, 1),
}


@dataclass(frozen=True)
class Term:
    """One line of a memory table: what is held, how many bytes, and the arithmetic."""

    name: str
    bytes: int
    rule: str
    split: str = ""  # which parallelism divides it: "tp" (heads/d_ff), "sp" (sequence), "" (none)

    def as_dict(self) -> dict[str, object]:
        return {"term": self.name, "bytes": self.bytes, "rule": self.rule, "split": self.split}


def _ffn_keeps(spec: FFNSpec) -> int:
    return FFN_KEEPS[spec.kind] + spec.act_extra_keeps  # every kind has its entry (tests/test_memory_rules.py)


def _t(name: str, per_token: float, tokens: int, rule: str, split: str = "") -> Term:
    return Term(name, math.ceil(per_token * tokens), f"{tokens:,} tokens x {rule}", split)


def _norm_terms(cfg: ModelConfig, where: str, tokens: int, b: float) -> list[Term]:
    widths, stats = NORM_KEEPS[cfg.norm]  # every norm has its entry
    what = "input and normalised input" if widths == 2 else "input"
    return [_t(f"{where} norm {what}", widths * cfg.d_model * b, tokens,
               f"{widths} x d {cfg.d_model} x {b:g} B", "sp"),
            _t(f"{where} norm statistics", stats * STAT_BYTES, tokens, f"{stats} x 4 B (fp32)", "sp")]


def _dropout_terms(cfg: ModelConfig, tokens: int, seq_len: int, b: float, attention: str, mask: float) -> list[Term]:
    d, a = cfg.d_model, cfg.attn.n_heads
    out = [_t("dropout masks of the two residual branches", 2 * d * mask, tokens, f"2 x d {d} x {mask:g} B", "sp")]
    if attention == "eager":
        out += [_t("attention dropout mask (s x s)", a * seq_len * mask, tokens,
                   f"heads {a} x s {seq_len} x {mask:g} B", "tp"),
                _t("dropped-out probabilities (s x s)", a * seq_len * b, tokens,
                   f"heads {a} x s {seq_len} x {b:g} B", "tp")]
    return out


def _attention_terms(cfg: ModelConfig, tokens: int, seq_len: int, b: float, attention: str) -> list[Term]:
    a, d = cfg.attn, cfg.d_model
    out = [_t("attention input (norm output)", d * b, tokens, f"d {d} x {b:g} B", "sp")]
    if cfg.is_mla:
        nope, rope = a.qk_nope_head_dim or 0, a.qk_rope_head_dim or 0
        vdim = a.v_head_dim or cfg.head_dim
        dqk, dv = a.n_heads * (nope + rope), a.n_heads * vdim
        latent = (a.kv_lora_rank or 0) + rope
        if a.q_lora_rank:
            out.append(_t("MLA q latent and its norm", 2 * a.q_lora_rank * b, tokens,
                          f"2 x q_lora_rank {a.q_lora_rank} x {b:g} B", "sp"))
        out += [_t("MLA kv latent and its norm", 2 * latent * b, tokens,
                   f"2 x (kv_lora_rank + rope) {latent} x {b:g} B", "sp"),
                _t("MLA expanded q, k, v", (2 * dqk + dv) * b, tokens,
                   f"(2 x {dqk} + {dv}) x {b:g} B", "tp")]
        dq_out = dv
    else:
        dq, dkv = cfg.d_attn, cfg.d_kv
        dq_out = dq
        if attention == "eager":
            out.append(_t("q, k, v copies at query width", 3 * dq * b, tokens, f"3 x dq {dq} x {b:g} B", "tp"))
        elif not a.qkv_fused and cfg.positions == "rope":
            out.append(_t("q, k, v (three projections; q and k rotated)", (dq + 2 * dkv) * b, tokens,
                          f"(dq {dq} + 2 dkv {dkv}) x {b:g} B", "tp"))
        else:
            out.append(_t("qkv projection output", (dq + 2 * dkv) * b, tokens,
                          f"(dq {dq} + 2 dkv {dkv}) x {b:g} B", "tp"))
            if cfg.positions == "rope":
                out.append(_t("rotated q and k", (dq + dkv) * b, tokens, f"(dq {dq} + dkv {dkv}) x {b:g} B", "tp"))
    if attention == "eager":
        out.append(_t("softmax probabilities (s x s)", a.n_heads * seq_len * b, tokens,
                      f"heads {a.n_heads} x s {seq_len} x {b:g} B", "tp"))
    else:
        out.append(_t("softmax log-sum-exp", a.n_heads * STAT_BYTES, tokens, f"heads {a.n_heads} x 4 B", "tp"))
    out.append(_t("attention output", dq_out * b, tokens, f"{dq_out} x {b:g} B", "tp"))
    return out


def _ffn_terms(cfg: ModelConfig, spec: FFNSpec, tokens: int, b: float,
               capacity_factor: float | None) -> list[Term]:
    d = cfg.d_model
    keeps = _ffn_keeps(spec)
    out = [_t("FFN input (norm output)", d * b, tokens, f"d {d} x {b:g} B", "sp")] if cfg.norms_per_block != 1 else []
    if not spec.is_moe:
        return out + [_t(f"FFN hidden ({spec.kind})", keeps * spec.d_ff * b, tokens,
                         f"{keeps} x d_ff {spec.d_ff} x {b:g} B", "tp")]
    e, k = spec.n_experts, spec.top_k
    copies = k if capacity_factor is None else capacity_factor * k
    how = f"top_k {k}" if capacity_factor is None else f"capacity {capacity_factor:g} x top_k {k}"
    out += [
        _t("router probabilities", e * STAT_BYTES, tokens, f"experts {e} x 4 B"),
        _t("router top-k indices and weights", k * INDEX_BYTES + (k + 1) * STAT_BYTES, tokens,
           f"(top_k {k} x 8 B + (top_k + 1) x 4 B)"),
        _t("dispatched tokens and index", copies * (d * b + INDEX_BYTES), tokens,
           f"{how} x (d {d} x {b:g} B + 8 B)"),
        _t(f"expert hidden ({spec.kind})", copies * keeps * spec.d_ff * b, tokens,
           f"{how} x {keeps} x d_ff {spec.d_ff} x {b:g} B", "tp"),
        _t("expert outputs, weighted copy, weights, index",
           copies * (2 * d * b + STAT_BYTES + INDEX_BYTES), tokens,
           f"{how} x (2 x d {d} x {b:g} B + 4 B + 8 B)"),
    ]
    if spec.n_shared_experts:
        ws = spec.d_shared or spec.d_ff
        out.append(_t(f"shared experts hidden ({spec.kind})", spec.n_shared_experts * keeps * ws * b, tokens,
                      f"{spec.n_shared_experts} x {keeps} x d_shared {ws} x {b:g} B", "tp"))
    return out


def layer_activation_terms(cfg: ModelConfig, layer: int, *, seq_len: int, batch: int, dtype: str = "bf16",
                           attention: str = "fused", capacity_factor: float | None = None, dropout: bool = False,
                           dropout_mask_bytes: float = DROPOUT_MASK_BYTES) -> list[Term]:
    """What decoder layer ``layer`` keeps for backward with no recomputation."""
    b = dtype_bytes(dtype, ACTIVATION_DTYPES, "activation dtype")
    require(attention in ATTENTION, f"attention must be one of {', '.join(ATTENTION)}, got {attention!r}")
    tokens = seq_len * batch
    spec = cfg.layer_ffns()[layer]
    terms = _norm_terms(cfg, "attention", tokens, b) + _attention_terms(cfg, tokens, seq_len, b, attention)
    if cfg.norms_per_block != 1:  # parallel blocks (GPT-J) share one norm
        terms += _norm_terms(cfg, "FFN", tokens, b)
    for i in range(max(0, cfg.norms_per_block - 2)):  # Gemma-2 sandwich post-norms
        terms += _norm_terms(cfg, f"post-norm {i + 1}", tokens, b)
    if dropout:
        terms += _dropout_terms(cfg, tokens, seq_len, b, attention, dropout_mask_bytes)
    return terms + _ffn_terms(cfg, spec, tokens, b, capacity_factor)


def head_activation_terms(cfg: ModelConfig, *, seq_len: int, batch: int, dtype: str = "bf16", dropout: bool = False,
                          dropout_mask_bytes: float = DROPOUT_MASK_BYTES) -> list[Term]:
    """Embedding and LM head: indices, final norm, head input, fp32 log-softmax, targets."""
    b = dtype_bytes(dtype, ACTIVATION_DTYPES, "activation dtype")
    tokens, d = seq_len * batch, cfg.d_model
    terms = [_t("token indices", INDEX_BYTES, tokens, "8 B (int64)")]
    if dropout:
        terms.append(_t("embedding dropout mask", d * dropout_mask_bytes, tokens, f"d {d} x {dropout_mask_bytes:g} B",
                        "sp"))
    if cfg.positions == "learned":
        terms.append(Term("position indices", INDEX_BYTES * seq_len, f"s {seq_len} x 8 B (shared by the batch)"))
    if cfg.final_norm:
        terms += _norm_terms(cfg, "final", tokens, b)
    return terms + [
        _t("LM head input", (cfg.embed_proj_dim or d) * b, tokens, f"d x {b:g} B", "sp"),
        _t("log-softmax of the logits (fp32)", cfg.vocab_size * STAT_BYTES, tokens,
           f"vocab {cfg.vocab_size} x 4 B", "tp"),
        _t("targets", INDEX_BYTES, tokens, "8 B (int64)"),
    ]


def selective_kept(terms: list[Term]) -> list[Term]:
    """What selective recomputation keeps of a layer: everything but the ``s x s`` tensors."""
    return [t for t in terms if "s x s" not in t.name]


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
    require(recompute in RECOMPUTE, f"recompute must be one of {', '.join(RECOMPUTE)}, got {recompute!r}")
    require(seq_len >= 1 and batch >= 1, "seq_len and batch must be >= 1")
    require(capacity_factor is None or capacity_factor > 0, "capacity factor must be > 0")
    b = dtype_bytes(dtype, ACTIVATION_DTYPES, "activation dtype")
    n_layers = cfg.n_layers + cfg.encoder_layers  # encoder-decoders: both stacks as decoder layers
    layers = [layer_activation_terms(cfg, min(i, cfg.n_layers - 1), seq_len=seq_len, batch=batch, dtype=dtype,
                                     attention=attention, capacity_factor=capacity_factor, dropout=dropout,
                                     dropout_mask_bytes=dropout_mask_bytes)
              for i in range(n_layers)]
    kept = [divide_terms(ts, tp, sp) for ts in layers]
    widest = max(range(n_layers), key=lambda i: kept[i])
    head = divide_terms(head_activation_terms(cfg, seq_len=seq_len, batch=batch, dtype=dtype, dropout=dropout,
                                         dropout_mask_bytes=dropout_mask_bytes), tp, sp)
    if recompute == "selective":
        kept = [divide_terms(selective_kept(ts), tp, sp) for ts in layers]
    peak = 0
    if recompute == "full":
        layer_input = math.ceil(seq_len * batch * cfg.d_model * b / (tp if sp else 1))
        peak = max(divide_terms(ts, tp, sp) for ts in layers)
        kept = [layer_input] * n_layers
    return Activations(per_layer=kept, head=head, recompute_peak=peak, terms=layers[widest])


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
        return [math.ceil(p * t * self.batch) for p, t in zip(self.per_token_per_layer, self.cached_tokens, strict=True)]

    @property
    def total(self) -> int:
        return sum(self.per_layer)

    @property
    def bytes_per_token(self) -> int:
        """Bytes one token of context adds with every layer full (no window reached)."""
        return math.ceil(sum(self.per_token_per_layer))


def kv_elements_per_token(cfg: ModelConfig, mla: str = "latent") -> tuple[int, str]:
    """Cached elements per token and layer, and the rule that gives them."""
    require(mla in MLA_FORMS, f"MLA cache form must be one of {', '.join(MLA_FORMS)}, got {mla!r}")
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
        if cfg.is_mla:
            elems = math.ceil(elems / tp)
        else:
            elems = 2 * math.ceil(cfg.n_kv_heads / tp) * cfg.head_dim
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


def routed_expert_params(cfg: ModelConfig) -> int:
    """Parameters of the routed experts in all layers (what expert parallelism splits)."""
    return sum(spec.n_experts * dense_ffn_params(cfg.d_model, spec.d_ff, spec.gated, spec.bias)
               for spec in cfg.layer_ffns() if spec.is_moe)
