"""Count a model whose ``model_type`` has no ffnlab translator by letting transformers build it.

The model is built on PyTorch's ``meta`` device (shapes only, no memory, no weights, nothing
downloaded) from the config.json, and its parameters are summed once each, so the total is
transformers' own count exactly. The FFN / attention / embedding / norm split is read from
parameter names (:func:`classify`). torch and transformers are imported inside
:func:`count_with_transformers` only, so the rest of :mod:`ffnlab.sizing` stays torch-free and
a model type with a translator never pays for this import.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ffnlab.errors import FfnlabError, require
from ffnlab.sizing.widths import alignment

LABEL = "counted by transformers"
INSTALL_HINT = "install ffnlab[hf] (transformers) to count it by building the model on the meta device"
PARTS = ("embedding", "attention", "ffn", "norms", "other")

# Module-name pieces that decide a parameter's part; the first module on the path that matches
# wins, and within one module name the norm test comes first (``post_attention_layernorm`` is a
# norm, ``self_attn.q_norm`` belongs to attention because ``self_attn`` comes first).
_NORM = re.compile(r"norm|^ln(_|f|\d|$)")
_EMBEDDING = re.compile(r"embed|^(wte|wpe|lm_head|shared|word_embeddings|position_embeddings)$")
_FFN = re.compile(r"mlp|ffn|feed_?forward|moe|expert|^(fc1|fc2|c_fc|dense_h_to_4h|dense_4h_to_h)$")
_ATTENTION = re.compile(r"attn|attention")
_RULES = (("norms", _NORM), ("embedding", _EMBEDDING), ("ffn", _FFN), ("attention", _ATTENTION))

# config keys that hold the FFN width, by family convention (first present wins)
D_FF_KEYS = ("intermediate_size", "ffn_dim", "ffn_hidden_size", "d_ff", "n_inner", "inner_dim")


def classify(name: str) -> str:
    """The part (one of :data:`PARTS`) a parameter belongs to, from its dotted name."""
    for module in name.split(".")[:-1]:
        for part, pattern in _RULES:
            if pattern.search(module.lower()):
                return part
    return "other"


def read_config(path: str | Path) -> tuple[Path, dict[str, Any]]:
    """The config.json at ``path`` (a file or a folder holding one) and its parsed object."""
    p = Path(path)
    if p.is_dir():
        p = p / "config.json"
    require(p.is_file(), f"no such file: {p}")
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise FfnlabError(f"{p}: not valid JSON ({e})") from None
    require(isinstance(data, dict), f"{p}: config.json must contain a JSON object")
    return p, data


def untranslated_type(data: dict[str, Any], supported: tuple[str, ...]) -> str | None:
    """The config's ``model_type`` when it is a string ffnlab has no translator for, else None."""
    mt = data.get("model_type")
    return mt if isinstance(mt, str) and mt not in supported else None


def _model_class(transformers: Any, model_type: str) -> Any:
    """The Auto class that builds the whole model: seq2seq, else causal LM, else the bare model."""
    from transformers.models.auto import modeling_auto as m

    for names, auto in ((m.MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES, transformers.AutoModelForSeq2SeqLM),
                        (m.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES, transformers.AutoModelForCausalLM)):
        if model_type in names:
            return auto
    return transformers.AutoModel


def count_with_transformers(data: dict[str, Any], supported: tuple[str, ...]) -> dict[str, Any]:
    """Build the model of config.json ``data`` on the meta device; return its counts by part.

    Raises :class:`FfnlabError` with one line when transformers is missing (naming the
    ``supported`` types and the fallback) or cannot build this model type.
    """
    model_type = data.get("model_type")
    try:
        import torch
        import transformers
        from transformers import CONFIG_MAPPING
    except ImportError:
        raise FfnlabError(f"config.json model_type {model_type!r} is not supported; supported: "
                          f"{', '.join(supported)}; or {INSTALL_HINT}") from None
    require(model_type in CONFIG_MAPPING,
            f"config.json model_type {model_type!r} is not supported by ffnlab (supported: "
            f"{', '.join(supported)}) and not known to transformers {transformers.__version__}")
    fields = {k: v for k, v in data.items() if k != "model_type"}
    try:
        hf_cfg = CONFIG_MAPPING[model_type].from_dict(fields)
        auto = _model_class(transformers, model_type)
        with torch.device("meta"):
            model = auto.from_config(hf_cfg)
    except Exception as e:  # noqa: BLE001 - any failure inside transformers is the config's problem
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise FfnlabError(f"transformers {transformers.__version__} could not build model_type "
                          f"{model_type!r} from this config.json: {first}") from None
    parts = dict.fromkeys(PARTS, 0)
    for name, p in model.named_parameters():  # each shared (tied) tensor once
        parts[classify(name)] += p.numel()
    embedding = model.get_input_embeddings() if hasattr(model, "get_input_embeddings") else None
    return {
        "class": type(model).__name__, "transformers_version": transformers.__version__,
        "parts": parts, "total": sum(parts.values()),
        "d_model": int(embedding.weight.shape[1]) if embedding is not None else None,
        "config": hf_cfg.to_dict(),
    }


def _first_int(cfg: dict[str, Any], keys: tuple[str, ...]) -> int | None:
    for k in keys:
        v = cfg.get(k)
        if isinstance(v, int) and not isinstance(v, bool) and v > 0:
            return v
    return None


def audit_row(path: Path, data: dict[str, Any], counted: dict[str, Any]) -> dict[str, Any]:
    """An audit row (the keys of :func:`ffnlab.sizing.audit.audit_config`) for a counted model."""
    cfg, parts, total = counted["config"], counted["parts"], counted["total"]
    d_model = counted["d_model"] or _first_int(cfg, ("hidden_size", "d_model", "n_embd"))
    d_ff = _first_int(cfg, D_FF_KEYS)
    non_embedding = total - parts["embedding"]
    raw = d_ff / d_model if d_ff and d_model else None
    label = f"{LABEL} {counted['transformers_version']} ({counted['class']} on the meta device)"
    verdict = (f"{label}: FFN {parts['ffn']:,} of {non_embedding:,} non-embedding parameters"
               + (f"; d_ff/d_model {raw:.3g} from config key"
                  f" {next(k for k in D_FF_KEYS if cfg.get(k) == d_ff)}" if raw else ""))
    return {
        "name": path.parent.name if path.name == "config.json" and path.parent.name else path.stem,
        "family": "", "model_type": data.get("model_type"), "d_model": d_model, "d_ff": d_ff,
        "ffn_kind": None, "gated": None,
        "n_layers": _first_int(cfg, ("num_hidden_layers", "n_layer", "num_layers")),
        "n_heads": _first_int(cfg, ("num_attention_heads", "n_head", "num_heads")),
        "n_kv_heads": _first_int(cfg, ("num_key_value_heads", "num_attention_heads", "n_head")),
        "vocab_size": _first_int(cfg, ("vocab_size",)), "n_experts": None, "top_k": None,
        "params_total": total, "params_non_embedding": non_embedding, "params_ffn": parts["ffn"],
        "params_attention": parts["attention"], "params_embedding": parts["embedding"],
        "params_norms": parts["norms"], "params_other": parts["other"], "params_active": None,
        "ffn_share": parts["ffn"] / non_embedding if non_embedding else None,
        "ratio_raw": raw, "ratio_param_matched": None, "deviation_raw": raw / 4 - 1 if raw else None,
        "deviation_param_matched": None, "alignment": alignment(d_ff) if d_ff else None,
        "verdict": verdict, "source": str(path), "note": None, "counted_by": "transformers",
    }


def audit_untranslated(path: str | Path, supported: tuple[str, ...]) -> dict[str, Any] | None:
    """The audit row of a config.json whose model_type has no translator, or None if it has one."""
    p, data = read_config(path)
    if untranslated_type(data, supported) is None:
        return None
    return audit_row(p, data, count_with_transformers(data, supported))
