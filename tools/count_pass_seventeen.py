"""The seventeenth adversarial count pass's inputs and their verdicts: ``tests/data/hf_counts_seventeenth_pass.json``.

Each case is a config.json made from a stored default (``hf_counts_all.exact_defaults``) or written out by
hand; transformers' verdict (``hf_counts_all.reference``: its own model built on the meta device) and
audit's (``hf_counts_all.audited``) are each taken in a subprocess under a time limit (transformers itself
may not end). The figures table goes to stdout; ``--write`` stores every case both sides answered in time
(total, auto class and class as transformers built them; a finding's id where audit is off).

    PYTHONPATH=src:tests/helpers python tools/count_pass_seventeen.py            # the table only
    PYTHONPATH=src:tests/helpers python tools/count_pass_seventeen.py --write    # and the stored file
    PYTHONPATH=src:tests/helpers python tools/count_pass_seventeen.py --only olmoe  # ids containing olmoe
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from count_pass_child import defaults as _defaults
from count_pass_child import edit as _edit
from count_pass_child import records_of, verdicts

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "data" / "hf_counts_seventeenth_pass.json"
TIMEOUT_S = 45
# the finding a case audit is off on is stored as, by the pass's class of the case (the test file's LABELS)
FINDING_OF = {"estimate": "Z2"}

def _verdicts(batch: list[tuple[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    return verdicts(batch, TIMEOUT_S)


def cases() -> dict[str, tuple[str, dict[str, Any]]]:
    """id -> (class of the pass, config)."""
    d = _defaults()
    out: dict[str, tuple[str, dict[str, Any]]] = {}

    def add(cls: str, name: str, config: dict[str, Any]) -> None:
        out[f"{cls}/{config['model_type']}/{name}"] = (cls, config)

    def switch(layers: int, sparse: int, experts: int, **more: Any) -> dict[str, Any]:
        return {
            "model_type": "switch_transformers",
            "d_model": 8,
            "d_kv": 4,
            "d_ff": 8,
            "num_heads": 2,
            "vocab_size": 32,
            "num_layers": layers,
            "num_decoder_layers": layers,
            "num_sparse_encoder_layers": sparse,
            "num_sparse_decoder_layers": sparse,
            "num_experts": experts,
            **more,
        }

    # the build-cost estimate where the modules are no sum of products of the counts: Switch Transformers'
    # sparse layers are every (layers // sparse)-th layer (a floor), NLLB-MoE's every sparse_step-th
    for layers, sparse, experts in [(1_000, 4, 500), (1_000, 5, 300), (2_000, 4, 200), (600, 4, 400), (40, 4, 1_000)]:
        add("estimate", f"layers={layers}-sparse={sparse}-experts={experts}", switch(layers, sparse, experts))
    for layers, step, experts in [(200, 8, 500), (100, 50, 2_000)]:
        add(
            "estimate",
            f"layers={layers}-sparse_step={step}-experts={experts}",
            _edit(
                d["nllb-moe"],
                encoder_layers=layers,
                decoder_layers=layers,
                encoder_sparse_step=step,
                decoder_sparse_step=step,
                num_experts=experts,
            ),
        )
    # lists of ints that are no stack and sum past the 10,000-layer ceiling: HunYuan-MoE's experts per layer,
    # RegNet's widths (facebook/regnet-y-10b-seer's hidden_sizes sum to 45,450)
    hy = d["hunyuan_v1_moe"]
    for experts in ([6_000, 6_000], [5_001, 5_000], [10_001, 1], [3, 10_001]):
        add("lists", f"num_experts={json.dumps(experts)}", _edit(hy, num_experts=experts))
    add("lists", "moe_topk=[10001,10001]", _edit(hy, moe_topk=[10_001, 10_001]))
    add(
        "lists",
        "regnet-y-10b-seer",
        {
            "model_type": "regnet",
            "depths": [2, 7, 17, 1],
            "hidden_sizes": [2_020, 4_040, 11_110, 28_280],
            "groups_width": 1_010,
            "layer_type": "y",
            "embedding_size": 32,
            "num_channels": 3,
        },
    )
    add(
        "lists",
        "regnet-widths-5001-5001",
        {
            "model_type": "regnet",
            "depths": [1, 1],
            "hidden_sizes": [5_001, 5_001],
            "groups_width": 8,
            "embedding_size": 8,
        },
    )
    # lists of layer indices inside the model whose entries sum past the ceiling: every layer of 150 listed
    # (the largest index, 149, is tried past the last layer, where it grows nothing)
    for mt, key in (
        ("qwen3_next", "mlp_only_layers"),
        ("llama4_text", "moe_layers"),
        ("llama4_text", "no_rope_layers"),
    ):
        if mt in d:
            add("lists", f"150-layers-{key}=range(150)", _edit(d[mt], num_hidden_layers=150, **{key: list(range(150))}))
            add(
                "lists",
                f"150-layers-{key}=range(149)+[10001]",
                _edit(d[mt], num_hidden_layers=150, **{key: [*range(149), 10_001]}),
            )
    # untried model types: the stored default, a deeper stack, and its experts at 300 over 300 layers
    for mt in (
        "nllb-moe",
        "jetmoe",
        "cohere2_moe",
        "sarvam_moe",
        "param2moe",
        "exaone_moe",
        "granitemoeshared",
        "glm4_moe_lite",
        "mimo_v2_flash",
        "hy_v3",
        "laguna",
        "xlstm",
        "solar_open",
        "zaya",
        "olmo_hybrid",
        "rwkv",
        "mobilebert",
        "regnet",
        "segformer",
        "pvt_v2",
        "reformer",
        "prophetnet",
        "xlnet",
    ):
        if mt not in d:
            continue
        base = d[mt]
        add("types", "default", base)
        for key in ("num_hidden_layers", "num_layers", "encoder_layers"):
            if isinstance(base.get(key), int):
                add("types", f"{key}=7", _edit(base, **{key: 7}))
                for ek in ("num_experts", "num_local_experts", "n_routed_experts"):
                    if isinstance(base.get(ek), int):
                        add("types", f"{key}={ek}=300", _edit(base, **{key: 300, ek: 300}))
                break
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
            or (
                r["status"] == "off"
                and r["class_of_pass"] in FINDING_OF
                and "total" in r["ref"]
                and "refused" in r["audit"]
            )
        ]
        OUT.write_text(dump({"transformers": records[0]["transformers"], "records": keep}))


if __name__ == "__main__":
    main(sys.argv[1:])
