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
from pathlib import Path

import numpy as np
import pytest
import yaml
from cli_run import assert_usage_error, run
from fswait import wait_for_lock, watching
from paths import ROOT

from ffnlab.experiments.analysis.analyse import analyse as analysis
from ffnlab.experiments.sweep.spec import load_spec, resolve, spec_from_dict


def analyse(root: Path) -> dict:
    """The analysis as the JSON object a report keeps (these tests read its keys)."""
    return analysis(root).as_dict()

MICRO = {
    "name": "micro", "control": "iso-params", "reference": "gelu-r4", "seeds": [0, 1], "threads_per_worker": 1,
    "claims": ["ratio_optimal", "convergence_speed", "glu_vs_plain"],  # the seed claims, by their analyses
    "comparisons": {"glu_vs_plain": ["swiglu-pm4", "gelu-r4"], "convergence_speed": ["swiglu-pm4"]},
    "base": {"model": {"d_model": 32, "n_layers": 1, "n_heads": 2, "norm": "layernorm"},
             "data": {"corpus": "shakespeare"},
             "train": {"seq_len": 32, "batch_size": 8, "max_steps": 12, "warmup_steps": 2, "eval_every": 4,
                       "eval_tokens": 2048, "checkpoint_every": 4, "tensorboard": False}},
    "arms": [{"name": "gelu-r4", "ffn": {"kind": "gelu", "rule": "ratio", "ratio": 4}},
             {"name": "swiglu-pm4", "ffn": {"kind": "swiglu", "rule": "param-matched", "ratio": 4}}],
}


@pytest.fixture(scope="module")
def finished_micro(tmp_path_factory) -> tuple[Path, Path]:
    """The micro sweep trained once per test process (``--no-report``), for the tests that start from
    a finished sweep: each works on its own copy (:func:`copy_of`)."""
    base = tmp_path_factory.mktemp("finished-micro")
    spec = json.loads(json.dumps(MICRO))
    spec["base"]["data"]["cache_dir"] = str(tmp_path_factory.getbasetemp() / "sweep_cache")
    path, out = base / "micro.yaml", base / "sweep"
    path.write_text(yaml.safe_dump(spec))
    p = run("sweep", str(path), "--out", str(out), "--no-report")
    assert p.returncode == 0, p.stderr[-2000:]
    return path, out


def copy_of(finished: tuple[Path, Path], where: Path) -> tuple[Path, Path]:
    """A copy of the finished micro sweep and its spec under ``where`` (a sweep folder may move)."""
    spec, out = where / "micro.yaml", where / "sweep"
    shutil.copyfile(finished[0], spec)
    shutil.copytree(finished[1], out, symlinks=True)
    return spec, out


@pytest.fixture
def micro_spec(tmp_path, tmp_path_factory) -> Path:
    spec = json.loads(json.dumps(MICRO))
    spec["base"]["data"]["cache_dir"] = str(tmp_path_factory.getbasetemp() / "sweep_cache")
    path = tmp_path / "micro.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


@pytest.mark.parametrize("preset", ["golden-quick", "golden", "golden-gpu", "glu-variants", "gated-law",
                                    "scale-trend", "scale-trend-gpu", "golden-h200", "size-fixed-steps"])
def test_presets_resolve_within_their_control(preset):
    spec = load_spec(preset)
    vocab = 256 if spec.base.get("data", {}).get("tokenizer", "byte") == "byte" else spec.base["data"]["bpe_vocab_size"]
    runs = resolve(spec, vocab)
    scales = [s.name + "." for s in spec.scales] or [""]
    assert len(runs) == len(spec.arms) * len(spec.seeds) * len(scales) and len(spec.seeds) >= 2
    key = {"iso-params": "params_non_embedding", "iso-flops": "train_flops_per_token"}.get(spec.control)
    for prefix in scales:  # each model size is controlled against its own reference
        ref = next(r for r in runs if r.arm == prefix + spec.reference)
        for r in (r for r in runs if r.arm.startswith(prefix)):
            if key:
                assert abs(getattr(r, key) / getattr(ref, key) - 1) <= spec.tolerance, (r.run, getattr(r, key))
            else:
                assert r.d_model == ref.d_model


def test_estimate_prints_the_design_from_the_spec_alone_and_writes_nothing(tmp_path, monkeypatch, capsys):
    # oracle: the kept size-fixed-steps sweep, whose runs were resolved and trained by the sweep itself
    import re

    from cli_inproc import run_cli

    root = ROOT / "docs" / "results" / "size-fixed-steps"
    kept = json.loads((root / "sweep.json").read_text())["runs"]
    monkeypatch.chdir(tmp_path)
    p = run_cli(capsys, "sweep", "size-fixed-steps", "--estimate", "--gpu", "h200")
    assert p.returncode == 0, p.stderr
    assert list(tmp_path.iterdir()) == []  # no sweep folder, no corpus cache
    flops = sum(r["config"]["train"]["max_steps"] * r["config"]["train"]["batch_size"] * r["config"]["train"]["seq_len"]
                * r["train_flops_per_token"] for r in kept)
    assert f"{len(kept)} run(s) left, {flops:.3g} training FLOPs" in p.stdout
    for r in kept:
        if r["seed"] == 0:
            assert f"arm {r['arm']}: d_model {r['d_model']}, d_ff {r['d_ff']}" in p.stdout
    reached = {}
    for r in kept:  # each cell's tokens per parameter as trained (the reference arm's summary)
        if r["arm"].endswith(".gelu-r4") and r["seed"] == 0:
            tokens = json.loads((root / "runs" / r["run"] / "summary.json").read_text())["tokens"]
            reached[r["arm"].split(".")[0]] = tokens / r["params_non_embedding"]
    printed = dict(re.findall(r"^cell (\S+): ([\d.]+) tokens per non-embedding parameter \(mature", p.stdout, re.M))
    assert printed == {k: f"{v:,.3g}" for k, v in reached.items()}
    # a GPU adds the launch-bound floor: 84 runs x 500 steps x (55 x 2 layers + 40) kernels
    assert "launch-bound floor: 6,300,000 kernel launches" in p.stdout
    bad = run_cli(capsys, "sweep", "size-fixed-steps", "--gpu", "h200")
    assert bad.returncode == 2 and "--gpu times an --estimate" in bad.stderr and len(bad.stderr.splitlines()) == 1


def test_scale_trend_sizes_grow_several_fold():
    for name in ("scale-trend", "scale-trend-gpu"):
        spec = load_spec(name)
        runs = resolve(spec, 256 if name == "scale-trend" else 16384)
        size_cells = next((t.scales for t in spec.trends if t.axis == "params"), [s.name for s in spec.scales])
        sizes = [next(r.params_non_embedding for r in runs if r.arm == f"{s}.{spec.reference}") for s in size_cells]
        assert len(sizes) >= 3 and all(b >= 3 * a for a, b in zip(sizes, sizes[1:], strict=False))


def test_scale_trend_keeps_size_and_training_length_apart():
    spec = load_spec("scale-trend")
    runs = resolve(spec, 256)
    ref = {s.name: next(r for r in runs if r.arm == f"{s.name}.{spec.reference}") for s in spec.scales}

    def tokens_per_param(cell: str) -> float:
        r = ref[cell]
        t = r.config["train"]
        return t["max_steps"] * t["batch_size"] * t["seq_len"] / r.params_non_embedding

    trends = {t.axis: t.scales for t in spec.trends}
    sizes, lengths = trends["params"], trends["tokens_per_param"]
    assert max(tokens_per_param(c) for c in sizes) / min(tokens_per_param(c) for c in sizes) < 1.05  # one length
    assert len({ref[c].params_non_embedding for c in lengths}) == 1  # one size
    tpp = [tokens_per_param(c) for c in lengths]
    assert all(b / a == pytest.approx(2, rel=0.05) for a, b in zip(tpp, tpp[1:], strict=False))  # 1, 2, 4, 8


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


def test_micro_sweep_end_to_end_and_claims_evidence(tmp_path, finished_micro):
    micro_spec, out = copy_of(finished_micro, tmp_path)  # trained (by the fixture), not yet reported
    p = run("sweep", str(micro_spec), "--out", str(out))
    assert p.returncode == 0, p.stderr[-2000:]
    rep = out / "report"
    results = json.loads((rep / "results.json").read_text())
    assert [a["arm"] for a in results["arms"]] == ["gelu-r4", "swiglu-pm4"]
    assert all(a["n_seeds"] == 2 and math.isfinite(a["val_loss"]) for a in results["arms"])
    html = (rep / "index.html").read_text()
    # every figure written is embedded in the page (one ratio: no loss-vs-ratio curve to draw)
    figures = sorted(p.name for p in (rep / "plots").glob("*.png"))
    assert len(figures) >= 4 and html.count("data:image/png;base64,") == len(figures), figures
    assert "Perplexity and bits per byte per arm" in html
    md = (rep / "report.md").read_text()
    assert "| gelu-r4 | 4.000 / 4.000 |" in md and "Provenance" in md
    # the ratio card names the arm with the lowest mean final loss (from the run files by hand)
    finals: dict[str, list[float]] = {}
    for r in json.loads((out / "sweep.json").read_text())["runs"]:
        finals.setdefault(r["arm"], []).append(
            json.loads((out / "runs" / r["run"] / "summary.json").read_text())["final_val_loss"])
    best = min(finals, key=lambda a: sum(finals[a]) / len(finals[a]))
    assert f"- Lowest loss: {best} (raw ratio" in md or f"- Lowest loss: the reference {best} " in md
    # the page lists its sections, each a link to a heading that exists
    import re

    links = re.findall(r'<li><a href="#([^"]+)">', html)
    assert links and all(f'<h2 id="{x}">' in html for x in links)
    assert (rep / "arms.csv").read_text().startswith("arm,kind,gated")
    claims = json.loads((rep / "claims.json").read_text())
    assert {"ratio_optimal", "convergence_speed", "glu_vs_plain"} <= set(claims)
    # two FFN kinds and one ratio: the ratio claim stays open, the speed and GLU claims are decided,
    # with the verdicts an independent recomputation from the run files gives
    hand = _hand_verdicts(out, "gelu-r4", "swiglu-pm4")
    # the start names how each arm was resolved (sweep.json's record), the end each verdict
    first = next(r for r in json.loads((out / "sweep.json").read_text())["runs"] if r["arm"] == "swiglu-pm4")
    assert f"arm swiglu-pm4: d_model {first['d_model']}, d_ff {first['d_ff']}" in p.stdout
    # each under its hypothesis's id (the spec's words), the analysis's key where it names none
    assert all(f"verdict {(v.get('hypothesis') or {}).get('id', k)}: {v['verdict']}" in p.stdout
               for k, v in claims.items())
    # each verdict line states the maturity its claim was judged at
    assert all(v["maturity"]["text"] in p.stdout for v in claims.values() if v.get("maturity"))
    assert claims["ratio_optimal"]["verdict"] == "needs-experiment"
    assert claims["glu_vs_plain"]["verdict"] == hand["glu_vs_plain"]
    assert claims["glu_vs_plain"]["numbers"]["interval"] == pytest.approx(hand["glu_delta"], rel=1e-9)
    got = [float(v) for v in claims["convergence_speed"]["numbers"]["interval"]]
    assert got[0] == pytest.approx(hand["tokens_ratio"][0], rel=1e-9)
    # the reported interval also carries the interpolation error between evaluations, so it holds
    # the interval of the interpolated crossings (the hand one) and may be wider, never narrower
    assert got[1] <= hand["tokens_ratio"][1] * (1 + 1e-9) and got[2] >= hand["tokens_ratio"][2] * (1 - 1e-9)
    speed = claims["convergence_speed"]["verdict"]
    assert speed == hand["convergence_speed"] or speed == "inconclusive"
    rows = {r["id"]: r for r in json.loads(run("claims", "--evidence", str(rep), "--json").stdout)}
    assert rows["golden-transformer-8pct"]["verdict"] == speed  # what the user sees
    assert rows["glu-beats-plain"]["verdict"] == hand["glu_vs_plain"]
    assert rows["ratio-4-optimal"]["verdict"] == "needs-experiment"
    # rerunning a finished sweep trains nothing and keeps every file
    before = {f: f.stat().st_mtime_ns for f in (out / "runs").rglob("summary.json")}
    p = run("sweep", str(micro_spec), "--out", str(out), "--no-report")
    assert p.returncode == 0 and "0 run(s) trained" in p.stdout
    assert before == {f: f.stat().st_mtime_ns for f in (out / "runs").rglob("summary.json")}


def _hand_verdicts(sweep: Path, reference: str, gated: str) -> dict[str, object]:
    """The GLU and convergence verdicts recomputed from the run files with scipy directly and a
    plain interpolation loop (not ffnlab.experiments.analysis.stats), by the rules in docs/experiments.md.

    With fewer than 10 seeds per arm the rule never pools, so both use Welch's t. GLU (one planned
    comparison, two arms here): Welch interval of gated - plain final loss; true if below 0, false
    if above 0 or equivalent within 0.5% of the plain arm's loss (TOST on Welch's df), else
    inconclusive. Speed: tokens to the pre-registered target (the reference's mean loss at the
    evaluation nearest half its tokens), curves from (0, ln V) interpolated linearly, a Welch
    interval on log tokens; false if the ratio's upper end < 1.08, true if the lower end >= 1.08,
    else inconclusive."""
    from scipy import stats

    record = json.loads((sweep / "sweep.json").read_text())
    finals, curves = {}, {}
    for r in record["runs"]:
        d = sweep / "runs" / r["run"]
        finals.setdefault(r["arm"], []).append(json.loads((d / "summary.json").read_text())["final_val_loss"])
        evals = [x for x in map(json.loads, (d / "metrics.jsonl").read_text().splitlines()) if x["kind"] == "eval"]
        curves.setdefault(r["arm"], []).append([(0.0, math.log(record["vocab_size"]))] +
                                               [(x["tokens"], x["val_loss"]) for x in evals])
    g, ref = np.array(finals[gated]), np.array(finals[reference])
    ci = stats.ttest_ind(g, ref, equal_var=False).confidence_interval(0.95)
    delta = float(g.mean() - ref.mean())
    vg, vr = g.var(ddof=1) / len(g), ref.var(ddof=1) / len(ref)
    se = math.sqrt(vg + vr)
    df = (vg + vr) ** 2 / (vg ** 2 / (len(g) - 1) + vr ** 2 / (len(ref) - 1))  # Welch-Satterthwaite
    margin = 0.005 * float(ref.mean())
    tost_p = max(stats.t.sf((delta + margin) / se, df), stats.t.cdf((delta - margin) / se, df))
    glu = ("true" if ci.high < 0 else "false" if ci.low > 0 or tost_p < 0.05 else "inconclusive")
    half = [min(c[1:], key=lambda e, c=c: abs(e[0] - c[-1][0] / 2))[1] for c in curves[reference]]
    target = sum(half) / len(half)

    def reach(curve: list[tuple[float, float]]) -> float:
        for (t0, l0), (t1, l1) in zip(curve, curve[1:], strict=False):
            if l1 <= target:
                return t0 + (l0 - target) / (l0 - l1) * (t1 - t0)
        raise AssertionError("every run of the micro sweep reaches the target")

    toks = {arm: [reach(c) for c in cs] for arm, cs in curves.items()}
    lg, lr = np.log(toks[gated]), np.log(toks[reference])
    log_ci = stats.ttest_ind(lg, lr, equal_var=False).confidence_interval(0.95)
    lo, hi = math.exp(log_ci.low), math.exp(log_ci.high)
    speed = "false" if hi < 1.08 else "true" if lo >= 1.08 else "inconclusive"
    geometric = math.exp(float(lg.mean() - lr.mean()))  # the ratio the log-scale interval is about
    return {"glu_vs_plain": glu, "glu_delta": [delta, ci.low, ci.high], "convergence_speed": speed,
            "tokens_ratio": [geometric, lo, hi]}


@pytest.mark.slow
def test_sweep_resumes_after_being_killed(tmp_path, micro_spec):
    spec = yaml.safe_load(micro_spec.read_text())
    # long enough that a run is still training after its first checkpoint when the watcher wakes
    spec["base"]["train"]["max_steps"] = 24
    spec["base"]["train"]["checkpoint_every"] = 6
    micro_spec.write_text(yaml.safe_dump(spec))
    out = tmp_path / "sweep"

    def finished_runs() -> set[str]:
        return {f.parent.name for f in (out / "runs").glob("*/summary.json")} if (out / "runs").exists() else set()

    def one_finished_and_the_next_checkpointed() -> bool:
        done = finished_runs()
        runs = list((out / "runs").iterdir()) if (out / "runs").exists() else []
        return bool(done) and any(r.name not in done and any(r.glob("checkpoints/step-*")) for r in runs)

    with watching(out) as changes:  # woken by each write under the sweep folder, not by a clock
        proc = subprocess.Popen([sys.executable, "-m", "ffnlab", "sweep", str(micro_spec), "--out", str(out),
                                 "--no-report", "--workers", "1"], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        changes.wait(one_finished_and_the_next_checkpointed, proc)
    done_at_kill = finished_runs()
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    # the child train process gets SIGTERM with its parent (PR_SET_PDEATHSIG): its run folder's lock
    # is released when it has exited, and it exited without finishing (a child that outlived its
    # parent would finish its run and write a summary)
    for folder in (out / "runs").iterdir():
        wait_for_lock(folder)
    finished = {f.parent.name: f.read_bytes() for f in (out / "runs").glob("*/summary.json")}
    assert set(finished) == done_at_kill and 1 <= len(finished) < 4
    p = run("sweep", str(micro_spec), "--out", str(out), "--no-report")
    assert p.returncode == 0, p.stderr[-2000:]
    for name, data in finished.items():  # nothing finished was rerun or overwritten
        assert (out / "runs" / name / "summary.json").read_bytes() == data
    assert len(list((out / "runs").glob("*/summary.json"))) == 4
    assert f"{4 - len(finished)} run(s) trained" in p.stdout


def test_a_different_spec_cannot_reuse_a_sweep_folder(tmp_path, finished_micro):
    micro_spec, out = copy_of(finished_micro, tmp_path)
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


def test_a_folder_from_an_older_ffnlab_still_resumes(tmp_path, finished_micro):
    """sweep.json written before the spec gained comparisons/margin/scales: same sweep, nothing retrained."""
    micro_spec, out = copy_of(finished_micro, tmp_path)
    record = json.loads((out / "sweep.json").read_text())
    for key in ("comparisons", "margin", "scales"):
        record["spec"].pop(key)
    (out / "sweep.json").write_text(json.dumps(record))
    summaries = {p: p.read_bytes() for p in out.glob("runs/*/summary.json")}
    p = run("sweep", str(micro_spec), "--out", str(out), "--no-report")
    assert p.returncode == 0, p.stderr
    assert "0 run(s) trained, 4 already finished" in p.stdout  # 2 arms x 2 seeds
    assert {q: q.read_bytes() for q in out.glob("runs/*/summary.json")} == summaries


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
                "status": "finished", "steps": len(tokens), "final_val_loss": losses[-1],
                "final_val_ppl": math.exp(losses[-1]), "final_val_bpb": losses[-1] / math.log(2), "wall_s": 1.0,
                "tokens": tokens[-1], "train_flops": 1.0, "device": "cpu", "tokenizer": "byte"}))
            runs.append({"run": name, "arm": arm, "seed": seed, "d_model": 64, "d_ff": 256 if kind == "gelu" else 171,
                         "params_non_embedding": 1000, "train_flops_per_token": 100,
                         "config": {"model": {"ffn": {"kind": kind, "rule": "ratio"}},
                                    "train": {"max_steps": len(tokens)}}})
    spec = {"name": "fake", "control": "iso-params", "tolerance": 0.02, "reference": "gelu-r4",
            "seeds": [0, 1, 2], "base": {}, "description": "", "maturity": 0.01}  # toy runs declared mature
    (root / "sweep.json").write_text(json.dumps({"spec": spec, "runs": runs}))


def test_analysis_on_synthetic_curves_with_known_answers(tmp_path):
    tokens = [100 * i for i in range(1, 11)]
    # loss falls linearly in tokens; the second arm needs 25% more tokens for any loss
    ref = [[5.0 - 0.003 * t + e for t in tokens] for e in (0.0, 0.01, -0.01)]
    slow = [[5.0 - 0.003 * t / 1.25 + e for t in tokens] for e in (0.0, 0.01, -0.01)]
    _fake_sweep(tmp_path, {"gelu-r4": ref, "gelu-r2": slow}, tokens)
    result = analyse(tmp_path)
    conv = result["convergence"]
    # the pre-registered rule: the reference's mean loss at the evaluation nearest half its tokens
    assert conv["target_loss"] == pytest.approx(sum(c[tokens.index(500)] for c in ref) / 3)
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


def _run_names(sweep: Path) -> list[str]:
    return [r["run"] for r in json.loads((sweep / "sweep.json").read_text())["runs"]]


def _records(run_dir: Path, kind: str) -> list[dict]:
    return [r for r in map(json.loads, (run_dir / "metrics.jsonl").read_text().splitlines()) if r["kind"] == kind]


@pytest.mark.slow
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
        assert json.loads((out / "status.json").read_text()) == {r: "finished" for r in _run_names(out)}
        # the runs Ray executed are the runs a plain local 'ffnlab train' gives: same curve, bit for bit
        name = "swiglu-pm4-s1"
        local = tmp_path / "local"
        p = run("train", str(out / "configs" / f"{name}.yaml"), "--out", str(local), "--set", "train.threads=1",
                "--set", "train.progress=off")
        assert p.returncode == 0, p.stderr[-2000:]
        for kind, key in (("train", "loss"), ("eval", "val_loss")):
            ours = [r[key] for r in _records(out / "runs" / name, kind)]
            assert ours and ours == [r[key] for r in _records(local, kind)], kind
        # and the report's arm means are the means of those runs' final losses
        results = {a["arm"]: a for a in json.loads((out / "report" / "results.json").read_text())["arms"]}
        for arm in ("gelu-r4", "swiglu-pm4"):
            finals = [json.loads((out / "runs" / f"{arm}-s{s}" / "summary.json").read_text())["final_val_loss"]
                      for s in (0, 1)]
            assert results[arm]["val_loss"] == pytest.approx(sum(finals) / 2, rel=1e-12)
    finally:
        subprocess.run([str(ray_bin), "stop", "--force"], capture_output=True, env=env, timeout=120)


def test_a_sweep_trains_arms_no_transformers_layout_can_export(tmp_path, tmp_path_factory):
    """iso-params keeps the heads' count and size while d_model moves: SwiGLU at raw ratio 4 with
    LayerNorm gets a d_model other than 2 heads x 16, which the StableLM export layout cannot express.
    ``ffnlab train`` refuses such a model unless told; a sweep measures, so its runs train."""
    spec = json.loads(json.dumps(MICRO))
    spec["base"]["data"]["cache_dir"] = str(tmp_path_factory.getbasetemp() / "sweep_cache")
    spec["base"]["train"] |= {"max_steps": 4, "eval_every": 2, "checkpoint_every": 4}
    spec["seeds"] = [0]
    spec["comparisons"] = {}
    spec["tolerance"] = 0.1
    spec["d_step"] = 2
    spec["arms"] = [MICRO["arms"][0], {"name": "swiglu-r4", "ffn": {"kind": "swiglu", "rule": "ratio", "ratio": 4}}]
    path = tmp_path / "law.yaml"
    path.write_text(yaml.safe_dump(spec))
    runs = {r.arm: r for r in resolve(spec_from_dict(spec), 256)}
    r4 = runs["swiglu-r4"]
    assert r4.d_model != r4.n_heads * 16  # the layout export refuses
    p = run("sweep", str(path), "--out", str(tmp_path / "sweep"), "--workers", "1", "--no-report", timeout=900)
    assert p.returncode == 0, p.stderr
    summary = json.loads((tmp_path / "sweep" / "runs" / "swiglu-r4-s0" / "summary.json").read_text())
    assert summary["status"] == "finished"


@pytest.mark.slow
@pytest.mark.parametrize("to_group", [True, False], ids=["terminal Ctrl-C (process group)", "kill -INT of the sweep"])
def test_ctrl_c_stops_the_sweep_and_trains_nothing_more(tmp_path, micro_spec, to_group):
    """SIGINT while the first of four runs trains: the sweep stops that run at its next step, starts
    none of the three others, says how to continue and exits 130 (resuming is
    test_sweep_resumes_after_being_killed's)."""
    spec = yaml.safe_load(micro_spec.read_text())
    spec["base"]["train"]["max_steps"] = 100000  # the run in flight would go on for hours
    spec["base"]["train"]["checkpoint_every"] = 2
    micro_spec.write_text(yaml.safe_dump(spec))
    out = tmp_path / "sweep"

    def started() -> list[Path]:
        return [r for r in (out / "runs").iterdir() if any(r.glob("checkpoints/step-*"))] if (
            out / "runs").exists() else []

    with watching(out) as changes:  # woken by each write under the sweep folder, not by a clock
        # a terminal's default SIGINT (a suite started in the background inherits it ignored), and a
        # process group of its own, as a shell's job has
        proc = subprocess.Popen([sys.executable, "-m", "ffnlab", "sweep", str(micro_spec), "--out", str(out),
                                 "--no-report", "--workers", "1"], stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True, start_new_session=True,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        changes.wait(lambda: bool(started()), proc)
    if to_group:
        os.killpg(proc.pid, signal.SIGINT)
    else:
        proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=120)  # a hang guard only
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        _, err = proc.communicate()
        pytest.fail(f"the sweep did not stop on SIGINT: {err[-2000:]}")
    for folder in (out / "runs").iterdir():
        wait_for_lock(folder)  # the trainer it ran has exited too
    assert proc.returncode == 130, err
    assert f"interrupted; rerun `ffnlab sweep {micro_spec} --out {out}` to continue" in err
    assert len(started()) == 1 and not list((out / "runs").glob("*/summary.json"))  # nothing else trained
