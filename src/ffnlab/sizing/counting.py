"""Exact parameter counts from a :class:`~ffnlab.config.ModelConfig`.

This is ffnlab's single source of truth for sizes: the PyTorch modules of :mod:`ffnlab.nn`
and Hugging Face's own models are tested to hold exactly these many parameters.

Conventions: tied weights count once. *Non-embedding* parameters exclude the token embedding,
position tables and an untied LM head (Kaplan et al. 2020 §2.1 exclude embeddings the same way).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from ffnlab.sizing.config import FFNSpec, ModelConfig


def norm_params(kind: str, width: int) -> int:
    return {"layernorm": 2 * width, "rmsnorm": width, "layernorm-nobias": width, "none": 0}[kind]


def dense_ffn_params(d_model: int, d_ff: int, gated: bool, bias: bool) -> int:
    """One dense FFN: 2 (plain) or 3 (gated) matrices, plus biases."""
    n_in = 2 if gated else 1  # gate and up, or just up
    weights = (n_in + 1) * d_model * d_ff
    biases = (n_in * d_ff + d_model) if bias else 0
    return weights + biases


def ffn_params(d_model: int, ffn: FFNSpec, *, active: bool = False) -> int:
    """Parameters of one FFN layer; with ``active``, only those one token uses (MoE)."""
    expert = dense_ffn_params(d_model, ffn.d_ff, ffn.gated, ffn.bias)
    if not ffn.is_moe:
        return expert
    router = d_model * ffn.n_experts + (ffn.n_experts if ffn.router_bias else 0)
    shared = ffn.n_shared_experts * dense_ffn_params(d_model, ffn.d_shared or ffn.d_ff, ffn.gated, ffn.bias)
    if ffn.shared_expert_gate and ffn.n_shared_experts:
        shared += d_model
    routed = (ffn.top_k if active else ffn.n_experts) * expert
    return router + routed + shared


def attention_params(cfg: ModelConfig) -> int:
    """One attention sub-layer: q, k, v, output projections, biases, optional q/k norms."""
    a = cfg.attn
    d, dq, dkv = cfg.d_model, cfg.d_attn, cfg.d_kv
    n = d * (dq + 2 * dkv) + dq * d
    if a.qkv_bias:
        n += dq + 2 * dkv
    if a.out_bias:
        n += d
    if a.qk_norm:
        n += 2 * norm_params("layernorm", cfg.head_dim)
    return n


@dataclass(frozen=True)
class ParamCounts:
    embedding: int
    positions: int
    attention: int
    ffn: int
    norms: int
    lm_head: int
    ffn_active: int

    @property
    def total(self) -> int:
        return self.embedding + self.positions + self.attention + self.ffn + self.norms + self.lm_head

    @property
    def non_embedding(self) -> int:
        return self.total - self.embedding_like

    @property
    def embedding_like(self) -> int:
        """Token embedding (and its projections), position tables and an untied LM head."""
        return self.embedding + self.positions + self.lm_head

    @property
    def total_active(self) -> int:
        return self.total - self.ffn + self.ffn_active

    @property
    def ffn_share(self) -> float:
        """FFN parameters as a share of non-embedding parameters."""
        return self.ffn / self.non_embedding if self.non_embedding else 0.0

    def as_dict(self) -> dict[str, int | float]:
        out: dict[str, int | float] = dict(asdict(self))
        out.update(total=self.total, non_embedding=self.non_embedding,
                   total_active=self.total_active, ffn_share=self.ffn_share)
        return out


def count_params(cfg: ModelConfig) -> ParamCounts:
    d, norm = cfg.d_model, cfg.norm
    width_e = cfg.embed_proj_dim or d
    embedding = cfg.vocab_size * width_e
    if cfg.embed_proj_dim and cfg.embed_proj_dim != d:
        embedding += 2 * cfg.embed_proj_dim * d  # project_in and project_out, no bias
    positions = 0
    if cfg.positions == "learned":
        positions = (cfg.max_positions + cfg.position_offset) * d
    n_stacks = 2 if cfg.encoder_layers else 1
    if cfg.positions == "relative":
        positions = n_stacks * cfg.relative_buckets * cfg.attn.n_heads

    attn = attention_params(cfg)
    ffn_one = ffn_params(d, cfg.ffn)
    ffn_one_active = ffn_params(d, cfg.ffn, active=True)
    norm_one = norm_params(norm, d)

    n_layers_all = cfg.n_layers + cfg.encoder_layers
    attention = n_layers_all * attn + cfg.n_layers * attn * (1 if cfg.encoder_layers else 0)
    ffn = n_layers_all * ffn_one
    ffn_active = n_layers_all * ffn_one_active
    norms = n_layers_all * cfg.norms_per_block * norm_one
    if cfg.encoder_layers:
        norms += cfg.n_layers * norm_one  # the decoder's cross-attention norm
    if cfg.final_norm:
        norms += n_stacks * norm_one
    if cfg.embed_norm:
        norms += norm_one

    lm_head = 0 if cfg.tied_embeddings else cfg.vocab_size * width_e
    if cfg.lm_head_bias:
        lm_head += cfg.vocab_size
    return ParamCounts(embedding=embedding, positions=positions, attention=attention, ffn=ffn,
                       norms=norms, lm_head=lm_head, ffn_active=ffn_active)
