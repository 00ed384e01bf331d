"""Helpers shared by the adversarial passes over the command line (tests/cli/test_adversarial_pass_*.py):
ffnlab in a subprocess, its one-line refusal, strict JSON and a small corpus."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

SRC = str(Path(__file__).resolve().parents[2] / "src")


def strict_json(text: str) -> Any:
    """``text`` parsed as strict JSON (NaN and Infinity refused)."""
    def no_constants(c: str) -> Any:
        raise ValueError(c)

    return json.loads(text, parse_constant=no_constants)


def write_corpus(folder: Path) -> Path:
    corpus = folder / "c.txt"
    corpus.write_text("".join(f"ROMEO: to be or not to be, line {i}; JULIET: wherefore {i % 7}\n"
                              for i in range(400)))
    return corpus


def tiny_sweep_spec(*ratios: float) -> dict[str, Any]:
    """A one-seed sweep spec of one-step byte-level runs on c.txt (:func:`write_corpus`), one GELU
    arm per ratio, named a, b, ...: the smallest sweep the spec checks accept."""
    train = {"seq_len": 32, "batch_size": 4, "max_steps": 1, "tensorboard": False, "progress": "off", "threads": 1}
    return {"name": "s", "control": "fixed-d-model", "seeds": [0],
            "base": {"model": {"d_model": 32, "n_layers": 1, "n_heads": 2},
                     "data": {"corpus": "c.txt", "tokenizer": "byte"}, "train": train},
            "arms": [{"name": chr(ord("a") + i), "ffn": {"kind": "gelu", "rule": "ratio", "ratio": r}}
                     for i, r in enumerate(ratios)]}


def train_run(where: Path, config_yaml: str) -> Path:
    """``ffnlab train t.yaml --out run`` in ``where`` (the corpus c.txt written there too), which
    must succeed: the trained run the tampering tests copy."""
    write_corpus(where)
    (where / "t.yaml").write_text(config_yaml)
    p = ffnlab_process(["train", "t.yaml", "--out", "run"], where, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    return where


# the passes' 4-step run on a facts corpus, byte level (its peak FLOP/s given: no timing)
FACTS_RUN_YAML = (
    "model: {d_model: 32, n_layers: 1, n_heads: 2}\n"
    "data: {corpus: 'facts:subjects=24,relations=2,values=4', cache_dir: cache, tokenizer: byte}\n"
    "train: {seq_len: 32, batch_size: 4, max_steps: 4, checkpoint_every: 2, eval_every: 2, eval_tokens: 64,"
    " tensorboard: false, progress: 'off', threads: 1, warmup_steps: 0, peak_flops: 1.0e+12}\n"
)


def copy_run(trained: Path, tmp_path: Path) -> Path:
    """A copy of :func:`train_run`'s run as ``tmp_path/run``, beside links to its prepared-corpus
    cache and its text, so a command run in ``tmp_path`` finds them where the run says."""
    shutil.copytree(trained / "run", tmp_path / "run", symlinks=True)
    (tmp_path / "cache").symlink_to(trained / "cache")
    (tmp_path / "c.txt").symlink_to(trained / "c.txt")
    return tmp_path / "run"


def ffnlab_process(argv: list[str], where: Path, timeout: float = 300, **env: str) -> subprocess.CompletedProcess:
    """``python -m ffnlab ARGV`` in ``where``, with this checkout's src first on the path."""
    return subprocess.run([sys.executable, "-m", "ffnlab", *argv], cwd=where, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": SRC, **env}, timeout=timeout)


def one_error_line(p: subprocess.CompletedProcess) -> str:
    """The one ``error:`` line of a refusal (exit 2, no traceback)."""
    lines = [x for x in p.stderr.splitlines() if x.strip()]
    assert p.returncode == 2 and "Traceback" not in p.stderr, (p.returncode, p.stderr[-2000:])
    assert len(lines) == 1 and lines[0].startswith("error: "), p.stderr[-2000:]
    return lines[0]


def fake_hub_process(tmp_path: Path, misbehave: str | None, *argv: str, repos: dict[str, Any] | None = None,
                     hub: Any = None, **env_extra: str) -> tuple[subprocess.CompletedProcess, list]:
    """``ffnlab ARGV`` in a subprocess against a fake Hub on 127.0.0.1 (tests/helpers/fake_hub.py)
    holding ``repos`` and answering as ``misbehave`` says, with a fresh HF home and ffnlab cache
    and the environment's own Hub settings removed; its result and the requests the Hub saw.
    ``hub``: a FakeHub set up by the caller (``location``, ``gzip``), read after (``sent``)."""
    from fake_hub import FakeHub

    fake = hub if hub is not None else FakeHub()
    for repo, revisions in (repos or {}).items():
        fake.add(repo, revisions)
    fake.misbehave = misbehave
    server, url = fake.serve()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGING", "FFNLAB_TIMEOUT"))}
    env |= {"HF_ENDPOINT": url, "HF_HOME": str(tmp_path / "hfhome"), "HF_HUB_OFFLINE": "0",
            "HF_DATASETS_OFFLINE": "0", "TRANSFORMERS_OFFLINE": "0", "HF_HUB_DISABLE_TELEMETRY": "1",
            "FFNLAB_CACHE": str(tmp_path / "cache"), "PYTHONPATH": SRC, **env_extra}
    try:
        p = subprocess.run([sys.executable, "-m", "ffnlab", *argv], capture_output=True, text=True, env=env,
                           cwd=tmp_path, timeout=300)
    finally:
        fake.release()
        server.shutdown()
    return p, list(fake.requests)


def interrupted_train(tmp_path: Path, out: str, monkeypatch: Any) -> tuple[int, str]:
    """``train t.yaml --out OUT`` in-process from ``tmp_path``, its trainer replaced by one that
    writes the run's config.yaml (a run that began) and is stopped by Ctrl-C; exit status and
    stderr (the resume hint the passes split with bash)."""
    import contextlib
    import io

    from fuzz_cli import cwd

    from ffnlab.cli import main
    from ffnlab.training import trainer

    def stopped(cfg, out_dir, *, resume=False):  # noqa: ANN001, ANN202
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        (Path(out_dir) / "config.yaml").write_text(FACTS_RUN_YAML)
        raise KeyboardInterrupt

    monkeypatch.setattr(trainer, "train", stopped)
    (tmp_path / "t.yaml").write_text(FACTS_RUN_YAML)
    err = io.StringIO()
    code = 0
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()), cwd(tmp_path):
        try:
            main(["train", "t.yaml", "--out", out])
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
    return code, err.getvalue()


def train_facts_run(where: Path) -> Path:
    """The passes' 4-step facts run trained in this process (``train t.yaml --out run`` in
    ``where``, with its corpus), torch's thread count restored after; ``where``."""
    import torch
    from fuzz_cli import cli

    write_corpus(where)
    (where / "t.yaml").write_text(FACTS_RUN_YAML)
    threads = torch.get_num_threads()
    try:
        r = cli("train", "t.yaml", "--out", "run", where=where)
    finally:
        torch.set_num_threads(threads)
    assert r.code == 0, r.stderr[-2000:]
    return where


def run_files(run: Path) -> dict[str, bytes]:
    """Every file under a run folder, by its relative path, with its bytes."""
    return {str(p.relative_to(run)): p.read_bytes() for p in sorted(run.rglob("*")) if p.is_file()}


def edit_config(run: Path, old: str, new: str) -> None:
    """Replace ``old`` (which must be there) by ``new`` once in the run's config.yaml."""
    path = run / "config.yaml"
    text = path.read_text()
    assert old in text, (old, text)
    path.write_text(text.replace(old, new, 1))


def unfinish(run: Path) -> None:
    """The run as a kill after its step-2 checkpoint leaves it: no summary.json, no step 4."""
    (run / "summary.json").unlink()
    shutil.rmtree(run / "checkpoints" / "step-0000004")


def export_use_line(tmp_path: Path, hf: str, monkeypatch: Any) -> str:
    """``export run --hf HF`` in ``tmp_path`` with the exporter replaced by one that makes the folder
    and says it wrote a finished run's export (the printed line is the question); its ``use:`` line,
    the line of Python to paste, without ``use: ``."""
    from types import SimpleNamespace

    from fuzz_cli import cli

    from ffnlab.training import export

    def wrote(run: Any, hf_dir: Any, checkpoint: Any = None, *, overwrite: bool = False) -> SimpleNamespace:
        Path(hf_dir).mkdir()
        return SimpleNamespace(architecture="LlamaForCausalLM", layout="llama", checkpoint="step-0000004", step=4,
                               max_steps=4, max_positions=19869, train_len=32, active=False, finished=True)

    monkeypatch.setattr(export, "export_run", wrote)
    r = cli("export", "run", "--hf", hf, where=tmp_path)
    assert r.code == 0, r.stderr[-500:]
    lines = [x for x in r.stdout.splitlines() if x.startswith("use: ")]
    assert len(lines) == 1, r.stdout
    return lines[0][len("use: ") :]


def sweep_rerun(tmp_path: Path, monkeypatch: Any, edit_record: Any = None,
                edit_spec: Any = None) -> tuple[Any, int, bool]:
    """``sweep s.json --out sw`` (workers a counter), sweep.json then edited by ``edit_record`` and
    the spec by ``edit_spec``, and the same command again: its result, workers started, and whether
    sw/ changed."""
    from fuzz_cli import cli, snapshot

    from ffnlab.experiments.sweep import run as sweep_run

    monkeypatch.setenv("FFNLAB_CACHE", str(tmp_path / "cache"))
    started: list = []
    monkeypatch.setattr(sweep_run.Children, "run", lambda self, cmd, log, threads: started.append(cmd) or 0)
    monkeypatch.setattr(sweep_run, "cpu_peak", lambda threads: 1e11)
    monkeypatch.setattr(sweep_run, "POLL_S", 0.01)  # the stand-in workers finish at once
    write_corpus(tmp_path)
    spec = tiny_sweep_spec(4, 2)
    (tmp_path / "s.json").write_text(json.dumps(spec))
    assert cli("sweep", "s.json", "--out", "sw", "--no-report", where=tmp_path).code == 0
    record = json.loads((tmp_path / "sw" / "sweep.json").read_text())
    if edit_record:
        edit_record(record)
        (tmp_path / "sw" / "sweep.json").write_text(json.dumps(record, indent=1))
    if edit_spec:
        edit_spec(spec)
        (tmp_path / "s.json").write_text(json.dumps(spec))
    before, n = snapshot(tmp_path / "sw"), len(started)
    r = cli("sweep", "s.json", "--out", "sw", "--no-report", where=tmp_path)
    return r, len(started) - n, snapshot(tmp_path / "sw") != before
