"""A decoder-only Transformer you can read in one sitting.

Pre-norm blocks (RMSNorm or LayerNorm), causal attention through
``F.scaled_dot_product_attention`` with MHA/GQA/MQA and optional q/k norms, RoPE or learned
positions, any FFN of :mod:`ffnlab.training.nn.ffn` in each layer (dense and MoE layers mixed as the
config's layout says), tied or untied LM head. Built from the same :class:`ModelConfig` the
parameter counter reads; ``tests/training/test_nn.py`` checks the two agree exactly.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import cast

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

from ffnlab.errors import FfnlabError
from ffnlab.sizing.config import FFNSpec, ModelConfig, check_trainable, validate
from ffnlab.training.nn.ffn import DenseFFN, MoEFFN, build_ffn


def make_norm(kind: str, d: int, eps: float) -> nn.Module:
    if kind == "rmsnorm":
        return nn.RMSNorm(d, eps=eps)
    if kind == "layernorm":
        return nn.LayerNorm(d, eps=eps)
    if kind == "layernorm-nobias":
        return nn.LayerNorm(d, eps=eps, bias=False)
    return nn.LayerNorm(d, eps=eps, elementwise_affine=False)  # "none": OLMo's parameter-free norm


def rope_tables(seq_len: int, head_dim: int, theta: float) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of shape (seq_len, head_dim), halves repeated (the "rotate half" layout)."""
    inv_freq = 1.0 / theta ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    angles = torch.outer(torch.arange(seq_len, dtype=torch.float64), inv_freq)
    angles = torch.cat([angles, angles], dim=-1)
    return angles.cos().float(), angles.sin().float()


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    first, second = x.chunk(2, dim=-1)
    rotated = torch.cat([-second, first], dim=-1)
    return (x * cos + rotated * sin).to(x.dtype)


class Attention(nn.Module):
    """Causal self-attention; optional q/k norms over each head ("head", shared by all heads)
    or over the concatenated heads ("full"), applied before RoPE as Qwen3 and OLMo 2 do."""

    def __init__(self, cfg: ModelConfig, norm_eps: float = 1e-5):
        super().__init__()
        a = cfg.attn
        self.n_heads, self.n_kv, self.head_dim = a.n_heads, cfg.n_kv_heads, cfg.head_dim
        self.qkv = nn.Linear(cfg.d_model, cfg.d_attn + 2 * cfg.d_kv, bias=a.qkv_bias)
        self.out = nn.Linear(cfg.d_attn, cfg.d_model, bias=a.out_bias)
        self.qk_full = a.qk_norm and a.qk_norm_width == "full"
        if a.qk_norm:
            wq, wk = (cfg.d_attn, cfg.d_kv) if self.qk_full else (cfg.head_dim, cfg.head_dim)
            self.q_norm: nn.Module | None = make_norm(a.qk_norm_kind, wq, norm_eps)
            self.k_norm: nn.Module | None = make_norm(a.qk_norm_kind, wk, norm_eps)
        else:
            self.q_norm = self.k_norm = None

    def forward(self, x: torch.Tensor, rope: tuple[torch.Tensor, torch.Tensor] | None) -> torch.Tensor:
        b, t, _ = x.shape
        hd = self.head_dim
        q, k, v = self.qkv(x).split([self.n_heads * hd, self.n_kv * hd, self.n_kv * hd], dim=-1)
        if self.q_norm is not None and self.k_norm is not None and self.qk_full:
            q, k = self.q_norm(q), self.k_norm(k)
        q = q.view(b, t, self.n_heads, hd).transpose(1, 2)
        k = k.view(b, t, self.n_kv, hd).transpose(1, 2)
        v = v.view(b, t, self.n_kv, hd).transpose(1, 2)
        if self.q_norm is not None and self.k_norm is not None and not self.qk_full:
            q, k = self.q_norm(q), self.k_norm(k)
        if rope is not None:
            cos, sin = rope[0][:t], rope[1][:t]
            q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=self.n_kv != self.n_heads)
        out: torch.Tensor = self.out(y.transpose(1, 2).reshape(b, t, self.n_heads * hd))
        return out


class Block(nn.Module):
    """A pre-norm decoder layer whose FFN is ``ffn`` (the layer's entry in the FFN layout)."""

    def __init__(self, cfg: ModelConfig, norm_eps: float, ffn: FFNSpec | None = None):
        super().__init__()
        self.norm1 = make_norm(cfg.norm, cfg.d_model, norm_eps)
        self.attn = Attention(cfg, norm_eps)
        self.norm2 = make_norm(cfg.norm, cfg.d_model, norm_eps)
        self.ffn = build_ffn(cfg.d_model, ffn or cfg.ffn)
        self.is_moe = isinstance(self.ffn, MoEFFN)

    def forward(self, x: torch.Tensor, rope: tuple[torch.Tensor, torch.Tensor] | None
                ) -> tuple[torch.Tensor, torch.Tensor | None]:
        x = x + self.attn(self.norm1(x), rope)
        if self.is_moe:
            h, aux = self.ffn(self.norm2(x))
            return x + h, aux
        return x + self.ffn(self.norm2(x)), None


class DecoderLM(nn.Module):
    def __init__(self, cfg: ModelConfig, *, max_seq_len: int = 1024, rope_theta: float = 10000.0,
                 norm_eps: float = 1e-5):
        super().__init__()
        validate(cfg)
        check_trainable(cfg)
        self.cfg, self.rope_theta, self.norm_eps = cfg, rope_theta, norm_eps
        # full recompute: every n-th block keeps only its input and runs again in backward
        # (torch.utils.checkpoint; 0 = off); what sizing.memory.step counts as recompute "full"
        self.checkpoint_every = 0
        self.max_seq_len = cfg.max_positions if cfg.positions == "learned" else max_seq_len
        self.tok_emb = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.pos_emb = nn.Embedding(cfg.max_positions, cfg.d_model) if cfg.positions == "learned" else None
        self.blocks = nn.ModuleList(Block(cfg, norm_eps, f) for f in cfg.layer_ffns())
        self.norm_f = make_norm(cfg.norm, cfg.d_model, norm_eps) if cfg.final_norm else nn.Identity()
        self.lm_head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=cfg.lm_head_bias)
        if cfg.tied_embeddings:
            self.lm_head.weight = self.tok_emb.weight
        if cfg.positions == "rope":
            cos, sin = rope_tables(self.max_seq_len, cfg.head_dim, rope_theta)
            self.register_buffer("rope_cos", cos, persistent=False)
            self.register_buffer("rope_sin", sin, persistent=False)
        self.reset_parameters()

    def reset_parameters(self, std: float = 0.02) -> None:
        """GPT-2 initialisation: N(0, 0.02), residual output projections scaled by 1/sqrt(2L)."""
        resid_std = std / math.sqrt(2 * self.cfg.n_layers)
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, 0.0, std)
                bias = getattr(module, "bias", None)  # an Embedding has none
                if bias is not None:
                    nn.init.zeros_(bias)
            elif isinstance(module, MoEFFN):
                nn.init.normal_(module.w_in, 0.0, std)
                nn.init.normal_(module.w_out, 0.0, resid_std)
                for b in (module.b_in, module.b_out):
                    if b is not None:
                        nn.init.zeros_(b)
        for block in cast(Iterable[Block], self.blocks):
            nn.init.normal_(block.attn.out.weight, 0.0, resid_std)
            for m in block.ffn.modules():
                if isinstance(m, DenseFFN):
                    nn.init.normal_(m.w_out.weight, 0.0, resid_std)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None
                ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
        """Return logits, the mean cross-entropy (if targets) and the summed MoE aux loss."""
        h, aux_total = self.features(idx)
        logits = self.lm_head(h)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.float().view(-1, logits.shape[-1]), targets.reshape(-1))
        return logits, loss, aux_total

    def features(self, idx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The LM head's input (after the final norm) and the summed MoE aux loss: what a loss that
        runs the head itself takes (``ffnlab.training.losses``)."""
        t = idx.shape[1]
        if t > self.max_seq_len:
            raise FfnlabError(f"sequence of {t} tokens exceeds the model's maximum of {self.max_seq_len}")
        x = self.tok_emb(idx)
        if self.pos_emb is not None:
            x = x + self.pos_emb(torch.arange(t, device=idx.device))
        rope = (self.rope_cos, self.rope_sin) if self.cfg.positions == "rope" else None
        aux_total = None
        for i, block in enumerate(self.blocks):
            if self.training and self.checkpoint_every and i % self.checkpoint_every == 0:
                x, aux = checkpoint(block, x, rope, use_reentrant=False)
            else:
                x, aux = block(x, rope)
            if aux is not None:
                aux_total = aux if aux_total is None else aux_total + aux
        return self.norm_f(x), aux_total


def build_model(cfg: ModelConfig, *, seed: int | None = None, **kwargs: float | int) -> DecoderLM:
    """Build (deterministically, when ``seed`` is given) the model for ``cfg``."""
    if seed is not None:
        torch.manual_seed(seed)
    return DecoderLM(cfg, **kwargs)  # type: ignore[arg-type]
