"""FLOPs per token and training memory, from the same config as the parameter counts.

Convention (stated so numbers can be compared):

* one multiply-add = 2 FLOPs; only matrix multiplications are counted (norms, activations,
  softmax, residual adds and the embedding lookup are ignored, as in Kaplan et al. 2020 Table 1);
* attention scores (QK^T) and the weighted sum over values (AV) are counted over the full
  context of ``seq_len`` tokens with no causal discount, as PaLM (Chowdhery et al. 2022,
  App. B) and ``torch.utils.flop_counter`` do: 4 * seq_len * n_heads * head_dim per layer;
* layers with a sliding window attend to ``min(seq_len, window)`` tokens;
* MoE layers count only the router, the ``top_k`` routed experts a token uses, the shared
  experts and their gate (a d_model x 1 matmul); the per-layer layout (dense layers among MoE
  ones) is followed layer by layer;
* multi-head latent attention counts the projections transformers runs (queries through the
  q latent, keys and values up-projected from the kv latent; no weight absorption), and its
  scores over the q/k head width (nope + rope) and the values over v_head_dim;
* training = forward + backward = 3 x forward, plus, when the config declares multi-token
  prediction modules (DeepSeek-V3 ``num_nextn_predict_layers``; §2.2 of its report), each module's
  2d -> d projection, its decoder layer and the shared output head, which run in training only
  (``mtp``; not part of ``forward``, the inference pass);
* ``linear`` = the FLOPs of the blocks' linear layers (attention projections, FFN, the MTP
  modules' projection and layer matmuls): the part fp8 training recipes run in fp8, while the
  attention scores and the LM head stay in bf16.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from ffnlab.sizing.config import FFNSpec, ModelConfig
from ffnlab.sizing.counting import count_params


@dataclass(frozen=True)
class FlopsPerToken:
    """Forward FLOPs per token, by component."""

    qkv: int
    attn_out: int
    attn_scores: int
    ffn: int
    lm_head: int
    mtp: int = 0  # multi-token-prediction modules (training only)
    mtp_linear: int = 0  # the linear-layer part of ``mtp``

    @property
    def forward(self) -> int:
        return self.qkv + self.attn_out + self.attn_scores + self.ffn + self.lm_head

    @property
    def training(self) -> int:
        return 3 * (self.forward + self.mtp)

    @property
    def linear(self) -> int:
        """Forward FLOPs of the linear layers of the blocks (what fp8 recipes run in fp8)."""
        return self.qkv + self.attn_out + self.ffn + self.mtp_linear

    def as_dict(self) -> dict[str, int]:
        out = dict(asdict(self))
        out.update(forward=self.forward, training=self.training, linear=self.linear)
        return out


def ffn_flops(d_model: int, f: FFNSpec) -> int:
    """Forward matmul FLOPs per token of one FFN layer (router, active and shared experts,
    shared-expert gate)."""
    d_model = f.d_in or d_model
    expert = 2 * (3 if f.gated else 2) * d_model * f.d_ff
    if not f.is_moe:
        return expert
    shared = f.n_shared_experts * 2 * (3 if f.gated else 2) * d_model * (f.d_shared or f.d_ff)
    gate = 2 * d_model if f.shared_expert_gate and f.n_shared_experts else 0
    return 2 * d_model * f.n_experts + f.top_k * expert + shared + gate


def projection_flops(cfg: ModelConfig) -> tuple[int, int]:
    """Forward FLOPs per token of one attention layer's (q/k/v, output) projections."""
    d, a = cfg.d_model, cfg.attn
    out = 2 * a.n_heads * cfg.v_head_dim * d
    if not cfg.is_mla:
        return 2 * d * (cfg.d_attn + 2 * cfg.d_kv), out
    q_out = a.n_heads * cfg.qk_head_dim
    q = d * q_out if a.q_lora_rank is None else a.q_lora_rank * (d + q_out)
    rank = a.kv_lora_rank or 0
    kv_up = a.n_heads * ((a.qk_nope_head_dim or 0) + cfg.v_head_dim)
    kv = d * (rank + (a.qk_rope_head_dim or 0)) + rank * kv_up
    return 2 * (q + kv), out


def flops_per_token(cfg: ModelConfig, seq_len: int, *, include_lm_head: bool = True) -> FlopsPerToken:
    """Forward matmul FLOPs per token of a decoder-only model (encoder-decoders: both stacks,
    each token counted once per stack it passes through, cross-attention over ``seq_len``)."""
    d = cfg.d_model
    layers = cfg.n_layers + cfg.encoder_layers
    cross = cfg.n_layers if cfg.encoder_layers else 0
    proj_in, proj_out = projection_flops(cfg)
    qkv = proj_in * (layers + cross)
    attn_out = proj_out * (layers + cross)
    window = cfg.attn.sliding_window or seq_len
    contexts = [min(seq_len, window) if kind == "sliding" else seq_len
                for kind in cfg.attention_layers()]
    contexts += [seq_len] * (cfg.encoder_layers + cross)
    per_token_context = 2 * cfg.attn.n_heads * (cfg.qk_head_dim + cfg.v_head_dim)
    attn_scores = per_token_context * sum(contexts)
    ffn = sum(n * ffn_flops(d, f) for f, n in cfg.ffn_layer_counts().items())
    width_e = cfg.embed_proj_dim or d
    head = 2 * width_e * cfg.vocab_size
    lm_head = head if include_lm_head else 0
    # each MTP module: a 2d -> d projection, one decoder layer with the main FFN (full attention
    # over seq_len), and the shared output head
    mtp_linear = cfg.mtp_layers * (2 * 2 * d * d + proj_in + proj_out + ffn_flops(d, cfg.ffn))
    mtp = mtp_linear + cfg.mtp_layers * (per_token_context * seq_len + head)
    return FlopsPerToken(qkv=qkv, attn_out=attn_out, attn_scores=attn_scores, ffn=ffn, lm_head=lm_head,
                         mtp=mtp, mtp_linear=mtp_linear)


def six_n(cfg: ModelConfig) -> int:
    """Kaplan's 6N training FLOPs per token (N = non-embedding active parameters)."""
    c = count_params(cfg)
    return 6 * (c.non_embedding - c.ffn + c.ffn_active)
