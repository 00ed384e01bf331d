"""How transformers implements a family's layers, where that changes the memory a step keeps and
not the parameters: one fused q|k|v projection or three, and activations computed from elementwise
ops. Data only; :func:`implementation` applies it to a translated config.

Read from transformers' modeling files (5.x): ``c_attn`` (GPT-2, GPT-BigCode), ``query_key_value``
(GPT-NeoX, Falcon, BLOOM), ``qkv_proj`` (Phi-3), ``Wqkv`` (MPT, DBRX) are fused; every other
supported family has ``q_proj``, ``k_proj`` and ``v_proj`` (T5: ``q``, ``k``, ``v``).
``NewGELUActivation`` ("gelu_new") computes ``0.5 x (1 + tanh(c (x + 0.044715 x^3)))`` op by op
and keeps three d_ff-wide tensors more than one fused GELU (the tanh output, ``0.5 x`` and
``1 + tanh``; measured in ``tests/sizing/memory/test_memory_step.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from ffnlab.sizing.config import ModelConfig

FUSED_QKV_TYPES = frozenset({"gpt2", "gpt_bigcode", "gpt_neox", "falcon", "bloom", "phi3", "mpt", "dbrx"})
COMPOSITE_ACT_KEEPS = {"gelu_new": 3}
ACT_KEYS = ("activation_function", "hidden_act", "hidden_activation")
DEFAULT_ACT = {"gpt2": "gelu_new", "gptj": "gelu_new", "gpt_neo": "gelu_new"}


def activation_name(text: Mapping[str, object], model_type: str) -> str | None:
    """The config's activation name as transformers reads it (the family's default when absent)."""
    for key in ACT_KEYS:
        if isinstance(text.get(key), str):
            return str(text[key])
    return DEFAULT_ACT.get(model_type)


def implementation(cfg: ModelConfig, model_type: str, text: Mapping[str, object]) -> ModelConfig:
    """``cfg`` with the memory-relevant implementation facts of ``model_type`` set."""
    extra = COMPOSITE_ACT_KEEPS.get(activation_name(text, model_type) or "", 0)
    out = replace(cfg, attn=replace(cfg.attn, qkv_fused=model_type in FUSED_QKV_TYPES))
    if extra and not cfg.ffn.gated:
        out = replace(out, ffn=replace(cfg.ffn, act_extra_keeps=extra))
    return out
