"""The eighteenth adversarial count pass's inputs and their verdicts: ``tests/data/hf_counts_eighteenth_pass.json``.

Each case is a config.json made from a stored default (``hf_counts_all.exact_defaults``) or written out by
hand; transformers' verdict (``hf_counts_all.reference``: its own model built on the meta device) and
audit's (``hf_counts_all.audited``) are each taken in a subprocess under a time limit (transformers itself
may not end). The figures table goes to stdout; ``--write`` stores every case both sides answered in time
(total, auto class and class as transformers built them; a finding's id where audit is off).

    PYTHONPATH=src:tests/helpers python tools/count_pass_eighteen.py            # the table only
    PYTHONPATH=src:tests/helpers python tools/count_pass_eighteen.py --write    # and the stored file
    PYTHONPATH=src:tests/helpers python tools/count_pass_eighteen.py --only olmoe  # ids containing olmoe
    PYTHONPATH=src:tests/helpers python tools/count_pass_eighteen.py --cost   # cost rows not stored (minutes)
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from count_pass_child import defaults as _defaults
from count_pass_child import drop as _drop
from count_pass_child import edit as _edit
from count_pass_child import records_of, verdicts

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "data" / "hf_counts_eighteenth_pass.json"
TIMEOUT_S = 45
# the finding a case audit is off on is stored as, by the pass's class of the case (the test file's LABELS)
FINDING_OF: dict[str, str] = {}

def _verdicts(batch: list[tuple[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    return verdicts(batch, TIMEOUT_S)


def cases() -> dict[str, tuple[str, dict[str, Any]]]:
    """id -> (class of the pass, config)."""
    d = _defaults()
    out: dict[str, tuple[str, dict[str, Any]]] = {}

    def add(cls: str, name: str, config: dict[str, Any]) -> None:
        out[f"{cls}/{config['model_type']}/{name}"] = (cls, config)

    # the build-cost estimate on module counts that are polynomial on its grid but not past it: Switch
    # Transformers' sparse layers are every (layers // sparse)-th (sparse written 2 or 3 is no moved count, so
    # the grid of 2-4 layers has them all sparse), NLLB-MoE's every sparse_step-th (a step of 3 held as
    # written; a step of 5 written equal to the heads, held as written with them where 15 over 2 heads is
    # refused: no layer of the grid is sparse, so the experts seem to add nothing)
    for layers, sparse, experts in [(1_000, 2, 200), (1_000, 3, 300), (3_000, 3, 100), (8, 8, 8), (9, 3, 9)]:
        add("estimate", f"layers={layers}-sparse={sparse}-experts={experts}", switch(layers, sparse, experts))
    nllb = d["nllb-moe"]
    for layers, step, experts in [(200, 3, 30), (60, 3, 200), (7, 7, 7)]:
        add(
            "estimate",
            f"layers={layers}-sparse_step={step}-experts={experts}",
            _edit(
                nllb,
                encoder_layers=layers,
                decoder_layers=layers,
                encoder_sparse_step=step,
                decoder_sparse_step=step,
                num_experts=experts,
            ),
        )
    for layers, experts in [(100, 60), (40, 400)]:
        add(
            "estimate",
            f"d_model=15-heads=step=5-layers={layers}-experts={experts}",
            _edit(
                nllb,
                d_model=15,
                encoder_attention_heads=5,
                decoder_attention_heads=5,
                encoder_sparse_step=5,
                decoder_sparse_step=5,
                encoder_layers=layers,
                decoder_layers=layers,
                num_experts=experts,
            ),
        )
    # heads past the held bound (17 > 16) over a width no even count divides: the first small build refused
    add(
        "estimate",
        "d_model=51-heads=17-layers=30-experts=30",
        _edit(
            nllb,
            d_model=51,
            encoder_attention_heads=17,
            decoder_attention_heads=17,
            encoder_layers=30,
            decoder_layers=30,
            encoder_sparse_step=1,
            decoder_sparse_step=1,
            num_experts=30,
        ),
    )
    # index lists held as written whose layers differ past the grid's 2-4 layers; the first dense layers
    q = d["qwen2_moe"]
    add(
        "estimate",
        "40-layers-mlp_only_layers=range(5,40)",
        _edit(q, num_hidden_layers=40, num_experts=400, mlp_only_layers=list(range(5, 40))),
    )
    add(
        "estimate",
        "40-layers-decoder_sparse_step=7",
        _edit(q, num_hidden_layers=40, num_experts=400, decoder_sparse_step=7, mlp_only_layers=[]),
    )
    if "deepseek_v3" in d:
        add(
            "estimate",
            "40-layers-first_k_dense_replace=5",
            _edit(d["deepseek_v3"], num_hidden_layers=40, first_k_dense_replace=5, n_routed_experts=300),
        )
    if "jamba" in d:
        add(
            "estimate",
            "48-layers-periods=5-7",
            _edit(
                d["jamba"],
                num_hidden_layers=48,
                attn_layer_period=5,
                attn_layer_offset=4,
                expert_layer_period=7,
                expert_layer_offset=6,
                num_experts=64,
            ),
        )
    # per-layer lists as long as the layers (cut to the grid's 2-4 entries with them): a pattern that changes
    # past the fifth layer
    qn = d["qwen3_next"]
    for n in (600, 3_000):
        kinds = ["linear_attention"] * 5 + ["full_attention"] * (n - 5)
        add("estimate", f"{n}-layers-layer_types-5-linear-first", _edit(qn, num_hidden_layers=n, layer_types=kinds))
    g3 = d["gemma3_text"]
    add(
        "estimate",
        "700-layers-layer_types-sliding-then-full",
        _edit(g3, num_hidden_layers=700, layer_types=["sliding_attention"] * 6 + ["full_attention"] * 694),
    )
    if "granitemoehybrid" in d:
        gm = d["granitemoehybrid"]
        add(
            "estimate",
            "500-layers-layer_types-attention-after-5",
            _edit(gm, num_hidden_layers=500, layer_types=["mamba"] * 5 + ["attention"] * 495),
        )
    # trials transformers refuses: fewer Switch layers than sparse layers (a sparse step of 0), a layer_types
    # list one short, MobileBERT with no feed-forward network
    add("estimate", "layers=4-sparse=5-experts=300", switch(4, 5, 300))
    add("estimate", "layers=600-sparse=600-experts=0", switch(600, 600, 0))
    add("estimate", "599-layers-layer_types-600", _edit(qn, num_hidden_layers=599, layer_types=kinds[:600]))
    add("estimate", "layers=300-ffns=0", _edit(d["mobilebert"], num_hidden_layers=300, num_feedforward_networks=0))
    # a group of seven counts written apart (the grid past 64 builds: the smallest is held at 2): MobileBERT's
    # layers and stacked feed-forward networks, OneFormer's five stacks (its text stacks built in training)
    add("estimate", "layers=300-ffns=7", _edit(d["mobilebert"], num_hidden_layers=300, num_feedforward_networks=7))
    one = {"model_type": "oneformer", "num_attention_heads": 4, "is_training": True}
    add(
        "estimate",
        "five-stacks-6-to-10",
        {
            **one,
            "encoder_layers": 6,
            "decoder_layers": 7,
            "query_dec_layers": 8,
            "text_encoder_num_layers": 9,
            "text_encoder_proj_layers": 10,
        },
    )
    # the build guard: models whose builds make modules they do not keep (kernels' Func wrappers, MiniMax's
    # discarded attention) or keep modules they did not make (OneFormer's deep copies of its query layers)
    add("guard", "query_dec_layers=1000", {**one, "is_training": False, "query_dec_layers": 1_000})
    add("guard", "num_hidden_layers=3000", _edit(d["mamba"], num_hidden_layers=3_000))
    add("guard", "num_hidden_layers=1000", _edit(d["minimax"], num_hidden_layers=1_000))
    if "falcon_h1" in d:
        add("guard", "num_hidden_layers=1000", _edit(d["falcon_h1"], num_hidden_layers=1_000))
    add("guard", "num_hidden_layers=600", _edit(d["zamba"], num_hidden_layers=600))
    # untried model types: the stored default, 7 layers, every null key, an explicit head_dim, zero layers
    from hf_counts_all import NULL_KEYS

    for mt in UNTRIED:
        if mt not in d:
            continue
        base = d[mt]
        add("types", "default", base)
        for key in ("num_hidden_layers", "num_layers", "encoder_layers", "n_layer"):
            if isinstance(base.get(key), int):
                add("types", f"{key}=7", _edit(base, **{key: 7}))
                add("types", f"{key}=0", _edit(base, **{key: 0}))
                break
        held = _class_keys(mt)
        for key in NULL_KEYS:
            if key in held:
                add("types", f"null-{key}", _edit(base, **{key: None}))
        hidden, heads = base.get("hidden_size"), base.get("num_attention_heads")
        if isinstance(hidden, int) and isinstance(heads, int) and heads:
            add("types", "head_dim=2x", _edit(base, head_dim=2 * (hidden // heads)))
        for key in ("hidden_size", "d_model"):
            if key in base:
                add("types", f"missing-{key}", _drop(base, key))
    return out


def _class_keys(model_type: str) -> set[str]:
    """The keys the model type's config class holds by default (none where it needs arguments)."""
    from transformers import CONFIG_MAPPING

    try:
        return set(CONFIG_MAPPING[model_type]().to_dict())
    except Exception:  # noqa: BLE001 - a class with no default instance
        return set()


def switch(layers: int, sparse: int, experts: int) -> dict[str, Any]:
    """Switch Transformers (d_model 8) with ``layers`` + ``layers`` layers, ``sparse`` of each sparse."""
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
    }


# model types no earlier pass stored (tests/data/hf_counts_*pass*.json)
UNTRIED = (
    "albert",
    "bert-generation",
    "big_bird",
    "biogpt",
    "canine",
    "convbert",
    "ctrl",
    "deberta-v2",
    "diffllama",
    "distilbert",
    "ernie",
    "exaone",
    "fsmt",
    "led",
    "longt5",
    "m2m_100",
    "mt5",
    "nemotron",
    "persimmon",
    "plbart",
    "rembert",
    "roformer",
    "umt5",
    "vaultgemma",
    "xlm",
    "xmod",
    "zamba",
    "internlm3",
    "minicpm3",
    "moonshine",
    "mpnet",
    "gpt_neox_japanese",
    "helium",
    "bitnet",
    "t5gemma",
    "pegasus_x",
)


# the child for the build-cost rows: audit with every build through transformers recorded (the modules its
# model holds), then transformers' own build of the model, each timed
_COST_CHILD = """
import json, sys, tempfile, time
from pathlib import Path
import torch
from ffnlab.training import hf_count
from hf_counts_all import audited
real, held = hf_count._meta_model, []

def meta(*args):
    cfg, model = real(*args)
    held.append(sum(1 for _ in model.modules()))
    return cfg, model

hf_count._meta_model = meta
config = json.loads(sys.argv[1])
t = time.time()
with tempfile.TemporaryDirectory() as tmp:
    got = audited(config, Path(tmp))
row = {"audit": {"total": got.get("total"), "s": round(time.time() - t, 1), "builds": len(held),
                 "modules_built": sum(held)}}
hf_count._meta_model = real
import transformers
t = time.time()
fields = {k: v for k, v in config.items() if k != "model_type"}
cfg = transformers.CONFIG_MAPPING[config["model_type"]].from_dict(fields)
with torch.device("meta"):
    model = hf_count.auto_kind(transformers, config["model_type"])[0].from_config(cfg)
row["transformers"] = {"total": sum(p.numel() for p in model.parameters()), "s": round(time.time() - t, 1),
                       "modules": sum(1 for _ in model.modules())}
print(json.dumps(row))
"""
COST_TIMEOUT_S = 400


def oneformer_swin(blocks: int) -> dict[str, Any]:
    """OneFormer (training: its text stacks built) with five stacks of 6-10 layers over a Swin backbone of
    four stages of ``blocks`` blocks each (a list of stage depths summing to at most 10,000: no listed stack)."""
    return {
        "model_type": "oneformer",
        "num_attention_heads": 4,
        "is_training": True,
        "encoder_layers": 6,
        "decoder_layers": 7,
        "query_dec_layers": 8,
        "text_encoder_num_layers": 9,
        "text_encoder_proj_layers": 10,
        "backbone_config": {
            "model_type": "swin",
            "depths": [blocks] * 4,
            "embed_dim": 16,
            "num_heads": [1, 1, 1, 1],
            "out_features": ["stage1", "stage2", "stage3", "stage4"],
        },
    }


def encodec(quantizers: int) -> dict[str, Any]:
    """EnCodec with ``quantizers`` residual vector quantizers (transformers derives the count from the last
    target bandwidth: 1000 * bandwidth // (frame rate 75 * 10 codebook bits)) and six widths and kernels
    written (each a count the estimate moves alone)."""
    return {
        "model_type": "encodec",
        "hidden_size": 64,
        "num_filters": 8,
        "kernel_size": 5,
        "last_kernel_size": 6,
        "residual_kernel_size": 4,
        "codebook_dim": 12,
        "target_bandwidths": [quantizers * 0.75],
    }


def cost_cases() -> dict[str, dict[str, Any]]:
    """The build-cost rows: models the estimate's small builds hold as written (stage depths summing to at
    most 10,000; a count transformers derives from keys that are no counts)."""
    return {
        **{f"cost/encodec/quantizers={q}": encodec(q) for q in (1_000, 10_000, 70_000)},
        **{f"cost/oneformer/swin-depths={b}x4": oneformer_swin(b) for b in (25, 250, 500)},
        **{f"cost/swin/depths={b}x4": swin(b) for b in (100, 500)},
    }


def swin(blocks: int) -> dict[str, Any]:
    """Swin with four stages of ``blocks`` blocks each (summing to at most 10,000: no listed stack)."""
    return {
        "model_type": "swin",
        "depths": [blocks] * 4,
        "embed_dim": 8,
        "num_heads": [1, 1, 1, 1],
        "image_size": 32,
        "patch_size": 4,
        "window_size": 2,
    }


def cost_rows(rows: dict[str, Any]) -> dict[str, Any]:
    """Each cost case's measured row (a timeout where it ran past :data:`COST_TIMEOUT_S`), those of ``rows``
    (stored before) kept."""
    env = {
        "PYTHONPATH": f"{ROOT / 'src'}:{ROOT / 'tests' / 'helpers'}",
        "PATH": "/usr/bin:/bin",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_VERBOSITY": "error",
    }
    rows = dict(rows)
    for cid, config in cost_cases().items():
        if cid in rows:
            continue
        try:
            done = subprocess.run(
                [sys.executable, "-c", _COST_CHILD, json.dumps(config)],
                capture_output=True,
                text=True,
                env=env,
                cwd=ROOT,
                timeout=COST_TIMEOUT_S,
            )
            line = [x for x in done.stdout.splitlines() if x.startswith("{")]
            rows[cid] = {"config": config, **json.loads(line[-1])} if line else None
        except subprocess.TimeoutExpired:
            rows[cid] = {"config": config, "timeout": COST_TIMEOUT_S}
        print(cid, json.dumps({k: v for k, v in (rows[cid] or {}).items() if k != "config"}), flush=True)
    return rows


def run(only: str | None = None) -> list[dict[str, Any]]:
    chosen = {cid: case for cid, case in cases().items() if not only or only in cid}
    return records_of(chosen, _verdicts([(cid, config) for cid, (_, config) in chosen.items()]))


def dump(doc: dict[str, Any]) -> str:
    """The stored file's text: one record a line (some configs hold lists of 10,001 entries)."""
    lines = [json.dumps(r, sort_keys=True) for r in doc["records"]]
    cost = f'"cost": {json.dumps(doc["cost"], sort_keys=True)},\n' if "cost" in doc else ""
    return f'{{"transformers": {json.dumps(doc["transformers"])},\n{cost}"records": [\n' + ",\n".join(lines) + "\n]}\n"


def main(argv: list[str]) -> None:
    if "--cost" in argv:  # the build-cost rows, stored beside the records already written
        doc = json.loads(OUT.read_text())
        doc["cost"] = cost_rows({} if "--fresh" in argv else doc.get("cost", {}))
        OUT.write_text(dump(doc))
        return
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
        cost = json.loads(OUT.read_text()).get("cost") if OUT.exists() else None
        doc = {"transformers": records[0]["transformers"], "records": keep}
        OUT.write_text(dump({**doc, "cost": cost} if cost else doc))


if __name__ == "__main__":
    main(sys.argv[1:])
