"""Sweep folders with known answers, for the analysis, report and trend tests: arms whose final
losses and speeds are set, each seed's noise shared by every arm (so arms built equal have
exactly equal means)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

TOKENS = [100 * i for i in range(1, 11)]


def fake_sweep(root: Path, arms: dict[str, tuple[float, float]], seeds: int, noise: float, *,
               comparisons: dict[str, list[str]] | None = None, claims: list[str] | None = None,
               margin: float = 0.005, rng_seed: int = 0, spread: dict[str, float] | None = None,
               spec_extra: dict | None = None, final: dict[str, float] | None = None) -> None:
    """A sweep folder: arm -> (final-loss offset, speed factor); each seed's curve is
    ``5 - 0.003 * tokens * speed + offset + noise_seed`` so offsets shift the final loss and the
    speed factor scales the tokens any loss needs by 1/speed. Seed k adds the same noise to every
    arm, so arms built equal have exactly equal means (a known zero difference); ``spread`` scales
    that noise per arm (unequal variances)."""
    shared = np.random.default_rng(rng_seed).normal(0, noise, seeds)
    runs = []
    for arm, (offset, speed) in arms.items():
        kind = "swiglu" if arm.startswith("swiglu") else "gelu"
        d_model = 108 if arm == "swiglu-r4" else 128
        ratio = float(arm.split("-r")[-1]) if "-r" in arm else 8 / 3
        for seed in range(seeds):
            e = float(shared[seed]) * (spread or {}).get(arm, 1.0)
            losses = [5.0 - 0.003 * t * speed + offset + e for t in TOKENS]
            name = f"{arm}-s{seed}"
            if final and name in final:  # a bad run: its last evaluation and summary replaced
                losses[-1] = final[name]
            d = root / "runs" / name
            d.mkdir(parents=True)
            # the trainer never writes a non-finite loss to metrics.jsonl (the reader refuses one as
            # damage), so a run that blew up shows it in its summary only
            (d / "metrics.jsonl").write_text("".join(
                json.dumps({"kind": "eval", "step": i, "tokens": t, "val_loss": v}) + "\n"
                for i, (t, v) in enumerate(zip(TOKENS, losses, strict=True)) if math.isfinite(v)))
            (d / "summary.json").write_text(json.dumps({
                "status": "finished", "steps": len(TOKENS), "final_val_loss": losses[-1],
                "final_val_ppl": math.exp(losses[-1]), "final_val_bpb": losses[-1] / math.log(2), "wall_s": 1.0,
                "tokens": TOKENS[-1],
                "train_flops": 1.0, "device": "cpu", "tokenizer": "byte"}))
            runs.append({"run": name, "arm": arm, "seed": seed, "d_model": d_model, "d_ff": round(ratio * d_model),
                         "params_non_embedding": 1000, "train_flops_per_token": 100,
                         "config": {"model": {"ffn": {"kind": kind, "rule": "ratio"}},
                                    "train": {"max_steps": len(TOKENS)}}})
    # the toy runs declare themselves mature (their tokens per parameter), so these tests judge the
    # verdict engine; test_verdicts.py's test_the_maturity_rule_* runs the same toy at the default maturity
    spec = {"name": "fake", "control": "iso-params", "tolerance": 0.02, "reference": "gelu-r4",
            "seeds": list(range(seeds)), "base": {}, "description": "", "margin": margin,
            "claims": claims or [], "comparisons": comparisons or {}, "maturity": TOKENS[-1] / 1000,
            **(spec_extra or {})}
    (root / "sweep.json").write_text(json.dumps({"spec": spec, "runs": runs, "vocab_size": 256}))


def scale_sweep(root: Path, best: dict[str, float], tokens: dict[str, int], params: dict[str, int],
                noise: float, seeds: int = 3) -> None:
    arms = {}
    for scale, b in best.items():
        for r in (1, 2, 4, 8):
            arms[f"{scale}.gelu-r{r}"] = (0.02 * (math.log2(r) - math.log2(b)) ** 2, 1.0)
    fake_sweep(root, arms, seeds, noise, claims=["ratio_optimal"],
               comparisons={"ratio_optimal": ["gelu-r1", "gelu-r2", "gelu-r8"]}, rng_seed=7)
    record = json.loads((root / "sweep.json").read_text())
    record["spec"]["scales"] = [{"name": s, "model": {}} for s in best]
    record["spec"]["trends"] = [{"name": "size", "axis": "params", "scales": list(best)}]
    for r in record["runs"]:
        r["params_non_embedding"] = params[r["arm"].split(".")[0]]
    (root / "sweep.json").write_text(json.dumps(record))
    for r in record["runs"]:
        path = root / "runs" / r["run"] / "summary.json"
        summary = json.loads(path.read_text())
        summary["tokens"] = tokens[r["arm"].split(".")[0]]
        path.write_text(json.dumps(summary))
