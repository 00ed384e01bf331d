"""What happens when things go wrong around a sweep: a failing run, a second writer.

A run fails for real here (its folder is blocked by a file, so its ``ffnlab train`` exits
non-zero): the sweep must exit 1 naming that run, keep the other run's results, and retry only
the failed run on the next call. The lock holder is a separate process that takes ``flock``
itself, so the contention test does not rely on ffnlab's own locking code to hold the lock.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from cli_inproc import run_cli
from cli_run import assert_usage_error


def tiny_spec(tmp_path: Path) -> Path:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("".join(f"line {i}: the quick brown fox jumps over the lazy dog\n" for i in range(400)))
    spec = {
        "name": "fails", "control": "fixed-d-model", "seeds": [0, 1], "workers": 1, "threads_per_worker": 1,
        "base": {"model": {"d_model": 16, "n_layers": 1, "n_heads": 2},
                 "data": {"corpus": str(corpus), "cache_dir": str(tmp_path / "cache")},
                 "train": {"seq_len": 16, "batch_size": 4, "max_steps": 3, "warmup_steps": 0, "eval_every": 3,
                           "eval_tokens": 128, "checkpoint_every": 3, "tensorboard": False}},
        "arms": [{"name": "g4", "ffn": {"kind": "gelu", "rule": "ratio", "ratio": 4}}],
    }
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


@pytest.mark.slow
def test_a_failing_run_fails_the_sweep_by_name_and_keeps_the_others(tmp_path, capsys):
    spec, out = tiny_spec(tmp_path), tmp_path / "sweep"
    (out / "runs").mkdir(parents=True)
    blocker = out / "runs" / "g4-s1"
    blocker.write_text("not a run folder")  # g4-s1 cannot create its run folder
    r = run_cli(capsys, "sweep", str(spec), "--out", str(out), "--no-report")
    assert r.returncode == 1, (r.returncode, r.stderr)
    lines = [x for x in r.stderr.splitlines() if x.startswith("error: ")]
    assert len(lines) == 1 and "Traceback" not in r.stderr
    assert "1 of 2 runs failed (g4-s1)" in lines[0]
    status = json.loads((out / "status.json").read_text())
    assert status["g4-s0"] == "finished" and status["g4-s1"].startswith("failed (exit 2")
    assert "error: " in (out / "logs" / "g4-s1.log").read_text()  # the run's own one-line error
    kept = (out / "runs" / "g4-s0" / "summary.json").read_bytes()
    assert json.loads(kept)["status"] == "finished"
    blocker.unlink()
    r = run_cli(capsys, "sweep", str(spec), "--out", str(out), "--no-report")
    assert r.returncode == 0, r.stderr
    assert "1 run(s) trained, 1 already finished" in r.stdout
    assert (out / "runs" / "g4-s0" / "summary.json").read_bytes() == kept  # not rerun, not rewritten
    assert json.loads((out / "runs" / "g4-s1" / "summary.json").read_text())["status"] == "finished"


HOLDER = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.read()  # hold until the test closes stdin
"""


@pytest.fixture
def held_lock(tmp_path):  # noqa: ANN201 - yields a function that locks a folder
    holders = []

    def hold(folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        p = subprocess.Popen([sys.executable, "-c", HOLDER, str(folder / ".lock")], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
        holders.append(p)
        assert p.stdout.readline().strip() == "held"

    yield hold
    for p in holders:
        p.stdin.close()
        p.wait(timeout=30)


def test_second_training_writer_is_refused_with_one_line(tmp_path, capsys, held_lock):
    run_dir = tmp_path / "run"
    held_lock(run_dir)
    r = run_cli(capsys, "train", "--out", str(run_dir), "--set", "model.d_model=16", "--set", "model.n_heads=2",
                "--set", "train.max_steps=2", "--set", f"data.cache_dir={tmp_path / 'cache'}")
    assert_usage_error(r, f"another ffnlab train is running in {run_dir}")
    assert [p.name for p in run_dir.iterdir()] == [".lock"]  # the second writer wrote nothing


def test_second_sweep_writer_is_refused_with_one_line(tmp_path, capsys, held_lock):
    spec, out = tiny_spec(tmp_path), tmp_path / "sweep"
    held_lock(out)
    r = run_cli(capsys, "sweep", str(spec), "--out", str(out))
    assert_usage_error(r, f"another ffnlab sweep is running in {out}")
    assert [p.name for p in out.iterdir()] == [".lock"]
    assert not (tmp_path / "cache").exists()  # refused before preparing any data
