"""One config per class of miscount the reliability issue reported, checked against transformers
itself (the model its auto mappings give, built on the meta device): ``audit`` gives transformers'
total, or refuses what transformers refuses. Each failed before its fix (see the commit bodies)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("transformers")

from ffnlab.errors import FfnlabError  # noqa: E402
from ffnlab.sizing.audit import audit  # noqa: E402
from ffnlab.training.hf_count import count_with_transformers, model_class  # noqa: E402

SMALL_TEXT = {"hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4,
              "num_key_value_heads": 2, "vocab_size": 128}
CASES: dict[str, dict[str, Any]] = {
    # no language-model head: get_input_embeddings raised NotImplementedError (a traceback)
    "clip-default": {"model_type": "clip"},
    "siglip-default": {"model_type": "siglip"},
    # vision-language models: the whole model, not only the language part
    "qwen3_vl": {"model_type": "qwen3_vl", "text_config": {**SMALL_TEXT, "head_dim": 16}},
    "got_ocr2": {"model_type": "got_ocr2", "text_config": {"model_type": "qwen2", **SMALL_TEXT}},
    "blt": {"model_type": "blt"},
    # translated wrappers: transformers' reference model has the vision tower (or, for
    # qwen2_5_vl_text, no LM head): counted through transformers
    "gemma3": {"model_type": "gemma3", "text_config": {**SMALL_TEXT, "head_dim": 16}},
    "qwen2_5_vl_text": {"model_type": "qwen2_5_vl_text", **SMALL_TEXT},
    # a sub-config's type: the auto mappings give no class, which one line says
    "align_text_model": {"model_type": "align_text_model"},
    # a null sliding window with explicit layer types builds
    "exaone4-null-window": {"model_type": "exaone4", **SMALL_TEXT, "sliding_window": None,
                            "layer_types": ["full_attention", "full_attention"]},
    "exaone4-null-pattern": {"model_type": "exaone4", **SMALL_TEXT, "sliding_window_pattern": None,
                             "layer_types": ["sliding_attention", "full_attention"]},
    # a size per layer is not a layer count
    "gemma3n_text-per-layer-vocab": {"model_type": "gemma3n_text", **SMALL_TEXT, "num_kv_shared_layers": 0,
                                     "hidden_size_per_layer_input": 8, "vocab_size_per_layer_input": 262_144,
                                     "layer_types": ["sliding_attention", "full_attention"]},
    "gpt2-cross-attention": {"model_type": "gpt2", "n_embd": 64, "n_head": 4, "n_layer": 2, "vocab_size": 128,
                             "add_cross_attention": True},
    "phi-head-dim": {"model_type": "phi", **SMALL_TEXT, "head_dim": 32},
    "phi-head-dim-qk-norm": {"model_type": "phi", **SMALL_TEXT, "head_dim": 32, "qk_layernorm": True},
    "cohere2-null-head-dim": {"model_type": "cohere2", **SMALL_TEXT, "head_dim": None},
    "falcon-head-dim": {"model_type": "falcon", **SMALL_TEXT, "head_dim": 32},
    "olmoe-head-dim": {"model_type": "olmoe", **SMALL_TEXT, "num_experts": 4, "head_dim": 32},
    "starcoder2-head-dim": {"model_type": "starcoder2", **SMALL_TEXT, "head_dim": 32},
    "llama-0-layers": {"model_type": "llama", **SMALL_TEXT, "num_hidden_layers": 0},
    "qwen2_moe-0-wide-shared": {"model_type": "qwen2_moe", **SMALL_TEXT, "num_experts": 4,
                                "moe_intermediate_size": 16, "shared_expert_intermediate_size": 0},
}


def transformers_total(config: dict[str, Any]) -> int | str:
    """transformers' own count of the reference model, or its refusal (the exception's text)."""
    import torch
    import transformers

    fields = {k: v for k, v in config.items() if k != "model_type"}
    try:
        cfg = transformers.CONFIG_MAPPING[config["model_type"]].from_dict(fields)
        with torch.device("meta"):
            model = model_class(transformers, config["model_type"]).from_config(cfg)
    except Exception as e:  # noqa: BLE001 - any refusal
        return f"refused: {e}"
    return sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("name", sorted(CASES))
def test_audit_counts_what_transformers_builds(name: str, tmp_path: Path) -> None:
    config = CASES[name]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    expected = transformers_total(config)
    if isinstance(expected, str):
        with pytest.raises(FfnlabError, match="transformers .* (could not build|maps no model class)"):
            audit(str(path), count_with_transformers)
        return
    row = audit(str(path), count_with_transformers)
    assert row.params_total == expected, (name, row.params_total, expected, row.note)


def test_a_model_without_lm_head_says_what_was_counted(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "clip"}))
    row = audit(str(path), count_with_transformers)
    assert row.note is not None and "no language-model head" in row.note and "CLIPModel (AutoModel)" in row.note
    assert "AutoModel: base model" in row.verdict
