"""The language-model losses whose memory :mod:`ffnlab.sizing.memory.step` counts, in PyTorch.

* :func:`full_cross_entropy`: the LM head over every token, then cross-entropy over the fp32
  logits (transformers' ``ForCausalLMLoss``, torchtitan, nanoGPT, ffnlab's ``DecoderLM``);
* :func:`chunked_cross_entropy`: torchtune's ``CEWithChunkedOutputLoss`` pattern: the head runs
  on ``chunks`` slices of the tokens, each slice's logits are upcast and scored on their own;
* :func:`fused_linear_cross_entropy`: the algorithm of Liger-Kernel's fused linear cross-entropy
  (Hsu et al. 2024, arXiv:2410.10989) written with plain torch ops: the head and the loss run chunk
  by chunk in forward, which also computes the gradients of the hidden states and of the head's
  weight, so no logits outlive their chunk. Chunks hold ``ceil(N / ceil(V / d))`` tokens, Liger's
  rule. It runs anywhere torch does (Liger's Triton kernels need a GPU) and is what the CPU
  measurements of the fused loss's memory run.

Each returns the mean loss over the tokens (``targets`` of ``ignore_index`` are left out).
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F

IGNORE_INDEX = -100


def full_cross_entropy(hidden: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor,
                                                                                                   torch.Tensor]:
    """(loss, logits) of the head ``weight`` (V x d) on ``hidden`` (..., d)."""
    logits = hidden @ weight.t()
    loss = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), targets.reshape(-1),
                           ignore_index=IGNORE_INDEX)
    return loss, logits


def chunked_cross_entropy(hidden: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor,
                          chunks: int = 8) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """(loss, the chunks' logits): torchtune's chunked output and loss."""
    h = hidden.reshape(-1, hidden.shape[-1])
    t = targets.reshape(-1)
    logits = [c @ weight.t() for c in h.chunk(chunks)]
    total = sum(F.cross_entropy(lc.float(), tc, ignore_index=IGNORE_INDEX, reduction="sum")
                for lc, tc in zip(logits, t.chunk(chunks), strict=True))
    n = (t != IGNORE_INDEX).sum().clamp(min=1)
    return total / n, logits


def fused_chunk_tokens(n_tokens: int, vocab: int, d_model: int) -> int:
    """Tokens per chunk of the fused loss: Liger's ``ceil(N / ceil(V / d))``."""
    return max(1, math.ceil(n_tokens / max(1, math.ceil(vocab / d_model))))


class _FusedLinearCE(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, hidden: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        n, d = hidden.shape
        keep = targets != IGNORE_INDEX
        count = keep.sum().clamp(min=1)
        grad_h = torch.zeros_like(hidden)
        grad_w = torch.zeros_like(weight)
        loss = torch.zeros((), dtype=torch.float32, device=hidden.device)
        step = fused_chunk_tokens(n, weight.shape[0], d)
        for start in range(0, n, step):
            h, t, k = hidden[start:start + step], targets[start:start + step], keep[start:start + step]
            g = (h @ weight.t()).float()  # the chunk's logits, then (in place) their gradient
            lse = torch.logsumexp(g, dim=-1)
            tgt = torch.where(k, t, 0)
            loss += ((lse - g.gather(1, tgt[:, None]).squeeze(1)) * k).sum()
            g.sub_(lse[:, None]).exp_()  # softmax
            g[torch.arange(len(t), device=g.device), tgt] -= 1.0
            g.mul_((k / count)[:, None])
            g = g.to(hidden.dtype)
            grad_h[start:start + step] = g @ weight
            grad_w.addmm_(g.t(), h)
        ctx.save_for_backward(grad_h, grad_w)
        return loss / count

    @staticmethod
    def backward(ctx: Any, grad_out: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, None]:
        grad_h, grad_w = ctx.saved_tensors
        if torch.equal(grad_out, torch.ones_like(grad_out)):  # Liger skips the scaling likewise
            return grad_h, grad_w, None
        return grad_h * grad_out, grad_w * grad_out, None


def fused_linear_cross_entropy(hidden: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """The loss of the head ``weight`` on ``hidden``, head and loss fused chunk by chunk."""
    h = hidden.reshape(-1, hidden.shape[-1])
    out: torch.Tensor = _FusedLinearCE.apply(h, weight, targets.reshape(-1))
    return out
