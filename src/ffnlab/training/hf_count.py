"""Count a model ffnlab has no translator for by letting transformers build it on the meta device.

The training-layer half of :mod:`ffnlab.sizing.hf_fallback` (which holds the pure parts: the
parameter classifier and the audit row). torch and transformers are imported when a count runs.
"""

from __future__ import annotations

from typing import Any

from ffnlab.errors import FfnlabError, require
from ffnlab.sizing.hf_fallback import INSTALL_HINT, PARTS, classify


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
