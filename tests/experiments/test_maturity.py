"""Runs far from trained are named beside the verdicts (experiments/analysis/maturity.py).

Oracles: hand-computed curves (a straight line between evaluations, its fall over the last
quarter worked out by hand) and a sweep folder written here in ffnlab's file layout.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_inproc import run_cli
from paths import ROOT

from ffnlab.experiments.analysis.maturity import (
    CellMaturity,
    RunProgress,
    assess,
    cell_maturity,
    immature_reason,
    late_fall,
    loss_at,
    sweep_progress,
    warning,
)

TRAINED = RunProgress(tokens=40_000_000, params=1_000_000, steps=10_000, planned_steps=10_000,
                      curve=((10_000_000, 3.1), (20_000_000, 3.02), (30_000_000, 3.005), (40_000_000, 3.0)))


def test_loss_between_evaluations_is_the_straight_line():
    curve = ((100, 3.0), (200, 2.0), (400, 1.0))
    assert loss_at(curve, 150) == pytest.approx(2.5)
    assert loss_at(curve, 300) == pytest.approx(1.5)  # halfway from 2.0 to 1.0
    assert loss_at(curve, 50) is None and loss_at(curve, 500) is None


def test_late_fall_over_the_last_quarter():
    run = RunProgress(tokens=400, params=10, steps=4, planned_steps=4, curve=((100, 3.0), (200, 2.0), (400, 1.0)))
    # 75% of 400 tokens = 300, where the loss is 1.5 -> it fell 0.5 / 1.0 = 50% in the last quarter
    assert late_fall(run) == pytest.approx(0.5)
    assert late_fall(RunProgress(1, 1, 1, 1, ((10, 2.0),))) is None  # one evaluation: cannot tell
    # TRAINED: 30M -> 40M is the last quarter: 3.005 -> 3.0, a fall of 0.005 / 3.0
    assert late_fall(TRAINED) == pytest.approx(0.005 / 3.0)


def test_a_trained_sweep_gets_no_warning():
    assert assess([TRAINED, TRAINED]) == [] and warning([TRAINED]) is None
    assert warning([]) is None


def test_a_toy_sweep_is_named_far_from_trained():
    """40 steps of 2,048 tokens on a 0.1M-parameter model, loss falling fast, like a toy demo sweep."""
    toy = RunProgress(tokens=40 * 2048, params=100_000, steps=40, planned_steps=40,
                      curve=((20 * 2048, 3.0), (30 * 2048, 2.7), (40 * 2048, 2.5)))
    found = assess([toy, toy])
    assert len(found) == 3
    assert found[0].startswith("0.82 training tokens per parameter")  # 81,920 / 100,000
    assert "fell 8.0%" in found[1]  # 75% of 81,920 = 61,440 = the eval at step 30: (2.7 - 2.5) / 2.5
    assert found[2] == "40 optimizer steps per run"
    text = warning([toy])
    assert text and text.startswith("runs far from trained: ") and "early training" in text


def test_unfinished_runs_and_the_median():
    half = RunProgress(tokens=20_000_000, params=1_000_000, steps=5_000, planned_steps=10_000, curve=TRAINED.curve)
    assert assess([TRAINED, half]) == ["1 of 2 runs stopped before their planned steps"]
    few = RunProgress(tokens=100_000, params=1_000_000, steps=10_000, planned_steps=10_000, curve=TRAINED.curve)
    assert assess([TRAINED, TRAINED, few]) == []  # one odd run does not decide: the median does


def test_a_cell_with_no_parameter_count_reads_unknown_in_every_text():
    # no run with a count: no tokens per parameter (None), never a number; every text says "unknown"
    m = cell_maturity([RunProgress(tokens=5, params=0, steps=1, planned_steps=1, curve=())], 20)
    assert m == CellMaturity(tokens_per_param=None, late_fall=None, needs=20.0) and not m.mature
    assert m.text() == "trained to unknown tokens/param (needs 20)"
    assert immature_reason(m, "supported").startswith("trained to unknown tokens/param; needs 20 ")
    assert immature_reason(CellMaturity(0.5, None, 20.0), "supported").startswith("trained to 0.5 tokens/param;")


def write_sweep(root: Path, steps: int, tokens_per_step: int, params: int, losses: list[float]) -> Path:
    """A sweep folder in ffnlab's layout: sweep.json, runs/NAME/{model.json,metrics.jsonl}."""
    runs = []
    for name in ("a-s0", "b-s0"):
        runs.append({"run": name, "config": {"train": {"max_steps": steps}}})
        run = root / "runs" / name
        run.mkdir(parents=True)
        (run / "model.json").write_text(json.dumps({"params": {"non_embedding": params, "total": params + 99}}))
        every = steps // len(losses)
        recs = [{"kind": "train", "step": s, "tokens": s * tokens_per_step, "loss": 9.0} for s in range(1, steps + 1)]
        recs += [{"kind": "eval", "step": (i + 1) * every, "tokens": (i + 1) * every * tokens_per_step, "val_loss": v}
                 for i, v in enumerate(losses)]
        (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs) + '{"torn')
    (root / "sweep.json").write_text(json.dumps({"runs": runs}))
    return root


def test_sweep_progress_reads_a_sweep_folder(tmp_path):
    sweep = write_sweep(tmp_path / "s", steps=40, tokens_per_step=2048, params=100_000, losses=[3.0, 2.8, 2.7, 2.5])
    got = sweep_progress(sweep)
    assert [r.steps for r in got] == [40, 40] and got[0].tokens == 40 * 2048 and got[0].params == 100_000
    assert got[0].curve[-1] == (40 * 2048, 2.5)


@pytest.mark.parametrize("params", [[], "many", {"non_embedding": 0, "total": 99}, {"non_embedding": 5}])
def test_a_run_without_usable_counts_is_left_out_of_the_progress(tmp_path, params):
    sweep = write_sweep(tmp_path / "s", steps=40, tokens_per_step=2048, params=100_000, losses=[3.0, 2.8, 2.7, 2.5])
    (sweep / "runs" / "a-s0" / "model.json").write_text(json.dumps({"params": params}))
    # oracle: the other run, read as in test_sweep_progress_reads_a_sweep_folder
    assert [(r.params, r.tokens) for r in sweep_progress(sweep)] == [(100_000, 40 * 2048)]


def test_claims_evidence_finds_the_report_in_a_sweep_folder_and_warns(capsys, tmp_path):
    sweep = write_sweep(tmp_path / "toy", steps=40, tokens_per_step=2048, params=100_000,
                        losses=[3.0, 2.8, 2.7, 2.5])
    (sweep / "report").mkdir()
    (sweep / "report" / "claims.json").write_text(json.dumps({
        "ratio_optimal": {"verdict": "false", "evidence": "ratio 2 beats ratio 4 (toy)"}}))
    for where in (sweep, sweep / "report", sweep / "report" / "claims.json"):
        r = run_cli(capsys, "claims", "--evidence", str(where), "--json")
        assert r.returncode == 0, r.stderr
        row = next(c for c in json.loads(r.stdout) if c["id"] == "ratio-4-optimal")
        assert (row["verdict"], row["evidence"]) == ("false", "ratio 2 beats ratio 4 (toy)")
    r = run_cli(capsys, "claims", "--evidence", str(sweep))
    assert "note: runs far from trained: 0.82 training tokens per parameter" in " ".join(r.stdout.split())
    r = run_cli(capsys, "claims", "--evidence", str(tmp_path / "nothing"))
    assert r.returncode == 2 and "no experiment evidence" in r.stderr


def test_a_designs_maturity_from_the_spec_alone_is_what_its_runs_reached():
    """golden-mature's cells from the preset alone equal the tokens per non-embedding parameter its
    kept reference runs trained (their summary.json and the resolved sizes in sweep.json), and lie
    within the iso-params tolerance of the report's cell figure (a mean over the arms)."""
    from ffnlab.experiments.sweep.spec import design_maturity, load_spec

    kept = ROOT / "docs/results/golden-mature"
    record = json.loads((kept / "sweep.json").read_text())
    reached = {}
    for r in record["runs"]:
        if r["arm"].endswith(".gelu-r4") and r["seed"] == 0:
            tokens = json.loads((kept / "runs" / r["run"] / "summary.json").read_text())["tokens"]
            reached[r["arm"].split(".")[0]] = tokens / r["params_non_embedding"]
    spec = load_spec("golden-mature")
    assert dict(design_maturity(spec)) == pytest.approx(reached, rel=1e-12)
    report = {c["scale"]: c["maturity"]["tokens_per_param"]
              for c in json.loads((kept / "results.json").read_text())["cells"]}
    assert dict(design_maturity(spec)) == pytest.approx(report, rel=spec.tolerance)


def test_a_design_that_must_be_mature_is_refused_below_the_rule():
    from ffnlab.errors import FfnlabError
    from ffnlab.experiments.sweep.spec import find_spec, spec_from_dict
    from ffnlab.files import read_mapping

    data = read_mapping(find_spec("golden-mature"), "sweep spec")
    assert spec_from_dict({**data, "require_mature": True}).require_mature  # 20.7 and 41.4: mature
    short = {**data, "require_mature": True, "scales": [{**data["scales"][0], "train": {"max_steps": 500}},
                                                        data["scales"][1]]}
    with pytest.raises(FfnlabError, match=r"below its maturity rule \(20 tokens.*t20 trains 10\.3"):
        spec_from_dict(short)


@pytest.mark.parametrize("preset", ["golden-h200", "golden-gpu", "scale-trend-gpu"])
def test_the_gpu_presets_reach_the_rule_and_refuse_a_shorter_design(preset):
    from ffnlab.errors import FfnlabError
    from ffnlab.experiments.sweep.spec import design_maturity, find_spec, load_spec, spec_from_dict
    from ffnlab.files import read_mapping

    spec = load_spec(preset)
    assert spec.require_mature and spec.maturity >= 20
    cells = dict(design_maturity(spec))
    assert len(cells) >= 3 and min(cells.values()) >= spec.maturity
    # every cell trains the same steps (size is not confounded with steps)
    data = read_mapping(find_spec(preset), "sweep spec")
    steps = {s["name"]: s.get("train", {}).get("max_steps", data["base"]["train"]["max_steps"]) for s in data["scales"]}
    assert len(set(steps.values())) == 1
    # the learning rate is swept (x0.5, x2) at the largest size
    lrs = sorted(s.get("train", {}).get("lr", data["base"]["train"]["lr"]) for s in data["scales"]
                 if s["model"]["d_model"] == max(c["model"]["d_model"] for c in data["scales"]))
    assert lrs[0] * 4 == pytest.approx(lrs[-1]) and lrs[0] * 2 in [pytest.approx(x) for x in lrs]
    half = {**data, "base": {**data["base"], "train": {**data["base"]["train"],
                                                        "max_steps": data["base"]["train"]["max_steps"] // 2}}}
    with pytest.raises(FfnlabError, match="below its maturity rule"):
        spec_from_dict(half)


def test_the_time_estimate_is_the_flops_over_the_peak_at_the_stated_utilisation():
    from ffnlab.experiments.sweep.run import time_estimate

    line = time_estimate(1.2e12, 3, 2, 1e10)  # 1.2e12 / (2 x 1e10 x 0.3) = 200 s; x 0.1: 600 s
    assert "3 run(s) left" in line and "3 min-10 min on 2 worker(s) at 10%-30%" in line and "an assumption" in line
    # a tiny sweep: 4.3e9 FLOPs over 2 x 1.2e11 FLOP/s is 0.06-0.18 s, said as such, not "0 s-0 s"
    tiny = time_estimate(4.34e9, 4, 2, 1.2e11)
    assert "under 1 s on 2 worker(s)" in tiny and "0 s-0 s" not in tiny
