"""Sweeps end to end on CPU: control, execution, resume after a kill, analysis, report, Ray."""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from cli_run import assert_usage_error, run

from ffnlab.experiments.analysis import analyse
from ffnlab.experiments.sweep_spec import load_spec, resolve, spec_from_dict

MICRO = {
    "name": "micro", "control": "iso-params", "reference": "gelu-r4", "seeds": [0, 1], "threads_per_worker": 1,
    "base": {"model": {"d_model": 32, "n_layers": 1, "n_heads": 2, "norm": "layernorm"},
             "data": {"corpus": "shakespeare"},
             "train": {"seq_len": 32, "batch_size": 8, "max_steps": 12, "warmup_steps": 2, "eval_every": 4,
                       "eval_tokens": 2048, "checkpoint_every": 4, "tensorboard": False}},
    "arms": [{"name": "gelu-r4", "ffn": {"kind": "gelu", "rule": "ratio", "ratio": 4}},
             {"name": "swiglu-pm4", "ffn": {"kind": "swiglu", "rule": "param-matched", "ratio": 4}}],
}


@pytest.fixture
def micro_spec(tmp_path, tmp_path_factory) -> Path:
    spec = json.loads(json.dumps(MICRO))
    spec["base"]["data"]["cache_dir"] = str(tmp_path_factory.getbasetemp() / "sweep_cache")
    path = tmp_path / "micro.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


@pytest.mark.parametrize("preset", ["golden-quick", "golden", "golden-gpu", "glu-variants", "gated-law",
                                    "scale-trend", "scale-trend-gpu"])
def test_presets_resolve_within_their_control(preset):
    spec = load_spec(preset)
    vocab = 256 if spec.base.get("data", {}).get("tokenizer", "byte") == "byte" else spec.base["data"]["bpe_vocab_size"]
    runs = resolve(spec, vocab)
    scales = [s["name"] + "." for s in spec.scales] or [""]
    assert len(runs) == len(spec.arms) * len(spec.seeds) * len(scales) and len(spec.seeds) >= 2
    key = {"iso-params": "params_non_embedding", "iso-flops": "train_flops_per_token"}.get(spec.control)
    for prefix in scales:  # each model size is controlled against its own reference
        ref = next(r for r in runs if r.arm == prefix + spec.reference)
        for r in (r for r in runs if r.arm.startswith(prefix)):
            if key:
                assert abs(getattr(r, key) / getattr(ref, key) - 1) <= spec.tolerance, (r.run, getattr(r, key))
            else:
                assert r.d_model == ref.d_model


def test_scale_trend_sizes_grow_several_fold():
    for name in ("scale-trend", "scale-trend-gpu"):
        spec = load_spec(name)
        runs = resolve(spec, 256 if name == "scale-trend" else 16384)
        sizes = [next(r.params_non_embedding for r in runs if r.arm == f"{s['name']}.{spec.reference}")
                 for s in spec.scales]
        assert len(sizes) >= 3 and all(b >= 3 * a for a, b in zip(sizes, sizes[1:], strict=False))


def test_presets_hold_the_issue_arms():
    golden = load_spec("golden")
    ratios = {a.ffn.get("ratio") for a in golden.arms if a.ffn["kind"] == "gelu"}
    assert {1, 2, "8/3", 4, 6, 8} <= ratios and len(golden.seeds) >= 3
    assert any(a.ffn == {"kind": "swiglu", "rule": "param-matched", "ratio": 4} for a in golden.arms)
    quick = load_spec("golden-quick")  # ratio 4 and a neighbour on each side, many seeds
    assert {a.ffn["ratio"] for a in quick.arms} == {2, 4, 8} and len(quick.seeds) >= 8
    assert quick.comparisons["ratio_optimal"] == quick.comparisons["convergence_speed"] == ["gelu-r2", "gelu-r8"]
    law = load_spec("gated-law")  # SwiGLU at raw 4 (the law) vs 8/3 (LLaMA), and vs GELU as Shazeer
    arms = {a.name: a.ffn for a in law.arms}
    assert arms[law.comparisons["gated_law"][0]] == {"kind": "swiglu", "rule": "ratio", "ratio": 4}
    assert arms[law.comparisons["gated_law"][1]] == {"kind": "swiglu", "rule": "param-matched", "ratio": 4}
    runs = {r.arm: r for r in resolve(law, 256) if r.seed == 0}
    gated, plain = (runs[a] for a in law.comparisons["glu_vs_plain"])
    assert gated.d_model == plain.d_model and abs(gated.params_non_embedding / plain.params_non_embedding - 1) < 0.01


def test_iso_flops_and_fixed_d_model_controls():
    spec = spec_from_dict({**MICRO, "control": "iso-flops"})
    runs = resolve(spec, 256)
    f = [r.train_flops_per_token for r in runs]
    assert max(f) / min(f) - 1 <= 0.04
    fixed = resolve(spec_from_dict({**MICRO, "control": "fixed-d-model"}), 256)
    assert {r.d_model for r in fixed} == {32}


@pytest.mark.parametrize("bad, fragment", [
    ({"control": "iso-vibes"}, "control"), ({"reference": "nope"}, "reference"), ({"seeds": []}, "seeds"),
    ({"arms": [{"name": "a b", "ffn": {}}]}, "arm name"), ({"colour": 1}, "unknown key"),
    ({"seeds": [0, 0]}, "unique"), ({"tolerance": "two"}, "tolerance"), ({"base": [1]}, "base"),
    ({"claims": ["ratio_optimall"]}, "claims"), ({"comparisons": {"ratio_optimal": ["nope"]}}, "comparisons"),
    ({"comparisons": {"gated_law": ["gelu-r4"]}}, "exactly two"), ({"margin": 2}, "margin"),
])
def test_bad_specs(tmp_path, bad, fragment):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({**MICRO, **bad}))
    assert_usage_error(run("sweep", str(path), "--out", str(tmp_path / "s")), fragment)


def test_micro_sweep_end_to_end_and_claims_evidence(tmp_path, micro_spec):
    out = tmp_path / "sweep"
    p = run("sweep", str(micro_spec), "--out", str(out))
    assert p.returncode == 0, p.stderr[-2000:]
    rep = out / "report"
    results = json.loads((rep / "results.json").read_text())
    assert [a["arm"] for a in results["arms"]] == ["gelu-r4", "swiglu-pm4"]
    assert all(a["n_seeds"] == 2 and math.isfinite(a["val_loss"]) for a in results["arms"])
    html = (rep / "index.html").read_text()
    assert html.count("data:image/png;base64,") == 5 and "The seed's table, filled" in html
    md = (rep / "report.md").read_text()
    assert "| gelu-r4 | 4.000 / 4.000 |" in md and "Provenance" in md
    assert (rep / "arms.csv").read_text().startswith("arm,kind,gated")
    claims = json.loads((rep / "claims.json").read_text())
    assert {"ratio_optimal", "convergence_speed", "glu_vs_plain"} <= set(claims)
    rows = {r["id"]: r for r in json.loads(run("claims", "--evidence", str(rep), "--json").stdout)}
    # two FFN kinds and one ratio: the ratio claim stays open, the speed and GLU claims are decided
    assert claims["ratio_optimal"]["verdict"] == rows["ratio-4-optimal"]["verdict"] == "needs-experiment"
    assert rows["golden-transformer-8pct"]["verdict"] == claims["convergence_speed"]["verdict"]
    assert rows["golden-transformer-8pct"]["numbers"]["from_report"] is True
    # rerunning a finished sweep trains nothing and keeps every file
    before = {f: f.stat().st_mtime_ns for f in (out / "runs").rglob("summary.json")}
    p = run("sweep", str(micro_spec), "--out", str(out), "--no-report")
    assert p.returncode == 0 and "0 run(s) trained" in p.stdout
    assert before == {f: f.stat().st_mtime_ns for f in (out / "runs").rglob("summary.json")}


def test_sweep_resumes_after_being_killed(tmp_path, micro_spec):
    spec = yaml.safe_load(micro_spec.read_text())
    spec["base"]["train"]["max_steps"] = 60
    spec["base"]["train"]["checkpoint_every"] = 10
    micro_spec.write_text(yaml.safe_dump(spec))
    out = tmp_path / "sweep"
    proc = subprocess.Popen([sys.executable, "-m", "ffnlab", "sweep", str(micro_spec), "--out", str(out),
                             "--no-report", "--workers", "1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 180
    while time.time() < deadline:  # kill when one run finished and the next has a checkpoint
        done = list((out / "runs").glob("*/summary.json")) if (out / "runs").exists() else []
        ckpts = list((out / "runs").glob("*/checkpoints/step-*")) if (out / "runs").exists() else []
        if done and len(ckpts) > len(done):
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    time.sleep(1.0)  # the child train process gets SIGTERM with its parent (PR_SET_PDEATHSIG)
    finished = {f.parent.name: f.read_bytes() for f in (out / "runs").glob("*/summary.json")}
    assert 1 <= len(finished) < 4
    p = run("sweep", str(micro_spec), "--out", str(out))
    assert p.returncode == 0, p.stderr[-2000:]
    for name, data in finished.items():  # nothing finished was rerun or overwritten
        assert (out / "runs" / name / "summary.json").read_bytes() == data
    assert len(list((out / "runs").glob("*/summary.json"))) == 4
    assert f"{4 - len(finished)} run(s) trained" in p.stdout


def test_a_different_spec_cannot_reuse_a_sweep_folder(tmp_path, micro_spec):
    out = tmp_path / "sweep"
    assert run("sweep", str(micro_spec), "--out", str(out), "--no-report").returncode == 0
    spec = yaml.safe_load(micro_spec.read_text())
    spec["seeds"] = [0, 1, 2]
    micro_spec.write_text(yaml.safe_dump(spec))
    assert_usage_error(run("sweep", str(micro_spec), "--out", str(out)), "different sweep")
    (out / "sweep.json").unlink()  # even without its record, the runs of the old spec are recognised
    spec["seeds"] = [0, 1]
    spec["base"]["train"]["lr"] = 0.01
    micro_spec.write_text(yaml.safe_dump(spec))
    assert_usage_error(run("sweep", str(micro_spec), "--out", str(out)), "different sweep")
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    assert_usage_error(run("report", str(out), "--out", str(foreign)), "not an ffnlab report")
    assert (foreign / "notes.txt").read_text() == "keep me"


def _fake_sweep(root: Path, curves: dict[str, list[list[float]]], tokens: list[int]) -> None:
    """A sweep folder with given eval curves (arm -> one loss curve per seed)."""
    runs = []
    for arm, per_seed in curves.items():
        kind = "swiglu" if arm.startswith("swiglu") else "gelu"
        for seed, losses in enumerate(per_seed):
            name = f"{arm}-s{seed}"
            d = root / "runs" / name
            d.mkdir(parents=True)
            (d / "metrics.jsonl").write_text("".join(
                json.dumps({"kind": "eval", "step": i, "tokens": t, "val_loss": v}) + "\n"
                for i, (t, v) in enumerate(zip(tokens, losses, strict=True))))
            (d / "summary.json").write_text(json.dumps({
                "status": "finished", "final_val_loss": losses[-1], "final_val_ppl": math.exp(losses[-1]),
                "final_val_bpb": losses[-1] / math.log(2), "wall_s": 1.0, "tokens": tokens[-1],
                "train_flops": 1.0, "device": "cpu", "tokenizer": "byte"}))
            runs.append({"run": name, "arm": arm, "seed": seed, "d_model": 64, "d_ff": 256 if kind == "gelu" else 171,
                         "params_non_embedding": 1000, "train_flops_per_token": 100,
                         "config": {"model": {"ffn": {"kind": kind, "rule": "ratio"}}}})
    spec = {"name": "fake", "control": "iso-params", "tolerance": 0.02, "reference": "gelu-r4",
            "seeds": [0, 1, 2], "base": {}, "description": ""}
    (root / "sweep.json").write_text(json.dumps({"spec": spec, "runs": runs}))


def test_analysis_on_synthetic_curves_with_known_answers(tmp_path):
    tokens = [100 * i for i in range(1, 11)]
    # loss falls linearly in tokens; the second arm needs 25% more tokens for any loss
    ref = [[5.0 - 0.003 * t + e for t in tokens] for e in (0.0, 0.01, -0.01)]
    slow = [[5.0 - 0.003 * t / 1.25 + e for t in tokens] for e in (0.0, 0.01, -0.01)]
    _fake_sweep(tmp_path, {"gelu-r4": ref, "gelu-r2": slow}, tokens)
    result = analyse(tmp_path)
    conv = result["convergence"]
    assert conv["target_loss"] == pytest.approx(max(c[-1] for c in slow + ref))
    r, lo, hi = conv["arms"]["gelu-r2"]["tokens_ratio"]
    assert r == pytest.approx(1.25, abs=0.03) and lo <= r <= hi
    assert result["claims"]["ratio_optimal"]["verdict"] == "true"  # ratio 4 clearly better here
    assert result["claims"]["convergence_speed"]["verdict"] == "true"  # 1.25 >= 1.08, CI above it
    same = [[5.0 - 0.003 * t + e for t in tokens] for e in (0.02, -0.02, 0.0)]
    shutil.rmtree(tmp_path / "runs")
    _fake_sweep(tmp_path, {"gelu-r4": ref, "gelu-r2": same}, tokens)
    claims = analyse(tmp_path)["claims"]
    assert claims["ratio_optimal"]["verdict"] == "inconclusive"  # no difference, too noisy for equivalence
    assert claims["convergence_speed"]["verdict"] == "false"  # no 8% speed-up


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_ray_backend_on_a_local_instance(tmp_path, micro_spec):
    pytest.importorskip("ray")
    ray_bin = Path(sys.executable).parent / "ray"
    port = _free_port()
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    start = subprocess.run([str(ray_bin), "start", "--head", f"--port={port}", "--num-cpus=2",
                            "--include-dashboard=false", "--disable-usage-stats"],
                           capture_output=True, text=True, env=env, timeout=180)
    assert start.returncode == 0, start.stderr[-2000:]
    try:
        out = tmp_path / "sweep"
        p = subprocess.run([sys.executable, "-m", "ffnlab", "sweep", str(micro_spec), "--out", str(out),
                            "--backend", "ray", "--address", f"127.0.0.1:{port}"],
                           capture_output=True, text=True, env=env, timeout=600)
        assert p.returncode == 0, p.stderr[-3000:]
        assert len(list((out / "runs").glob("*/summary.json"))) == 4
        assert (out / "report" / "index.html").exists()
    finally:
        subprocess.run([str(ray_bin), "stop", "--force"], capture_output=True, env=env, timeout=120)
