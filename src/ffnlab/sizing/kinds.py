"""The FFN kinds ffnlab knows, as one data table.

A plain MLP has two weight matrices (up, down) and an activation between them.
A gated FFN (the GLU family, Shazeer 2020 "GLU Variants Improve Transformer") has three:
``down(act(gate(x)) * up(x))``. MoE layers are built from either, see :mod:`ffnlab.sizing.config`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ffnlab.errors import FfnlabError
from ffnlab.validation import show


@dataclass(frozen=True)
class FFNKind:
    name: str
    gated: bool
    activation: str  # name understood by ffnlab.nn.ffn (torch side)
    description: str


FFN_KINDS: dict[str, FFNKind] = {
    k.name: k
    for k in (
        FFNKind("relu", False, "relu", "ReLU MLP (Vaswani et al. 2017)"),
        FFNKind("gelu", False, "gelu", "GELU MLP (GPT-2, BERT)"),
        FFNKind("gelu_tanh", False, "gelu_tanh", "GELU MLP, tanh approximation (GPT-2's gelu_new)"),
        FFNKind("silu", False, "silu", "SiLU/Swish MLP"),
        FFNKind("relu2", False, "relu2", "squared-ReLU MLP (So et al. 2021, Primer)"),
        FFNKind("swiglu", True, "silu", "SwiGLU: SiLU-gated (LLaMA, Mistral, Qwen)"),
        FFNKind("geglu", True, "gelu", "GEGLU: GELU-gated (Gemma, T5 v1.1)"),
        FFNKind("reglu", True, "relu", "ReGLU: ReLU-gated"),
        FFNKind("bilinear", True, "identity", "bilinear: ungated product of two projections"),
        FFNKind("glu", True, "sigmoid", "GLU: sigmoid-gated (Dauphin et al. 2017)"),
    )
}


# The defaults every command shares (size, plan, explain, train): the FFN kind, and the norm and
# positions a decoder gets when none are named: RMSNorm + RoPE under a gated FFN (LLaMA style),
# LayerNorm + learned positions under a plain MLP (GPT-2 style).
DEFAULT_KIND = "swiglu"
DEFAULT_LAYOUT = {True: ("rmsnorm", "rope"), False: ("layernorm", "learned")}  # gated -> (norm, positions)


def default_norm(kind: str) -> str:
    return DEFAULT_LAYOUT[get_kind(kind).gated][0]


def default_positions(kind: str) -> str:
    return DEFAULT_LAYOUT[get_kind(kind).gated][1]


def get_kind(name: str) -> FFNKind:
    try:
        return FFN_KINDS[name]
    except KeyError:
        known = ", ".join(FFN_KINDS)
        raise FfnlabError(f"unknown FFN kind {show(name)}; choose one of: {known}") from None
