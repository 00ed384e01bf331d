"""The sixteenth adversarial count pass's inputs and their verdicts: ``tests/data/hf_counts_sixteenth_pass.json``.

Each case is a config.json made from a stored default (``hf_counts_all.exact_defaults``) or written out by
hand; transformers' verdict (``hf_counts_all.reference``: its own model built on the meta device) and
audit's (``hf_counts_all.audited``) are each taken in a subprocess under a time limit (transformers itself
may not end). The figures table goes to stdout; ``--write`` stores every case both sides answered in time
(total, auto class and class as transformers built them; a finding's id where audit is off).

    PYTHONPATH=src:tests/helpers python tools/count_pass_sixteen.py            # the table only
    PYTHONPATH=src:tests/helpers python tools/count_pass_sixteen.py --write    # and the stored file
    PYTHONPATH=src:tests/helpers python tools/count_pass_sixteen.py --only olmoe  # ids containing olmoe
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from count_pass_child import defaults as _defaults
from count_pass_child import drop as _drop
from count_pass_child import edit as _edit
from count_pass_child import records_of, verdicts

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "data" / "hf_counts_sixteenth_pass.json"
TIMEOUT_S = 30
# the finding a case audit is off on is stored as, by the pass's class of the case (the test file's LABELS)
FINDING_OF = {"indices": "Y2"}

def _verdicts(batch: list[tuple[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    return verdicts(batch, TIMEOUT_S)


def cases() -> dict[str, tuple[str, dict[str, Any]]]:
    """id -> (class of the pass, config)."""
    d = _defaults()
    out: dict[str, tuple[str, dict[str, Any]]] = {}

    def add(cls: str, name: str, config: dict[str, Any]) -> None:
        out[f"{cls}/{config['model_type']}/{name}"] = (cls, config)

    # MoE with odd expert counts, top-k past the experts, shared experts of 0 / null / bool
    for mt, key, topk in [
        ("olmoe", "num_experts", "num_experts_per_tok"),
        ("flex_olmo", "num_experts", None),
        ("minimax", "num_local_experts", None),
        ("gpt_oss", "num_local_experts", None),
        ("jamba", "num_experts", None),
        ("kimi_linear", "num_experts", None),
        ("lfm2_moe", "num_experts", None),
    ]:
        for n in (1, 5, 7):
            add("moe", f"{key}={n}", _edit(d[mt], **{key: n}))
        add("moe", f"{key}=true", _edit(d[mt], **{key: True}))
        add("moe", f"{key}=null", _edit(d[mt], **{key: None}))
        add("moe", f"{key}=4.0", _edit(d[mt], **{key: 4.0}))
        if topk:
            add("moe", f"{topk}=9", _edit(d[mt], **{topk: 9}))
    for mt, key in [
        ("deepseek_v3", "n_shared_experts"),
        ("dots1", "n_shared_experts"),
        ("ernie4_5_moe", "moe_num_shared_experts"),
        ("longcat_flash", "zero_expert_num"),
    ]:
        for v in (0, None, True, False, -1, 3):
            add("moe", f"{key}={json.dumps(v)}", _edit(d[mt], **{key: v}))
    add("moe", "first_k_dense_replace=-1", _edit(d["deepseek_v3"], first_k_dense_replace=-1))
    add("moe", "first_k_dense_replace=99", _edit(d["deepseek_v3"], first_k_dense_replace=99))
    add("moe", "moe_layer_interval=0", _edit(d["ernie4_5_moe"], moe_layer_interval=0))
    add("moe", "moe_layer_start_index=-1", _edit(d["ernie4_5_moe"], moe_layer_start_index=-1))
    add("moe", "moe_layer_end_index=1", _edit(d["ernie4_5_moe"], moe_layer_end_index=1))
    for topk in ([3], [3, 3, 3], 3, [1, 4]):
        add("moe", f"moe_topk={json.dumps(topk)}", _edit(d["hunyuan_v1_moe"], moe_topk=topk))
    for experts in ([5, 3], [5], [5, 3, 2], 1):
        add("moe", f"num_experts={json.dumps(experts)}", _edit(d["hunyuan_v1_moe"], num_experts=experts))
    add("moe", "num_shared_expert=[1,0]", _edit(d["hunyuan_v1_moe"], num_shared_expert=[1, 0]))
    add("moe", "num_shared_expert=0", _edit(d["hunyuan_v1_moe"], num_shared_expert=0))

    # layer_types lists shorter / longer than the layers, other per-layer lists
    for mt in ("lfm2_moe", "qwen3_next", "apertus", "seed_oss", "arcee", "exaone4", "lfm2"):
        n = d[mt].get("num_hidden_layers", 2)
        kinds = {
            "lfm2_moe": ("conv", "full_attention"),
            "lfm2": ("conv", "full_attention"),
            "qwen3_next": ("linear_attention", "full_attention"),
        }.get(mt, ("full_attention", "sliding_attention"))
        for m in (1, n + 1, 3 * n):
            add("lists", f"layer_types-len-{m}-of-{n}", _edit(d[mt], layer_types=[kinds[i % 2] for i in range(m)]))
        add("lists", "layer_types=null", _edit(d[mt], layer_types=None))
        add("lists", "layer_types=[]", _edit(d[mt], layer_types=[]))
    add("lists", "full_attn_idxs=[0,5]", _edit(d["lfm2"], full_attn_idxs=[0, 5]))
    add("lists", "full_attn_idxs=[]", _edit(d["lfm2"], full_attn_idxs=[]))
    add("lists", "hybrid_layer_ids=[0,1,5]", _edit(d["zamba2"], hybrid_layer_ids=[0, 1, 5]))
    add(
        "lists",
        "num_hidden_layers=3+hybrid_layer_ids=[1]",
        _edit(d["zamba2"], num_hidden_layers=3, hybrid_layer_ids=[1]),
    )
    add("lists", "attn_layer_indices=[0,7]", _edit(d["falcon_h1"], attn_layer_indices=[0, 7]))
    add("lists", "attn_layer_indices=[0,7]", _edit(d["bamba"], attn_layer_indices=[0, 7]))
    for pattern in ("M*", "M*E-", "MEMEMEMEME"):
        add("lists", f"hybrid_override_pattern={pattern}", _edit(d["nemotron_h"], hybrid_override_pattern=pattern))
    add("lists", "mlp_layer_types-short", _edit(d["qwen3_next"], mlp_only_layers=[0, 9]))
    add(
        "lists",
        "linear_attn_config-kda_layers",
        _edit(
            d["kimi_linear"],
            linear_attn_config={
                "kda_layers": [1, 2, 9],
                "full_attn_layers": [],
                "num_heads": 4,
                "head_dim": 8,
                "short_conv_kernel_size": 4,
            },
        ),
    )
    add(
        "lists",
        "swin-depths-9999",
        {
            "model_type": "swin",
            "hidden_size": 8,
            "embed_dim": 8,
            "num_heads": [1],
            "depths": [9_999],
            "image_size": 8,
            "patch_size": 4,
            "window_size": 2,
        },
    )
    add(
        "lists",
        "swin-depths-10001",
        {
            "model_type": "swin",
            "hidden_size": 8,
            "embed_dim": 8,
            "num_heads": [1],
            "depths": [10_001],
            "image_size": 8,
            "patch_size": 4,
            "window_size": 2,
        },
    )

    # lists of layer indices (not stacks) whose entries sum past the 10,000-layer ceiling: an index past the
    # last layer is ignored by transformers; the list's trials (its largest entry at 1 and 2) move an index
    # inside the model and change which layers are dense / sparse / attention
    idx = [
        ("qwen3_next", "mlp_only_layers"),
        ("flint", "mlp_only_layers"),
        ("kolibri1_1", "mlp_only_layers"),
        ("llama4_text", "moe_layers"),
        ("llama4_text", "no_rope_layers"),
        ("bamba", "attn_layer_indices"),
        ("zamba2", "hybrid_layer_ids"),
        ("lfm2", "full_attn_idxs"),
        ("smollm3", "no_rope_layers"),
        ("mistral_large4", "no_rope_layers"),
    ]
    for mt, key in idx:
        if mt not in d:
            continue
        for value in ([10_001], [20_000], [0, 10_001], [9_999, 2], [1, 10_000]):
            add("indices", f"{key}={json.dumps(value)}", _edit(d[mt], **{key: value}))
    for mt in ("qwen3_vl_moe", "qwen3_omni_moe"):
        if mt in d and isinstance(d[mt].get("text_config"), dict):
            for value in ([10_001], [0, 10_001]):
                add(
                    "indices",
                    f"text_config.mlp_only_layers={json.dumps(value)}",
                    _edit(d[mt], text_config__mlp_only_layers=value),
                )
    if "mllama" in d:
        for value in ([10_001], [0, 10_001]):
            add(
                "indices",
                f"text_config.cross_attention_layers={json.dumps(value)}",
                _edit(d["mllama"], text_config__cross_attention_layers=value),
            )

    # keys named like a layer count (or counting layers by another name) beside few layers: the probe's trials
    named = [
        ("lfm2_moe", "num_dense_layers"),
        ("afmoe", "num_dense_layers"),
        ("afmoe", "global_attn_every_n_layers"),
        ("deepseek_v3", "num_mtp_layers"),
        ("deepseek_v3", "first_k_dense_replace"),
        ("glm4_moe", "num_mtp_layers"),
        ("glm4_moe", "first_k_dense_replace"),
        ("dots1", "max_window_layers"),
        ("dots1", "first_k_dense_replace"),
        ("mistral_large4", "text_config.first_k_dense_replace"),
    ]
    for mt, key in named:
        if mt not in d:
            continue
        for n in (9_999, 10_001):
            add("named", f"{key}={n}", _edit(d[mt], **{key.replace(".", "__"): n}))
    if "mistral_large4" in d:
        for value in ([10_001], [0, 10_001], [9_999, 2]):
            add(
                "indices",
                f"text_config.kv_source_layers={json.dumps(value)}",
                _edit(d["mistral_large4"], text_config__kv_source_layers=value),
            )

    # types new to transformers 5.25 with per-layer lists made or cut as the config is read (DeepSeek-V4 cuts
    # layer_types / mlp_layer_types to num_hidden_layers and folds the legacy compress_ratios / num_hash_layers
    # in; MiniCPM5-MoE and AXK2 read first_k_dense_replace / moe_layer_freq without keeping them)
    v4 = d.get("deepseek_v4")
    if v4 is not None:
        for key, value in [
            ("layer_types", ["sliding_attention"] * 10_001),
            ("layer_types", ["sliding_attention"] * 3),
            ("layer_types", ["sliding_attention"]),
            ("mlp_layer_types", ["moe"] * 10_001),
            ("mlp_layer_types", ["hash_moe"]),
            ("compress_ratios", [128] * 80),
            ("compress_ratios", [0, 4, 128]),
            ("compress_ratios", [4]),
            ("num_hash_layers", 10_001),
            ("num_hash_layers", 0),
            ("num_nextn_predict_layers", 10_001),
            ("hc_mult", 1),
            ("n_shared_experts", 0),
            ("o_groups", 1),
        ]:
            shown = f"{len(value)}x{value[0]}" if isinstance(value, list) and len(value) > 3 else json.dumps(value)
            add("new-types", f"{key}={shown}", _edit(v4, **{key: value}))
    for mt in ("minicpm5_moe", "axk2", "bailing_hybrid", "beam"):
        if mt in d:
            for key, value in [
                ("first_k_dense_replace", 10_001),
                ("first_k_dense_replace", 0),
                ("moe_layer_freq", 2),
                ("moe_layer_freq", [1, 0]),
                ("num_hidden_layers", 1),
            ]:
                add("new-types", f"{key}={json.dumps(value)}", _edit(d[mt], **{key: value}))

    # nested sub-configs: tie flags and nulls inside text_config
    for mt in ("glm4v_moe", "qwen3_vl_moe", "aria"):
        for tie in (True, False, None):
            add("nested", f"tie_word_embeddings={json.dumps(tie)}", _edit(d[mt], tie_word_embeddings=tie))
            add(
                "nested",
                f"text_config.tie_word_embeddings={json.dumps(tie)}",
                _edit(d[mt], text_config__tie_word_embeddings=tie),
            )
        add("nested", "text_config.head_dim=null", _edit(d[mt], text_config__head_dim=None))
        add("nested", "text_config.num_key_value_heads=null", _edit(d[mt], text_config__num_key_value_heads=None))
        add("nested", "text_config=null", _edit(d[mt], text_config=None))
        add("nested", "text_config.num_hidden_layers=true", _edit(d[mt], text_config__num_hidden_layers=True))

    # nulls, explicit head_dim, floats, bools, negatives at the top level
    for mt in ("seed_oss", "arcee", "exaone4", "apertus", "bamba", "falcon_h1", "granitemoehybrid", "zamba2"):
        add("values", "head_dim=null", _edit(d[mt], head_dim=None))
        add("values", "head_dim=12", _edit(d[mt], head_dim=12))
        add("values", "num_key_value_heads=null", _edit(d[mt], num_key_value_heads=None))
        add("values", "num_hidden_layers=2.0", _edit(d[mt], num_hidden_layers=2.0))
        add("values", "num_hidden_layers=true", _edit(d[mt], num_hidden_layers=True))
        add("values", "num_hidden_layers=-1", _edit(d[mt], num_hidden_layers=-1))
        add("values", "num_hidden_layers=0", _edit(d[mt], num_hidden_layers=0))
        add("values", "intermediate_size=null", _edit(d[mt], intermediate_size=None))
        add("values", "tie_word_embeddings=false", _edit(d[mt], tie_word_embeddings=False))
        add("values", "tie_word_embeddings=null", _edit(d[mt], tie_word_embeddings=None))
        add("values", "no-num_hidden_layers", _drop(d[mt], "num_hidden_layers"))
    return out


def run(only: str | None = None) -> list[dict[str, Any]]:
    chosen = {cid: case for cid, case in cases().items() if not only or only in cid}
    return records_of(chosen, _verdicts([(cid, config) for cid, (_, config) in chosen.items()]))


def dump(doc: dict[str, Any]) -> str:
    """The stored file's text: one record a line (some configs hold lists of 10,001 entries)."""
    lines = [json.dumps(r, sort_keys=True) for r in doc["records"]]
    return f'{{"transformers": {json.dumps(doc["transformers"])}, "records": [\n' + ",\n".join(lines) + "\n]}\n"


def main(argv: list[str]) -> None:
    only = argv[argv.index("--only") + 1] if "--only" in argv else None
    records = run(only)
    tally: dict[str, dict[str, int]] = {}
    for r in records:
        tally.setdefault(r["class_of_pass"], {}).setdefault(r["status"], 0)
        tally[r["class_of_pass"]][r["status"]] += 1
    print(json.dumps(tally))
    if "--write" in argv:
        keep = [
            {k: r[k] for k in ("id", "config", "total", "auto", "class")}
            | ({"finding": FINDING_OF[r["class_of_pass"]]} if r["status"] == "off" else {})
            for r in records
            if r["status"] in ("exact", "refused")
            or (r["status"] == "off" and r["class_of_pass"] in FINDING_OF and "total" in r["ref"])
        ]
        OUT.write_text(dump({"transformers": records[0]["transformers"], "records": keep}))


if __name__ == "__main__":
    main(sys.argv[1:])
