"""Symlinks and hard links planted in folders ffnlab writes: nothing outside the named folder changes.

Every case plants a link inside a folder given to a command (a sweep, a report, a probe, a run, a
capacity folder) that points at ``outside/``, a folder holding sentinel files. The command must
either refuse with one ``error:`` line (exit 2) or write its file in place of the link (a rename
replaces a link, it never follows it); in both cases ``outside/`` is byte for byte as it was, and
nothing ffnlab did not create is deleted. The oracle is a snapshot of ``outside/`` taken before.

One tiny finished sweep on a facts corpus (2 arms x 2 seeds, 4 steps) is trained once per module
and copied for each test; it serves sweep, report, probe, train --resume and capacity report.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest
import yaml
from fuzz_cli import assert_refused, cli, snapshot
from tiny_sweep import tiny_spec

SPEC = tiny_spec("links")
RUN = "g4-s0"
GATED_RUN = "s4-s0"  # exportable (Llama layout)


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    """A finished sweep folder ``sweep/`` beside its spec ``spec.yaml``, trained once."""
    root = tmp_path_factory.mktemp("links_sweep")
    spec = json.loads(json.dumps(SPEC))
    spec["base"]["data"]["cache_dir"] = str(root / "cache")
    (root / "spec.yaml").write_text(yaml.safe_dump(spec))
    r = cli("sweep", "spec.yaml", "--out", "sweep", "--no-report", where=root)
    assert r.code == 0, r.stderr[-3000:]
    return root


@pytest.fixture
def world(tmp_path, finished) -> Path:
    """A copy of the finished sweep, its spec, and ``outside/`` with sentinel files and folders."""
    shutil.copytree(finished / "sweep", tmp_path / "sweep", symlinks=True)
    shutil.copy(finished / "spec.yaml", tmp_path / "spec.yaml")
    out = tmp_path / "outside"
    (out / "plots").mkdir(parents=True)
    (out / "plots" / "forest.png").write_bytes(b"not a plot")
    for name in ("victim.txt", "index.html", "claims.json", "status.json", "probe.json", "capacity.json", "log"):
        (out / name).write_text(f"sentinel {name}\n")
    (out / "empty").mkdir()
    return tmp_path


def refused(r, fragment: str = "") -> str:  # noqa: ANN001 - fuzz_cli.Result
    """:func:`assert_refused`, but a sweep's own progress lines (``[links] step ...``) may come first."""
    from fuzz_cli import Result

    kept = "\n".join(x for x in r.stderr.splitlines() if not x.startswith("[links] "))
    return assert_refused(Result(r.code, r.stdout, kept), fragment)


def link(at: Path, target: Path) -> None:
    at.parent.mkdir(parents=True, exist_ok=True)
    if at.is_dir() and not at.is_symlink():
        shutil.rmtree(at)
    elif at.exists() or at.is_symlink():
        at.unlink()
    at.symlink_to(target)


def outside_unchanged(world: Path, before: dict) -> None:
    assert snapshot(world / "outside") == before, "a file outside the named folder changed"


def replaced_by_file(path: Path) -> None:
    assert path.is_file() and not path.is_symlink(), f"{path} should now be ffnlab's own file"


def unfinish(world: Path, run: str = RUN) -> None:
    (world / "sweep" / "runs" / run / "summary.json").unlink()


# ---------------------------------------------------------------- sweep


def test_sweep_replaces_file_links_instead_of_writing_through_them(world):
    o = world / "outside"
    links = {"sweep/status.json": o / "status.json", "sweep/report/index.html": o / "index.html",
             "sweep/report/claims.json": o / "claims.json", "sweep/report/report.md": o / "victim.txt"}
    (world / "sweep" / "report").mkdir()
    (world / "sweep" / "report" / ".ffnlab-report").write_text("x")
    for at, target in links.items():
        link(world / at, target)
    before = snapshot(o)
    r = cli("sweep", "spec.yaml", "--out", "sweep", where=world)
    assert r.code == 0, r.stderr[-2000:]
    outside_unchanged(world, before)
    for at in links:
        replaced_by_file(world / at)
    assert json.loads((world / "sweep" / "status.json").read_text())[RUN].startswith("skipped")


@pytest.mark.parametrize("where", ["report/plots", "report", "configs", "logs", "runs", f"runs/{RUN}"])
def test_sweep_refuses_a_folder_link_leading_outside(world, where):
    o = world / "outside"
    target = o / "plots" if where.endswith("plots") else o / "empty"
    if where == f"runs/{RUN}":
        shutil.copytree(world / "sweep" / "runs" / RUN, o / "run")
        target = o / "run"
    if where.startswith("report"):
        (world / "sweep" / "report").mkdir()
        (world / "sweep" / "report" / ".ffnlab-report").write_text("x")  # an earlier report of this sweep
    link(world / "sweep" / where, target)
    before = snapshot(o)
    line = refused(cli("sweep", "spec.yaml", "--out", "sweep", where=world), "symlink")
    assert str(target) in line
    outside_unchanged(world, before)


def test_sweep_refuses_a_log_that_is_a_symlink_or_a_hard_link(world):
    o = world / "outside"
    unfinish(world)
    link(world / "sweep" / "logs" / f"{RUN}.log", o / "log")
    before = snapshot(o)
    refused(cli("sweep", "spec.yaml", "--out", "sweep", "--no-report", where=world), "symlink")
    outside_unchanged(world, before)
    (world / "sweep" / "logs" / f"{RUN}.log").unlink()
    os.link(o / "log", world / "sweep" / "logs" / f"{RUN}.log")
    refused(cli("sweep", "spec.yaml", "--out", "sweep", "--no-report", where=world), "hard link")
    outside_unchanged(world, before)


def test_a_dangling_lock_link_creates_nothing_at_its_target(world):
    o = world / "outside"
    for folder in ("sweep", f"sweep/runs/{RUN}"):
        link(world / folder / ".lock", o / "created-by-lock")
    before = snapshot(o)
    refused(cli("sweep", "spec.yaml", "--out", "sweep", where=world), ".lock")
    assert_refused(cli("train", "sweep/configs/g4-s0.yaml", "--out", f"sweep/runs/{RUN}", "--resume",
                       where=world), ".lock")
    outside_unchanged(world, before)
    assert not (o / "created-by-lock").exists()


# ---------------------------------------------------------------- report


def test_report_replaces_file_links_and_refuses_a_linked_default_folder(world):
    o = world / "outside"
    before = snapshot(o)
    link(world / "sweep" / "report", o / "empty")  # the default SWEEP/report leads outside
    line = assert_refused(cli("report", "sweep", where=world), "symlink")
    assert "report" in line
    outside_unchanged(world, before)
    (world / "sweep" / "report").unlink()
    (world / "mine").mkdir()  # an explicit --out whose files are links out
    for name in ("index.html", "claims.json"):
        link(world / "mine" / name, o / name)
    (world / "mine" / ".ffnlab-report").write_text("x")
    link(world / "mine" / "runs.csv", o / "victim.txt")
    assert cli("report", "sweep", "--out", "mine", where=world).code == 0
    outside_unchanged(world, before)
    for name in ("index.html", "claims.json", "runs.csv"):
        replaced_by_file(world / "mine" / name)


def test_report_refuses_a_linked_plots_folder(world):
    o = world / "outside"
    (world / "sweep" / "report").mkdir()
    (world / "sweep" / "report" / ".ffnlab-report").write_text("x")
    link(world / "sweep" / "report" / "plots", o / "plots")
    before = snapshot(o)
    assert_refused(cli("report", "sweep", where=world), "symlink")
    outside_unchanged(world, before)


# ---------------------------------------------------------------- probe


def test_probe_replaces_links_at_its_two_files(world):
    o = world / "outside"
    (world / "text.txt").write_text("the quick brown fox jumps over the lazy dog\n" * 40)
    (world / "p").mkdir()
    link(world / "p" / "index.html", o / "index.html")
    link(world / "p" / "probe.json", o / "probe.json")
    before = snapshot(o)
    args = ("probe", f"sweep/runs/{RUN}", "--corpus", "text.txt", "--tokens", "256", "--seq-len", "16",
            "--units", "2", "--examples", "1", "--out", "p")
    assert_refused(cli(*args, where=world), "--overwrite")  # names a probe writes: kept unless told
    outside_unchanged(world, before)
    r = cli(*args, "--overwrite", where=world)
    assert r.code == 0, r.stderr[-2000:]
    outside_unchanged(world, before)
    replaced_by_file(world / "p" / "index.html")
    replaced_by_file(world / "p" / "probe.json")


# ---------------------------------------------------------------- train: checkpoints, metrics, tb


def test_resume_refuses_a_linked_checkpoints_folder_and_deletes_nothing(world):
    """The reported case: checkpoints/ -> elsewhere, keep_last=1: nothing written there, nothing deleted."""
    o = world / "outside"
    run = world / "sweep" / "runs" / RUN
    shutil.move(run / "checkpoints", o / "ckpts")
    for old in ("step-0000000", "step-0000005"):  # the user's own folders beside the real checkpoints
        (o / "ckpts" / old).mkdir()
        (o / "ckpts" / old / "notes.txt").write_text("keep me")
    link(run / "checkpoints", o / "ckpts")
    unfinish(world)
    before = snapshot(o)
    line = assert_refused(cli("train", "sweep/configs/g4-s0.yaml", "--out", str(run), "--resume",
                              "--set", "train.keep_last=1", where=world), "symlink")
    assert "checkpoint" in line
    outside_unchanged(world, before)


def test_keep_last_deletes_only_checkpoints_ffnlab_wrote(world):
    run = world / "sweep" / "runs" / RUN
    ckpts = run / "checkpoints"
    assert sorted(p.name for p in ckpts.iterdir()) == [f"step-000000{i}" for i in (1, 2, 3, 4)]
    for gone in ("step-0000003", "step-0000004"):  # back to step 2, so two more are written
        shutil.rmtree(ckpts / gone)
    unfinish(world)
    shutil.rmtree(ckpts / "step-0000001")
    (ckpts / "step-0000001").mkdir()  # a folder with a checkpoint's name but no marker: the user's
    (ckpts / "step-0000001" / "notes.txt").write_text("keep me")
    link(ckpts / "step-0000009", world / "outside" / "empty")  # a link with a checkpoint's name
    before = snapshot(world / "outside")
    r = cli("train", "sweep/configs/g4-s0.yaml", "--out", str(run), "--resume", "--set", "train.keep_last=1",
            where=world)
    assert r.code == 0, r.stderr[-2000:]
    names = sorted(p.name for p in ckpts.iterdir())
    assert names == ["step-0000001", "step-0000004", "step-0000009"], names  # 2 and 3 were ffnlab's: pruned
    assert (ckpts / "step-0000001" / "notes.txt").read_text() == "keep me"
    assert (ckpts / "step-0000009").is_symlink()
    outside_unchanged(world, before)


def test_resume_replaces_a_linked_metrics_file_and_refuses_a_linked_tb_folder(world):
    o = world / "outside"
    run = world / "sweep" / "runs" / RUN
    shutil.copy(run / "metrics.jsonl", o / "metrics.jsonl")
    link(run / "metrics.jsonl", o / "metrics.jsonl")
    unfinish(world)  # a finished run's resume writes nothing: this one evaluates its last step again
    before = snapshot(o)
    r = cli("train", "sweep/configs/g4-s0.yaml", "--out", str(run), "--resume", where=world)
    assert r.code == 0, r.stderr[-2000:]
    outside_unchanged(world, before)
    replaced_by_file(run / "metrics.jsonl")
    link(run / "tb", o / "empty")
    assert_refused(cli("train", "sweep/configs/g4-s0.yaml", "--out", str(run), "--resume", "--set",
                       "train.tensorboard=true", where=world), "symlink")
    outside_unchanged(world, before)


# ---------------------------------------------------------------- capacity report


def test_capacity_report_remeasure_replaces_a_linked_cache(world):
    o = world / "outside"
    run = world / "sweep" / "runs" / RUN
    link(run / "capacity.json", o / "capacity.json")
    before = snapshot(o)
    r = cli("capacity", "report", "sweep", "--remeasure", where=world)
    assert r.code == 0, r.stderr[-2000:]
    outside_unchanged(world, before)
    replaced_by_file(run / "capacity.json")
    assert json.loads((run / "capacity.json").read_text())["bits_per_param"] >= 0


@pytest.mark.parametrize("where", ["capacity-report", f"runs/{RUN}"])
def test_capacity_report_refuses_linked_folders(world, where):
    o = world / "outside"
    if where.startswith("runs"):
        shutil.copytree(world / "sweep" / "runs" / RUN, o / "run")
        target = o / "run"
    else:
        target = o / "empty"
    link(world / "sweep" / where, target)
    before = snapshot(o)
    line = assert_refused(cli("capacity", "report", "sweep", "--remeasure", where=world))
    assert "symlink" in line or "must name something inside" in line, line
    outside_unchanged(world, before)


# ---------------------------------------------------------------- export


def test_export_into_a_link_to_a_full_folder_is_refused(world):
    o = world / "outside"
    link(world / "hf", o)
    before = snapshot(o)
    assert_refused(cli("export", f"sweep/runs/{GATED_RUN}", "--hf", "hf", where=world), "not empty")
    outside_unchanged(world, before)


# ---------------------------------------------------------------- the same sweep, damaged records


def test_sweep_rerun_refuses_a_metrics_record_with_a_text_step(world):
    metrics = world / "sweep" / "runs" / RUN / "metrics.jsonl"
    metrics.write_text(metrics.read_text().replace('"step": 1,', '"step": "x",', 1))
    unfinish(world)
    before = metrics.read_bytes()
    line = refused(cli("sweep", "spec.yaml", "--out", "sweep", where=world), "step must be an integer")
    assert "metrics.jsonl: line 1" in line and metrics.read_bytes() == before


def test_a_finished_run_without_its_eval_record_is_evaluated_again(world):
    """Final checkpoint present, eval records gone (and the summary): the sweep resumes the run at
    its last step, which evaluates it again: the same loss as the lost record (same weights)."""
    metrics = world / "sweep" / "runs" / RUN / "metrics.jsonl"
    records = [json.loads(x) for x in metrics.read_text().splitlines()]
    lost = [r for r in records if r["kind"] == "eval"]
    metrics.write_text("".join(json.dumps(r) + "\n" for r in records if r["kind"] != "eval"))
    line = refused(cli("report", "sweep", where=world), "no eval record")
    assert RUN in line
    r = cli("sweep", "spec.yaml", "--out", "sweep", "--no-report", where=world)
    assert r.code == 0, r.stderr[-2000:]
    evals = [json.loads(x) for x in metrics.read_text().splitlines() if '"eval"' in x]
    assert [(e["step"], e["val_loss"]) for e in evals] == [(lost[-1]["step"], lost[-1]["val_loss"])]
    assert cli("report", "sweep", where=world).code == 0


@pytest.mark.parametrize("damage", ["{", '{"spec": {}, "runs": "x"}', "[]"])
def test_capacity_report_on_a_malformed_sweep_record_is_one_line(world, damage):
    (world / "sweep" / "sweep.json").write_text(damage)
    refused(cli("capacity", "report", "sweep", where=world), "sweep.json")


def test_a_truncated_capacity_cache_is_measured_again(world):
    assert cli("capacity", "report", "sweep", where=world).code == 0
    first = json.loads((world / "sweep" / "capacity-report" / "capacity.json").read_text())
    cache = world / "sweep" / "runs" / RUN / "capacity.json"
    cache.write_text(cache.read_text()[:50])  # what a kill in the old, non-atomic write left
    r = cli("capacity", "report", "sweep", where=world)
    assert r.code == 0, r.stderr[-2000:]
    assert json.loads(cache.read_text())["bits_per_param"] >= 0  # a complete cache again
    assert json.loads((world / "sweep" / "capacity-report" / "capacity.json").read_text())["arms"] == first["arms"]


HOSTILE_NAME = "cap\n<img src=x onerror=alert(1)> [x](javascript:alert(1)) \x1b[31m| $\\undefined$"  # $: mathtext


def test_hostile_folder_names_and_descriptions_are_escaped_in_every_page(world):
    (world / "sweep").rename(world / HOSTILE_NAME)
    record = json.loads((world / HOSTILE_NAME / "sweep.json").read_text())
    record["spec"]["description"] = "desc \x1b]8;;http://127.0.0.1/\x07click\x1b]8;;\x07 <script>x</script>\nline"
    (world / HOSTILE_NAME / "sweep.json").write_text(json.dumps(record))
    assert cli("capacity", "report", HOSTILE_NAME, where=world).code == 0
    assert cli("report", HOSTILE_NAME, where=world).code == 0
    for folder in ("capacity-report", "report"):
        md = (world / HOSTILE_NAME / folder / "report.md").read_text()
        page = (world / HOSTILE_NAME / folder / "index.html").read_text()
        assert "\x1b" not in md + page and "\x07" not in md + page
        assert "<img src=x" not in md + page and "<script>x" not in md + page
        assert not re.search(r"(?<!\\)\]\(javascript", md)  # the link syntax is escaped: shown, not followed
    title = (world / HOSTILE_NAME / "capacity-report" / "report.md").read_text().splitlines()[0]
    assert title.startswith("# ffnlab capacity report: cap &lt;img")  # the newline did not end the title
