"""Trainer overhead: ffnlab's full training loop against its own bare model step.

Both train the same model (built by the trainer's own functions from one run config) on batches
of the same shape, with the same optimizer, precision and (optionally) ``torch.compile``:

* **bare step**: forward, backward, AdamW step and ``zero_grad`` on one batch already on the
  device, timed over a block of steps with one synchronisation at the end;
* **loop**: ``ffnlab.training.trainer.train`` itself on a real corpus, timed from the
  ``elapsed_s`` of its own ``metrics.jsonl`` over each interval between two log records from the
  second on, so the time holds everything the loop adds per step (batch sampling and copy,
  learning-rate schedule, gradient clipping, divergence watch, logging every ``--log-every``
  steps, progress) and excludes start-up, compilation and the single evaluation and checkpoint
  after the last record.

Printed first, the robust figure: the loop's own per-step work (sampling, schedule, sums,
clipping, progress, logging) timed piece by piece, each the fastest of many short repetitions, as
a share of the fastest bare step (target <= 3% on CPU). Then the two whole timings, in blocks of
``--log-every`` steps alternating ``--rounds`` times: per-step times, tokens/s, MFU and the paired
overhead ``loop / bare - 1`` (fastest blocks, the quietest round's median blocks and every round's).
On shared cores the whole timings drift between rounds by more than the overhead itself (one
2-vCPU run swung from -18% to +10% while the pieces summed to 0.35%), so they check the pieces'
figure rather than replace it.

MFU's denominator is :func:`ffnlab.training.peak.device_peak` (a listed GPU's published dense
peak, else measured over square shapes and this model's own matmuls at the run's thread count);
an MFU that would exceed 100% is shown as such an underestimate, never as a figure.

    python benchmarks/trainer_overhead.py [--device cpu|cuda] [--d-model 256 --layers 4 --ctx 256
        --batch 8] [--compile] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from ffnlab.sizing.flops import flops_per_token
from ffnlab.training import runconfig, trainer
from ffnlab.training.peak import Peak, device_peak, mfu_text, model_flops_utilisation, model_gemms
from ffnlab.training.runconfig import RunConfig
from ffnlab.training.runfiles import TrainRecord, read_records


@dataclass(frozen=True)
class Shape:
    """A GPT-2-style model and batch: GELU(tanh) MLP at 4x, LayerNorm, learned positions, biases."""

    d_model: int = 256
    n_layers: int = 4
    n_heads: int = 4
    ctx: int = 256
    batch: int = 8
    corpus: str = "shakespeare"
    tokenizer: str = "byte"
    bpe_vocab_size: int = 4096


def run_config(shape: Shape, device: str, steps: int, log_every: int, compile_: bool, cache_dir: str,
               peak: float | None) -> RunConfig:
    """The run both sides train: evaluation and checkpoint only once, after the last timed step."""
    return runconfig.from_dict({
        "model": {"d_model": shape.d_model, "n_layers": shape.n_layers, "n_heads": shape.n_heads,
                  "norm": "layernorm", "positions": "learned", "bias": True, "tied_embeddings": True,
                  "ffn": {"kind": "gelu_tanh", "rule": "ratio", "ratio": 4, "bias": True}},
        "data": {"corpus": shape.corpus, "tokenizer": shape.tokenizer, "bpe_vocab_size": shape.bpe_vocab_size,
                 "cache_dir": cache_dir},
        "train": {"seq_len": shape.ctx, "batch_size": shape.batch, "max_steps": steps, "warmup_steps": 0,
                  "lr": 3e-4, "log_every": log_every, "eval_every": steps, "checkpoint_every": steps,
                  "eval_tokens": shape.ctx, "keep_last": 1, "device": device, "compile": compile_,
                  "tensorboard": False, "progress": "off", "peak_flops": peak},
    })


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def bare_step_fn(cfg: RunConfig, vocab: int, device: str) -> Callable[[], None]:
    """One bare training step of the trainer's model, optimizer and precision on a fixed batch."""
    mcfg, _, model, opt = trainer._build(cfg, vocab, device)
    step_model = torch.compile(model) if cfg.train.compile else model
    t = cfg.train
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, mcfg.vocab_size, (t.batch_size, t.seq_len), generator=g).to(device)
    y = torch.randint(0, mcfg.vocab_size, (t.batch_size, t.seq_len), generator=g).to(device)

    def step() -> None:
        with trainer._autocast(device, t.dtype):
            _, loss, _ = step_model(x, y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    return step


def time_bare(step: Callable[[], None], device: str, warmup: int, steps: int,
              block: int | None = None) -> list[float]:
    """Seconds per step of each block of ``block`` steps (one synchronisation per block) after ``warmup``."""
    block = block or steps
    for _ in range(warmup):
        step()
    _sync(device)
    out = []
    for _ in range(max(1, steps // block)):
        t0 = time.perf_counter()
        for _ in range(block):
            step()
        _sync(device)
        out.append((time.perf_counter() - t0) / block)
    return out


def time_loop(cfg: RunConfig, work: Path) -> list[float]:
    """Seconds per step of ``trainer.train`` over each interval between two log records, from the
    second interval on (see the module docstring)."""
    out = Path(tempfile.mkdtemp(dir=work, prefix="loop-"))
    trainer.train(cfg, out / "run")
    trains = [r for r in read_records(out / "run" / "metrics.jsonl") if r["kind"] == "train"]
    # records at steps 1, L, 2L, ...: intervals [L, 2L], [2L, 3L], ... ([1, L] holds the warm-up)
    return [(b["elapsed_s"] - a["elapsed_s"]) / (b["step"] - a["step"])
            for a, b in zip(trains[1:-1], trains[2:], strict=True)]


def _best(fn: Callable[[], object], device: str, reps: int = 30, inner: int = 10) -> float:
    """Fastest mean seconds per call of ``fn`` over ``reps`` runs of ``inner`` calls."""
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        _sync(device)
        best = min(best, (time.perf_counter() - t0) / inner)
    return best


def loop_work(cfg: RunConfig, data: Any, device: str) -> dict[str, float]:
    """Seconds per step of each thing the loop does besides the model step, timed alone (the
    fastest of many short repetitions, so other work on shared cores hardly affects it)."""
    from ffnlab.training.corpus import batch_starts, get_batch
    from ffnlab.training.progress import Progress
    from ffnlab.training.schedule import lr_at

    t = cfg.train
    _, _, model, opt = trainer._build(cfg, data.vocab_size, device)
    arr = data.train()
    x, y = get_batch(arr, batch_starts(len(arr), t.batch_size, t.seq_len, seed=0, step=0), t.seq_len)
    with trainer._autocast(device, t.dtype):
        loss = model(x.to(device), y.to(device))[1]
    loss.backward()
    watch, progress = trainer.LossWatch(device), Progress(t.max_steps, mode="off")
    log = trainer.MetricsLog(Path(tempfile.mkdtemp(prefix="ffnlab-log-")) / "metrics.jsonl", True)
    rec: TrainRecord = {"kind": "train", "step": 1, "tokens": 1, "loss": 1.0, "lr": 1.0, "grad_norm": 1.0,
                        "tokens_per_s": 1.0, "mfu": 0.1, "elapsed_s": 1.0}

    def sample() -> None:
        xs, ys = get_batch(arr, batch_starts(len(arr), t.batch_size, t.seq_len, seed=t.seed, step=7), t.seq_len)
        trainer._to_device(xs, device), trainer._to_device(ys, device)

    def schedule() -> None:
        for g in opt.param_groups:
            g["lr"] = lr_at(7, lr=t.lr, warmup_steps=t.warmup_steps, max_steps=t.max_steps, min_lr_ratio=t.min_lr_ratio)

    def accumulate() -> None:
        s, a = torch.zeros((), device=device), torch.zeros((), device=device)
        s += loss.detach()
        watch.observe(s / t.grad_accum + a, 7)

    parts = {"sampling and copy": sample, "lr schedule": schedule, "loss sums and divergence watch": accumulate,
             "gradient clipping": lambda: torch.nn.utils.clip_grad_norm_(model.parameters(), t.grad_clip),
             "progress": lambda: progress.update(7, loss=1.0)}
    out = {name: _best(fn, device) for name, fn in parts.items()}
    out[f"logging (1 step in {t.log_every})"] = _best(lambda: log.write(rec), device) / t.log_every
    return out


def measure(shape: Shape, device: str, *, compile_: bool = False, rounds: int = 3, steps: int = 40,
            log_every: int = 10, bare_steps: int = 20, peak: float | None = None,
            work: Path | None = None, cache_dir: str = "data_cache") -> dict[str, Any]:
    """Interleaved bare-step and loop timings (minima over ``rounds``) and the overhead ratio;
    ``peak``: the MFU denominator (default: :func:`ffnlab.training.peak.device_peak`)."""
    cuda = device.startswith("cuda")
    work = work or Path(tempfile.mkdtemp(prefix="ffnlab-overhead-"))
    data = runconfig.prepare_data(run_config(shape, device, steps, log_every, compile_, cache_dir, None).data,
                                  progress=False)
    mcfg = runconfig.model_config(run_config(shape, device, steps, log_every, compile_, cache_dir, None),
                                  data.vocab_size)
    denominator = (Peak(peak, "given", "the caller's") if peak else
                   device_peak(device, "bf16" if cuda else "fp32", model_gemms(mcfg, shape.batch * shape.ctx)))
    cfg = run_config(shape, device, steps, log_every, compile_, cache_dir, denominator.flops)
    step = bare_step_fn(cfg, data.vocab_size, device)
    per_round: list[tuple[list[float], list[float]]] = []
    for _ in range(rounds):
        b = time_bare(step, device, warmup=3 if compile_ or cuda else 1, steps=bare_steps, block=log_every)
        per_round.append((b, time_loop(cfg, work)))
    bare = [x for b, _ in per_round for x in b]
    loop = [x for _, lp in per_round for x in lp]
    # the round least disturbed by other work: its blocks (both sides) vary least
    quiet_b, quiet_l = min(per_round, key=lambda r: max(r[0] + r[1]) / min(r[0] + r[1]))
    ratios = [statistics.median(lp) / statistics.median(b) for b, lp in per_round]
    tokens = shape.batch * shape.ctx
    fpt = flops_per_token(mcfg, shape.ctx).training
    work_s = loop_work(cfg, data, device)
    bare_single = _best(step, device, reps=10, inner=1)  # timed like the pieces: fastest single step
    tb, tl = min(bare), min(loop)
    return {"device": device, "compile": compile_, "shape": shape.__dict__, "vocab_size": data.vocab_size,
            "threads": torch.get_num_threads(),
            "dtype": "bf16" if cuda else "fp32", "peak_flops": denominator.flops,
            "peak_source": denominator.describe(), "train_flops_per_token": fpt,
            "bare_s_per_step": tb, "loop_s_per_step": tl, "bare_tokens_per_s": tokens / tb,
            "loop_tokens_per_s": tokens / tl, "bare_mfu": model_flops_utilisation(tokens / tb * fpt, denominator.flops),
            "loop_mfu": model_flops_utilisation(tokens / tl * fpt, denominator.flops), "overhead": tl / tb - 1,
            "rounds": rounds,
            "overhead_quietest_round": statistics.median(quiet_l) / statistics.median(quiet_b) - 1,
            "quietest_round_spread": max(quiet_b + quiet_l) / min(quiet_b + quiet_l),
            "overhead_per_round": [x - 1 for x in ratios],
            "bare_blocks_s": bare, "loop_blocks_s": loop, "loop_work_s": work_s,
            "bare_fastest_step_s": bare_single, "loop_work_share": sum(work_s.values()) / bare_single}


def describe(r: dict[str, Any]) -> str:
    """The robust figure first (the loop's own work, timed alone), then the whole timings."""
    s = r["shape"]
    return (f"d={s['d_model']} L={s['n_layers']} ctx={s['ctx']} batch={s['batch']} vocab={r['vocab_size']} "
            f"{r['dtype']}{' compiled' if r['compile'] else ''} on {r['device']} ({r['threads']} threads)\n"
            f"loop overhead: its own work per step, timed alone, {sum(r['loop_work_s'].values()) * 1000:.2f} ms = "
            f"{r['loop_work_share']:.2%} of the fastest bare step ({r['bare_fastest_step_s'] * 1000:.1f} ms; "
            + ", ".join(f"{k} {v * 1000:.3f} ms" for k, v in r["loop_work_s"].items()) + ")\n"
            f"whole timings (drift on shared cores): bare step {r['bare_s_per_step'] * 1000:.1f} ms "
            f"({r['bare_tokens_per_s']:,.0f} tok/s, MFU {mfu_text(r['bare_mfu'])}), full loop "
            f"{r['loop_s_per_step'] * 1000:.1f} ms ({r['loop_tokens_per_s']:,.0f} tok/s, "
            f"MFU {mfu_text(r['loop_mfu'])}); "
            f"loop / bare - 1: {r['overhead']:+.1%} (fastest blocks), {r['overhead_quietest_round']:+.1%} in the "
            f"quietest round (median blocks, spread {r['quietest_round_spread']:.2f}x), per round "
            + ", ".join(f"{x:+.1%}" for x in r["overhead_per_round"]) + "\n"
            f"MFU denominator: {r['peak_source']}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--d-model", type=int, default=256)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--ctx", type=int, default=256)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--tokenizer", default="byte", choices=["byte", "bpe"])
    ap.add_argument("--bpe-vocab", type=int, default=4096)
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=40, help="steps of each loop run (timed from step log-every)")
    ap.add_argument("--log-every", type=int, default=10)
    ap.add_argument("--bare-steps", type=int, default=20, help="bare steps per round (blocks of log-every)")
    ap.add_argument("--cache-dir", default="data_cache", help="where the tokenised corpus is kept")
    ap.add_argument("--threads", type=int, default=None, help="torch threads for both sides (default: torch's)")
    ap.add_argument("--json", default=None, help="also write the figures to this file")
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    shape = Shape(a.d_model, a.layers, a.heads, a.ctx, a.batch, tokenizer=a.tokenizer, bpe_vocab_size=a.bpe_vocab)
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}", file=sys.stderr)
    r = measure(shape, a.device, compile_=a.compile, rounds=a.rounds, steps=a.steps, log_every=a.log_every,
                bare_steps=a.bare_steps, cache_dir=a.cache_dir)
    print(describe(r))
    if a.json:
        Path(a.json).write_text(json.dumps(r, indent=1))


if __name__ == "__main__":
    main()
