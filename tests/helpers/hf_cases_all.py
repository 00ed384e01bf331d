"""Small random configs for every causal-LM model type transformers ships (the fallback suite).

A type ffnlab translates gets its hand-written case (:func:`hf_cases.case`); every other type gets
its config class's own keys shrunk to small random values (:data:`SMALL`), and the handful whose
keys must agree with each other (Mamba head shapes, layer-type lists) get the overrides in
:data:`FIXES`. Encoder-decoder types and the few that cannot be built here are listed with the
reason (:data:`SKIP`).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from hf_cases import MODEL_TYPES as TRANSLATED
from hf_cases import case

SMALL: dict[str, list[int]] = {  # key (when the class has it as an integer) -> choices
    "hidden_size": [32, 64], "d_model": [32, 64], "n_embd": [32, 64],
    "num_attention_heads": [4], "n_head": [4], "num_heads": [4], "n_heads": [4],
    "num_key_value_heads": [2, 4], "num_kv_heads": [2], "head_dim": [8, 16],
    "intermediate_size": [48, 96], "ffn_dim": [96], "n_inner": [96], "d_ff": [96], "ffn_hidden_size": [96],
    "num_hidden_layers": [2, 3], "n_layer": [2], "num_layers": [2], "n_layers": [2],
    "vocab_size": [97, 128], "moe_intermediate_size": [16, 24], "shared_expert_intermediate_size": [16, 32],
    "num_experts": [4, 6], "n_routed_experts": [4, 6], "num_local_experts": [4, 6], "moe_num_experts": [4],
    "num_experts_per_tok": [2], "max_position_embeddings": [64], "n_positions": [64],
    "linear_num_key_heads": [2], "linear_num_value_heads": [4], "linear_key_head_dim": [8],
    "linear_value_head_dim": [8], "kv_lora_rank": [16], "q_lora_rank": [24], "qk_rope_head_dim": [8],
    "qk_nope_head_dim": [8], "v_head_dim": [8], "mamba_d_state": [8], "ssm_state_size": [8],
    "state_size": [8], "time_step_rank": [8], "n_group": [1], "topk_group": [1], "first_k_dense_replace": [1],
    "mlp_intermediate_size": [48],
}
TOKENS = ("pad_token_id", "bos_token_id", "eos_token_id", "decoder_start_token_id")


def _mamba_heads(c: dict[str, Any]) -> dict[str, Any]:
    """Mamba-2 mixers need heads x head width = expand x hidden."""
    return {"mamba_n_heads": 4, "mamba_d_head": 2 * c["hidden_size"] // 4, "mamba_expand": 2, "mamba_n_groups": 1}


FIXES: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "bamba": _mamba_heads,
    "granitemoehybrid": _mamba_heads,
    "mamba2": lambda c: {"expand": 2, "num_heads": 2 * c["hidden_size"] // c["head_dim"], "n_groups": 1},
    "lfm2_moe": lambda c: {"layer_types": ["conv", "full_attention", "conv"][: c["num_hidden_layers"]],
                           "num_dense_layers": 1},
    "dots1": lambda c: {"n_shared_experts": 1, "moe_intermediate_size": 16, "n_routed_experts": 4,
                        "num_experts_per_tok": 2},
    "gemma3n_text": lambda c: {"num_kv_shared_layers": 0, "hidden_size_per_layer_input": 8,
                               "layer_types": ["sliding_attention", "full_attention", "full_attention"][
                                   : c["num_hidden_layers"]]},
    "nemotron": lambda c: {"head_dim": c["hidden_size"] // 4, "num_key_value_heads": 2},
    "falcon_h1": lambda c: {**_mamba_heads(c), "mamba_d_ssm": 2 * c["hidden_size"]},
    "dots3_note_text": lambda c: {"num_key_value_heads": c["num_attention_heads"]},
    "cohere_compass_text": lambda c: {"rope_parameters": {
        t: {"rope_type": "default", "rope_theta": 10000.0} for t in ("full_attention", "sliding_attention")}},
    "gemma4_assistant": lambda c: {"text_config": {"hidden_size_per_layer_input": 0, "num_hidden_layers": 2,
                                                   "vocab_size_per_layer_input": 0,
                                                   "hidden_size": 32, "intermediate_size": 64, "vocab_size": 97,
                                                   "num_attention_heads": 2, "num_key_value_heads": 1,
                                                   "head_dim": 16}},
    "qwen4_exp_text": lambda c: {"indexer_n_heads": 2, "indexer_kv_heads": 1, "indexer_head_dim": 32,
                                 "indexer_budget": 8, "indexer_compress_ratio": 4},
    "qwen4_exp": lambda c: {"text_config": {k: v for k, v in small_case("qwen4_exp_text", 0).items()
                                            if k != "model_type"}},
    "zaya": lambda c: {"num_experts_per_tok": 1},
    "kolibri1_1": lambda c: {"head_dim": 16,
                             "index_num_heads": 1},  # its NVFP4 key/value rounding needs head_dim % 16 == 0 (5.25)
    "reformer": lambda c: {"is_decoder": True, "axial_pos_embds": False},
}
# keys not to shrink for a type (its layer pattern is fixed by other keys)
KEEP: dict[str, tuple[str, ...]] = {"zamba": ("num_hidden_layers",), "zamba2": ("num_hidden_layers",)}
SKIP: dict[str, str] = {
    "gemma3n": "its vision tower needs the timm library",
    "musicgen": "an encoder-decoder (text encoder + audio decoder)",
    "musicgen_melody": "an encoder-decoder (text encoder + audio decoder)",
}


def small_case(model_type: str, seed: int) -> dict[str, Any]:
    """A small config.json dict for ``model_type`` (random but fixed by ``seed``)."""
    if model_type in TRANSLATED:
        return case(model_type, seed)
    from transformers import CONFIG_MAPPING

    rng = random.Random(f"{model_type}-{seed}")
    try:
        base = CONFIG_MAPPING[model_type]().to_dict()
    except Exception:  # noqa: BLE001 - some classes need keys their defaults leave out
        base = {}
    out: dict[str, Any] = {"model_type": model_type}
    keep = KEEP.get(model_type, ())
    for key, choices in SMALL.items():
        value = base.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and key not in keep:
            out[key] = rng.choice(choices)
    for key in TOKENS:
        if key in base:
            out[key] = 0
    fix = FIXES.get(model_type)
    if fix:
        out.update(fix(out))
    return out


def with_token_ids(config: dict[str, Any]) -> dict[str, Any]:
    """``config`` with token ids inside a tiny vocabulary (the classes' defaults may lie outside)."""
    d = {**config}
    for key in ("pad_token_id", "bos_token_id", "eos_token_id"):
        d.setdefault(key, 0)
    if isinstance(d.get("text_config"), dict):
        d["text_config"] = {"pad_token_id": 0, "bos_token_id": 0, "eos_token_id": 0, **d["text_config"]}
    return d


def causal_lm_types() -> list[str]:
    """Every model type with a causal-LM class in this transformers, encoder-decoders left out."""
    from transformers.models.auto import modeling_auto as m
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    enc_dec = set(m.MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES) | set(m.MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES)
    return [mt for mt in sorted(m.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES)
            if mt not in enc_dec and mt in CONFIG_MAPPING_NAMES]
