"""train -> export -> transformers: AutoTokenizer and pipeline("text-generation") on byte-level and
BPE runs.

Oracles: ffnlab's own tokenizer of the run (the token ids AutoTokenizer must give) and a greedy
decode written here against ffnlab's own model (the text the pipeline must generate).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from cli_inproc import run_cli

transformers = pytest.importorskip("transformers")

TINY = ["model.d_model=32", "model.n_layers=1", "model.n_heads=2", "train.seq_len=32", "train.batch_size=4",
        "train.max_steps=6", "train.eval_tokens=256", "train.progress=off", "train.tensorboard=false",
        "train.threads=1", "train.peak_flops=1e11", "train.lr=0.02", "train.warmup_steps=0",
        "data.bpe_vocab_size=300"]
PROMPT = "ROMEO: to be or"
NEW = 12


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("corpus") / "plays.txt"
    lines = [f"ROMEO: to be or not to be, line {i}; JULIET: wherefore art thou, é ü {i % 7}\n" for i in range(300)]
    path.write_text("".join(lines), encoding="utf-8")
    return path


def greedy(model: torch.nn.Module, ids: list[int], n: int) -> list[int]:
    out = list(ids)
    with torch.no_grad():
        for _ in range(n):
            logits = model(torch.tensor([out]))[0]
            out.append(int(logits[0, -1].argmax()))
    return out


@pytest.mark.parametrize("tokenizer", ["byte", "bpe"])
def test_exported_run_generates_with_pipeline(tmp_path, capsys, corpus, tokenizer):
    from ffnlab.training.corpus import load_prepared
    from ffnlab.training.export import load_run_model

    run, hf = tmp_path / "run", tmp_path / "hf"
    sets = [*TINY, f"data.corpus={corpus}", f"data.tokenizer={tokenizer}", f"data.cache_dir={tmp_path / 'cache'}"]
    p = run_cli(capsys, "train", "--out", str(run), *[a for s in sets for a in ("--set", s)])
    assert p.returncode == 0, p.stderr
    p = run_cli(capsys, "export", str(run), "--hf", str(hf))
    assert p.returncode == 0, p.stderr
    assert {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
            "generation_config.json"} <= {f.name for f in hf.iterdir()}

    ours = load_prepared(json.loads((run / "model.json").read_text())["prepared_data"]).tokenizer()
    theirs = transformers.AutoTokenizer.from_pretrained(str(hf))
    text = "ROMEO: wherefore é ü 3\n"
    assert theirs(text)["input_ids"] == [int(i) for i in ours.encode(text)]  # no special tokens added
    assert theirs.decode(theirs(text)["input_ids"]) == text

    model = load_run_model(run)
    want = ours.decode(greedy(model, [int(i) for i in ours.encode(PROMPT)], NEW))
    pipe = transformers.pipeline("text-generation", str(hf), device="cpu")
    got = pipe(PROMPT, max_new_tokens=NEW, do_sample=False)[0]["generated_text"]
    assert got == want and got.startswith(PROMPT) and len(got) > len(PROMPT)
    sampled = pipe(PROMPT, max_new_tokens=NEW)[0]["generated_text"]  # the generation config's sampling defaults
    assert sampled.startswith(PROMPT)
