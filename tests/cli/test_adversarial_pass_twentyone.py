r"""A twenty-first adversarial pass over the CLI's promises, by someone who wrote none of the fixes it
checks, aimed at the twentieth pass's mends (L1, L2 a sweep record without spec seeds read with its
runs' seeds; L3 a layer count past 100,000 refused by ``ConfigKeys.check`` before any translator makes
a per-layer list) with new inputs of their classes.

The pass threw 83 inputs. Those that might grow ran in a subprocess under a 40 s timeout and a 3 GB
address-space limit (``audit config.json``), recording exit status, stderr lines and traceback; the
sweep records were given to ``report`` in-process (HF_HUB_OFFLINE=1), recording exit status, stderr,
strict JSON of what it wrote and the bytes of sw/runs before and after:

* layer counts of translated types (54; llama, mistral, mixtral, qwen2_moe and falcon
  ``num_hidden_layers``, gpt2 ``n_layer``): 100,000, 100,001, 1e9 (a float), 100000.0, 100001.0,
  "100001", -100001, true, 10**30. 100,000 is audited (exit 0), 100,001 and 10**30 refused in one line
  "ffnlab sizes at most 100,000", floats, strings and true refused in one line as transformers'
  config refuses them; -100001 audited (exit 0, its count not compared with transformers in this
  pass) for llama, mistral, mixtral, gpt2 and falcon, refused in one line for qwen2_moe as a tensor
  size.
* per-layer keys and vision-language nesting (19, two of them the unchanged deepseek_v3 and
  llava): deepseek_v3 with 100,001 layers, with ``first_k_dense_replace`` 10**9 (and at 100,000
  layers); qwen2_moe ``mlp_only_layers`` [10**9], ``mlp_only_layers`` of 10**6 indices,
  ``decoder_sparse_step`` 10**9; qwen2 ``max_window_layers`` 10**9; ``layer_types`` of 10**6 entries
  for llama, mistral (sliding) and qwen2 (refused by the 16 MiB file bound); llava whose
  ``text_config.num_hidden_layers`` is 100,001, 10**9, 1e9, "100001", -1, whose
  ``vision_config.num_hidden_layers`` is 10**9, whose text_config is a Mixtral of 10**9 layers. Each
  answered in under 10 s; the three deepseek/qwen2_moe counts above equal what transformers 5.25
  builds on the meta device (1,463,744; 2,026,752; 2,095,872).
* sweep records given to ``report`` (10): spec seeds null, [], absent beside runs of seeds 0, 2, 5
  (non-contiguous), [0, 2, 5] beside those runs, absent with one arm lacking seed 2, absent with one
  arm's runs all removed, the same with spec seeds [0, 1, 2]; scale arms with seeds absent and one
  scale arm a seed short, spec seeds null on a scaled record.

Root (``id -u`` 0) ran this pass.

No findings: every input was answered as promised (per class, inputs / failures: layer counts 54 / 0;
per-layer keys and nesting 19 / 0; sweep records 10 / 0).

Noted, not broken promises: the refusal of 100,001 layers repeats the bound twice in its one line
("... hundreds of times the deepest published model (and config.json key 'num_hidden_layers' =
100,001 layers: ffnlab builds at most 10,000 layers through transformers)"); a layer count written as
a float (1e9) is not held to the layer bound but refused as transformers' config refuses a float;
spec seeds null are read as absent (the runs' seeds, named in report.md); an arm whose runs were all
removed leaves a one-arm sweep, reported alike with and without spec seeds (the fake spec names no
arms), its claims "needs-experiment".

The pass changed nothing in src/.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from adversarial_cli import SRC, strict_json
from fake_sweeps import fake_sweep
from fuzz_cli import assert_refused, cli, snapshot


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


TINY_LLAMA = {
    "model_type": "llama",
    "hidden_size": 256,
    "intermediate_size": 688,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "vocab_size": 1000,
    "max_position_embeddings": 512,
    "architectures": ["LlamaForCausalLM"],
}
TYPES = {
    "llama": ("num_hidden_layers", TINY_LLAMA),
    "mixtral": (
        "num_hidden_layers",
        {
            **TINY_LLAMA,
            "model_type": "mixtral",
            "num_local_experts": 8,
            "num_experts_per_tok": 2,
            "architectures": ["MixtralForCausalLM"],
        },
    ),
    "gpt2": (
        "n_layer",
        {
            "model_type": "gpt2",
            "n_embd": 64,
            "n_layer": 2,
            "n_head": 4,
            "vocab_size": 100,
            "n_positions": 64,
            "architectures": ["GPT2LMHeadModel"],
        },
    ),
}


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (3_000_000_000, 3_000_000_000))


def _audit(tmp_path: Path, cfg: dict) -> tuple[int, list[str], str]:
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    p = subprocess.run(
        [sys.executable, "-m", "ffnlab", "audit", "config.json", "--json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": SRC, "HF_HUB_OFFLINE": "1"},
        timeout=40,
        preexec_fn=_limited,
    )
    assert "Traceback" not in p.stderr, p.stderr[-500:]
    return p.returncode, [x for x in p.stderr.splitlines() if x.strip()], p.stdout


# -- layer counts at the bound ----------------------------------------------------------------------------------------


def test_a_layer_count_past_the_bound_is_one_line_in_a_bounded_process(tmp_path):
    # oracle: the bound's own figure, config.MAX_LAYERS = 100,000 (L3's mend); in a subprocess
    # under 3 GB, as a layer count that slipped past the bound would grow without end
    code, lines, _ = _audit(tmp_path, {**TYPES["mixtral"][1], "num_hidden_layers": 100_001})
    assert code == 2 and len(lines) == 1 and "ffnlab sizes at most 100,000" in lines[0], (code, lines[:2])


BOUND = [("llama", 100_001), ("gpt2", 10**30)]


@pytest.mark.parametrize("kind, value", BOUND, ids=[f"{t}-{v}" for t, v in BOUND])
def test_a_layer_count_past_the_bound_is_one_line(tmp_path, kind, value):
    # oracle: as above; in-process, as the subprocess of this pass refused each in under 10 s
    key, cfg = TYPES[kind]
    (tmp_path / "config.json").write_text(json.dumps({**cfg, key: value}))
    assert_refused(cli("audit", "config.json", where=tmp_path), f"{value:,} layers: ffnlab sizes at most 100,000")


def test_a_layer_count_at_the_bound_is_audited(tmp_path):
    # oracle: config.MAX_LAYERS = 100,000 is within the bound; the count is linear in the depth, so
    # 100,000 layers hold 50,000 times the per-layer parameters of the 2-layer model
    key, cfg = TYPES["gpt2"]
    counts = []
    for n in (2, 4, 100_000):
        (tmp_path / "config.json").write_text(json.dumps({**cfg, key: n}))
        r = cli("audit", "config.json", "--json", where=tmp_path)
        assert r.code == 0, r.stderr[-500:]
        counts.append(strict_json(r.stdout)[0]["params_total"])
    per_layer = counts[1] - counts[0]
    assert per_layer > 0 and counts[2] == counts[0] + per_layer * (100_000 - 2) // 2


NOT_INT = [(t, v) for t in ("mixtral", "gpt2") for v in (1e9, "100001", True)]


@pytest.mark.parametrize("kind, value", NOT_INT, ids=[f"{t}-{v!r}" for t, v in NOT_INT])
def test_a_layer_count_that_is_no_integer_is_one_line(tmp_path, kind, value):
    # oracle: transformers' config refuses a non-int num_hidden_layers (the message quotes it)
    key, cfg = TYPES[kind]
    (tmp_path / "config.json").write_text(json.dumps({**cfg, key: value}))
    assert_refused(cli("audit", "config.json", where=tmp_path), f"must be int, got {value!r}")


LLAVA = {
    "model_type": "llava",
    "text_config": TINY_LLAMA,
    "vision_config": {
        "model_type": "clip_vision_model",
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "image_size": 32,
        "patch_size": 16,
    },
    "architectures": ["LlavaForConditionalGeneration"],
}


def test_a_nested_layer_count_past_the_build_bound_is_one_line(tmp_path):
    # oracle: the build bound of transformers-built types, 10,000 layers; the text model a Mixtral
    text = {**TYPES["mixtral"][1], "num_hidden_layers": 10**9}
    code, lines, _ = _audit(tmp_path, {**LLAVA, "text_config": text})
    assert code == 2 and len(lines) == 1, (code, lines[:2])
    assert "text_config.num_hidden_layers' = 1,000,000,000 layers: ffnlab builds at most 10,000" in lines[0]


@pytest.mark.parametrize("value", [100_001, 10**9])
def test_a_nested_vision_layer_count_past_the_build_bound_is_one_line(tmp_path, value):
    # oracle: as above; in-process, as the subprocess of this pass refused it in 6 s under 3 GB
    (tmp_path / "config.json").write_text(
        json.dumps({**LLAVA, "vision_config": {**LLAVA["vision_config"], "num_hidden_layers": value}})
    )
    assert_refused(cli("audit", "config.json", where=tmp_path), f"= {value:,} layers: ffnlab builds at most 10,000")


# -- per-layer keys past the layer count ------------------------------------------------------------------------------

QWEN2_MOE = {
    **TINY_LLAMA,
    "model_type": "qwen2_moe",
    "num_experts": 8,
    "num_experts_per_tok": 2,
    "moe_intermediate_size": 64,
    "shared_expert_intermediate_size": 128,
    "architectures": ["Qwen2MoeForCausalLM"],
}
DEEPSEEK_V3 = {
    "model_type": "deepseek_v3",
    "hidden_size": 256,
    "intermediate_size": 512,
    "moe_intermediate_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "n_routed_experts": 8,
    "n_shared_experts": 1,
    "num_experts_per_tok": 2,
    "first_k_dense_replace": 1,
    "q_lora_rank": 64,
    "kv_lora_rank": 32,
    "qk_rope_head_dim": 16,
    "qk_nope_head_dim": 32,
    "v_head_dim": 32,
    "vocab_size": 1000,
    "n_group": 1,
    "topk_group": 1,
    "architectures": ["DeepseekV3ForCausalLM"],
}
# oracle: transformers 5.25 built each on the meta device in this pass (sum of parameters' numel)
PER_LAYER = [
    ("deepseek-first-k-dense-1e9", {**DEEPSEEK_V3, "first_k_dense_replace": 10**9}, 1_463_744),
    ("qwen2-moe-mlp-only-1e9", {**QWEN2_MOE, "mlp_only_layers": [10**9]}, 2_026_752),
    ("qwen2-moe-sparse-step-1e9", {**QWEN2_MOE, "decoder_sparse_step": 10**9}, 2_095_872),
]


@pytest.mark.parametrize("cfg, built", [c[1:] for c in PER_LAYER], ids=[c[0] for c in PER_LAYER])
def test_a_huge_per_layer_index_is_counted_as_transformers_builds_it(tmp_path, cfg, built):
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    r = cli("audit", "config.json", "--json", where=tmp_path)
    assert r.code == 0, r.stderr[-500:]
    assert [m["params_total"] for m in strict_json(r.stdout)] == [built]


def test_a_million_layer_types_is_refused_by_the_file_bound(tmp_path):
    # oracle: the 16 MiB bound on a config.json (16,777,216 bytes); this file is 18,000,253
    (tmp_path / "config.json").write_text(json.dumps({**TINY_LLAMA, "layer_types": ["full_attention"] * 10**6}))
    assert_refused(cli("audit", "config.json", where=tmp_path), "over the 16,777,216-byte limit")


# -- sweep records and their seeds ------------------------------------------------------------------------------------

ARMS = {"gelu-r4": (0.0, 1.0), "swiglu-r2.67": (-0.05, 1.1)}
SCALED = {"S.gelu-r4": (0.0, 1.0), "S.swiglu-r2.67": (-0.05, 1.1)}
SCALES = {
    "scales": [{"name": "S", "model": {"d_model": 128}}],
    "arms": [{"name": "gelu-r4", "ffn": {"kind": "gelu"}}, {"name": "swiglu-r2.67", "ffn": {"kind": "swiglu"}}],
}


def _report_of(tmp_path: Path, edit: object, seeds: int = 3, scaled: bool = False) -> tuple[object, bool]:
    fake_sweep(tmp_path / "sw", SCALED if scaled else ARMS, seeds, 0.01, spec_extra=SCALES if scaled else None)
    path = tmp_path / "sw" / "sweep.json"
    record = json.loads(path.read_text())
    edit(record)  # type: ignore[operator]
    path.write_text(json.dumps(record))
    before = snapshot(tmp_path / "sw" / "runs")
    r = cli("report", "sw", where=tmp_path)
    return r, snapshot(tmp_path / "sw" / "runs") != before


def _spec(key: str, value: object) -> object:
    return lambda rec: rec["spec"].__setitem__(key, value)


def _renumber(spec_seeds: list[int] | None) -> object:
    """Runs of seeds 0, 1, 2 renamed seeds 0, 2, 5 (the folders keep their names; report reads
    sweep.json's run names), spec seeds as given (None: absent)."""
    to = {0: 0, 1: 2, 2: 5}

    def edit(rec: dict) -> None:
        if spec_seeds is None:
            rec["spec"].pop("seeds", None)
        else:
            rec["spec"]["seeds"] = spec_seeds
        for r in rec["runs"]:
            r["seed"] = to[r["seed"]]

    return edit


def _drop(arm: str, seed: int, absent: bool = True) -> object:
    def edit(rec: dict) -> None:
        if absent:
            rec["spec"].pop("seeds", None)
        rec["runs"] = [r for r in rec["runs"] if not (r["arm"] == arm and r["seed"] == seed)]

    return edit


REFUSED = [
    ("spec-empty", _spec("seeds", []), 3, False, "seeds must be a non-empty list, got []"),
    ("no-seeds-arm-short", _drop("swiglu-r2.67", 2), 3, False, "has no run of seed(s) 2"),
    ("no-seeds-arm-short-first", _drop("gelu-r4", 0), 3, False, "has no run of seed(s) 0"),
    ("scaled-no-seeds-arm-short", _drop("S.swiglu-r2.67", 1), 2, True, "has no run of seed(s) 1"),
]


@pytest.mark.parametrize("edit, seeds, scaled, said", [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED])
def test_report_of_a_record_whose_seeds_are_off_is_one_line(tmp_path, edit, seeds, scaled, said):
    # oracle: the spec file's rules and L2's mend (each arm runs each of its runs' seeds once)
    r, changed = _report_of(tmp_path, edit, seeds, scaled)
    assert_refused(r, said)
    assert not changed and not (tmp_path / "sw" / "report").exists()


REPORTED = [
    ("spec-null", _spec("seeds", None), "0, 1, 2"),
    ("no-seeds-0-2-5", _renumber(None), "0, 2, 5"),
    ("spec-0-2-5", _renumber([0, 2, 5]), "0, 2, 5"),
]


@pytest.mark.parametrize("edit, named", [c[1:] for c in REPORTED], ids=[c[0] for c in REPORTED])
def test_report_of_its_runs_seeds_names_them(tmp_path, edit, named):
    # oracle: the seeds the runs ran (0, 2, 5, or 0, 1, 2), three of them in each arm
    r, changed = _report_of(tmp_path, edit)
    assert r.code == 0 and not changed, r.stderr[-500:]
    results = strict_json((tmp_path / "sw" / "report" / "results.json").read_text())
    assert [a["n_seeds"] for a in results["arms"]] == [3, 3]
    assert f", seeds {named}; equivalence margin" in (tmp_path / "sw" / "report" / "report.md").read_text()


@pytest.mark.parametrize(("model_type", "key"), [("llama", "num_hidden_layers"), ("gpt2", "n_layer")])
def test_a_negative_layer_count_counts_as_transformers_builds_it(tmp_path, model_type, key):
    # oracle: transformers 5.25's own model of the same config.json (range(-100001) builds no layer);
    # the pass saw exit 0 and left the count unchecked; the lead compared five types, all equal
    import copy

    from count_passes import audit_config
    from hf_counts_all import exact_defaults, reference

    base = next(v for v in exact_defaults().values() if v.get("model_type") == model_type)
    config = {**copy.deepcopy(base), key: -100001}
    ref = reference(copy.deepcopy(config))
    got = audit_config(copy.deepcopy(config), tmp_path)
    assert ref.get("total") is not None and getattr(got, "params_total", got) == ref["total"], (ref, got)
