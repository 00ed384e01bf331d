"""The reports kept under docs/results/ are what their data says: every final-loss figure a kept
report states recomputes from the per-run losses in its runs.csv, and a report that keeps its runs
(runs/RUN/summary.json and metrics.jsonl) rebuilds from its own folder to the same claims.

A full rebuild costs 10 to 60 s of one core (the trend bootstraps), so ``make test`` rebuilds one
report that keeps its runs, a different one each day or CI run (``FFNLAB_KEPT_SEED``), beside the
cheap recomputations of every report; ``FFNLAB_KEPT_REBUILD=all`` rebuilds them all."""

from __future__ import annotations

import csv
import datetime
import json
import os
import random
import re
from pathlib import Path

import pytest
from paths import ROOT

from ffnlab.experiments.analysis import verdicts as vd

RESULTS = ROOT / "docs" / "results"
KEPT_ALL = sorted(p.parent for p in RESULTS.glob("*/.ffnlab-report"))
KEPT = [p for p in KEPT_ALL if (p / "sweep.json").is_file()]  # loss sweeps (capacity reports: per budget)
CAPACITY = [p for p in KEPT_ALL if (p / "capacity.json").is_file()]
PAIRS = ("glu_vs_plain", "gated_law")


def final_losses(folder: Path) -> dict[str, list[float]]:
    groups: dict[str, list[float]] = {}
    with open(folder / "runs.csv", newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            if not row["left_out"]:
                groups.setdefault(row["arm"], []).append(float(row["final_val_loss"]))
    return groups


def rebuilt_like_kept(paths: dict[str, Path], folder: Path) -> None:
    """A report rebuilt from a kept folder states the kept verdicts and evidence, and its page reads."""
    again = json.loads(paths["claims"].read_text())
    kept = json.loads((folder / "claims.json").read_text())
    assert {k: (v["verdict"], v["evidence"]) for k, v in again.items()} == \
        {k: (v["verdict"], v["evidence"]) for k, v in kept.items()}
    page_reads_in_a_browser(paths["html"])


def page_reads_in_a_browser(html: Path) -> None:
    """The rebuilt page in headless Chromium, where there is one: every figure decodes and nothing
    scrolls sideways, on a desktop and on a phone-sized window."""
    from ffnlab.experiments.reporting.browser import check_in_browser, find_browser

    if find_browser() is None:
        return  # the rebuild itself is still checked; tests/experiments/test_report.py reports the skip
    for width in (1280, 500):
        check = check_in_browser(html, width=width)
        assert check is not None and check["undecoded"] == [] and check["images"] >= 1, (width, check)
        assert check["scroll_width"] <= check["viewport_width"], (html, width, check)


def test_there_are_kept_reports():
    assert {p.name for p in KEPT} >= {"golden-quick", "gated-law", "scale-trend"}
    assert {p.name for p in CAPACITY} >= {"capacity"}
    assert set(KEPT) | set(CAPACITY) == set(KEPT_ALL)  # every kept report is checked by one test below


@pytest.mark.parametrize("folder", CAPACITY, ids=lambda p: p.name)
def test_a_capacity_report_rebuilds_from_its_kept_measures(folder, tmp_path):
    """Each run's summary.json and capacity.json are kept (no checkpoints): the analysis reruns
    on them to the same claims, and every arm's mean bits/param is the mean of its runs' measures."""
    from ffnlab.experiments.capacity.report import write_report

    paths = write_report(folder, tmp_path / "again")
    rebuilt_like_kept(paths, folder)
    per_run: dict[tuple[str, str], list[float]] = {}
    for measure in folder.glob("*/runs/*/capacity.json"):
        budget, run = measure.parts[-4], measure.parts[-2]
        per_run.setdefault((budget, run.rsplit("-s", 1)[0]), []).append(
            json.loads(measure.read_text())["bits_per_param"])
    arms = json.loads((folder / "capacity.json").read_text())["arms"]
    assert len(arms) == len(per_run) > 0
    for a in arms:
        got = per_run[(a["budget"], a["arm"])]
        assert len(got) == a["n_seeds"] and sum(got) / len(got) == pytest.approx(a["bits_per_param"], rel=1e-12)


@pytest.mark.parametrize("folder", KEPT, ids=lambda p: p.name)
def test_final_loss_claims_recompute_from_runs_csv(folder):
    spec = json.loads((folder / "sweep.json").read_text())["spec"]
    claims = json.loads((folder / "claims.json").read_text())
    groups = final_losses(folder)
    # a scale sweep's headline claims are those of its deciding cell, whose arms carry its prefix
    cell = f"{spec.get('decide_at') or spec['scales'][-1]['name']}." if spec.get("scales") else ""
    mean = {k: sum(v) / len(v) for k, v in groups.items()}
    checked = 0
    for key in PAIRS:
        if key in claims and key in (spec.get("comparisons") or {}):
            first, second = (cell + a for a in spec["comparisons"][key])
            d, _ = vd.decide_pair("final validation loss", groups, first, second, spec["margin"] * mean[second])
            assert d.interval == pytest.approx(claims[key]["interval"], abs=1e-12), key
            assert d.mde80 == pytest.approx(claims[key]["mde80"], rel=1e-9), key
            checked += 1
    if "ratio_optimal" in claims and claims["ratio_optimal"]["verdict"] != "needs-experiment":
        ref, alts = cell + spec["reference"], [cell + a for a in spec["comparisons"]["ratio_optimal"]]
        fam = vd.decide_family("final validation loss", groups, ref, alts, spec["margin"] * mean[ref])
        against = claims["ratio_optimal"]["numbers"]["against"]
        assert fam.decisions[against].interval == pytest.approx(claims["ratio_optimal"]["interval"], abs=1e-12)
        checked += 1
    assert checked, f"{folder.name}: no final-loss claim to recompute"


@pytest.mark.parametrize("folder", [p for p in KEPT if (p / "sweep.json").is_file()
                                    and json.loads((p / "sweep.json").read_text())["spec"].get("trends")],
                         ids=lambda p: p.name)
def test_trend_claims_recompute_from_runs_csv_and_arms_csv(folder):
    """Each trend's homogeneity and weighted slope, refitted from the per-run losses in runs.csv and
    each arm's ratio and size in arms.csv, state what claims.json says."""
    import math

    import numpy as np

    from ffnlab.experiments.analysis import trend
    from ffnlab.experiments.fmt import interval

    spec = json.loads((folder / "sweep.json").read_text())["spec"]
    claims = json.loads((folder / "claims.json").read_text())
    with open(folder / "arms.csv", newline="", encoding="utf-8") as fh:
        arms = {row["arm"]: row for row in csv.DictReader(fh)}
    with open(folder / "runs.csv", newline="", encoding="utf-8") as fh:
        runs = [row for row in csv.DictReader(fh) if not row["left_out"]]
    for t in spec["trends"]:
        pts = []
        for cell in t["scales"]:
            ref = arms[f"{cell}.{spec['reference']}"]
            mine = [r for r in runs if r["arm"].startswith(f"{cell}.") and arms[r["arm"]]["kind"] == ref["kind"]]
            params = float(ref["params_non_embedding"])
            tokens = float(next(r["tokens"] for r in mine if r["arm"] == ref["arm"]))
            scale = next(s for s in spec["scales"] if s["name"] == cell)
            lr = float(scale["train"].get("lr", spec["base"]["train"]["lr"]))  # the cell's own, else the base's
            axis = {"params": params, "tokens_per_param": tokens / params, "lr": lr}[t["axis"]]
            pts.append((axis, np.asarray([math.log2(float(arms[r["arm"]]["ratio_raw"])) for r in mine]),
                        np.asarray([float(r["final_val_loss"]) for r in mine])))
        w = trend.weighted_trend(pts)
        shared = sum(x["axis"] == t["axis"] for x in spec["trends"]) > 1  # two learning-rate checks
        kept = claims[f"trend_{t['axis']}_{t['name']}" if shared else f"trend_{t['axis']}"]
        # the verdict the cells give, before the maturity rule (which leaves immature cells inconclusive)
        assert kept.get("verdict_if_mature", kept["verdict"]) == trend.trend_verdict(w)
        assert f"precision-weighted slope {interval(w.slope, w.lo, w.hi, 3)} per doubling" in kept["evidence"]
        if math.isfinite(w.homogeneity_q):
            assert f"Cochran's Q = {w.homogeneity_q:.1f} on {w.homogeneity_df} df" in kept["evidence"]
        else:  # fewer than two cells with a significant minimum: nothing to compare
            assert "too few cells with a minimum to compare" in kept["evidence"]


def _rebuilt_today() -> list[Path]:
    keeps_runs = [p for p in KEPT if (p / "runs").is_dir()]
    if os.environ.get("FFNLAB_KEPT_REBUILD") == "all" or not keeps_runs:
        return keeps_runs
    seed = os.environ.get("FFNLAB_KEPT_SEED") or os.environ.get("GITHUB_RUN_NUMBER") or \
        datetime.date.today().isoformat()
    return [random.Random(seed).choice(keeps_runs)]


def test_the_rotation_reaches_every_report_that_keeps_its_runs(monkeypatch):
    keeps_runs = {p for p in KEPT if (p / "runs").is_dir()}
    assert len(keeps_runs) >= 3
    seen = set()
    for day in range(200):
        monkeypatch.setenv("FFNLAB_KEPT_SEED", str(day))
        seen.update(_rebuilt_today())
    assert seen == keeps_runs
    monkeypatch.setenv("FFNLAB_KEPT_REBUILD", "all")
    assert set(_rebuilt_today()) == keeps_runs


@pytest.mark.slow
@pytest.mark.parametrize("folder", _rebuilt_today(), ids=lambda p: p.name)
def test_a_report_that_keeps_its_runs_rebuilds_to_the_same_claims(folder, tmp_path):
    from ffnlab.experiments.reporting.report import write_report

    with open(folder / "runs.csv", newline="", encoding="utf-8") as fh:
        runs = [row["run"] for row in csv.DictReader(fh)]
    assert all((folder / "runs" / run / "metrics.jsonl").is_file() for run in runs)
    paths = write_report(folder, tmp_path / "again")
    rebuilt_like_kept(paths, folder)


def test_no_kept_evidence_prints_a_nan():
    # a cell without a significant minimum is said in words, not as "+nan +/- nan"
    for folder in KEPT_ALL:
        for key, v in json.loads((folder / "claims.json").read_text()).items():
            assert not re.search(r"\bnan\b", v["evidence"]), (folder.name, key)
