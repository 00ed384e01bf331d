"""The weight matrices of a model, by shape, and the parameters of each layer.

Quantised formats store per-matrix metadata whose size depends on a matrix's shape (a scale per
output channel, per group of input columns, per 128 x 128 tile), Adafactor factors each matrix's
second moment into its rows and columns, and FSDP gathers one layer at a time: all three need
more than the totals of :mod:`ffnlab.sizing.counting`. :func:`matrices` lists every weight
matrix as ``nn.Linear`` / ``nn.Embedding`` hold it (``fan_in`` x ``fan_out``; q, k and v as three
projections, as LLaMA-family checkpoints store them; a fused qkv matrix holds the same weights);
what is left of the parameter count (norms, biases, position tables, sinks) is vectors.
:func:`layer_params` splits the count into decoder layers and the rest (embeddings, final norm,
head), summing exactly to :func:`ffnlab.sizing.counting.count_params`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Literal

from ffnlab.sizing.config import FFNSpec, ModelConfig
from ffnlab.sizing.counting import attention_params, count_params, ffn_parts, norm_params

# what a matrix belongs to: which parts a quantisation format converts
PARTS = ("attention", "ffn", "expert", "router", "embedding", "head", "mtp_proj")
# which linear layer of an attention (q, k, v, output; MLA's low-rank pairs) or an FFN a matrix is
MatrixProj = Literal["q", "k", "v", "o", "q_a", "q_b", "kv_a", "kv_b", "gate", "up", "down"]


@dataclass(frozen=True)
class Matrix:
    name: str
    fan_in: int
    fan_out: int
    count: int  # identical matrices in the model
    part: str  # one of PARTS
    proj: MatrixProj | None = field(default=None, kw_only=True)  # None: a router, embedding, head or projection
    shared_expert: bool = field(default=False, kw_only=True)  # an FFN matrix of a shared expert

    @property
    def numel(self) -> int:
        return self.fan_in * self.fan_out * self.count


def _attention(cfg: ModelConfig, n: int, where: str) -> list[Matrix]:
    d, a = cfg.d_model, cfg.attn
    if not cfg.is_mla:
        return [Matrix(f"{where} q", d, cfg.d_attn, n, "attention", proj="q"),
                Matrix(f"{where} k", d, cfg.d_kv, n, "attention", proj="k"),
                Matrix(f"{where} v", d, cfg.d_kv, n, "attention", proj="v"),
                Matrix(f"{where} o", cfg.d_attn, d, n, "attention", proj="o")]
    q_out, rank = a.n_heads * cfg.qk_head_dim, a.kv_lora_rank or 0
    out = ([Matrix(f"{where} q", d, q_out, n, "attention", proj="q")] if a.q_lora_rank is None else
           [Matrix(f"{where} q_a", d, a.q_lora_rank, n, "attention", proj="q_a"),
            Matrix(f"{where} q_b", a.q_lora_rank, q_out, n, "attention", proj="q_b")])
    return out + [Matrix(f"{where} kv_a", d, rank + (a.qk_rope_head_dim or 0), n, "attention", proj="kv_a"),
                  Matrix(f"{where} kv_b", rank, a.n_heads * ((a.qk_nope_head_dim or 0) + cfg.v_head_dim), n,
                         "attention", proj="kv_b"),
                  Matrix(f"{where} o", a.n_heads * cfg.v_head_dim, d, n, "attention", proj="o")]


def _dense(d: int, width: int, gated: bool, n: int, where: str, part: str, shared: bool = False) -> list[Matrix]:
    ins = [Matrix(f"{where} gate", d, width, n, part, proj="gate", shared_expert=shared)] if gated else []
    return ins + [Matrix(f"{where} up", d, width, n, part, proj="up", shared_expert=shared),
                  Matrix(f"{where} down", width, d, n, part, proj="down", shared_expert=shared)]


def _ffn(d: int, f: FFNSpec, n: int, where: str) -> list[Matrix]:
    d = f.d_in or d
    if not f.is_moe:
        return _dense(d, f.d_ff, f.gated, n, f"{where} FFN", "ffn")
    out = [Matrix(f"{where} router", d, f.n_experts, n, "router")]
    out += _dense(d, f.d_ff, f.gated, n * f.n_experts, f"{where} expert", "expert")
    if f.n_shared_experts:
        out += _dense(d, f.d_shared or f.d_ff, f.gated, n * f.n_shared_experts, f"{where} shared expert", "ffn",
                      shared=True)
        if f.shared_expert_gate:
            out.append(Matrix(f"{where} shared-expert gate", d, 1, n, "router"))
    return out


def matrices(cfg: ModelConfig, *, mtp: bool = False) -> list[Matrix]:
    """Every weight matrix of ``cfg``; with ``mtp``, also the declared multi-token-prediction
    modules as DeepSeek-V3's checkpoint stores them (each with its own embedding and head copy)."""
    d, width_e = cfg.d_model, cfg.embed_proj_dim or cfg.d_model
    layers = cfg.n_layers + cfg.encoder_layers
    out = _attention(cfg, layers, "attention")
    if cfg.encoder_layers:
        out += _attention(cfg, cfg.n_layers, "cross-attention")
    for f, n in cfg.ffn_layer_counts().items():
        out += _ffn(d, f, n, f"layers ({f.kind}, {f.d_ff})")
    out.append(Matrix("token embedding", width_e, cfg.vocab_size, 1, "embedding"))
    if cfg.embed_proj_dim and cfg.embed_proj_dim != d:
        out += [Matrix("embedding project_in", width_e, d, 1, "ffn"), Matrix("project_out", d, width_e, 1, "ffn")]
    if not cfg.tied_embeddings:
        out.append(Matrix("LM head", width_e, cfg.vocab_size, 1, "head"))
    if mtp and cfg.mtp_layers:
        k = cfg.mtp_layers
        out += _attention(cfg, k, "MTP attention") + _ffn(d, cfg.ffn, k, "MTP")
        out += [Matrix("MTP 2d -> d projection", 2 * d, d, k, "mtp_proj"),
                Matrix("MTP embedding copy", width_e, cfg.vocab_size, k, "embedding"),
                Matrix("MTP head copy", width_e, cfg.vocab_size, k, "head")]
    return out


def vector_params(cfg: ModelConfig, *, mtp: bool = False) -> int:
    """Parameters outside the weight matrices: norms, biases, position tables, sinks."""
    c = count_params(cfg)
    total = c.total
    if mtp and cfg.mtp_layers:
        total += c.mtp + 2 * cfg.mtp_layers * cfg.vocab_size * (cfg.embed_proj_dim or cfg.d_model)
    return total - sum(m.numel for m in matrices(cfg, mtp=mtp))


@dataclass(frozen=True)
class LayerParams:
    """Parameters of one layer: ``dense`` (split by tensor parallelism) and ``experts`` (the
    routed experts, split by expert parallelism too)."""

    dense: int
    experts: int

    @property
    def total(self) -> int:
        return self.dense + self.experts


def _layer(cfg: ModelConfig, f: FFNSpec, *, cross: bool) -> LayerParams:
    d, norm_one = cfg.d_model, norm_params(cfg.norm, cfg.d_model)
    parts = ffn_parts(d, f)
    attn = attention_params(cfg) * (2 if cross else 1)
    norms = cfg.norms_per_block * norm_one + (norm_one if cross else 0)
    return LayerParams(dense=attn + norms + parts["dense"] + parts["router"] + parts["shared"],
                       experts=parts["routed"])


def layer_params(cfg: ModelConfig) -> list[LayerParams]:
    """Each layer's parameters: the decoder layers in order (with cross-attention in an
    encoder-decoder), then the encoder layers."""
    cross = bool(cfg.encoder_layers)
    each = {id(f): _layer(cfg, f, cross=cross) for f in (cfg.ffn, cfg.dense_ffn) if f is not None}  # once per FFN
    return ([each[id(cfg.layer_ffn(i))] for i in range(cfg.n_layers)]
            + [_layer(cfg, cfg.ffn, cross=False)] * cfg.encoder_layers)


@dataclass(frozen=True)
class RootParams:
    """What is not in a layer: the embedding side (token and position tables, an embedding norm
    or projection) and the head side (final norms, an untied LM head)."""

    embedding: int
    head: int
    head_matrix: int  # the LM head's weight (the token embedding when tied)

    @property
    def total(self) -> int:
        return self.embedding + self.head


@functools.lru_cache(maxsize=16)  # a walk over every layer, asked for by every layout fit prices
def root_params(cfg: ModelConfig) -> RootParams:
    c = count_params(cfg)
    rest = c.total - sum(p.total for p in layer_params(cfg))
    head = c.lm_head + (c.norms - sum(_norms_in_layers(cfg)))
    width_e = cfg.embed_proj_dim or cfg.d_model
    return RootParams(embedding=rest - head, head=head, head_matrix=cfg.vocab_size * width_e)


def _norms_in_layers(cfg: ModelConfig) -> list[int]:
    norm_one = norm_params(cfg.norm, cfg.d_model)
    cross = norm_one if cfg.encoder_layers else 0
    return ([cfg.norms_per_block * norm_one + cross] * cfg.n_layers
            + [cfg.norms_per_block * norm_one] * cfg.encoder_layers)
