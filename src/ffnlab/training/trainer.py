"""The training loop behind ``ffnlab train``.

Deterministic by seed: batches are drawn from (seed, step), so an interrupted run resumed from
its last checkpoint repeats the uninterrupted loss curve bit for bit on CPU. Only rank 0 writes.
Run folder: ``config.yaml``, ``model.json``, ``metrics.jsonl``, ``summary.json``,
``checkpoints/step-N/``, ``tb/`` (TensorBoard).
"""

from __future__ import annotations

import contextlib
import json
import math
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch

from ffnlab.errors import FfnlabError, require
from ffnlab.files import write_atomic
from ffnlab.provenance import git_commit
from ffnlab.sizing.counting import count_params
from ffnlab.sizing.flops import flops_per_token
from ffnlab.sizing.widths import param_matched_ratio
from ffnlab.training import runconfig
from ffnlab.training.checkpoint import (
    latest_checkpoint,
    load_checkpoint,
    remove_stale,
    save_checkpoint,
)
from ffnlab.training.distributed import (
    DistInfo,
    barrier,
    broadcast_str,
    mean_across,
    setup,
    teardown,
)
from ffnlab.training.progress import Progress
from ffnlab.training.runconfig import RESUMABLE_CHANGES, RunConfig
from ffnlab.training.runfiles import read_records
from ffnlab.training.schedule import lr_at


class TrainingDiverged(RuntimeError):
    """The loss became NaN or infinite; the last good checkpoint is kept."""


def _differences(a: dict[str, Any], b: dict[str, Any], prefix: str = "") -> list[str]:
    out = []
    for k in sorted(set(a) | set(b)):
        if isinstance(a.get(k), dict) and isinstance(b.get(k), dict):
            out += _differences(a[k], b[k], f"{prefix}{k}.")
        elif a.get(k) != b.get(k):
            out.append(f"{prefix}{k}")
    return out


def open_run_dir(out_dir: Path, cfg: RunConfig, resume: bool) -> bool:
    """Create or reopen the run folder; return True if a previous run is being continued."""
    saved = out_dir / "config.yaml"
    if saved.exists():
        require(resume, f"{out_dir} already holds a run; pass --resume to continue it or choose another --out")
        old = runconfig.load(saved)
        changed = [d for d in _differences(old.to_dict(), cfg.to_dict())
                   if not (d.startswith("train.") and d.split(".", 1)[1] in RESUMABLE_CHANGES)]
        require(not changed, f"cannot resume {out_dir}: the config differs in {', '.join(changed)}")
        return True
    if out_dir.exists():
        require(not any(p.name != ".lock" for p in out_dir.iterdir()),
                f"{out_dir} exists and is not an ffnlab run; choose another --out")
    out_dir.mkdir(parents=True, exist_ok=True)
    return False


class MetricsLog:
    """Append-only JSON lines; on resume, records past the checkpoint step are dropped."""

    def __init__(self, path: Path, enabled: bool):
        self.path, self.enabled = path, enabled

    def truncate_after(self, step: int) -> None:
        if not (self.enabled and self.path.exists()):
            return
        keep = [json.dumps(r) for r in read_records(self.path) if r["step"] <= step]
        write_atomic(self.path, "".join(ln + "\n" for ln in keep))

    def write(self, record: dict[str, Any]) -> None:
        if self.enabled:
            with open(self.path, "a") as f:
                f.write(json.dumps(record) + "\n")


def make_optimizer(model: torch.nn.Module, cfg: RunConfig, device: str) -> torch.optim.Optimizer:
    t = cfg.train
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": t.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=t.lr, betas=(t.beta1, t.beta2), fused=device.startswith("cuda"))


def _autocast(device: str, dtype: str) -> contextlib.AbstractContextManager:
    if dtype == "auto":
        dtype = "bf16" if device.startswith("cuda") else "fp32"
    if dtype == "fp32":
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.split(":")[0], dtype=torch.bfloat16)


@torch.no_grad()
def validation_loss(model: torch.nn.Module, val: Any, starts: Any, seq_len: int, batch_size: int, device: str,
             dtype: str) -> float:
    """Mean next-token cross-entropy (nats) over fixed validation windows."""
    from ffnlab.training.corpus import get_batch

    model.eval()
    total, count = 0.0, 0
    for i in range(0, len(starts), batch_size):
        x, y = get_batch(val, starts[i:i + batch_size], seq_len)
        with _autocast(device, dtype):
            _, loss, _ = model(x.to(device), y.to(device))
        total += loss.item() * y.numel()
        count += y.numel()
    model.train()
    return total / count


def train(cfg: RunConfig, out_dir: str | Path, *, resume: bool = False) -> dict[str, Any]:
    """Train (or continue) the run in ``out_dir``; return its summary (empty on ranks > 0)."""
    from ffnlab.files import provisional_dir
    from ffnlab.training.locking import folder_lock
    from ffnlab.training.memory import check_fits

    info = setup(cfg.train.device)
    main = info.is_main
    try:
        check_fits(cfg, info.device, world_size=info.world_size)  # before any folder or tensor exists
        with provisional_dir(Path(out_dir)) if main else contextlib.nullcontext(), \
                folder_lock(Path(out_dir), "ffnlab train") if main else contextlib.nullcontext():
            return _train(cfg, Path(out_dir), resume, info)
    finally:
        teardown(info)


def _train(cfg: RunConfig, out: Path, resume: bool, info: DistInfo) -> dict[str, Any]:
    from ffnlab.training.corpus import batch_starts, eval_starts, get_batch, load_prepared
    from ffnlab.training.memory import check_splits
    from ffnlab.training.nn import build_model

    t = cfg.train
    if t.threads:
        torch.set_num_threads(t.threads)
    require(t.batch_size % info.world_size == 0,
            f"train.batch_size={t.batch_size} must be divisible by the {info.world_size} processes")
    continuing = open_run_dir(out, cfg, resume) if info.is_main else resume
    barrier(info)
    if info.is_main:
        data = runconfig.prepare_data(cfg.data, progress=t.progress != "off")
    prepared_dir = broadcast_str(str(data.dir) if info.is_main else "", info)
    if not info.is_main:
        data = load_prepared(prepared_dir)
    train_arr, val_arr = data.train(), data.val()
    check_splits(len(train_arr), len(val_arr), t.seq_len)  # before the run folder is written
    mcfg = runconfig.model_config(cfg, data.vocab_size)
    model = build_model(mcfg, seed=t.seed, max_seq_len=t.seq_len, rope_theta=cfg.model.rope_theta,
                        norm_eps=cfg.model.norm_eps).to(info.device)
    opt = make_optimizer(model, cfg, info.device)
    counts = count_params(mcfg)
    n_built = sum(p.numel() for p in model.parameters())
    assert n_built == counts.total, (n_built, counts.total)  # one source of truth for sizes
    log = MetricsLog(out / "metrics.jsonl", info.is_main)
    step, elapsed_before = 0, 0.0
    ckpt = latest_checkpoint(out) if continuing else None
    if ckpt is not None:  # load before writing anything: a bad checkpoint must leave the run untouched
        state = load_checkpoint(ckpt, model, opt, max_steps=t.max_steps, tokens_per_step=cfg.tokens_per_step())
        step, elapsed_before = state["step"], float(state.get("elapsed_s", 0.0))
    if continuing and info.is_main:
        remove_stale(out)  # temp files of a write that a kill interrupted
    if info.is_main:
        import yaml

        write_atomic(out / "config.yaml", yaml.safe_dump(cfg.to_dict(), sort_keys=False))
        write_atomic(out / "model.json", json.dumps({"model": mcfg.to_dict(), "params": counts.as_dict(),
                                                     "prepared_data": prepared_dir}, indent=1))
        log.truncate_after(step)

    tokens_per_step = cfg.tokens_per_step()
    fpt = flops_per_token(mcfg, t.seq_len).training
    if t.peak_flops:
        peak = t.peak_flops
    else:
        from ffnlab.training.peak import measure_peak_flops

        peak_dtype = "bf16" if info.device.startswith("cuda") and t.dtype in ("auto", "bf16") else "fp32"
        peak = measure_peak_flops(info.device, peak_dtype)
    train_model: torch.nn.Module = model
    if t.compile:
        train_model = torch.compile(model)
    if info.enabled:
        from torch.nn.parallel import DistributedDataParallel as DDP

        train_model = DDP(train_model, device_ids=[info.local_rank] if info.device.startswith("cuda") else None)
    val_starts = eval_starts(len(val_arr), t.seq_len, t.eval_tokens)
    tb = _tensorboard(out, t.tensorboard and info.is_main)
    per_rank = t.batch_size // info.world_size
    progress = Progress(t.max_steps, start=step, description=out.name, tokens_per_unit=tokens_per_step,
                        mode=t.progress if info.is_main else "off")
    summary: dict[str, Any] = {}
    t_start = time.perf_counter()
    last_val = None
    try:
        while step < t.max_steps:
            lr = lr_at(step, lr=t.lr, warmup_steps=t.warmup_steps, max_steps=t.max_steps,
                       min_lr_ratio=t.min_lr_ratio)
            for g in opt.param_groups:
                g["lr"] = lr
            loss_sum = torch.zeros((), device=info.device)
            aux_sum = torch.zeros((), device=info.device)
            # the step's global batch depends on (seed, step) only: accumulation and processes split it
            step_starts = batch_starts(len(train_arr), t.batch_size * t.grad_accum, t.seq_len, seed=t.seed,
                                       step=step)
            for micro in range(t.grad_accum):
                chunk = step_starts[micro * t.batch_size:(micro + 1) * t.batch_size]
                starts = chunk[info.rank * per_rank:(info.rank + 1) * per_rank]
                x, y = get_batch(train_arr, starts, t.seq_len)
                x, y = x.to(info.device), y.to(info.device)
                sync = contextlib.nullcontext()
                if info.enabled and micro < t.grad_accum - 1:
                    sync = train_model.no_sync()  # type: ignore[operator]
                with sync, _autocast(info.device, t.dtype):
                    _, loss, aux = train_model(x, y)
                    total = loss if aux is None else loss + cfg.model.ffn.aux_loss_coef * aux
                    (total / t.grad_accum).backward()
                loss_sum += loss.detach()
                if aux is not None:
                    aux_sum += aux.detach()
            grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), t.grad_clip)
            opt.step()
            opt.zero_grad(set_to_none=True)
            loss_value = mean_across(loss_sum / t.grad_accum, info).item()
            step += 1
            if not math.isfinite(loss_value):
                last = latest_checkpoint(out)
                raise TrainingDiverged(
                    f"loss became {loss_value} at step {step}; stopped. Last good checkpoint: "
                    f"{last if last else 'none yet'}. Lower train.lr or raise train.warmup_steps.")
            tokens = step * tokens_per_step
            wall = time.perf_counter() - t_start
            tok_s = (step - progress.start) * tokens_per_step / wall if wall > 0 else 0.0
            mfu = tok_s * fpt / (peak * info.world_size) if peak else 0.0  # peak is one device's
            if step % t.log_every == 0 or step == t.max_steps or step == 1:
                rec = {"kind": "train", "step": step, "tokens": tokens, "loss": loss_value, "lr": lr,
                       "grad_norm": float(grad_norm), "tokens_per_s": tok_s, "mfu": mfu,
                       "elapsed_s": elapsed_before + wall}
                if cfg.model.ffn.n_experts:
                    rec["aux_loss"] = mean_across(aux_sum / t.grad_accum, info).item()
                log.write(rec)
                _tb_write(tb, rec, step)
            if step % t.eval_every == 0 or step == t.max_steps:
                if info.is_main:
                    val = validation_loss(model, val_arr, val_starts, t.seq_len, per_rank, info.device, t.dtype)
                    last_val = val
                    rec = {"kind": "eval", "step": step, "tokens": tokens, "val_loss": val,
                           "val_ppl": math.exp(min(val, 50)), "val_bpb": data.bits_per_byte(val),
                           "train_flops": step * tokens_per_step * fpt}
                    log.write(rec)
                    _tb_write(tb, rec, step)
                barrier(info)
            if step % t.checkpoint_every == 0 or step == t.max_steps:
                if info.is_main:
                    save_checkpoint(out, model, opt, {"step": step, "tokens": tokens,
                                                      "elapsed_s": elapsed_before + wall}, t.keep_last)
                barrier(info)
            progress.update(step, loss=loss_value, val=last_val, mfu=f"{mfu:.1%}")
        wall = time.perf_counter() - t_start
        if info.is_main:
            summary = _summary(out, cfg, mcfg, counts, data, fpt, peak, elapsed_before + wall, info)
    finally:
        progress.close()
        if tb is not None:
            tb.close()
    return summary


def _summary(out: Path, cfg: RunConfig, mcfg: Any, counts: Any, data: Any, fpt: int, peak: float,
             elapsed: float, info: DistInfo) -> dict[str, Any]:
    records = read_records(out / "metrics.jsonl")
    evals = [r for r in records if r["kind"] == "eval"]
    trains = [r for r in records if r["kind"] == "train"]
    final = evals[-1] if evals else {}
    summary = {
        "status": "finished", "steps": cfg.train.max_steps, "tokens": cfg.train.max_steps * cfg.tokens_per_step(),
        "final_val_loss": final.get("val_loss"), "final_val_ppl": final.get("val_ppl"),
        "final_val_bpb": final.get("val_bpb"), "final_train_loss": trains[-1]["loss"] if trains else None,
        "d_ff": mcfg.ffn.d_ff, "d_model": mcfg.d_model, "ffn_kind": mcfg.ffn.kind,
        "ratio_raw": mcfg.ffn.d_ff / mcfg.d_model,
        "ratio_param_matched": float(param_matched_ratio(mcfg.d_model, mcfg.ffn.d_ff, mcfg.gated)),
        "params": asdict(counts) | {"total": counts.total, "non_embedding": counts.non_embedding},
        "train_flops_per_token": fpt, "train_flops": fpt * cfg.train.max_steps * cfg.tokens_per_step(),
        "wall_s": elapsed, "peak_flops": peak, "device": info.device, "world_size": info.world_size,
        "torch": torch.__version__, "tokenizer": data.tokenizer_name, "vocab_size": data.vocab_size,
        "ffnlab_commit": git_commit(),
    }
    write_atomic(out / "summary.json", json.dumps(summary, indent=1))
    return summary


def _tensorboard(out: Path, enabled: bool) -> Any:
    if not enabled:
        return None
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:  # tensorboard not installed: JSONL still has everything
        return None
    return SummaryWriter(str(out / "tb"))


def _tb_write(tb: Any, rec: dict[str, Any], step: int) -> None:
    if tb is None:
        return
    for k, v in rec.items():
        if k not in ("kind", "step") and isinstance(v, (int, float)):
            tb.add_scalar(f"{rec['kind']}/{k}", v, step)


__all__ = ["train", "validation_loss", "TrainingDiverged", "FfnlabError"]
