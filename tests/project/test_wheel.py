"""A wheel built from this tree, installed outside the checkout, answers sizing and finds presets."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from paths import ROOT


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Build the wheel from a copy of the project, install it into a fresh target folder."""
    base = tmp_path_factory.mktemp("wheel")
    project = base / "project"
    project.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, project / name)
    shutil.copytree(ROOT / "src", project / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", str(project), "-w", str(base / "dist")],
                   check=True, capture_output=True, timeout=300)
    wheels = list((base / "dist").glob("ffnlab-*.whl"))
    assert len(wheels) == 1
    target = base / "site"
    subprocess.run([*pip, "install", "--no-deps", "--target", str(target), str(wheels[0])],
                   check=True, capture_output=True, timeout=300)
    return target


def _run(target: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(target)}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env,
                          cwd=target.parent, timeout=120)


def test_wheel_holds_data_and_presets(installed: Path) -> None:
    pkg = installed / "ffnlab"
    assert (pkg / "data" / "zoo.json").is_file() and (pkg / "data" / "claims.json").is_file()
    presets = sorted(p.stem for p in (pkg / "experiments" / "presets").glob("*.yaml"))
    assert {"golden-quick", "gated-law", "scale-trend"} <= set(presets)
    templates = {p.name for p in (pkg / "experiments" / "reporting" / "templates").glob("*.j2")}
    # every page renders from these (base: the shared layout); shipped, or no page renders
    assert templates == {"base.html.j2", "report.html.j2", "report.md.j2", "probe.html.j2"}


def test_installed_wheel_runs_sizing_from_outside_the_checkout(installed: Path) -> None:
    r = _run(installed, "-c", "import ffnlab; print(ffnlab.__file__)")
    assert r.stdout.strip().startswith(str(installed)), r.stdout + r.stderr  # not the checkout's copy
    r = _run(installed, "-m", "ffnlab", "size", "--d-model", "4096", "--ffn", "swiglu", "--rule", "llama", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["d_ff"] == 11008  # LLaMA-7B's published width


def test_installed_wheel_resolves_presets(installed: Path) -> None:
    shipped = {p.stem for p in (installed / "ffnlab" / "experiments" / "presets").glob("*.yaml")}
    named = set()
    for command in (["sweep", "--help"], ["capacity", "run", "--help"]):  # capacity presets run there
        r = _run(installed, "-m", "ffnlab", *command)
        assert r.returncode == 0, r.stderr
        named |= set(re.findall(r"[a-z][a-z0-9-]+", r.stdout))
    assert shipped and shipped <= named, shipped - named  # the help names every preset that ships
    code = ("from ffnlab.experiments.sweep.spec import PRESET_DIR, load_spec; s = load_spec('golden-quick'); "
            "print(s.name, len(s.arms), PRESET_DIR)")
    r = _run(installed, "-c", code)
    assert r.returncode == 0, r.stderr
    name, n_arms, where = r.stdout.split()
    assert name == "golden-quick" and int(n_arms) >= 2 and where.startswith(str(installed))
    r = _run(installed, "-m", "ffnlab", "sweep", "no-such-preset")
    assert r.returncode == 2 and "golden-quick" in r.stderr  # the error lists the shipped presets


def test_installed_wheel_ships_the_builtin_corpus_and_trains_on_it(installed: Path) -> None:
    """`pip install` then `ffnlab train` on the default corpus: no separate corpus package to install."""
    code = ("from ffnlab.training.corpus.sources import shakespeare_files; fs = shakespeare_files(); "
            "print(len(fs), fs[0].parent)")
    r = _run(installed, "-c", code)
    assert r.returncode == 0, r.stderr
    n, where = r.stdout.split()
    assert int(n) == 42 and where.startswith(str(installed))  # the wheel's copy, not the checkout's
    assert (installed / "ffnlab" / "training" / "corpus" / "shakespeare" / "NOTICE.md").is_file()
    run = installed.parent / "run"
    sets = ["model.d_model=32", "model.n_layers=1", "model.n_heads=2", "train.seq_len=16", "train.batch_size=2",
            "train.eval_tokens=64", "train.tensorboard=false", "train.peak_flops=1e11", "train.progress=off",
            "data.max_chars=20000", f"data.cache_dir={installed.parent / 'cache'}"]
    r = _run(installed, "-m", "ffnlab", "train", "--out", str(run), "--max-steps", "2",
             *[a for s in sets for a in ("--set", s)])
    assert r.returncode == 0, r.stderr
    assert json.loads((run / "summary.json").read_text())["steps"] == 2
