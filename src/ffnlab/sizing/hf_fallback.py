"""Count a model whose ``model_type`` has no ffnlab translator by letting transformers build it.

The model is built on PyTorch's ``meta`` device (shapes only, no memory, no weights, nothing
downloaded) from the config.json, and its parameters are summed once each, so the total is
transformers' own count exactly. The FFN / attention / embedding / norm split is read from
parameter names (:func:`classify`). Building needs torch, so the counter itself lives in the
training layer (:func:`ffnlab.training.hf_count.count_with_transformers`) and is passed in by the
caller (the ``audit`` command does); this module stays pure Python, and a model type with a
translator never pays for the import.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ffnlab.errors import require
from ffnlab.sizing.hf import config_name, read_hf_config
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


def untranslated_type(data: dict[str, Any], supported: tuple[str, ...]) -> str | None:
    """The config's ``model_type`` when it is a string ffnlab has no translator for, else None."""
    mt = data.get("model_type")
    return mt if isinstance(mt, str) and mt not in supported else None


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
        "name": config_name(path),
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


Counter = Callable[[dict[str, Any], tuple[str, ...]], dict[str, Any]]


def audit_untranslated(path: str | Path, supported: tuple[str, ...],
                       counter: Counter | None) -> dict[str, Any] | None:
    """The audit row of a config.json whose model_type has no translator, or None if it has one.

    ``counter`` builds the model and counts it (see the module docstring); without one the row
    cannot be counted and the error names the supported types and the fallback.
    """
    p, data = read_hf_config(path)
    model_type = untranslated_type(data, supported)
    if model_type is None:
        return None
    require(counter is not None, f"config.json model_type {model_type!r} is not supported; supported: "
                                 f"{', '.join(supported)}; `ffnlab audit` counts it with transformers "
                                 f"({INSTALL_HINT})")
    return audit_row(p, data, counter(data, supported))
