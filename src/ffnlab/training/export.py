"""Export a trained run to a Hugging Face folder (``config.json`` + ``model.safetensors``).

Two layouts are written, chosen from the config:

* ``LlamaForCausalLM`` for RMSNorm + RoPE + gated FFNs (SwiGLU, GEGLU, ReGLU, GLU, bilinear);
* ``GPT2LMHeadModel`` for LayerNorm + learned positions + plain MLPs with MHA.

Missing biases are written as zeros (the layouts have them for all projections or none), which
leaves the function unchanged. Everything else (MoE, plain MLPs with RoPE/RMSNorm, GQA in the
GPT-2 layout, ...) is refused with the reason.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from ffnlab.errors import FfnlabError, require
from ffnlab.files import read_mapping, remove_stale, staged_dir
from ffnlab.sizing.config import ModelConfig
from ffnlab.sizing.kinds import get_kind
from ffnlab.validation import confined, safe_name, show

# ffnlab activation name -> transformers ACT2FN name
HF_ACT = {"silu": "silu", "gelu": "gelu", "gelu_tanh": "gelu_pytorch_tanh", "relu": "relu",
          "sigmoid": "sigmoid", "identity": "linear", "relu2": "relu2"}
GPT2_ACT = {**HF_ACT, "gelu_tanh": "gelu_new"}


def layout_for(cfg: ModelConfig) -> str:
    """``llama`` or ``gpt2``; raise with the reason when neither fits."""
    f = cfg.ffn
    require(not f.is_moe, "MoE runs cannot be exported: Hugging Face's Llama/GPT-2 layouts have dense FFNs")
    require(cfg.final_norm, "both layouts end with a final norm; this model has none")
    require(not cfg.lm_head_bias, "an LM-head bias has no place in the Llama or GPT-2 layouts")
    require(not cfg.dense_layers,
            "per-layer FFN layouts cannot be exported: the Llama and GPT-2 layouts repeat one FFN")
    require(not cfg.attn.qk_norm, "q/k norms have no place in the Llama or GPT-2 layouts")
    require(cfg.d_model % cfg.attn.n_heads == 0,
            "transformers requires n_heads to divide d_model, even with an explicit head_dim")
    if cfg.norm == "rmsnorm" and cfg.positions == "rope":
        require(f.gated, f"the Llama layout needs a gated FFN; {f.kind} with RMSNorm + RoPE has no HF layout here")
        return "llama"
    if cfg.norm in ("layernorm", "layernorm-nobias") and cfg.positions == "learned":
        require(not f.gated, f"the GPT-2 layout needs a plain MLP; {f.kind} is gated")
        require(cfg.n_kv_heads == cfg.attn.n_heads and cfg.head_dim * cfg.attn.n_heads == cfg.d_model,
                "the GPT-2 layout has plain multi-head attention (no GQA/MQA, head_dim = d_model/n_heads)")
        return "gpt2"
    raise FfnlabError(f"no Hugging Face layout for norm={cfg.norm} with positions={cfg.positions}: "
                      "export supports RMSNorm+RoPE (Llama) and LayerNorm+learned positions (GPT-2)")


def _bias(sd: dict[str, torch.Tensor], key: str, size: int) -> torch.Tensor:
    return sd.get(key, torch.zeros(size))


def llama_tensors(cfg: ModelConfig, sd: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    out = {"model.embed_tokens.weight": sd["tok_emb.weight"], "model.norm.weight": sd["norm_f.weight"]}
    dq, dkv, ff = cfg.d_attn, cfg.d_kv, cfg.ffn.d_ff
    attn_bias = cfg.attn.qkv_bias or cfg.attn.out_bias
    for i in range(cfg.n_layers):
        b, h = f"blocks.{i}.", f"model.layers.{i}."
        q, k, v = sd[b + "attn.qkv.weight"].split([dq, dkv, dkv])
        out |= {h + "self_attn.q_proj.weight": q, h + "self_attn.k_proj.weight": k,
                h + "self_attn.v_proj.weight": v, h + "self_attn.o_proj.weight": sd[b + "attn.out.weight"],
                h + "input_layernorm.weight": sd[b + "norm1.weight"],
                h + "post_attention_layernorm.weight": sd[b + "norm2.weight"]}
        if attn_bias:
            qb, kb, vb = _bias(sd, b + "attn.qkv.bias", dq + 2 * dkv).split([dq, dkv, dkv])
            out |= {h + "self_attn.q_proj.bias": qb, h + "self_attn.k_proj.bias": kb,
                    h + "self_attn.v_proj.bias": vb, h + "self_attn.o_proj.bias": _bias(sd, b + "attn.out.bias", cfg.d_model)}
        gate, up = sd[b + "ffn.w_in.weight"].split([ff, ff])
        out |= {h + "mlp.gate_proj.weight": gate, h + "mlp.up_proj.weight": up,
                h + "mlp.down_proj.weight": sd[b + "ffn.w_out.weight"]}
        if cfg.ffn.bias:
            gb, ub = sd[b + "ffn.w_in.bias"].split([ff, ff])
            out |= {h + "mlp.gate_proj.bias": gb, h + "mlp.up_proj.bias": ub,
                    h + "mlp.down_proj.bias": sd[b + "ffn.w_out.bias"]}
    if not cfg.tied_embeddings:
        out["lm_head.weight"] = sd["lm_head.weight"]
    return out


def llama_config(cfg: ModelConfig, rope_theta: float, norm_eps: float, max_len: int) -> dict[str, Any]:
    return {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": cfg.vocab_size,
        "hidden_size": cfg.d_model, "intermediate_size": cfg.ffn.d_ff, "num_hidden_layers": cfg.n_layers,
        "num_attention_heads": cfg.attn.n_heads, "num_key_value_heads": cfg.n_kv_heads, "head_dim": cfg.head_dim,
        "hidden_act": HF_ACT[get_kind(cfg.ffn.kind).activation], "max_position_embeddings": max_len,
        "rms_norm_eps": norm_eps, "rope_theta": rope_theta,
        "rope_parameters": {"rope_type": "default", "rope_theta": rope_theta},
        "tie_word_embeddings": cfg.tied_embeddings, "attention_bias": cfg.attn.qkv_bias or cfg.attn.out_bias,
        "mlp_bias": cfg.ffn.bias, "torch_dtype": "float32", "bos_token_id": None, "eos_token_id": None,
        "pad_token_id": None,
    }


def gpt2_tensors(cfg: ModelConfig, sd: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
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
            h + "mlp.c_fc.weight": sd[b + "ffn.w_in.weight"].t(), h + "mlp.c_fc.bias": _bias(sd, b + "ffn.w_in.bias", ff),
            h + "mlp.c_proj.weight": sd[b + "ffn.w_out.weight"].t(),
            h + "mlp.c_proj.bias": _bias(sd, b + "ffn.w_out.bias", d),
        }
    if not cfg.tied_embeddings:
        out["lm_head.weight"] = sd["lm_head.weight"]
    return out


def gpt2_config(cfg: ModelConfig, norm_eps: float) -> dict[str, Any]:
    return {
        "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "vocab_size": cfg.vocab_size,
        "n_embd": cfg.d_model, "n_layer": cfg.n_layers, "n_head": cfg.attn.n_heads, "n_inner": cfg.ffn.d_ff,
        "n_positions": cfg.max_positions, "activation_function": GPT2_ACT[get_kind(cfg.ffn.kind).activation],
        "layer_norm_epsilon": norm_eps, "tie_word_embeddings": cfg.tied_embeddings, "resid_pdrop": 0.0,
        "embd_pdrop": 0.0, "attn_pdrop": 0.0, "torch_dtype": "float32", "bos_token_id": None,
        "eos_token_id": None,
    }


def export_model(model: torch.nn.Module, out_dir: str | Path) -> Path:
    """Write ``model`` (a :class:`ffnlab.nn.DecoderLM`) as a Hugging Face folder."""
    from safetensors.torch import save_file

    cfg: ModelConfig = model.cfg  # type: ignore[assignment]
    layout = layout_for(cfg)
    out = Path(out_dir)
    require(not out.exists() or not any(out.iterdir()), f"{out} exists and is not empty; choose an empty folder")
    sd = {k: v.detach().cpu() for k, v in model.state_dict().items()}
    if layout == "llama":
        tensors = llama_tensors(cfg, sd)
        config = llama_config(cfg, model.rope_theta, model.norm_eps, model.max_seq_len)  # type: ignore[arg-type]
    else:
        tensors = gpt2_tensors(cfg, sd)
        config = gpt2_config(cfg, model.norm_eps)  # type: ignore[arg-type]
    _write_folder(out, lambda tmp: (
        save_file({k: v.contiguous().clone() for k, v in tensors.items()}, str(tmp / "model.safetensors"),
                  metadata={"format": "pt"}),
        (tmp / "config.json").write_text(json.dumps(config, indent=2))))
    return out


def _write_folder(out: Path, fill: Callable[[Path], Any]) -> None:
    """Run ``fill`` on a new temporary folder beside ``out``, then rename it to ``out``: a killed
    export leaves no half folder that would block its rerun (and a full disk is one error line)."""
    from safetensors import SafetensorError

    out.parent.mkdir(parents=True, exist_ok=True)
    remove_stale(out.parent, hint=out.name)  # what a killed export of this folder left (marked as ffnlab's)
    try:
        with staged_dir(out) as tmp:
            fill(tmp)
    except SafetensorError as e:  # a full disk, a quota: not an OSError in safetensors
        raise FfnlabError(f"cannot write {out} ({str(e).splitlines()[0][:200]}); nothing was written") from None


def load_run_model(run_dir: str | Path, checkpoint: str | None = None) -> torch.nn.Module:
    """Rebuild a run's model and load its latest (or the named) checkpoint's weights."""
    from ffnlab.training import runconfig
    from ffnlab.training.checkpoint import checkpoint_dirs, latest_checkpoint, load_checkpoint
    from ffnlab.training.memory import check_fits
    from ffnlab.training.nn import build_model

    run = Path(run_dir)
    require((run / "config.yaml").is_file() and (run / "model.json").is_file(),
            f"{run} is not an ffnlab run folder (no config.yaml/model.json)")
    cfg = runconfig.load(run / "config.yaml")
    ckpt = (confined(run / "checkpoints", safe_name(checkpoint, "--checkpoint"), "--checkpoint")
            if checkpoint else latest_checkpoint(run))  # a name inside checkpoints/, never a path
    try:
        mcfg = ModelConfig.from_dict(read_mapping(run / "model.json", "run model file", fmt="JSON")["model"])
    except (KeyError, TypeError, ValueError) as e:
        raise FfnlabError(f"{run}/model.json is corrupt ({show(str(e), 200)})") from None
    check_fits(cfg, "cpu", vocab_size=mcfg.vocab_size, gpu=None)
    model = build_model(mcfg, max_seq_len=cfg.train.seq_len, rope_theta=cfg.model.rope_theta,
                        norm_eps=cfg.model.norm_eps)
    if checkpoint and (ckpt is None or not ckpt.is_dir()):
        names = [c.name for c in checkpoint_dirs(run)]
        raise FfnlabError(f"{run} has no checkpoint {checkpoint!r}; it has: {', '.join(names) or 'none'}")
    require(ckpt is not None and ckpt.is_dir(), f"{run} has no checkpoint to export")
    load_checkpoint(ckpt, model, None)
    return model.eval()
