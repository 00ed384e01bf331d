"""``ffnlab export`` ends with the line that loads the folder (``use: transformers.pipeline(...)``);
where this Python has no transformers (``make demo``'s .venv installs ffnlab alone) it also says how
to add it, so a newcomer who follows the line does not meet a ModuleNotFoundError.

Oracles: whether a fresh interpreter can ``import transformers`` (a subprocess) for the check
itself; pyproject.toml's extras and README's Install for the command the hint gives."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from cli_inproc import run_cli

ROOT = Path(__file__).resolve().parents[2]
TINY = ["model.d_model=32", "model.n_layers=1", "model.n_heads=2", "train.seq_len=32", "train.batch_size=4",
        "train.max_steps=2", "train.eval_tokens=64", "train.progress=off", "train.tensorboard=false",
        "train.threads=1", "train.peak_flops=1e11", "train.warmup_steps=0", "data.tokenizer=byte"]


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("export_hint")
    (root / "c.txt").write_text("".join(f"line {i}: to be or not to be\n" for i in range(200)), encoding="utf-8")
    sets = [*TINY, f"data.corpus={root / 'c.txt'}", f"data.cache_dir={root / 'cache'}"]
    from ffnlab.cli import main

    with pytest.raises(SystemExit) as e:
        main(["train", "--out", str(root / "run"), *[a for s in sets for a in ("--set", s)]])
    assert e.value.code in (0, None)
    return root / "run"


def test_the_check_agrees_with_a_fresh_import():
    from ffnlab.cli.training import transformers_importable

    p = subprocess.run([sys.executable, "-c", "import transformers"], capture_output=True, check=False)
    assert transformers_importable() == (p.returncode == 0)


def test_without_transformers_export_says_how_to_add_it(run, tmp_path, capsys, monkeypatch):
    from ffnlab.cli.training import HF_EXTRA, transformers_importable

    monkeypatch.setitem(sys.modules, "transformers", None)  # as if not installed: import transformers fails
    with pytest.raises(ImportError):
        import transformers  # noqa: F401
    assert not transformers_importable()
    p = run_cli(capsys, "export", str(run), "--hf", str(tmp_path / "hf"))
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[-2] == f"use: transformers.pipeline('text-generation', '{tmp_path / 'hf'}')"
    assert lines[-1].startswith("note: this Python has no transformers") and lines[-1].endswith(HF_EXTRA)
    # the command is the project's own: an extra pyproject.toml declares with transformers in it,
    # installed as README's Install says
    extra = HF_EXTRA.split("[")[1].split("]")[0]
    pyproject = (ROOT / "pyproject.toml").read_text()
    extras = pyproject.split("[project.optional-dependencies]", 1)[1].split("\n[", 1)[0]
    deps = re.search(rf"^{re.escape(extra)} = \[([^\]]*)\]", extras, re.M)
    assert deps is not None and '"transformers' in deps.group(1), extras
    assert f"`{HF_EXTRA}`" in (ROOT / "README.md").read_text()


def test_with_transformers_export_ends_with_the_use_line(run, tmp_path, capsys, monkeypatch):
    import ffnlab.cli.training as training

    monkeypatch.setattr(training, "transformers_importable", lambda: True)
    p = run_cli(capsys, "export", str(run), "--hf", str(tmp_path / "hf"))
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[-1] == f"use: transformers.pipeline('text-generation', '{tmp_path / 'hf'}')"
    assert "no transformers" not in p.stdout + p.stderr
