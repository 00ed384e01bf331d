"""FFN blocks: plain MLPs, the GLU family and a top-k mixture of experts.

Parameter layout (what :mod:`ffnlab.sizing.counting` counts):
- plain:  ``w_in`` (d -> d_ff), ``w_out`` (d_ff -> d)
- gated:  ``w_in`` (d -> 2 d_ff, the gate rows first, then the up rows), ``w_out`` (d_ff -> d);
          output = w_out(act(gate) * up)
- MoE:    ``router`` (d -> E), expert weights stacked as ``w_in`` (E, n_in d_ff, d) and
          ``w_out`` (E, d, d_ff), optional shared experts (dense) and a scalar shared-expert gate.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from ffnlab.sizing.config import FFNSpec
from ffnlab.sizing.kinds import get_kind


def _relu2(x: torch.Tensor) -> torch.Tensor:
    return F.relu(x).square()


def _gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    return F.gelu(x, approximate="tanh")


def _identity(x: torch.Tensor) -> torch.Tensor:
    return x


ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "relu": F.relu, "gelu": F.gelu, "gelu_tanh": _gelu_tanh, "silu": F.silu, "relu2": _relu2,
    "sigmoid": torch.sigmoid, "identity": _identity,
}


def _apply(h: torch.Tensor, gated: bool, act: Callable[[torch.Tensor], torch.Tensor]) -> torch.Tensor:
    if gated:
        gate, up = h.chunk(2, dim=-1)
        return act(gate) * up
    return act(h)


class DenseFFN(nn.Module):
    def __init__(self, d_model: int, d_ff: int, kind: str, bias: bool = False):
        super().__init__()
        k = get_kind(kind)
        self.gated, self.act = k.gated, ACTIVATIONS[k.activation]
        self.w_in = nn.Linear(d_model, (2 if k.gated else 1) * d_ff, bias=bias)
        self.w_out = nn.Linear(d_ff, d_model, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y: torch.Tensor = self.w_out(_apply(self.w_in(x), self.gated, self.act))
        return y


class MoEFFN(nn.Module):
    """Top-k softmax routing (weights renormalised over the chosen experts, as in Mixtral).

    Tokens are sorted by expert and each expert runs one matmul over its tokens: the Python loop
    is over experts, never over tokens. ``forward`` returns the output and the load-balancing
    loss of Switch Transformer (Fedus et al. 2021, eq. 4): E * sum_e f_e * P_e, which is 1 when
    routing is uniform.
    """

    def __init__(self, d_model: int, spec: FFNSpec):
        super().__init__()
        k = get_kind(spec.kind)
        self.gated, self.act = k.gated, ACTIVATIONS[k.activation]
        self.n_experts, self.top_k, self.d_ff = spec.n_experts, spec.top_k, spec.d_ff
        n_in = 2 if k.gated else 1
        self.router = nn.Linear(d_model, spec.n_experts, bias=spec.router_bias)
        self.w_in = nn.Parameter(torch.empty(spec.n_experts, n_in * spec.d_ff, d_model))
        self.w_out = nn.Parameter(torch.empty(spec.n_experts, d_model, spec.d_ff))
        self.b_in = nn.Parameter(torch.zeros(spec.n_experts, n_in * spec.d_ff)) if spec.bias else None
        self.b_out = nn.Parameter(torch.zeros(spec.n_experts, d_model)) if spec.bias else None
        width = spec.d_shared or spec.d_ff
        self.shared = nn.ModuleList(DenseFFN(d_model, width, spec.kind, spec.bias)
                                    for _ in range(spec.n_shared_experts))
        self.shared_gate = (nn.Linear(d_model, 1, bias=False)
                            if spec.shared_expert_gate and spec.n_shared_experts else None)
        for w in (self.w_in, self.w_out):
            nn.init.kaiming_uniform_(w, a=math.sqrt(5))

    def route(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Router probabilities (N, E), chosen experts (N, k) and their renormalised weights."""
        probs = self.router(x).float().softmax(dim=-1)
        weights, experts = probs.topk(self.top_k, dim=-1)
        return probs, experts, weights / weights.sum(dim=-1, keepdim=True)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        shape = x.shape
        xf = x.reshape(-1, shape[-1])
        probs, experts, weights = self.route(xf)
        flat = experts.reshape(-1)
        order = flat.argsort(stable=True)
        token = order // self.top_k
        counts = torch.bincount(flat, minlength=self.n_experts)
        outs = []
        for e, chunk in enumerate(torch.split(xf[token], counts.tolist())):
            h = chunk @ self.w_in[e].t()
            if self.b_in is not None:
                h = h + self.b_in[e]
            y = _apply(h, self.gated, self.act) @ self.w_out[e].t()
            outs.append(y + self.b_out[e] if self.b_out is not None else y)
        routed = torch.cat(outs) * weights.reshape(-1)[order].to(xf.dtype).unsqueeze(-1)
        out = torch.zeros_like(xf).index_add_(0, token, routed)
        if len(self.shared):
            shared = sum(f(xf) for f in self.shared)
            if self.shared_gate is not None:
                shared = torch.sigmoid(self.shared_gate(xf)) * shared
            out = out + shared
        load = counts.float() / flat.numel()
        aux = self.n_experts * (load * probs.mean(dim=0)).sum()
        return out.view(shape), aux


def build_ffn(d_model: int, spec: FFNSpec) -> nn.Module:
    return MoEFFN(d_model, spec) if spec.is_moe else DenseFFN(d_model, spec.d_ff, spec.kind, spec.bias)
