"""The second adversarial pass's count inputs, rebuilt from the stored default configs: 61
mutations (where the key exists) of each translated type's default in ``hf_counts_all.json``.

``tests/data/hf_second_pass.json`` keeps transformers' verdict on each (its total, or "refused"),
written once under the pinned transformers:

    PYTHONPATH=src:tests/helpers python tests/helpers/hf_second_pass.py --write   # minutes

``tests/sizing/hf/test_counts_second_pass.py`` recounts every one with ffnlab's translators alone.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from hf_counts_all import load
from paths import DATA

PATH = DATA / "hf_second_pass.json"
INT_KEYS = ("hidden_size", "num_hidden_layers", "intermediate_size", "num_attention_heads", "num_key_value_heads",
            "vocab_size", "head_dim", "n_embd", "n_layer", "n_head", "d_model", "num_layers",
            "moe_intermediate_size", "num_experts", "num_local_experts", "n_routed_experts", "n_shared_experts",
            "num_experts_per_tok", "shared_expert_intermediate_size", "n_inner", "ffn_dim", "d_ff", "num_heads",
            "n_heads", "n_layers")
LAYER_KEYS = ("num_hidden_layers", "n_layer", "num_layers", "n_layers")


def mutations(c: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The pass's mutations of config ``c``, by name."""
    out: dict[str, dict[str, Any]] = {}
    for k in INT_KEYS:
        v = c.get(k)
        if isinstance(v, int) and not isinstance(v, bool):
            out |= {f"str-{k}": {**c, k: str(v)}, f"float-{k}": {**c, k: float(v)}, f"frac-{k}": {**c, k: v + 0.5},
                    f"bool-{k}": {**c, k: True}, f"neg-{k}": {**c, k: -v}, f"zero-{k}": {**c, k: 0},
                    f"big-{k}": {**c, k: 10**7 if k == "vocab_size" else v * 3}, f"list-{k}": {**c, k: [v, v]}}
    d, h = c.get("hidden_size"), c.get("num_attention_heads")
    if isinstance(d, int) and isinstance(h, int) and h:
        out |= {"head-dim-3": {**c, "head_dim": 3}, "head-dim-half": {**c, "head_dim": max(1, d // h // 2)},
                "head-dim-str": {**c, "head_dim": str(d // h)}}
    out |= {
        "kv-heads-3": {**c, "num_key_value_heads": 3}, "kv-heads-null": {**c, "num_key_value_heads": None},
        "tie-str-false": {**c, "tie_word_embeddings": "false"}, "tie-0": {**c, "tie_word_embeddings": 0},
        "cross-attn": {**c, "add_cross_attention": True, "is_decoder": True}, "null-vocab": {**c, "vocab_size": None},
        "null-layers": {k: (None if k in LAYER_KEYS else v) for k, v in c.items()},
        "missing-all-sizes": {k: v for k, v in c.items() if k not in INT_KEYS},
        "bias-on": {**c, "attention_bias": True, "mlp_bias": True, "bias": True, "use_bias": True},
        "topk-gt-experts": {**c, "num_experts_per_tok": 999}, "null-head-dim": {**c, "head_dim": None},
        "pretraining-tp": {**c, "pretraining_tp": 2}, "unicode-key": {**c, "hidden_siz\u00e9": 999,
                                                                      "\u202ehidden_size": 999},
        "extra-nested": {**c, "text_config": {"hidden_size": 16}} if "text_config" not in c else {**c,
                                                                                                  "text_config": None},
    }
    return out


def cases() -> dict[str, dict[str, Any]]:
    """id (type/mutation) -> config.json, for every type ffnlab translates."""
    from ffnlab.sizing.hf import SUPPORTED_MODEL_TYPES

    defaults = {r["id"].split("/")[0]: r["config"] for r in load()["records"]
                if r["id"].endswith("/default") and r["status"] == "exact"}
    return {f"{mt}/{name}": config for mt in SUPPORTED_MODEL_TYPES if mt in defaults
            for name, config in mutations(defaults[mt]).items()}


def main(argv: list[str]) -> None:
    import transformers
    from hf_counts_all import reference

    verdicts: dict[str, int | str] = {}
    with tempfile.TemporaryDirectory():
        for cid, config in cases().items():
            ref = reference(config)
            verdicts[cid] = ref.get("total", "refused")
    print(f"{len(verdicts)} configs, {sum(v == 'refused' for v in verdicts.values())} refused by transformers")
    if "--write" in argv:
        body = ",\n".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in verdicts.items())
        PATH.write_text(f'{{"transformers": "{transformers.__version__}", "verdicts": {{\n{body}\n}}}}\n')


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    main(sys.argv[1:])
