"""Exact parameter counts from a :class:`~ffnlab.sizing.config.ModelConfig`.

This is ffnlab's single source of truth for sizes: the PyTorch modules of :mod:`ffnlab.training.nn`
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


def ffn_parts(d_model: int, ffn: FFNSpec) -> dict[str, int]:
    """One FFN layer split into ``dense``, ``router``, ``routed`` (all experts) and ``shared``
    (shared experts and their gate); a dense layer has only ``dense``."""
    d_model = ffn.d_in or d_model
    expert = dense_ffn_params(d_model, ffn.d_ff, ffn.gated, ffn.bias)
    if not ffn.is_moe:
        return {"dense": expert, "router": 0, "routed": 0, "shared": 0}
    router = d_model * ffn.n_experts + (ffn.n_experts if ffn.router_bias else 0)
    width = ffn.d_shared or ffn.d_ff
    shared = ffn.n_shared_experts * dense_ffn_params(d_model, width, ffn.gated, ffn.bias)
    if ffn.shared_expert_gate and ffn.n_shared_experts:
        shared += d_model  # Linear(d_model, 1) without bias (Qwen-MoE shared_expert_gate)
    return {"dense": 0, "router": router, "routed": ffn.n_experts * expert, "shared": shared}


def ffn_params(d_model: int, ffn: FFNSpec, *, active: bool = False) -> int:
    """Parameters of one FFN layer; with ``active``, only those one token uses (MoE)."""
    parts = ffn_parts(d_model, ffn)
    if active and ffn.is_moe:
        parts["routed"] = parts["routed"] // ffn.n_experts * ffn.top_k
    return sum(parts.values())


def qk_norm_params(cfg: ModelConfig) -> int:
    """The q and k norms of one attention layer (none for MLA, whose norms sit on its latents)."""
    a = cfg.attn
    if not a.qk_norm or cfg.is_mla:
        return 0
    if a.qk_norm_width == "head":
        return 2 * norm_params(a.qk_norm_kind, cfg.head_dim)
    return norm_params(a.qk_norm_kind, cfg.d_attn) + norm_params(a.qk_norm_kind, cfg.d_kv)


def mla_params(cfg: ModelConfig) -> int:
    """Multi-head latent attention (DeepSeek-V2 §2.1, transformers' DeepseekV2Attention):
    queries from d_model directly, or through a q_lora_rank latent with an RMSNorm; keys and
    values from one kv_lora_rank latent (plus the shared rotary key part) with an RMSNorm;
    ``qkv_bias`` puts biases on the two down-projections, ``out_bias`` on the output."""
    a = cfg.attn
    d, h, bias = cfg.d_model, a.n_heads, a.qkv_bias
    kv_rank = a.kv_lora_rank or 0
    q_out = h * cfg.qk_head_dim
    if a.q_lora_rank is None:
        q = d * q_out
    else:
        r = a.q_lora_rank
        q = d * r + (r if bias else 0) + norm_params(cfg.norm, r) + r * q_out
    kv_down = kv_rank + (a.qk_rope_head_dim or 0)
    kv = (d * kv_down + (kv_down if bias else 0) + norm_params(cfg.norm, kv_rank)
          + kv_rank * h * ((a.qk_nope_head_dim or 0) + cfg.v_head_dim))
    out = h * cfg.v_head_dim * d + (d if a.out_bias else 0)
    return q + kv + out


def attention_params(cfg: ModelConfig) -> int:
    """One attention sub-layer: q, k, v, output projections, biases, q/k norms and sinks."""
    a = cfg.attn
    n = qk_norm_params(cfg) + (a.n_heads if a.sinks else 0)
    if cfg.is_mla:
        return n + mla_params(cfg)
    d, dq, dkv = cfg.d_model, cfg.d_attn, cfg.d_kv
    n += d * (dq + 2 * dkv) + dq * d
    if a.qkv_bias:
        n += dq + 2 * dkv
    if a.out_bias:
        n += d
    return n


def mtp_params(cfg: ModelConfig) -> int:
    """Multi-token-prediction modules (DeepSeek-V3 §2.2): each is one decoder layer with the
    main FFN, two input norms and a 2d -> d projection, and a norm before the output head; the
    embedding and the head are shared with the main model and not counted again."""
    d, norm = cfg.d_model, cfg.norm
    layer = (attention_params(cfg) + ffn_params(d, cfg.ffn)
             + cfg.norms_per_block * norm_params(norm, d))
    return cfg.mtp_layers * (layer + 3 * norm_params(norm, d) + 2 * d * d)


@dataclass(frozen=True)
class ParamCounts:
    embedding: int
    positions: int
    attention: int
    ffn: int
    norms: int
    lm_head: int
    ffn_active: int
    mtp: int = 0  # multi-token-prediction modules, outside ``total`` (transformers skips them)

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
    def total_with_mtp(self) -> int:
        return self.total + self.mtp

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
    norm_one = norm_params(norm, d)
    # decoder layers follow the per-layer layout; an encoder's layers all use ``ffn``
    layer_ffns = cfg.ffn_layer_counts()

    n_layers_all = cfg.n_layers + cfg.encoder_layers
    attention = n_layers_all * attn + cfg.n_layers * attn * (1 if cfg.encoder_layers else 0)
    ffn = sum(n * ffn_params(d, f) for f, n in layer_ffns.items())
    ffn_active = sum(n * ffn_params(d, f, active=True) for f, n in layer_ffns.items())
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
                       norms=norms, lm_head=lm_head, ffn_active=ffn_active, mtp=mtp_params(cfg))


def ffn_breakdown(cfg: ModelConfig) -> dict[str, int]:
    """FFN parameters of the whole model by part: ``dense`` (dense layers), ``router``,
    ``routed`` (every routed expert), ``shared`` (shared experts and their gates), and
    ``routed_active`` (the top_k routed experts a token uses, summed over layers)."""
    out = {"dense": 0, "router": 0, "routed": 0, "shared": 0, "routed_active": 0}
    for f, layers in cfg.ffn_layer_counts().items():
        for key, n in ffn_parts(cfg.d_model, f).items():
            out[key] += layers * n
        if f.is_moe:
            expert = dense_ffn_params(cfg.d_model, f.d_ff, f.gated, f.bias)
            out["routed_active"] += layers * f.top_k * expert
    return out
