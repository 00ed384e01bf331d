"""Export a trained run to a Hugging Face folder that ``transformers`` loads with identical logits.

The folder holds ``config.json``, ``model.safetensors``, ``generation_config.json`` and the run's
tokenizer (``tokenizer.json`` + ``tokenizer_config.json``, see :mod:`ffnlab.training.export_tokenizer`),
so ``AutoTokenizer`` and ``pipeline("text-generation", folder)`` work on it. The architecture is
chosen from the model's norm, positions and FFN (:data:`LAYOUTS`, tried in order):

=================  =========================  =====================  ==========================
layout             norm                       positions              FFN
=================  =========================  =====================  ==========================
``llama``          RMSNorm                    RoPE                   gated (SwiGLU, GEGLU, ...)
``arcee``          RMSNorm                    RoPE                   plain MLP (GELU, ReLU, ...)
``mixtral``        RMSNorm                    RoPE                   gated MoE, no shared experts
``stablelm``       LayerNorm (with/no bias)   RoPE                   gated
``starcoder2``     LayerNorm (with/no bias)   RoPE                   plain MLP
``olmo``           parameter-free LayerNorm   RoPE                   gated
``gpt2``           LayerNorm (with/no bias)   learned                plain MLP, plain MHA
=================  =========================  =====================  ==========================

Biases and norm parameters a layout has but the model lacks are written as zeros (a no-bias
LayerNorm is a LayerNorm with a zero bias), which leaves the function unchanged. Anything else is
refused with the reason and the ``ffnlab train`` settings that would make the model exportable;
``ffnlab train`` asks :func:`export_refusal` before it trains.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

import torch

from ffnlab.errors import FfnlabError, require
from ffnlab.files import cannot_write, exchange, make_dir, new_temp_dir, provisional_dir, remove_stale, staged_dir
from ffnlab.sizing.config import ModelConfig
from ffnlab.sizing.kinds import get_kind
from ffnlab.validation import confined, safe_name

# ffnlab activation name -> transformers ACT2FN name
HF_ACT = {"silu": "silu", "gelu": "gelu", "gelu_tanh": "gelu_pytorch_tanh", "relu": "relu",
          "sigmoid": "sigmoid", "identity": "linear", "relu2": "relu2"}
GPT2_ACT = {**HF_ACT, "gelu_tanh": "gelu_new"}
LAYERNORMS = ("layernorm", "layernorm-nobias")
OLMO_EPS = 1e-5  # OLMo's parameter-free LayerNorm has a fixed epsilon

if TYPE_CHECKING:
    from ffnlab.training.export_tokenizer import GenerationConfig
    from ffnlab.training.runconfig import RunConfig
    from ffnlab.training.runfiles import RunModelFile

Tensors = dict[str, torch.Tensor]


@dataclass(frozen=True)
class Settings:
    """What the exported config needs beyond the ModelConfig."""

    rope_theta: float
    norm_eps: float
    train_len: int  # the context the model was trained on


def _refuse(reason: str, fix: str) -> FfnlabError:
    return FfnlabError(f"cannot export: {reason}; to train an exportable model use {fix}")


# -- choosing the layout ---------------------------------------------------------------------

def _common_problems(cfg: ModelConfig) -> None:
    a = cfg.attn
    if not cfg.final_norm:
        raise _refuse("every layout ends with a final norm; this model has none", "a config with a final norm")
    if cfg.lm_head_bias:
        raise _refuse("an LM-head bias has no place in any layout", "an LM head without bias")
    if cfg.dense_layers:
        raise _refuse("per-layer FFN layouts cannot be exported: the layouts repeat one FFN",
                      "one FFN for every layer")
    if a.qk_norm:
        raise _refuse("q/k norms have no place in these layouts", "a config without q/k norms")
    if cfg.d_model % a.n_heads:
        raise _refuse(f"transformers requires n_heads to divide d_model ({a.n_heads} does not divide "
                      f"{cfg.d_model}), even with an explicit head_dim",
                      "--n-heads N with N dividing --d-model")


def _standard_heads(cfg: ModelConfig, layout: str) -> None:
    if cfg.head_dim * cfg.attn.n_heads != cfg.d_model:
        raise _refuse(f"the {layout} layout has head_dim = d_model/n_heads; this model has head_dim "
                      f"{cfg.head_dim} x {cfg.attn.n_heads} heads != d_model {cfg.d_model}",
                      "--set model.head_dim=null")


def _moe_layout(cfg: ModelConfig) -> str:
    f = cfg.ffn
    if not f.gated:
        raise _refuse(f"an MoE of plain {f.kind} experts has no layout here (Mixtral's experts are gated)",
                      "--ffn swiglu (or another gated kind)")
    if f.n_shared_experts or f.shared_expert_gate or f.router_bias or f.bias:
        raise _refuse("Mixtral's MoE has no shared experts, router bias or expert biases",
                      "--set model.ffn.n_shared_experts=0 --set model.ffn.bias=false")
    if cfg.norm != "rmsnorm" or cfg.positions != "rope":
        raise _refuse(f"the MoE layout (Mixtral) has RMSNorm + RoPE, not {cfg.norm} + {cfg.positions} positions",
                      "--set model.norm=rmsnorm --set model.positions=rope")
    if cfg.attn.qkv_bias or cfg.attn.out_bias:
        raise _refuse("Mixtral's attention has no biases", "--set model.bias=false")
    return "mixtral"


def _rope_layout(cfg: ModelConfig, norm_eps: float) -> str:
    f, a = cfg.ffn, cfg.attn
    if cfg.norm == "rmsnorm":
        return "llama" if f.gated else "arcee"
    if cfg.norm in LAYERNORMS:
        if not f.gated:
            return "starcoder2"
        _standard_heads(cfg, "StableLM")
        if a.out_bias or f.bias:
            raise _refuse("StableLM (LayerNorm + RoPE + a gated FFN) has biases on q/k/v only",
                          "--set model.bias=false --set model.ffn.bias=false, or --set model.norm=rmsnorm")
        return "stablelm"
    if cfg.norm == "none":
        if not f.gated:
            raise _refuse(f"a parameter-free norm with a plain {f.kind} MLP has no layout here "
                          "(OLMo's FFN is gated)", "--set model.norm=rmsnorm, or --ffn swiglu")
        if f.bias:
            raise _refuse("OLMo's FFN has no biases", "--set model.ffn.bias=false")
        if not math.isclose(norm_eps, OLMO_EPS):
            raise _refuse(f"OLMo's parameter-free LayerNorm has epsilon {OLMO_EPS}", f"--set model.norm_eps={OLMO_EPS}")
        return "olmo"
    raise _refuse(f"no layout for norm={cfg.norm}", "--set model.norm=rmsnorm")


def layout_for(cfg: ModelConfig, norm_eps: float = 1e-5) -> str:
    """The layout name for ``cfg``; raise with the reason and the fix when none fits."""
    _common_problems(cfg)
    if cfg.ffn.is_moe:
        return _moe_layout(cfg)
    if cfg.positions == "rope":
        return _rope_layout(cfg, norm_eps)
    if cfg.positions == "learned":
        f = cfg.ffn
        if cfg.norm not in LAYERNORMS or f.gated:
            raise _refuse(f"learned positions export only as GPT-2 (LayerNorm + a plain MLP), not {cfg.norm} + "
                          f"{'a gated' if f.gated else 'a plain'} FFN", "--set model.positions=rope")
        if cfg.n_kv_heads != cfg.attn.n_heads:
            raise _refuse("the GPT-2 layout has plain multi-head attention (no GQA/MQA)",
                          "--set model.positions=rope (Starcoder2 has GQA), or --set model.n_kv_heads=null")
        _standard_heads(cfg, "GPT-2")
        return "gpt2"
    raise _refuse(f"no layout for positions={cfg.positions}", "--set model.positions=rope")


def export_refusal(cfg: ModelConfig, norm_eps: float = 1e-5) -> str | None:
    """Why ``cfg`` cannot be exported (with the settings that would fix it), or None."""
    try:
        layout_for(cfg, norm_eps)
    except FfnlabError as e:
        return str(e)
    return None


# -- tensors ---------------------------------------------------------------------------------

def _bias(sd: Tensors, key: str, size: int) -> torch.Tensor:
    return sd.get(key, torch.zeros(size))


def _attention(cfg: ModelConfig, sd: Tensors, b: str, h: str, biases: str) -> Tensors:
    """q/k/v/o projections; ``biases``: none, qkv (q/k/v only) or all (missing ones as zeros)."""
    dq, dkv = cfg.d_attn, cfg.d_kv
    q, k, v = torch.split(sd[b + "attn.qkv.weight"], [dq, dkv, dkv])
    out = {h + "self_attn.q_proj.weight": q, h + "self_attn.k_proj.weight": k,
           h + "self_attn.v_proj.weight": v, h + "self_attn.o_proj.weight": sd[b + "attn.out.weight"]}
    if biases in ("qkv", "all"):
        qb, kb, vb = torch.split(_bias(sd, b + "attn.qkv.bias", dq + 2 * dkv), [dq, dkv, dkv])
        out |= {h + "self_attn.q_proj.bias": qb, h + "self_attn.k_proj.bias": kb, h + "self_attn.v_proj.bias": vb}
    if biases == "all":
        out[h + "self_attn.o_proj.bias"] = _bias(sd, b + "attn.out.bias", cfg.d_model)
    return out


def _norm(cfg: ModelConfig, sd: Tensors, src: str, dst: str) -> Tensors:
    """One norm's parameters: RMSNorm a weight, LayerNorm a weight and a bias, "none" nothing."""
    if cfg.norm == "none":
        return {}
    out = {dst + ".weight": sd[src + ".weight"]}
    if cfg.norm in LAYERNORMS:
        out[dst + ".bias"] = _bias(sd, src + ".bias", cfg.d_model)
    return out


def _mlp(cfg: ModelConfig, sd: Tensors, b: str, h: str, style: str, bias: bool) -> Tensors:
    """The FFN under the layout's names: gated (gate/up/down), up-down (Arcee), c_fc-c_proj (Starcoder2)."""
    ff = cfg.ffn.d_ff
    w_in, w_out = sd[b + "ffn.w_in.weight"], sd[b + "ffn.w_out.weight"]
    b_in = _bias(sd, b + "ffn.w_in.bias", w_in.shape[0])
    b_out = _bias(sd, b + "ffn.w_out.bias", cfg.d_model)
    if style == "gated":
        gate, up = torch.split(w_in, [ff, ff])
        out = {h + "mlp.gate_proj.weight": gate, h + "mlp.up_proj.weight": up, h + "mlp.down_proj.weight": w_out}
        if bias:
            gb, ub = torch.split(b_in, [ff, ff])
            out |= {h + "mlp.gate_proj.bias": gb, h + "mlp.up_proj.bias": ub, h + "mlp.down_proj.bias": b_out}
        return out
    up_name, down_name = ("c_fc", "c_proj") if style == "c_fc" else ("up_proj", "down_proj")
    out = {h + f"mlp.{up_name}.weight": w_in, h + f"mlp.{down_name}.weight": w_out}
    if bias:
        out |= {h + f"mlp.{up_name}.bias": b_in, h + f"mlp.{down_name}.bias": b_out}
    return out


def _moe(sd: Tensors, b: str, h: str) -> Tensors:
    """Mixtral's fused experts: gate_up_proj (E, 2 d_ff, d) gate rows first, as ffnlab stores them."""
    return {h + "mlp.gate.weight": sd[b + "ffn.router.weight"], h + "mlp.experts.gate_up_proj": sd[b + "ffn.w_in"],
            h + "mlp.experts.down_proj": sd[b + "ffn.w_out"]}


@dataclass(frozen=True)
class ExportLayout:
    architecture: str
    model_type: str
    mlp: str  # gated | up | c_fc | moe
    attn_biases: Callable[[ModelConfig], str]
    mlp_bias: Callable[[ModelConfig], bool]
    config: Callable[[ModelConfig, Settings], HFConfig]


def _any_bias(cfg: ModelConfig) -> bool:
    return cfg.attn.qkv_bias or cfg.attn.out_bias


def decoder_tensors(cfg: ModelConfig, sd: Tensors, lay: ExportLayout) -> Tensors:
    """A Llama-style decoder's tensors (``model.layers.N...``) under ``lay``'s names."""
    out = {"model.embed_tokens.weight": sd["tok_emb.weight"], **_norm(cfg, sd, "norm_f", "model.norm")}
    biases, mlp_bias = lay.attn_biases(cfg), lay.mlp_bias(cfg)
    for i in range(cfg.n_layers):
        b, h = f"blocks.{i}.", f"model.layers.{i}."
        out |= _attention(cfg, sd, b, h, biases)
        out |= _norm(cfg, sd, b + "norm1", h + "input_layernorm")
        out |= _norm(cfg, sd, b + "norm2", h + "post_attention_layernorm")
        out |= _moe(sd, b, h) if lay.mlp == "moe" else _mlp(cfg, sd, b, h, lay.mlp, mlp_bias)
    if not cfg.tied_embeddings:
        out["lm_head.weight"] = sd["lm_head.weight"]
    return out


def gpt2_tensors(cfg: ModelConfig, sd: Tensors) -> Tensors:
    d, ff = cfg.d_model, cfg.ffn.d_ff
    out = {"transformer.wte.weight": sd["tok_emb.weight"], "transformer.wpe.weight": sd["pos_emb.weight"],
           "transformer.ln_f.weight": sd["norm_f.weight"],
           "transformer.ln_f.bias": _bias(sd, "norm_f.bias", d)}
    for i in range(cfg.n_layers):
        b, h = f"blocks.{i}.", f"transformer.h.{i}."
        out |= {  # GPT-2's Conv1D stores weights as (in, out): transpose
            h + "ln_1.weight": sd[b + "norm1.weight"], h + "ln_1.bias": _bias(sd, b + "norm1.bias", d),
            h + "attn.c_attn.weight": sd[b + "attn.qkv.weight"].t(),
            h + "attn.c_attn.bias": _bias(sd, b + "attn.qkv.bias", 3 * d),
            h + "attn.c_proj.weight": sd[b + "attn.out.weight"].t(),
            h + "attn.c_proj.bias": _bias(sd, b + "attn.out.bias", d),
            h + "ln_2.weight": sd[b + "norm2.weight"], h + "ln_2.bias": _bias(sd, b + "norm2.bias", d),
            h + "mlp.c_fc.weight": sd[b + "ffn.w_in.weight"].t(),
            h + "mlp.c_fc.bias": _bias(sd, b + "ffn.w_in.bias", ff),
            h + "mlp.c_proj.weight": sd[b + "ffn.w_out.weight"].t(),
            h + "mlp.c_proj.bias": _bias(sd, b + "ffn.w_out.bias", d),
        }
    if not cfg.tied_embeddings:
        out["lm_head.weight"] = sd["lm_head.weight"]
    return out


# -- config.json -----------------------------------------------------------------------------

class _RopeExtras(TypedDict, total=False):
    partial_rotary_factor: float  # stablelm


class RopeParameters(_RopeExtras):
    rope_type: str
    rope_theta: float


class _LayoutKeys(TypedDict, total=False):
    """The keys of config.json that some layouts write (:data:`LAYOUTS`) and others do not."""

    # the Llama-style decoders (_base_config)
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    hidden_act: str
    max_position_embeddings: int
    rope_theta: float
    rope_parameters: RopeParameters
    attention_dropout: float
    use_cache: bool
    # llama, arcee, mixtral
    rms_norm_eps: float
    # llama, arcee, olmo
    attention_bias: bool
    # llama, arcee
    mlp_bias: bool
    # mixtral
    num_local_experts: int
    num_experts_per_tok: int
    router_jitter_noise: float
    output_router_logits: bool
    experts_implementation: str
    # mixtral, starcoder2
    sliding_window: None
    # stablelm
    layer_norm_eps: float
    use_qkv_bias: bool
    qk_layernorm: bool
    use_parallel_residual: bool
    hidden_dropout: float
    partial_rotary_factor: float
    # starcoder2
    norm_epsilon: float
    use_bias: bool
    residual_dropout: float
    embedding_dropout: float
    # olmo
    clip_qkv: None
    # gpt2
    n_embd: int
    n_layer: int
    n_head: int
    n_inner: int
    n_positions: int
    activation_function: str
    layer_norm_epsilon: float
    resid_pdrop: float
    embd_pdrop: float
    attn_pdrop: float


class HFConfig(_LayoutKeys):
    """The ``config.json`` an export writes for transformers (the keys every layout has, then the
    layout's own)."""

    architectures: list[str]
    model_type: str
    vocab_size: int
    tie_word_embeddings: bool
    dtype: str
    bos_token_id: None
    eos_token_id: None
    pad_token_id: None


def rope_context(head_dim: int, theta: float) -> int:
    """The longest context RoPE tells apart: the wavelength of its slowest rotation,
    2 pi theta^((head_dim - 2) / head_dim) positions; past it every frequency has wrapped."""
    return int(2 * math.pi * theta ** ((head_dim - 2) / head_dim))


def max_positions(cfg: ModelConfig, s: Settings) -> int:
    """max_position_embeddings: the training context for learned positions (the table has no
    more rows); for RoPE, which has no table, the longest context it distinguishes (at least
    the training context). Quality past the training context is not measured."""
    if cfg.positions == "learned":
        return cfg.max_positions
    return max(s.train_len, rope_context(cfg.head_dim, s.rope_theta))


def _base_config(cfg: ModelConfig, s: Settings, lay: ExportLayout) -> HFConfig:
    return {
        "architectures": [lay.architecture], "model_type": lay.model_type, "vocab_size": cfg.vocab_size,
        "hidden_size": cfg.d_model, "intermediate_size": cfg.ffn.d_ff, "num_hidden_layers": cfg.n_layers,
        "num_attention_heads": cfg.attn.n_heads, "num_key_value_heads": cfg.n_kv_heads, "head_dim": cfg.head_dim,
        "hidden_act": HF_ACT[get_kind(cfg.ffn.kind).activation], "max_position_embeddings": max_positions(cfg, s),
        "rope_theta": s.rope_theta, "rope_parameters": {"rope_type": "default", "rope_theta": s.rope_theta},
        "tie_word_embeddings": cfg.tied_embeddings, "attention_dropout": 0.0, "dtype": "float32",
        "bos_token_id": None, "eos_token_id": None, "pad_token_id": None, "use_cache": True,
    }


def _llama_config(cfg: ModelConfig, s: Settings) -> HFConfig:
    return {**_base_config(cfg, s, LAYOUTS["llama"]), "rms_norm_eps": s.norm_eps,
            "attention_bias": _any_bias(cfg), "mlp_bias": cfg.ffn.bias}


def _arcee_config(cfg: ModelConfig, s: Settings) -> HFConfig:
    return {**_base_config(cfg, s, LAYOUTS["arcee"]), "rms_norm_eps": s.norm_eps,
            "attention_bias": _any_bias(cfg), "mlp_bias": cfg.ffn.bias}


def _mixtral_config(cfg: ModelConfig, s: Settings) -> HFConfig:
    return {**_base_config(cfg, s, LAYOUTS["mixtral"]), "rms_norm_eps": s.norm_eps,
            "num_local_experts": cfg.ffn.n_experts, "num_experts_per_tok": cfg.ffn.top_k,
            "router_jitter_noise": 0.0, "output_router_logits": False, "sliding_window": None,
            # transformers' default grouped matmul fails on CPU for widths whose rows are not
            # 16-byte aligned (d_ff 86 in float32: "strides should be multiple of 16 bytes")
            "experts_implementation": "eager"}


def _stablelm_config(cfg: ModelConfig, s: Settings) -> HFConfig:
    base = _base_config(cfg, s, LAYOUTS["stablelm"])
    base["rope_parameters"] = {**base["rope_parameters"], "partial_rotary_factor": 1.0}
    return {**base, "layer_norm_eps": s.norm_eps, "use_qkv_bias": cfg.attn.qkv_bias, "qk_layernorm": False,
            "use_parallel_residual": False, "hidden_dropout": 0.0, "partial_rotary_factor": 1.0}


def _starcoder2_config(cfg: ModelConfig, s: Settings) -> HFConfig:
    return {**_base_config(cfg, s, LAYOUTS["starcoder2"]), "norm_epsilon": s.norm_eps,
            "use_bias": _starcoder2_bias(cfg), "sliding_window": None, "residual_dropout": 0.0,
            "embedding_dropout": 0.0}


def _starcoder2_bias(cfg: ModelConfig) -> bool:
    return _any_bias(cfg) or cfg.ffn.bias


def _olmo_config(cfg: ModelConfig, s: Settings) -> HFConfig:
    return {**_base_config(cfg, s, LAYOUTS["olmo"]), "attention_bias": _any_bias(cfg), "clip_qkv": None}


def gpt2_config(cfg: ModelConfig, s: Settings) -> HFConfig:
    return {
        "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "vocab_size": cfg.vocab_size,
        "n_embd": cfg.d_model, "n_layer": cfg.n_layers, "n_head": cfg.attn.n_heads, "n_inner": cfg.ffn.d_ff,
        "n_positions": cfg.max_positions, "activation_function": GPT2_ACT[get_kind(cfg.ffn.kind).activation],
        "layer_norm_epsilon": s.norm_eps, "tie_word_embeddings": cfg.tied_embeddings, "resid_pdrop": 0.0,
        "embd_pdrop": 0.0, "attn_pdrop": 0.0, "dtype": "float32", "bos_token_id": None,
        "eos_token_id": None, "pad_token_id": None,
    }


LAYOUTS: dict[str, ExportLayout] = {
    "llama": ExportLayout("LlamaForCausalLM", "llama", "gated", lambda c: "all" if _any_bias(c) else "none",
                    lambda c: c.ffn.bias, _llama_config),
    "arcee": ExportLayout("ArceeForCausalLM", "arcee", "up", lambda c: "all" if _any_bias(c) else "none",
                    lambda c: c.ffn.bias, _arcee_config),
    "mixtral": ExportLayout("MixtralForCausalLM", "mixtral", "moe", lambda c: "none", lambda c: False, _mixtral_config),
    "stablelm": ExportLayout("StableLmForCausalLM", "stablelm", "gated", lambda c: "qkv" if c.attn.qkv_bias else "none",
                       lambda c: False, _stablelm_config),
    "starcoder2": ExportLayout("Starcoder2ForCausalLM", "starcoder2", "c_fc",
                         lambda c: "all" if _starcoder2_bias(c) else "none", _starcoder2_bias, _starcoder2_config),
    "olmo": ExportLayout("OlmoForCausalLM", "olmo", "gated", lambda c: "all" if _any_bias(c) else "none",
                   lambda c: False, _olmo_config),
    "gpt2": ExportLayout("GPT2LMHeadModel", "gpt2", "gpt2", lambda c: "all", lambda c: True, gpt2_config),
}


def model_files(model: torch.nn.Module) -> tuple[str, Tensors, HFConfig]:
    """(layout, tensors, config.json) for ``model`` (a :class:`ffnlab.training.nn.DecoderLM`)."""
    cfg: ModelConfig = model.cfg  # type: ignore[assignment]
    norm_eps = float(model.norm_eps)  # type: ignore[arg-type]
    name = layout_for(cfg, norm_eps)
    s = Settings(rope_theta=float(model.rope_theta), norm_eps=norm_eps,  # type: ignore[arg-type]
                 train_len=int(model.max_seq_len))  # type: ignore[arg-type]
    sd = {k: v.detach().cpu() for k, v in model.state_dict().items()}
    lay = LAYOUTS[name]
    tensors = gpt2_tensors(cfg, sd) if name == "gpt2" else decoder_tensors(cfg, sd, lay)
    return name, tensors, lay.config(cfg, s)


# -- writing ---------------------------------------------------------------------------------

def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_folder(out: Path, files: dict[str, bytes | Callable[[Path], None]], *, named: Path | None = None) -> None:
    """Write the export's files (bytes, or a function writing the named path), each readable as the
    umask allows (safetensors itself creates files 0600), into a new marked temporary folder beside
    ``out``, then rename it to ``out``: a killed export leaves no half folder that would block its
    rerun, and a full disk is one error line (:func:`ffnlab.files.cannot_write`) naming ``named``
    (the folder the user gave, where ``out`` is a temporary beside it) or ``out``. A refused write
    leaves none of the folders it made above ``out`` (:func:`ffnlab.files.provisional_dir`)."""
    from safetensors import SafetensorError

    mask = _umask()
    try:
        with provisional_dir(out):
            make_dir(out.parent)
            with staged_dir(out) as tmp:
                for name, content in files.items():
                    path = tmp / name
                    if callable(content):
                        content(path)
                    else:
                        path.write_bytes(content)
                    path.chmod(0o666 & ~mask)
                tmp.chmod(0o777 & ~mask)
    except FfnlabError:
        raise
    except (SafetensorError, OSError) as e:  # a full disk, a quota (not an OSError in safetensors)
        raise cannot_write(named or out, e) from None


# the files an export writes (tokenizer files by export_tokenizer.tokenizer_files); --overwrite
# replaces a folder holding these alone
EXPORT_FILES = frozenset({"model.safetensors", "config.json", "generation_config.json", "tokenizer.json",
                          "tokenizer_config.json", "special_tokens_map.json", "vocab.json", "merges.txt"})


def check_replaceable(out: Path) -> None:
    """``out`` may be replaced by ``--overwrite``: a real folder (no link) holding an earlier
    export's files and nothing else, so replacing it loses nothing ffnlab did not write."""
    require(out.is_dir() and not out.is_symlink(), f"{out} is not a folder; --overwrite replaces an earlier export")
    names = {p.name for p in out.iterdir()}
    foreign = sorted(p.name for p in out.iterdir() if p.name not in EXPORT_FILES or not p.is_file() or p.is_symlink())
    require(not foreign and {"config.json", "model.safetensors"} <= names,
            f"{out} holds {', '.join(foreign[:5]) or 'no model.safetensors/config.json'}: not an earlier export, so "
            "--overwrite leaves it alone; choose an empty folder")


def export_model(model: torch.nn.Module, out_dir: str | Path, tokenizer: dict[str, bytes] | None = None,
                 generation: GenerationConfig | None = None, *, overwrite: bool = False) -> Path:
    """Write ``model`` as a Hugging Face folder; ``tokenizer``: file name -> content
    (:func:`ffnlab.training.export_tokenizer.tokenizer_files`), ``generation``: generation_config.json.
    ``overwrite``: replace an earlier export in ``out_dir`` (:func:`check_replaceable`), swapped in
    whole once the new one is written."""
    from safetensors.torch import save_file

    out = Path(out_dir)
    full = out.exists() and (not out.is_dir() or any(out.iterdir()))
    if full and overwrite:
        check_replaceable(out)
    require(not full or overwrite, f"{out} exists and is not empty; choose an empty folder (or --overwrite to "
                                   "replace an earlier export)")
    _, tensors, config = model_files(model)  # refused (with the reason) before anything is written
    weights = {k: v.contiguous().clone() for k, v in tensors.items()}
    files: dict[str, bytes | Callable[[Path], None]] = {
        "model.safetensors": lambda p: save_file(weights, str(p), metadata={"format": "pt"}),
        "config.json": json.dumps(config, indent=2).encode(),
    }
    if generation is not None:
        files["generation_config.json"] = json.dumps(generation, indent=2).encode()
    files |= tokenizer or {}
    if out.parent.is_dir():  # what a killed export to this name left (ffnlab's, of a process that is gone),
        remove_stale(out.parent, hint=out.name)  # whichever of the two ways below it was writing
    if full:  # the new export is written beside the earlier one, then the two swap and the earlier goes
        aside = new_temp_dir(out.parent, out.name)  # marked: a killed export's leftovers go on the next run
        try:
            write_folder(aside / "new", files, named=out)
            if not exchange(aside / "new", out):  # in one step where the system can: out is never missing
                os.rename(out, aside / "previous")
                try:
                    os.rename(aside / "new", out)
                except BaseException:
                    os.rename(aside / "previous", out)  # the earlier export back where it was
                    raise
        finally:
            shutil.rmtree(aside, ignore_errors=True)
        return out
    write_folder(out, files)  # the one write step
    return out


# -- reading a run ---------------------------------------------------------------------------

def load_run_model(run_dir: str | Path, checkpoint: str | None = None) -> torch.nn.Module:
    """Rebuild a run's model and load its latest (or the named) checkpoint's weights."""
    model, _ = load_run_checkpoint(run_dir, checkpoint)
    return model


@dataclass(frozen=True)
class RunCheckpoint:
    """Which checkpoint of which run :func:`load_run_checkpoint` loaded."""

    step: int
    tokens: int | None  # None: a checkpoint that does not record it
    path: Path
    max_steps: int  # the run's train.max_steps
    config: RunConfig
    files: RunModelFile  # the run's model.json, checked (its prepared corpus names the BPE tokenizer)


LATEST_TRIES = 5  # a run training now may replace its latest checkpoint while it is read: read the newer one


def load_run_checkpoint(run_dir: str | Path, checkpoint: str | None = None) -> tuple[torch.nn.Module, RunCheckpoint]:
    """:func:`load_run_model` and the checkpoint it loaded (step, tokens, path, the run's config)."""
    from ffnlab.training import runconfig
    from ffnlab.training.checkpoint import (
        CheckpointState,
        check_shapes,
        checkpoint_dirs,
        latest_checkpoint,
        load_checkpoint,
    )
    from ffnlab.training.memory import check_fits
    from ffnlab.training.nn import build_model
    from ffnlab.training.runfiles import check_build, check_run_model, read_run_model

    run = Path(run_dir)
    require((run / "config.yaml").is_file() and (run / "model.json").is_file(),
            f"{run} is not an ffnlab run folder (no config.yaml/model.json)")
    cfg = runconfig.load(run / "config.yaml")
    ckpt = (confined(run / "checkpoints", safe_name(checkpoint, "--checkpoint"), "--checkpoint")
            if checkpoint else latest_checkpoint(run))  # a name inside checkpoints/, never a path
    files = read_run_model(run)  # every field checked, one line naming model.json and the key
    mcfg = files.model
    check_fits(cfg, "cpu", vocab_size=mcfg.vocab_size, gpu=None)
    if checkpoint and (ckpt is None or not ckpt.is_dir()):
        names = [c.name for c in checkpoint_dirs(run)]
        raise FfnlabError(f"{run} has no checkpoint {checkpoint!r}; it has: {', '.join(names) or 'none'}")
    require(ckpt is not None and ckpt.is_dir(), f"{run} has no checkpoint to export")
    assert ckpt is not None

    def build() -> torch.nn.Module:
        return build_model(mcfg, seed=None, max_seq_len=cfg.train.seq_len, **runconfig.build_settings(cfg))

    def load(ckpt: Path) -> tuple[torch.nn.Module, CheckpointState]:
        with torch.device("meta"):  # shapes only: model.json's model is built for real once the checkpoint holds it
            check_shapes(ckpt, build(), f"the model of {files.path}")
        # and before any weight is allocated, model.json against the run's own config.yaml, which the
        # shapes cannot always tell apart (n_heads of the same width)
        check_run_model(files, cfg, run / "config.yaml")
        model = build()
        state = load_checkpoint(ckpt, model, None)
        # and the checkpoint's own record of its build settings: its weights were trained with those
        check_build(ckpt / "state.json", state.get("build"), cfg, run / "config.yaml")
        return model, state

    for _ in range(LATEST_TRIES):
        try:
            model, state = load(ckpt)
            break
        except FfnlabError:
            # the latest checkpoint, not named, removed while it was read by the trainer still running in
            # the run (keep_last), which has written a newer one since: that one is the latest now
            newer = None if checkpoint else latest_checkpoint(run)
            if newer is None or newer == ckpt:
                raise
            ckpt = newer
    else:
        raise FfnlabError(f"{run}: its latest checkpoint was replaced {LATEST_TRIES} times while it was read; "
                          "name one with --checkpoint, or try again once the run has stopped")
    return model.eval(), RunCheckpoint(step=int(state["step"]), tokens=state.get("tokens"), path=ckpt,
                                       max_steps=cfg.train.max_steps, config=cfg, files=files)


def run_is_active(run: Path) -> bool:
    """Whether a process holds the run's lock (``ffnlab train`` on it now); reads, never creates."""
    lock = run / ".lock"
    if not lock.is_file():
        return False
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: no locking, so no way to tell
        return False
    fd = os.open(lock, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


@dataclass(frozen=True)
class Exported:
    """What :func:`export_run` wrote: the layout, the checkpoint and the state of the run."""

    layout: str
    architecture: str
    step: int
    max_steps: int
    checkpoint: str  # the checkpoint folder's name
    active: bool  # the run was still training
    finished: bool  # the run has its summary.json
    max_positions: int  # config.json's max_position_embeddings (n_positions for GPT-2)
    train_len: int  # the training context


def export_run(run_dir: str | Path, out_dir: str | Path, checkpoint: str | None = None, *,
               overwrite: bool = False) -> Exported:
    """Export a run's latest (or named) checkpoint with its tokenizer and a generation config;
    return what was written (layout, step, whether the run was still going)."""
    from ffnlab.training.export_tokenizer import generation_config, tokenizer_files

    run = Path(run_dir)
    model, state = load_run_checkpoint(run, checkpoint)
    # weights that are not finite give no text (generate and perplexity refuse them): not written as a model
    weights = model.state_dict().items()
    bad = next((name for name, t in weights if t.is_floating_point() and not bool(t.isfinite().all())), None)
    require(bad is None, f"{state.path.name} of {run} holds weights that are not finite (NaN or infinity, {bad}): "
                         "the run diverged; export an earlier --checkpoint")
    cfg: ModelConfig = model.cfg  # type: ignore[assignment]
    layout, _, config = model_files(model)  # refused here, before the tokenizer is looked for
    prepared = state.files.prepared_data
    max_len = int(config.get("max_position_embeddings") or config["n_positions"])
    tokenizer = tokenizer_files(state.config.data.tokenizer, prepared, cfg.vocab_size, max_len)
    table = cfg.max_positions if cfg.positions == "learned" else None
    export_model(model, out_dir, tokenizer, generation_config(table), overwrite=overwrite)
    return Exported(layout=layout, architecture=LAYOUTS[layout].architecture, step=state.step,
                    max_steps=state.max_steps, checkpoint=state.path.name, active=run_is_active(run),
                    finished=(run / "summary.json").is_file(), max_positions=max_len,
                    train_len=int(model.max_seq_len))  # type: ignore[arg-type]
