"""A third adversarial pass over the CLI's numeric flags, with inputs new to the suite (written by
someone who did not write the earlier fixes), kept as tests.

The pass gave every numeric flag of ``size``, ``fit`` and ``plan`` (with --json: 1,273 calls) and
of ``train``, ``generate`` and ``sweep`` (361 calls) each of 19 values: inf, -inf, nan, NaN, 1e308,
1e400, -1, 0, -0, 99999999999999999999999, 1e-300, 4.5, 1e18, -1e-300, +5, 0x10, 1_000, " 7",
2e9. Every refusal was one ``error:`` line with exit 2, every --json answer strict JSON, no
traceback. One finding: ``train --lr 99999999999999999999999`` took a finite training loss at
its last step and then broke the weights, so its validation loss was NaN; it was written to
metrics.jsonl, and the run's own summary then refused that file as "damaged" (exit 2), where a
divergence is exit 3 with the last good checkpoint named. A validation loss that is not finite is
now that divergence, stopped before it is written.
"""

from __future__ import annotations

import json
import math

from fuzz_cli import cli

TINY = ["model.d_model=32", "model.n_layers=1", "model.n_heads=2", "train.seq_len=32", "train.batch_size=4",
        "train.max_steps=2", "train.eval_tokens=256", "train.progress=off", "train.tensorboard=false",
        "train.threads=1", "train.peak_flops=1e11", "train.warmup_steps=0", "data.bpe_vocab_size=300",
        "data.tokenizer=bpe"]


def test_a_learning_rate_that_breaks_the_weights_at_the_last_step_is_a_divergence(tmp_path):
    corpus = tmp_path / "plays.txt"
    corpus.write_text("".join(f"ROMEO: to be or not to be, line {i}; JULIET: wherefore {i % 7}\n"
                              for i in range(300)), encoding="utf-8")
    sets = [*TINY, f"data.corpus={corpus}", f"data.cache_dir={tmp_path / 'cache'}"]
    r = cli("train", "--out", "run", "--lr", "99999999999999999999999", *[a for s in sets for a in ("--set", s)],
            where=tmp_path)
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert r.code == 3 and len(lines) == 1, r.stderr[-2000:]
    assert lines[0].startswith("error: ") and "became nan" in lines[0] and "Lower train.lr" in lines[0], lines[0]
    metrics = (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()
    for line in metrics:  # what was written is strict JSON, every loss finite
        rec = json.loads(line, parse_constant=lambda c: math.nan)
        assert all(math.isfinite(v) for k, v in rec.items() if k in ("loss", "val_loss")), rec
