"""torchtitan's op-level selective activation checkpointing against what PyTorch really keeps.

Oracle: a small Llama-style stack written here the way torchtitan's Llama block runs (RMSNorm,
separate wq, wk, wv, RoPE, causal SDPA, wo; SwiGLU as ``w2(silu(w1(x)) * w3(x))``), each block
wrapped in ``torch.utils.checkpoint`` with ``create_selective_checkpoint_contexts`` and the
policy built from ``data/op_checkpoint_policies.json`` (the ops on the save list, every second
``mm`` of a block recomputed, one count per block call: torchtitan's rule; ``tests/helpers/op_sac.py``). A dispatch mode
outside the checkpoints records every storage an op makes in forward; what is still alive when
forward returns is what the step keeps for backward (the checkpoints' inputs and the policy's
saved outputs). ffnlab's ``--recompute op-selective`` bytes (pure arithmetic) must agree.

On CPU, SDPA runs ``_scaled_dot_product_flash_attention_for_cpu``, which stands in for the CUDA
flash kernel of the save list (the same outputs: the attention output and the log-sum-exp).
"""

from __future__ import annotations

import gc
from dataclasses import replace
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from op_sac import context_fn
from torch import nn
from torch.multiprocessing.reductions import StorageWeakRef
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.checkpoint import checkpoint

from ffnlab.sizing.config import make_config
from ffnlab.sizing.memory.activations import activation_memory, op_policy, op_selective_terms


class Block(nn.Module):
    """torchtitan's Llama block; ``fused``: one q|k|v projection (one mm instead of three)."""

    def __init__(self, d: int, heads: int, kv_heads: int, d_ff: int, fused: bool = False) -> None:
        super().__init__()
        self.heads, self.kv_heads, self.hd, self.fused = heads, kv_heads, d // heads, fused
        self.attention_norm, self.ffn_norm = nn.RMSNorm(d), nn.RMSNorm(d)
        if fused:
            self.wqkv = nn.Linear(d, (heads + 2 * kv_heads) * self.hd, bias=False)
        else:
            self.wq = nn.Linear(d, heads * self.hd, bias=False)
            self.wk = nn.Linear(d, kv_heads * self.hd, bias=False)
            self.wv = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.wo = nn.Linear(heads * self.hd, d, bias=False)
        self.w1, self.w3 = nn.Linear(d, d_ff, bias=False), nn.Linear(d, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d, bias=False)

    def rope(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        a, b = x[..., : self.hd // 2], x[..., self.hd // 2:]
        return x * cos + torch.cat((-b, a), dim=-1) * sin

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        bsz, s, _ = x.shape
        h = self.attention_norm(x)
        if self.fused:
            q, k, v = self.wqkv(h).split([self.heads * self.hd, self.kv_heads * self.hd, self.kv_heads * self.hd], -1)
        else:
            q, k, v = self.wq(h), self.wk(h), self.wv(h)
        q = self.rope(q.view(bsz, s, self.heads, self.hd), cos, sin).transpose(1, 2)
        k = self.rope(k.view(bsz, s, self.kv_heads, self.hd), cos, sin).transpose(1, 2)
        v = v.view(bsz, s, self.kv_heads, self.hd).transpose(1, 2)
        rep = self.heads // self.kv_heads
        k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.wo(o.transpose(1, 2).reshape(bsz, s, -1))
        h = self.ffn_norm(x)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


class LiveStorages(TorchDispatchMode):
    """Weak references to every storage an op makes while active."""

    def __init__(self) -> None:
        super().__init__()
        self.made: dict[int, tuple[StorageWeakRef, int]] = {}

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        for t in out if isinstance(out, (tuple, list)) else (out,):
            if isinstance(t, torch.Tensor) and t.device.type == "cpu":
                st = t.untyped_storage()
                ref = StorageWeakRef(st)
                self.made.setdefault(ref.cdata, (ref, st.nbytes()))
        return out

    def alive_bytes(self, leave_out: list[torch.Tensor]) -> int:
        """Bytes of the storages made while active and still alive, but for those of ``leave_out``
        (the parameters, which ``t`` views, and the stack's output)."""
        gc.collect()
        skip = {StorageWeakRef(t.untyped_storage()).cdata for t in leave_out}
        return sum(n for key, (ref, n) in self.made.items() if key not in skip and not ref.expired())


def measured_kept(n_layers: int, d: int, heads: int, kv_heads: int, d_ff: int, batch: int, seq: int,
                  fused: bool) -> int:
    torch.manual_seed(0)
    blocks = nn.ModuleList(Block(d, heads, kv_heads, d_ff, fused) for _ in range(n_layers))
    hd = d // heads
    pos = torch.arange(seq, dtype=torch.float32)[:, None] / 10000 ** (torch.arange(hd // 2) / (hd // 2))
    cos = torch.cat((pos.cos(), pos.cos()), -1)[None, :, None, :]
    sin = torch.cat((pos.sin(), pos.sin()), -1)[None, :, None, :]
    x = torch.randn(batch, seq, d, requires_grad=True)
    make = context_fn(op_policy("torchtitan"))
    mode = LiveStorages()
    with mode:
        h = x
        for blk in blocks:
            h = checkpoint(blk, h, cos, sin, use_reentrant=False, context_fn=make)
    # block 0's input was made outside
    kept = mode.alive_bytes(leave_out=[h, *blocks.parameters()]) + x.numel() * x.element_size()
    h.sum().backward()  # the checkpoints recompute from what was kept
    assert x.grad is not None
    return kept


@pytest.mark.parametrize(("d", "heads", "kv_heads", "d_ff", "layers", "fused"), [
    (64, 4, 2, 160, 3, False),  # GQA, torchtitan's separate wq, wk, wv
    (96, 6, 6, 256, 2, False),  # MHA
    (64, 4, 2, 160, 2, True),  # one q|k|v matmul: the count's parity moves to wo and the FFN
])
def test_op_selective_bytes_match_the_checkpointed_stack(d: int, heads: int, kv_heads: int, d_ff: int,
                                                         layers: int, fused: bool) -> None:
    batch, seq = 2, 48
    measured = measured_kept(layers, d, heads, kv_heads, d_ff, batch, seq, fused)
    cfg = make_config(d, layers, heads, d_ff, kind="swiglu", n_kv_heads=kv_heads, vocab_size=97, max_positions=seq)
    cfg = replace(cfg, attn=replace(cfg.attn, qkv_fused=fused))
    predicted = sum(activation_memory(cfg, seq_len=seq, batch=batch, dtype="fp32",
                                      recompute="op-selective").per_layer)
    ratio = predicted / measured
    print(f"d {d} heads {heads}/{kv_heads}: measured {measured:,} B, ffnlab {predicted:,} B, ratio {ratio:.4f}")
    assert 0.99 < ratio < 1.01


def test_every_second_matmul_is_what_is_left_out() -> None:
    """Saving every mm (a policy with no recompute rule) keeps k, wo's output and the up
    projection too: the prediction follows the rule, not a fixed list."""
    cfg = make_config(64, 1, 4, 160, kind="swiglu", n_kv_heads=2, vocab_size=97, max_positions=16)
    cfg = replace(cfg, attn=replace(cfg.attn, qkv_fused=False))
    pol = dict(op_policy("torchtitan"), mm_recompute_every=10**6)
    every = sum(t.bytes for t in op_selective_terms(cfg, 0, seq_len=16, batch=1, dtype="fp32", policy=pol))
    half = sum(t.bytes for t in op_selective_terms(cfg, 0, seq_len=16, batch=1, dtype="fp32"))
    assert every - half == 16 * (cfg.d_kv + cfg.d_model + 160) * 4


@pytest.mark.parametrize(("cfg_kw", "kw", "message"), [
    (dict(kind="swiglu", n_experts=4, top_k=2), {}, "give --recompute none, selective or full"),
    (dict(kind="swiglu"), dict(attention="eager"), "needs --attention fused"),
])
def test_blocks_the_policy_does_not_price_are_refused(cfg_kw: dict[str, Any], kw: dict[str, Any],
                                                      message: str) -> None:
    from ffnlab.errors import FfnlabError

    cfg = make_config(64, 2, 4, 160, vocab_size=97, max_positions=16, **cfg_kw)
    with pytest.raises(FfnlabError, match=message):
        activation_memory(cfg, seq_len=16, batch=1, recompute="op-selective", **kw)
