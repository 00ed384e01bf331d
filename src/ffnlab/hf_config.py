"""Translate Hugging Face ``config.json`` files into :class:`~ffnlab.config.ModelConfig`.

One small function per ``model_type`` reads the keys that decide the architecture, with the
defaults of the corresponding ``transformers`` config class where a key may be absent. The
translation is tested against ``transformers``' own models built from the same configs: the
parameter totals agree exactly (``tests/test_hf_parity.py``). No ``transformers`` import here.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from .config import AttentionSpec, FFNSpec, ModelConfig, validate
from .errors import FfnlabError, require

_MISSING = object()

# activation name in a config.json -> ffnlab plain kind (gated kinds derive from it)
_ACT_PLAIN = {
    "gelu": "gelu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "gelu_fast": "gelu_tanh",
    "quick_gelu": "gelu", "relu": "relu", "silu": "silu", "swish": "silu", "relu2": "relu2",
}
_GATED_FROM_ACT = {"silu": "swiglu", "swish": "swiglu", "gelu": "geglu", "gelu_new": "geglu",
                   "gelu_pytorch_tanh": "geglu", "gelu_fast": "geglu", "relu": "reglu",
                   "sigmoid": "glu", "linear": "bilinear"}


class _Keys:
    """Typed access to a config.json dict, with errors that name the key."""

    def __init__(self, data: dict[str, Any], model_type: str):
        self.data, self.model_type = data, model_type

    def get(self, key: str, default: Any = _MISSING, *, kind: type = int) -> Any:
        value = self.data.get(key, default)
        if value is None and default is not _MISSING:
            value = default
        if value is _MISSING:
            raise FfnlabError(f"config.json (model_type {self.model_type!r}) is missing key {key!r}")
        if value is None:
            return None
        if kind is int:
            ok = isinstance(value, int) and not isinstance(value, bool) and value > 0
            require(ok, f"config.json key {key!r} must be a positive integer, got {value!r}")
        elif kind is bool:
            require(isinstance(value, bool), f"config.json key {key!r} must be true or false, got {value!r}")
        elif kind is str:
            require(isinstance(value, str), f"config.json key {key!r} must be a string, got {value!r}")
        return value

    def first(self, *keys: str, default: Any = _MISSING) -> int:
        for k in keys:
            if self.data.get(k) is not None:
                return self.get(k)
        if default is not _MISSING:
            return default
        raise FfnlabError(f"config.json (model_type {self.model_type!r}) is missing key {keys[0]!r}")

    def act(self, key: str, default: str, *, gated: bool) -> str:
        name = self.get(key, default, kind=str)
        table = _GATED_FROM_ACT if gated else _ACT_PLAIN
        require(name in table, f"config.json key {key!r}: activation {name!r} is not supported "
                               f"(known: {', '.join(sorted(table))})")
        return table[name]


def _gpt2(k: _Keys) -> ModelConfig:
    d = k.get("n_embd", 768)
    return ModelConfig(
        d_model=d, n_layers=k.get("n_layer", 12), vocab_size=k.get("vocab_size", 50257),
        ffn=FFNSpec(k.act("activation_function", "gelu_new", gated=False), k.get("n_inner", 4 * d), bias=True),
        attn=AttentionSpec(k.get("n_head", 12), qkv_bias=True, out_bias=True),
        norm="layernorm", positions="learned", max_positions=k.get("n_positions", 1024),
        tied_embeddings=k.get("tie_word_embeddings", True, kind=bool))


def _gptj(k: _Keys) -> ModelConfig:
    d = k.get("n_embd", 4096)
    return ModelConfig(
        d_model=d, n_layers=k.get("n_layer", 28), vocab_size=k.get("vocab_size", 50400),
        ffn=FFNSpec(k.act("activation_function", "gelu_new", gated=False), k.get("n_inner", 4 * d), bias=True),
        attn=AttentionSpec(k.get("n_head", 16)), norm="layernorm", norms_per_block=1, positions="rope",
        tied_embeddings=k.get("tie_word_embeddings", False, kind=bool), lm_head_bias=True)


def _gpt_neox(k: _Keys) -> ModelConfig:
    bias = k.get("attention_bias", True, kind=bool)
    return ModelConfig(
        d_model=k.get("hidden_size", 6144), n_layers=k.get("num_hidden_layers", 44),
        vocab_size=k.get("vocab_size", 50432),
        ffn=FFNSpec(k.act("hidden_act", "gelu", gated=False), k.get("intermediate_size", 24576), bias=True),
        attn=AttentionSpec(k.get("num_attention_heads", 64), qkv_bias=bias, out_bias=bias),
        norm="layernorm", positions="rope", tied_embeddings=k.get("tie_word_embeddings", False, kind=bool))


def _opt(k: _Keys) -> ModelConfig:
    d = k.get("hidden_size", 768)
    bias = k.get("enable_bias", True, kind=bool)
    affine = k.get("layer_norm_elementwise_affine", True, kind=bool)
    final = k.get("do_layer_norm_before", True, kind=bool) and not k.get("_remove_final_layer_norm", False, kind=bool)
    return ModelConfig(
        d_model=d, n_layers=k.get("num_hidden_layers", 12), vocab_size=k.get("vocab_size", 50272),
        ffn=FFNSpec(k.act("activation_function", "relu", gated=False), k.get("ffn_dim", 3072), bias=bias),
        attn=AttentionSpec(k.get("num_attention_heads", 12), qkv_bias=bias, out_bias=bias),
        norm="layernorm" if affine else "none", final_norm=final, positions="learned",
        max_positions=k.get("max_position_embeddings", 2048), position_offset=2,
        tied_embeddings=k.get("tie_word_embeddings", True, kind=bool),
        embed_proj_dim=k.get("word_embed_proj_dim", d))


def _bloom(k: _Keys) -> ModelConfig:
    d = k.first("hidden_size", "n_embed", default=64)
    return ModelConfig(
        d_model=d, n_layers=k.first("n_layer", "num_hidden_layers", default=2),
        vocab_size=k.get("vocab_size", 250880),
        ffn=FFNSpec("gelu_tanh", 4 * d, bias=True),  # BLOOM's MLP width is fixed at 4 x hidden_size
        attn=AttentionSpec(k.first("n_head", "num_attention_heads", default=8), qkv_bias=True, out_bias=True),
        norm="layernorm", embed_norm=True, positions="alibi",
        tied_embeddings=k.get("tie_word_embeddings", True, kind=bool))


def _falcon(k: _Keys) -> ModelConfig:
    d = k.get("hidden_size", 4544)
    n_heads = k.first("num_attention_heads", "n_head", default=71)
    new_arch = k.get("new_decoder_architecture", False, kind=bool)
    if new_arch:
        n_kv = k.get("num_kv_heads", n_heads)
    elif k.get("multi_query", True, kind=bool):
        n_kv = 1
    else:
        n_kv = n_heads
    parallel = k.get("parallel_attn", True, kind=bool)
    n_ln = k.get("num_ln_in_parallel_attn", 2 if new_arch else 1)
    bias = k.get("bias", False, kind=bool)
    return ModelConfig(
        d_model=d, n_layers=k.first("num_hidden_layers", "n_layer", default=32),
        vocab_size=k.get("vocab_size", 65024),
        ffn=FFNSpec(k.act("activation", "gelu", gated=False), k.get("ffn_hidden_size", 4 * d), bias=bias),
        attn=AttentionSpec(n_heads, n_kv_heads=n_kv, qkv_bias=bias, out_bias=bias),
        norm="layernorm", norms_per_block=(n_ln if parallel else 2),
        positions="alibi" if k.get("alibi", False, kind=bool) else "rope",
        tied_embeddings=k.get("tie_word_embeddings", True, kind=bool))


def _llama_like(defaults: dict[str, Any], *, qkv_bias_key: str | None = "attention_bias",
                qkv_bias: bool = False, out_bias_follows: bool = True, norm: str = "rmsnorm",
                norms_per_block: int = 2, act_key: str = "hidden_act",
                mlp_bias_key: str | None = None) -> Callable[[_Keys], ModelConfig]:
    """LLaMA-family decoders differ only in defaults, bias flags and norm placement."""

    def translate(k: _Keys) -> ModelConfig:
        d = k.get("hidden_size", defaults["hidden_size"])
        n_heads = k.get("num_attention_heads", defaults["num_attention_heads"])
        qb = k.get(qkv_bias_key, qkv_bias, kind=bool) if qkv_bias_key else qkv_bias
        if k.data.get("head_dim") is None and not defaults.get("head_dim"):
            require(d % n_heads == 0, f"config.json: num_attention_heads={n_heads} does not divide "
                                      f"hidden_size={d} (and no head_dim is given)")
        n_experts = k.first("num_local_experts", default=defaults["moe"]) if defaults.get("moe") else 0
        ffn = FFNSpec(
            k.act(act_key, defaults[act_key], gated=True),
            k.get("intermediate_size", defaults["intermediate_size"]),
            bias=k.get(mlp_bias_key, False, kind=bool) if mlp_bias_key else False,
            n_experts=n_experts,
            top_k=k.get("num_experts_per_tok", 2) if n_experts else 0,
        )
        return ModelConfig(
            d_model=d, n_layers=k.get("num_hidden_layers", defaults["num_hidden_layers"]),
            vocab_size=k.get("vocab_size", defaults["vocab_size"]), ffn=ffn,
            attn=AttentionSpec(n_heads, n_kv_heads=k.get("num_key_value_heads", defaults.get("num_key_value_heads") or n_heads),
                               head_dim=k.get("head_dim", defaults.get("head_dim") or d // n_heads),
                               qkv_bias=qb, out_bias=qb and out_bias_follows),
            norm=norm, norms_per_block=norms_per_block, positions="rope",
            tied_embeddings=k.get("tie_word_embeddings", defaults["tie_word_embeddings"], kind=bool))

    return translate


def _phi(k: _Keys) -> ModelConfig:
    d = k.get("hidden_size", 2048)
    n_heads = k.get("num_attention_heads", 32)
    return ModelConfig(
        d_model=d, n_layers=k.get("num_hidden_layers", 24), vocab_size=k.get("vocab_size", 51200),
        ffn=FFNSpec(k.act("hidden_act", "gelu_new", gated=False), k.get("intermediate_size", 8192), bias=True),
        attn=AttentionSpec(n_heads, n_kv_heads=k.get("num_key_value_heads", n_heads), qkv_bias=True,
                           out_bias=True, qk_norm=k.get("qk_layernorm", False, kind=bool)),
        norm="layernorm", norms_per_block=1, positions="rope",
        tied_embeddings=k.get("tie_word_embeddings", False, kind=bool), lm_head_bias=True)


def _t5(k: _Keys) -> ModelConfig:
    proj = k.get("feed_forward_proj", "relu", kind=str)
    gated = proj.startswith("gated-")
    act = proj.split("-", 1)[1] if gated else proj
    if gated:
        kind = {"gelu": "geglu", "silu": "swiglu", "relu": "reglu", "gelu_new": "geglu"}.get(act)
    else:
        kind = _ACT_PLAIN.get(act)
    require(kind is not None, f"config.json key 'feed_forward_proj': {proj!r} is not supported")
    n_enc = k.get("num_layers", 6)
    n_heads = k.get("num_heads", 8)
    return ModelConfig(
        d_model=k.get("d_model", 512), n_layers=k.get("num_decoder_layers", n_enc), encoder_layers=n_enc,
        vocab_size=k.get("vocab_size", 32128), ffn=FFNSpec(kind, k.get("d_ff", 2048)),
        attn=AttentionSpec(n_heads, head_dim=k.get("d_kv", 64)), norm="rmsnorm",
        positions="relative", relative_buckets=k.get("relative_attention_num_buckets", 32),
        tied_embeddings=k.get("tie_word_embeddings", True, kind=bool))


_LLAMA = dict(hidden_size=4096, num_attention_heads=32, num_hidden_layers=32, intermediate_size=11008,
              vocab_size=32000, hidden_act="silu", tie_word_embeddings=False)

HF_TRANSLATORS: dict[str, Callable[[_Keys], ModelConfig]] = {
    "gpt2": _gpt2,
    "gptj": _gptj,
    "gpt_neox": _gpt_neox,
    "opt": _opt,
    "bloom": _bloom,
    "falcon": _falcon,
    "llama": _llama_like(_LLAMA, mlp_bias_key="mlp_bias"),
    "mistral": _llama_like({**_LLAMA, "intermediate_size": 14336, "num_key_value_heads": 8}, qkv_bias_key=None),
    "mixtral": _llama_like({**_LLAMA, "intermediate_size": 14336, "num_key_value_heads": 8, "moe": 8},
                           qkv_bias_key=None),
    "qwen2": _llama_like({**_LLAMA, "intermediate_size": 22016, "vocab_size": 151936,
                          "num_key_value_heads": 32}, qkv_bias_key=None, qkv_bias=True, out_bias_follows=False),
    "gemma": _llama_like({**_LLAMA, "hidden_size": 3072, "intermediate_size": 24576, "num_hidden_layers": 28,
                          "num_attention_heads": 16, "num_key_value_heads": 16, "head_dim": 256,
                          "vocab_size": 256000, "hidden_act": "gelu_pytorch_tanh", "tie_word_embeddings": True}),
    "gemma2": _llama_like({**_LLAMA, "hidden_size": 2304, "intermediate_size": 9216, "num_hidden_layers": 26,
                           "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256,
                           "vocab_size": 256000, "hidden_activation": "gelu_pytorch_tanh",
                           "tie_word_embeddings": True}, act_key="hidden_activation", norms_per_block=4),
    "phi": _phi,
    "phi3": _llama_like({**_LLAMA, "hidden_size": 3072, "intermediate_size": 8192, "vocab_size": 32064},
                        qkv_bias_key=None),
    "olmo": _llama_like({**_LLAMA, "vocab_size": 50304}, norm="none"),
    "t5": _t5,
}
SUPPORTED_MODEL_TYPES = tuple(HF_TRANSLATORS)


def from_hf_dict(data: Any, name: str = "") -> ModelConfig:
    """Translate a parsed config.json; raise :class:`FfnlabError` naming the offending key."""
    require(isinstance(data, dict), "config.json must contain a JSON object")
    model_type = data.get("model_type")
    require(model_type is not None, "config.json has no 'model_type' key")
    require(isinstance(model_type, str), f"config.json key 'model_type' must be a string, got {model_type!r}")
    require(model_type in HF_TRANSLATORS,
            f"config.json model_type {model_type!r} is not supported; supported: {', '.join(SUPPORTED_MODEL_TYPES)}")
    cfg = HF_TRANSLATORS[model_type](_Keys(data, model_type))
    return validate(replace(cfg, name=name or data.get("_name_or_path") or model_type))


def load_hf_config(path: str | Path) -> tuple[ModelConfig, dict[str, Any]]:
    """Read and translate a config.json file (or a folder holding one)."""
    p = Path(path)
    if p.is_dir():
        p = p / "config.json"
    require(p.is_file(), f"no such file: {p}")
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise FfnlabError(f"{p}: not valid JSON ({e})") from None
    require(isinstance(data, dict), f"{p}: config.json must contain a JSON object")
    return from_hf_dict(data, name=p.parent.name if p.name == "config.json" and p.parent.name else p.stem), data
