"""``generate`` on the inputs at the edges: a temperature near 0 (the greedy limit, not NaN
probabilities), seeds and temperatures out of range and a prompt that is not UTF-8 (one error
line, exit 2, never a traceback), on a BPE run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from cli_inproc import run_cli
from cli_run import assert_usage_error, run

from ffnlab.errors import FfnlabError

TINY = ["model.d_model=32", "model.n_layers=1", "model.n_heads=2", "train.seq_len=32", "train.batch_size=4",
        "train.max_steps=2", "train.eval_tokens=256", "train.progress=off", "train.tensorboard=false",
        "train.threads=1", "train.peak_flops=1e11", "train.warmup_steps=0", "data.bpe_vocab_size=300",
        "data.tokenizer=bpe"]


@pytest.fixture(scope="module")
def bpe_run(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("gen")
    corpus = root / "plays.txt"
    corpus.write_text("".join(f"ROMEO: to be or not to be, line {i}; JULIET: wherefore {i % 7}\n"
                              for i in range(300)), encoding="utf-8")
    sets = [*TINY, f"data.corpus={corpus}", f"data.cache_dir={root / 'cache'}"]
    p = run("train", "--out", str(root / "run"), *[a for s in sets for a in ("--set", s)])
    assert p.returncode == 0, p.stderr
    return root / "run"


def generated(capsys, run_dir: Path, *flags: str) -> str:
    p = run_cli(capsys, "generate", str(run_dir), "--prompt", "ROMEO: to", "--tokens", "8", *flags)
    assert p.returncode == 0, p.stderr
    assert "Traceback" not in p.stderr
    return p.stdout


@pytest.mark.parametrize("temperature", ["1e-300", "5e-324", "1e-40"])
def test_a_temperature_near_zero_is_the_greedy_limit(capsys, bpe_run, temperature):
    greedy = generated(capsys, bpe_run, "--temperature", "0")
    for seed in ("0", "7"):
        assert generated(capsys, bpe_run, "--temperature", temperature, "--seed", seed) == greedy


@pytest.mark.parametrize("flags, fragment", [
    (["--temperature", "inf"], "--temperature"),
    (["--temperature", "nan"], "--temperature"),
    (["--temperature", "-1"], "--temperature"),
    (["--seed", "99999999999999999999999"], "--seed"),
    (["--seed", "-1"], "--seed"),
])
def test_out_of_range_flags_are_one_error_line(capsys, bpe_run, flags, fragment):
    p = run_cli(capsys, "generate", str(bpe_run), "--prompt", "ROMEO", "--tokens", "2", *flags)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    (line,) = p.stderr.strip().splitlines()
    assert line.startswith(f"error: {fragment}"), line


def test_a_prompt_that_is_not_utf8_is_one_error_line(bpe_run):
    argv = [sys.executable.encode(), b"-m", b"ffnlab", b"generate", bytes(bpe_run), b"--prompt", b"caf\xe9 au lait",
            b"--tokens", b"2"]
    p = subprocess.run(argv, capture_output=True, timeout=600)
    proc = subprocess.CompletedProcess(p.args, p.returncode, p.stdout.decode(), p.stderr.decode())
    assert_usage_error(proc, "--prompt is not UTF-8 text (byte 0xe9 at character 3)")


def test_the_library_refuses_a_prompt_with_lone_surrogates(bpe_run):
    from ffnlab.training.generate import generate

    with pytest.raises(FfnlabError, match="not UTF-8"):
        generate(bpe_run, "caf\udce9", new_tokens=2)
