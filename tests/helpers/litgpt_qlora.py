"""A CPU stand-in of a LitGPT QLoRA step (litgpt 43c44323, Lightning 438f29f, bitsandbytes 0.42.0),
written from the facts ``data/published_peaks.json`` keeps for the LitGPT QLoRA cases, to measure
with :class:`ffnlab.training.live_bytes.LiveBytes` what those facts make ffnlab price.

The model is built as LitGPT builds a Llama (every module in bf16): RMSNorm computed in fp32, one
q|k|v projection split per head, RoPE tables in fp32, q re-assembled by ``torch.cat`` (so contiguous
head-major), ``scaled_dot_product_attention`` and its output re-assembled to ``(b, s, d)`` before the
output projection, a SwiGLU MLP, a final norm and an LM head run over 128-token chunks (here
``chunk`` tokens). A q|v LoRA adapter with dropout sits on the q|k|v projection, its update
scattered into the q and v columns. Every linear layer, the head's included, is a 4-bit stand-in
(:class:`Linear4bit`): what bitsandbytes 0.42's ``MatMul4Bit`` does with memory, as Lightning's
plugin sets it up. The loop (:func:`run`) is lora.py's: ``logits`` rebound when the next forward
returns, each micro-batch's loss backward, an optimizer step every ``accum`` micro-batches.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F  # noqa: N812 - the usual name
from torch import nn


class _MatMul4Bit(torch.autograd.Function):
    """bitsandbytes 0.42's ``MatMul4Bit`` as far as memory goes: the weight dequantised to float16
    (the dtype Lightning quantised it from) and cast to the input's dtype for the matmul, in forward
    and again in backward, neither copy saved; the input kept as a ``ctx`` attribute whenever it
    needs grad (never freed by backward)."""

    @staticmethod
    def forward(ctx: Any, a: torch.Tensor, layer: Linear4bit) -> torch.Tensor:  # type: ignore[override]
        ctx.layer = layer
        if ctx.needs_input_grad[0]:
            ctx.A = a
        return F.linear(a, layer.dequantize().to(a.dtype))

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> tuple[torch.Tensor, None]:  # type: ignore[override]
        return g @ ctx.layer.dequantize().to(g.dtype), None


class Linear4bit(nn.Module):
    """A frozen linear layer stored as 4-bit values (``packed``: half a byte per weight) and an fp32
    absmax per 64 weights, as bitsandbytes' NF4 without double quantisation keeps it. Its
    :meth:`dequantize` allocates one float16 tensor of the weight's shape, as ``dequantize_4bit``'s
    kernel writes into ``torch.empty(shape, dtype=quant_state.dtype)``; the values come from a
    float16 copy kept outside the module (not a parameter or buffer, so not counted: it plays the
    kernel's arithmetic, not a tensor the run holds)."""

    def __init__(self, fan_in: int, fan_out: int) -> None:
        super().__init__()
        n = fan_in * fan_out
        self.register_buffer("packed", torch.zeros(n // 2, dtype=torch.uint8))
        self.register_buffer("absmax", torch.ones(math.ceil(n / 64), dtype=torch.float32))
        self._values = [torch.randn(fan_out, fan_in, dtype=torch.float16) / math.sqrt(fan_in)]

    def dequantize(self) -> torch.Tensor:
        values = self._values[0]
        out = torch.empty(values.shape, dtype=torch.float16)
        return out.copy_(values)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _MatMul4Bit.apply(x, self)


class RMSNorm(nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d, dtype=torch.bfloat16), requires_grad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xf = x.float()
        normed = xf * torch.rsqrt(torch.mean(xf * xf, dim=-1, keepdim=True) + 1e-5)
        return normed.to(x.dtype) * self.weight


def rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    half = x.size(-1) // 2
    turned = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return (x * cos + turned * sin).to(x.dtype)


class QVAdapted(nn.Module):
    """The 4-bit q|k|v projection with a rank-``r`` update on its q and v columns (one A for both,
    a grouped B, the update scattered into a zero q|k|v-wide tensor), its input dropped out first."""

    def __init__(self, d: int, r: int, dropout: float) -> None:
        super().__init__()
        self.base = Linear4bit(d, 3 * d)
        self.lora_A = nn.Parameter(torch.randn(2 * r, d, dtype=torch.bfloat16) / d)
        self.lora_B = nn.Parameter(torch.randn(2 * d, r, dtype=torch.bfloat16) / r)
        self.drop = nn.Dropout(dropout)
        self.d = d
        self.scaling = 2.0
        self.register_buffer("columns", torch.cat((torch.arange(d), torch.arange(2 * d, 3 * d))), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        base = self.base(x)
        low = F.linear(self.drop(x), self.lora_A)  # (b, s, 2r)
        up = F.conv1d(low.transpose(-2, -1), self.lora_B.unsqueeze(-1), groups=2).transpose(-2, -1)  # (b, s, 2d)
        flat = up.reshape(-1, 2 * self.d)
        full = flat.new_zeros(flat.shape[0], 3 * self.d).index_copy(1, self.columns, flat)
        return base + full.view(*x.shape[:-1], 3 * self.d) * self.scaling


class Block(nn.Module):
    def __init__(self, d: int, heads: int, d_ff: int, r: int, dropout: float) -> None:
        super().__init__()
        self.norm_1, self.norm_2 = RMSNorm(d), RMSNorm(d)
        self.attn = QVAdapted(d, r, dropout)
        self.proj = Linear4bit(d, d)
        self.fc_1, self.fc_2, self.down = Linear4bit(d, d_ff), Linear4bit(d, d_ff), Linear4bit(d_ff, d)
        self.heads = heads

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        hs = d // self.heads
        qkv = self.attn(self.norm_1(x)).view(b, s, self.heads, 3, hs).permute(0, 2, 3, 1, 4)
        q, k, v = (t.reshape(b, self.heads, s, hs) for t in qkv.split(1, dim=2))
        q = torch.cat((rope(q, cos, sin), q[..., hs:]), dim=-1)  # the rotated part and the (empty) rest
        k = torch.cat((rope(k, cos, sin), k[..., hs:]), dim=-1)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2)
        x = x + self.proj(y.reshape(b, s, d))
        h = self.norm_2(x)
        return x + self.down(F.silu(self.fc_1(h)) * self.fc_2(h))


class TinyLitGPT(nn.Module):
    def __init__(
        self, d: int, layers: int, heads: int, d_ff: int, vocab: int, seq_len: int, r: int, dropout: float
    ) -> None:
        super().__init__()
        self.wte = nn.Embedding(vocab, d, dtype=torch.bfloat16)
        self.wte.weight.requires_grad_(False)
        self.blocks = nn.ModuleList(Block(d, heads, d_ff, r, dropout) for _ in range(layers))
        self.ln_f = RMSNorm(d)
        self.lm_head = Linear4bit(d, vocab)
        hs = d // heads
        theta = 1.0 / (10000 ** (torch.arange(0, hs, 2).float() / hs))
        angles = torch.outer(torch.arange(seq_len).float(), theta).repeat(1, 2)
        self.register_buffer("cos", torch.cos(angles), persistent=False)  # fp32 tables
        self.register_buffer("sin", torch.sin(angles), persistent=False)

    def forward(self, idx: torch.Tensor, chunk: int) -> list[torch.Tensor]:
        x = self.wte(idx)
        s = idx.size(1)
        for block in self.blocks:
            x = block(x, self.cos[:s], self.sin[:s])
        x = self.ln_f(x)
        return [self.lm_head(part) for part in x.split(chunk, dim=1)]


def chunked_loss(logits: list[torch.Tensor], targets: torch.Tensor) -> torch.Tensor:
    """The loss over the head's chunks, one cross-entropy per chunk in the logits' dtype."""
    parts = [
        F.cross_entropy(c.reshape(-1, c.size(-1)), t.reshape(-1), reduction="none")
        for c, t in zip(logits, targets.split(logits[0].size(1), dim=1), strict=True)
    ]
    return torch.cat(parts).sum() / targets.numel()


def run(model: TinyLitGPT, opt: torch.optim.Optimizer, batches: list[torch.Tensor], chunk: int, accum: int) -> None:
    """lora.py's loop over ``batches``: ``logits`` is rebound only when the next forward returns (its
    graph, with every 4-bit input, alive until then)."""
    logits: list[torch.Tensor] = []
    for i, idx in enumerate(batches, start=1):
        logits = model(idx, chunk)
        logits[-1] = logits[-1][..., :-1, :]
        loss = chunked_loss(logits, idx[..., 1:])
        (loss / accum).backward()
        if i % accum == 0:
            opt.step()
            opt.zero_grad()
        del loss
    del logits
