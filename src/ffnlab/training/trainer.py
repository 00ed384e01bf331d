"""The training loop behind ``ffnlab train``.

Deterministic by seed: batches are drawn from (seed, step), so an interrupted run resumed from
its last checkpoint repeats the uninterrupted loss curve bit for bit on CPU. Only rank 0 writes.
Run folder: ``config.yaml``, ``model.json``, ``metrics.jsonl``, ``summary.json``,
``checkpoints/step-N/``, ``tb/`` (TensorBoard).

:func:`_train` sets a run up one concern per function (process, folder, data, model, checkpoint,
run files, peak FLOP/s, compile/DDP) and :func:`_loop` runs it. On a GPU the host never waits for
the device except at steps that log, evaluate or checkpoint: losses stay on the device, divergence
is detected there (:class:`LossWatch`) and batches are copied from pinned memory without blocking.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypedDict, cast

import torch

from ffnlab.errors import FfnlabError, require
from ffnlab.files import append_text, check_inside, make_dir, settle, write_all_atomic, write_atomic
from ffnlab.interrupt import stop_between_steps
from ffnlab.provenance import git_commit
from ffnlab.sizing.config import ModelConfig
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
from ffnlab.training.peak import (
    MAX_GEMM_FLOPS,
    Peak,
    device_peak,
    mfu_text,
    model_flops_utilisation,
    model_gemms,
)
from ffnlab.training.progress import Progress, start_line
from ffnlab.training.runconfig import RESUMABLE_CHANGES, RunConfig
from ffnlab.training.runfiles import (
    EvalRecord,
    MetricRecord,
    RunModelFile,
    TrainRecord,
    check_build,
    check_run_model,
    differences,
    read_records,
    read_run_model,
    value_at,
)
from ffnlab.training.schedule import lr_at
from ffnlab.training.threads import ThreadChoice, choose_threads, load_average

RUN_FOLDERS = ("checkpoints", "tb")  # folders of a run folder; none may lead outside it


class TrainingDiverged(RuntimeError):
    """The loss became NaN or infinite; the last good checkpoint is kept."""


# why a change is not resumable, for the keys people change most
WHY_NOT_RESUMABLE = {
    "train.max_steps": "the learning-rate schedule (warm-up, then decay to the end) is laid out over max_steps, "
                       "so the steps already taken belong to another schedule",
    "train.warmup_steps": "the learning-rate schedule the steps already taken followed would change",
    "train.lr": "the learning-rate schedule the steps already taken followed would change",
    "train.batch_size": "the batches already drawn (by seed and step) would no longer be this run's",
    "train.seq_len": "the batches already drawn (by seed and step) would no longer be this run's",
    "train.seed": "the batches and the initial weights are drawn from the seed",
}


def resume_refusal(out_dir: Path, changed: list[str], old: runconfig.RunConfigDict,
                   new: runconfig.RunConfigDict) -> str:
    """Why ``--resume`` refuses a changed config, and what to do instead."""
    parts = [f"{k} {value_at(old, k)!r} -> {value_at(new, k)!r}" for k in changed]
    why = "; ".join(f"{k}: {WHY_NOT_RESUMABLE[k]}" for k in changed if k in WHY_NOT_RESUMABLE)
    return (f"cannot resume {out_dir}: the config differs in {', '.join(changed)} ({', '.join(parts)})"
            + (f"; {why}" if why else "")
            + "; to train with the new config choose another --out, or resume with the saved values "
              f"({out_dir / 'config.yaml'})")


def _at(value: float | None, step: int) -> str | None:
    """A metric for the progress line with the step it was measured at: the line advances every
    step, the loss only where it is logged, so a bare figure would read as the current step's
    (None, not shown, for a metric not measured: a non-main process's evaluation)."""
    return None if value is None else f"{value:.4g} (step {step})"


def _continues(out_dir: Path, cfg: RunConfig, resume: bool) -> bool:
    """Whether ``out_dir`` holds a run that ``cfg`` continues: False when it holds none; refused
    without --resume, with a config changed beyond the resumable keys, or with a run folder
    leading outside it. Reads only."""
    saved = out_dir / "config.yaml"
    if not saved.exists():
        return False
    require(resume, f"{out_dir} already holds a run; pass --resume to continue it or choose another --out")
    old = runconfig.load(saved)
    changed = [d for d in differences(old.to_dict(), cfg.to_dict()) if d not in runconfig.LOCATION_KEYS
               and not (d.startswith("train.") and d.split(".", 1)[1] in RESUMABLE_CHANGES)]
    if changed:
        raise FfnlabError(resume_refusal(out_dir, changed, old.to_dict(), cfg.to_dict()))
    for sub in RUN_FOLDERS:  # before anything is read or written through them
        check_inside(out_dir / sub, out_dir)
    return True


def open_run_dir(out_dir: Path, cfg: RunConfig, resume: bool) -> bool:
    """Create or reopen the run folder; return True if a previous run is being continued."""
    if _continues(out_dir, cfg, resume):
        return True
    if out_dir.exists():
        require(not any(p.name != ".lock" for p in out_dir.iterdir()),
                f"{out_dir} exists and is not an ffnlab run; choose another --out")
    make_dir(out_dir)
    return False


class MetricsLog:
    """Append-only JSON lines; on resume, records past the checkpoint step are dropped."""

    def __init__(self, path: Path, enabled: bool):
        self.path, self.enabled = path, enabled

    def truncate_after(self, step: int, *, eval_at_step: bool = True) -> None:
        """Drop records past ``step`` (and the eval at ``step`` unless ``eval_at_step``)."""
        kept = self.kept_through(step, eval_at_step=eval_at_step)
        if kept is not None:
            write_atomic(self.path, kept)

    def kept_through(self, step: int, *, eval_at_step: bool = True) -> str | None:
        """The file's text with the records past ``step`` dropped (and the eval at ``step`` unless
        ``eval_at_step``), read and validated, nothing written; None when there is no file to cut."""
        if not (self.enabled and self.path.exists()):
            return None
        keep = [json.dumps(r) for r in read_records(self.path)
                if r["step"] < step or (r["step"] == step and (eval_at_step or r["kind"] != "eval"))]
        return "".join(ln + "\n" for ln in keep)

    def write(self, record: MetricRecord) -> None:
        if self.enabled:
            append_text(self.path, json.dumps(record) + "\n")  # never through a link planted at the name


def make_optimizer(model: torch.nn.Module, cfg: RunConfig, device: str) -> torch.optim.Optimizer:
    t = cfg.train
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": t.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=t.lr, betas=(t.beta1, t.beta2), fused=device.startswith("cuda"))


def _autocast(device: str, dtype: str) -> contextlib.AbstractContextManager:
    if runconfig.compute_dtype(dtype, device) == "fp32":
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


class Summary(TypedDict):
    """``summary.json``, written when a run finishes."""

    status: str
    steps: int
    tokens: int
    final_val_loss: float | None
    final_val_ppl: float | None
    final_val_bpb: float | None
    final_train_loss: float | None
    d_ff: int
    d_model: int
    ffn_kind: str
    ratio_raw: float
    ratio_param_matched: float
    params: dict[str, int]  # ParamCounts' fields, total and non_embedding
    train_flops_per_token: int
    train_flops: int
    wall_s: float
    peak_flops: float
    peak_source: str
    device: str
    world_size: int
    torch: str
    tokenizer: str
    vocab_size: int
    threads: int
    threads_set_by: str
    ffnlab_commit: str  # with -dirty for local edits, or "unknown"


def train(cfg: RunConfig, out_dir: str | Path, *, resume: bool = False) -> Summary | None:
    """Train (or continue) the run in ``out_dir``; return its summary (None on ranks > 0, and for
    a run that had already finished: :func:`already_finished`)."""
    from ffnlab.files import provisional_dir
    from ffnlab.training.locking import folder_lock
    from ffnlab.training.memory import check_fits, check_splits

    info = setup(cfg.train.device)
    main = info.is_main
    try:
        if already_finished(Path(out_dir), cfg, resume, info):
            return None
        check_fits(cfg, info.device, world_size=info.world_size)  # before any folder or tensor exists
        # the corpus is checked before the run folder exists: a refused run never makes (or has to
        # remove) a folder another run may be starting in at the same moment
        data, prepared_dir = _load_data(cfg, info)
        check_splits(len(data.train()), len(data.val()), cfg.train.seq_len)
        with provisional_dir(Path(out_dir)) if main else contextlib.nullcontext(), \
                folder_lock(Path(out_dir), "ffnlab train") if main else contextlib.nullcontext():
            return _train(cfg, Path(out_dir), resume, info, data, prepared_dir)
    finally:
        teardown(info)


def already_finished(out: Path, cfg: RunConfig, resume: bool, info: DistInfo) -> bool:
    """Whether --resume names a run that has finished ``cfg``'s max_steps (its summary.json and last
    evaluation: :func:`ffnlab.training.runfiles.finished_summary`, the test the sweep skips a run
    by), its config checked first as any continued run's is and read under the run's lock (a lock
    linked out of the folder is refused, a run another process trains is not read as finished):
    then said in one line on rank 0, and nothing is trained, measured or written (every rank
    learns it from rank 0)."""
    from ffnlab.escape import one_line
    from ffnlab.training.locking import folder_lock
    from ffnlab.training.runfiles import finished_summary

    steps = cfg.train.max_steps
    done = False
    if info.is_main and resume and _continues(out, cfg, resume):
        with folder_lock(out, "ffnlab train", reading=True):
            done = finished_summary(out, steps, evaluated=True) is not None
            if done:  # a finished run whose config.yaml describes another model than it trained is refused
                _recorded_model(out, cfg)
    if broadcast_str("finished" if done else "", info) != "finished":
        return False
    if info.is_main:
        print(one_line(f"{out} has already finished its {steps:,} steps: nothing to train, no file changed"),
              file=sys.stderr, flush=True)
    return True


def _train(cfg: RunConfig, out: Path, resume: bool, info: DistInfo, data: Any, prepared_dir: str) -> Summary | None:
    """Set a run up one concern at a time, then hand it to :func:`_loop`."""
    threads = _configure_process(cfg.train, info)
    continuing = _open_folder(out, cfg, resume, info)
    train_arr, val_arr = data.train(), data.val()
    mcfg, counts, model, opt = _build(cfg, data.vocab_size, info.device)
    # the checkpoint is loaded (and validated) before any run file is touched: a bad one leaves the run as it was
    step, elapsed_before, trained = _restore(out, continuing, model, opt, cfg)
    # then, before any run file is touched, the record of the model trained so far against config.yaml
    # (settings the checkpoint's shapes cannot tell: n_heads of the same width, rope_theta, norm_eps)
    recorded = _recorded_model(out, cfg) if continuing else None
    if trained is not None:  # and the checkpoint's own record of its build settings (model.json may be gone);
        # a checkpoint written before state.json kept them records none: it is compared on nothing
        check_build(trained[0], trained[1], cfg, out / "config.yaml")
    log = MetricsLog(out / "metrics.jsonl", info.is_main)
    if info.is_main:
        _write_run_files(out, cfg, mcfg, counts, prepared_dir, step, log, recorded)
        settle(out)  # a run from here on: stopped later, it keeps its files to be resumed
    if continuing and info.is_main:
        remove_stale(out)  # temp folders of a write that a kill interrupted
    run = Run(cfg=cfg, out=out, info=info, data=data, train_arr=train_arr, val_arr=val_arr, mcfg=mcfg,
              counts=counts, model=model, train_model=_wrap(model, cfg.train, info), opt=opt,
              peak=_peak(cfg, mcfg, info), log=log, threads_set_by=threads.set_by)
    return _loop(run, step, elapsed_before)


# -- setting up ------------------------------------------------------------------------------

def _configure_process(t: Any, info: DistInfo) -> ThreadChoice:
    """Thread count (:mod:`ffnlab.training.threads`) and the one batch constraint that depends on
    the number of processes; returns who chose the thread count, for summary.json."""
    choice = choose_threads(t.threads, os.environ, torch.get_num_threads(), load_average())
    if choice.count:
        torch.set_num_threads(choice.count)
    require(t.batch_size % info.world_size == 0,
            f"train.batch_size={t.batch_size} must be divisible by the {info.world_size} processes")
    return choice


def _open_folder(out: Path, cfg: RunConfig, resume: bool, info: DistInfo) -> bool:
    """Rank 0 creates or reopens the run folder; every rank learns whether a run is continued."""
    continuing = open_run_dir(out, cfg, resume) if info.is_main else resume
    barrier(info)
    return continuing


def _load_data(cfg: RunConfig, info: DistInfo) -> tuple[Any, str]:
    """Rank 0 tokenises (or reuses) the corpus; the other ranks open the folder it names."""
    from ffnlab.training.corpus import load_prepared

    data = runconfig.prepare_data(cfg.data, progress=cfg.train.progress != "off") if info.is_main else None
    prepared_dir = broadcast_str(str(data.dir) if data is not None else "", info)
    return (data if data is not None else load_prepared(prepared_dir)), prepared_dir


def _build(cfg: RunConfig, vocab_size: int, device: str) -> tuple[ModelConfig, Any, torch.nn.Module,
                                                                  torch.optim.Optimizer]:
    """The model (checked against the counted sizes) and its optimizer, on ``device``."""
    from ffnlab.training.nn import build_model

    t = cfg.train
    mcfg = runconfig.model_config(cfg, vocab_size)
    model = build_model(mcfg, seed=t.seed, max_seq_len=t.seq_len, **runconfig.build_settings(cfg)).to(device)
    counts = count_params(mcfg)
    n_built = sum(p.numel() for p in model.parameters())
    assert n_built == counts.total, (n_built, counts.total)  # one source of truth for sizes
    return mcfg, counts, model, make_optimizer(model, cfg, device)


def _restore(out: Path, continuing: bool, model: torch.nn.Module, opt: torch.optim.Optimizer,
             cfg: RunConfig) -> tuple[int, float, tuple[Path, dict[str, float] | None] | None]:
    """Load the latest checkpoint of a continued run: (step, seconds trained before, (its state.json,
    the build settings it records)); (0, 0.0, None) if none."""
    ckpt = latest_checkpoint(out) if continuing else None
    if ckpt is None:
        return 0, 0.0, None
    # every part validated (types, shapes, step range, agreement with the config) before any is used
    state = load_checkpoint(ckpt, model, opt, max_steps=cfg.train.max_steps, tokens_per_step=cfg.tokens_per_step())
    return state["step"], float(state.get("elapsed_s", 0.0)), (ckpt / "state.json", state.get("build"))


def _recorded_model(out: Path, cfg: RunConfig) -> RunModelFile | None:
    """A continued run's model.json (None where there is none: nothing recorded), refused in one
    line where it describes another model than ``cfg`` (:func:`ffnlab.training.runfiles.check_run_model`):
    resuming would train, and record, a model the steps already taken did not."""
    if not (out / "model.json").is_file():  # a folder at the name is refused where it would be written
        return None
    files = read_run_model(out)
    check_run_model(files, cfg, out / "config.yaml")
    return files


def _write_run_files(out: Path, cfg: RunConfig, mcfg: ModelConfig, counts: Any, prepared_dir: str, step: int,
                     log: MetricsLog, recorded: RunModelFile | None = None) -> None:
    """Metrics past the restored step dropped (the file validated first), config.yaml and model.json,
    written all or none (:func:`ffnlab.files.write_all_atomic`): a refusal of any of them (a folder
    where model.json goes) leaves the run's files as they were. A resumed run's file that already
    holds what would be written (the same config read back, the same JSON, the same metrics text)
    is left alone, its bytes included (``ratio: 4`` is not rewritten as ``ratio: 4.0``).

    model.json's ``build`` of a run restored from a checkpoint records no more than ``recorded``
    (its model.json, checked) did, and nothing where there is none (``recorded`` None: model.json
    removed): a run written before a setting was recorded, or whose record is gone, was trained with
    a value only config.yaml's word tells, which a resume does not turn into a record. Only a run
    that starts at step 0 records every build setting, the ones it is about to train with."""
    import yaml

    def same(path: Path, read: Callable[[Path], object], new: object) -> bool:
        if not path.is_file() or path.is_symlink():  # a link planted at the name is replaced, as before
            return False
        try:
            return read(path) == new
        except (FfnlabError, OSError, ValueError):
            return False

    # a run restored at its last step is evaluated again (its eval record may be missing)
    metrics = log.kept_through(step, eval_at_step=step < cfg.train.max_steps)
    settings = runconfig.build_settings(cfg)
    build: dict[str, float] | None = settings
    if step:  # restored: the steps taken are recorded only where the run's own model.json said so
        build = None if recorded is None or recorded.build is None else {
            k: v for k, v in settings.items() if k in recorded.build}
    model = {"model": mcfg.to_dict(), **({"build": build} if build is not None else {}),
             "params": counts.as_dict(), "prepared_data": prepared_dir}
    files: dict[Path, str | bytes] = {}
    if metrics is not None and not same(log.path, lambda p: p.read_bytes(), metrics.encode()):
        files[log.path] = metrics
    if not same(out / "config.yaml", lambda p: runconfig.load(p).to_dict(), cfg.to_dict()):
        files[out / "config.yaml"] = yaml.safe_dump(cfg.to_dict(), sort_keys=False)
    if not same(out / "model.json", lambda p: json.loads(p.read_bytes()), json.loads(json.dumps(model))):
        files[out / "model.json"] = json.dumps(model, indent=1)
    if files:
        write_all_atomic(files)


def _peak(cfg: RunConfig, mcfg: ModelConfig, info: DistInfo) -> Peak:
    """The MFU denominator of one device: train.peak_flops if set, else the published peak of a
    listed GPU or one measured over square shapes and the model's own (:mod:`ffnlab.training.peak`)."""
    t = cfg.train
    if t.peak_flops:
        return Peak(t.peak_flops, "given", "train.peak_flops")
    dtype = runconfig.compute_dtype(t.dtype, info.device)
    kind = "cuda" if info.device.startswith("cuda") else "cpu"
    gemms = model_gemms(mcfg, t.batch_size // info.world_size * t.seq_len, MAX_GEMM_FLOPS[kind])
    return device_peak(info.device, dtype, gemms)


def _wrap(model: torch.nn.Module, t: Any, info: DistInfo) -> torch.nn.Module:
    """The module the loop calls: ``model`` itself, compiled if asked, inside DDP with several processes."""
    # torch.compile of a Module returns an OptimizedModule (a Module); its stubs say only Callable
    wrapped = cast(torch.nn.Module, torch.compile(model)) if t.compile else model
    if info.enabled:
        from torch.nn.parallel import DistributedDataParallel as DDP

        wrapped = DDP(wrapped, device_ids=[info.local_rank] if info.device.startswith("cuda") else None)
    return wrapped


# -- the loop --------------------------------------------------------------------------------

@dataclass
class Run:
    """What the loop of one run reads: config, folder, process, data, model and logs."""

    cfg: RunConfig
    out: Path
    info: DistInfo
    data: Any
    train_arr: Any
    val_arr: Any
    mcfg: ModelConfig
    counts: Any
    model: torch.nn.Module
    train_model: torch.nn.Module
    opt: torch.optim.Optimizer
    peak: Peak
    log: MetricsLog
    threads_set_by: str  # who chose the thread count (ffnlab.training.threads), for summary.json

    @property
    def per_rank(self) -> int:
        return self.cfg.train.batch_size // self.info.world_size


class LossWatch:
    """Non-finite loss detection without a host synchronisation per step.

    ``observe`` keeps the first bad step and its loss on the device; ``raise_if_diverged`` reads
    them (one sync, all processes agreeing) at the steps that log, evaluate or checkpoint anyway.
    """

    def __init__(self, device: str):
        self.first_bad = torch.full((), -1, dtype=torch.int64, device=device)
        self.bad_loss = torch.zeros((), device=device)

    def observe(self, loss: torch.Tensor, step: int) -> None:
        bad = ~torch.isfinite(loss) & (self.first_bad < 0)
        self.first_bad.masked_fill_(bad, step)
        self.bad_loss = torch.where(bad, loss.to(self.bad_loss.dtype), self.bad_loss)

    def raise_if_diverged(self, out: Path, step: int, info: DistInfo) -> None:
        if mean_across((self.first_bad >= 0).to(torch.float32), info).item() == 0:
            return
        first = int(self.first_bad.item())
        where, value = (first, float(self.bad_loss.item())) if first >= 0 else (step, math.nan)
        last = latest_checkpoint(out)
        raise TrainingDiverged(
            f"loss became {value} at step {where}; stopped. Last good checkpoint: "
            f"{last if last else 'none yet'}. Lower train.lr or raise train.warmup_steps.")


def _to_device(x: torch.Tensor, device: str) -> torch.Tensor:
    """Copy a host batch to ``device``; from pinned memory and without blocking the host on CUDA."""
    return x.pin_memory().to(device, non_blocking=True) if device.startswith("cuda") else x


def _train_step(run: Run, step: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One optimizer step (all micro-batches); returns (loss, aux loss sum, grad norm), on the device."""
    from ffnlab.training.corpus import batch_starts, get_batch

    t, info = run.cfg.train, run.info
    for g in run.opt.param_groups:
        g["lr"] = lr_at(step, lr=t.lr, warmup_steps=t.warmup_steps, max_steps=t.max_steps,
                        min_lr_ratio=t.min_lr_ratio)
    loss_sum = torch.zeros((), device=info.device)
    aux_sum = torch.zeros((), device=info.device)
    # the step's global batch depends on (seed, step) only: accumulation and processes split it
    step_starts = batch_starts(len(run.train_arr), t.batch_size * t.grad_accum, t.seq_len, seed=t.seed, step=step)
    for micro in range(t.grad_accum):
        chunk = step_starts[micro * t.batch_size:(micro + 1) * t.batch_size]
        x, y = get_batch(run.train_arr, chunk[info.rank * run.per_rank:(info.rank + 1) * run.per_rank], t.seq_len)
        x, y = _to_device(x, info.device), _to_device(y, info.device)
        sync = contextlib.nullcontext()
        if info.enabled and micro < t.grad_accum - 1:
            sync = run.train_model.no_sync()  # type: ignore[operator]
        with sync, _autocast(info.device, t.dtype):
            loss, aux = run.train_model(x, y)[1:]  # the logits are not kept through backward
            total = loss if aux is None else loss + run.cfg.model.ffn.aux_loss_coef * aux
            (total / t.grad_accum).backward()
        loss_sum += loss.detach()
        if aux is not None:
            aux_sum += aux.detach()
    grad_norm = torch.nn.utils.clip_grad_norm_(run.model.parameters(), t.grad_clip)
    run.opt.step()
    run.opt.zero_grad(set_to_none=True)
    return loss_sum / t.grad_accum, aux_sum, grad_norm


def _log_train(run: Run, tb: Any, step: int, losses: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
               timing: tuple[float, float, int]) -> tuple[float, float | None]:
    """Write one train record (the only host read of the step's loss); return (loss, MFU)."""
    t, info = run.cfg.train, run.info
    loss, aux_sum, grad_norm = losses
    wall, elapsed_before, first_step = timing
    tokens_per_step = run.cfg.tokens_per_step()
    loss_value = mean_across(loss, info).item()
    tok_s = (step - first_step) * tokens_per_step / wall if wall > 0 else 0.0
    mfu = model_flops_utilisation(tok_s * _fpt(run) / info.world_size, run.peak.flops)  # None above 100%
    rec: TrainRecord = {"kind": "train", "step": step, "tokens": step * tokens_per_step, "loss": loss_value,
           "lr": run.opt.param_groups[0]["lr"], "grad_norm": float(grad_norm), "tokens_per_s": tok_s, "mfu": mfu,
           "elapsed_s": elapsed_before + wall}
    if run.cfg.model.ffn.n_experts:
        rec["aux_loss"] = mean_across(aux_sum / t.grad_accum, info).item()
    run.log.write(rec)
    _tb_write(tb, rec, step)
    return loss_value, mfu


def _evaluate(run: Run, tb: Any, step: int, val_starts: Any) -> float | None:
    """Validation loss on rank 0 (logged); None on the other ranks, which wait for it."""
    t, info = run.cfg.train, run.info
    val = None
    if info.is_main:
        val = validation_loss(run.model, run.val_arr, val_starts, t.seq_len, run.per_rank, info.device, t.dtype)
    # the last step's update can break the weights after its (finite) training loss was taken: a
    # validation loss that is not finite is that divergence, said before it reaches metrics.jsonl
    broken = torch.tensor(0.0 if val is None or math.isfinite(val) else 1.0, device=info.device)
    if mean_across(broken, info).item() > 0:
        last = latest_checkpoint(run.out)
        raise TrainingDiverged(
            f"validation loss became {val if val is not None else math.nan} at step {step}; stopped. Last good "
            f"checkpoint: {last if last else 'none yet'}. Lower train.lr or raise train.warmup_steps.")
    if info.is_main:
        assert val is not None
        tokens = step * run.cfg.tokens_per_step()
        rec: EvalRecord = {"kind": "eval", "step": step, "tokens": tokens, "val_loss": val,
               "val_ppl": math.exp(min(val, 50)), "val_bpb": run.data.bits_per_byte(val),
               "train_flops": tokens * _fpt(run)}
        run.log.write(rec)
        _tb_write(tb, rec, step)
    barrier(info)
    return val


def _checkpoint(run: Run, step: int, elapsed: float) -> None:
    if run.info.is_main:
        save_checkpoint(run.out, run.model, run.opt, {"step": step, "tokens": step * run.cfg.tokens_per_step(),
                                                      "elapsed_s": elapsed,
                                                      "build": runconfig.build_settings(run.cfg)},
                        run.cfg.train.keep_last)
    barrier(run.info)


def _fpt(run: Run) -> int:
    """Training FLOPs per token (3x forward, attention over the full context)."""
    return flops_per_token(run.mcfg, run.cfg.train.seq_len).training


def _due(step: int, every: int, last: int) -> bool:
    return step % every == 0 or step == last


class Shown(TypedDict, total=False):
    """The metrics the progress line shows, once measured."""

    loss: str | None
    mfu: str
    val: str | None


def _loop(run: Run, step: int, elapsed_before: float) -> Summary | None:
    """Steps until train.max_steps. The host reads device values only at steps that log, evaluate
    or checkpoint (and checks for divergence there first), so a GPU is never waited on in between."""
    from ffnlab.training.corpus import eval_starts

    t, info, out = run.cfg.train, run.info, run.out
    val_starts = eval_starts(len(run.val_arr), t.seq_len, t.eval_tokens)
    tb = _tensorboard(out, t.tensorboard and info.is_main)
    if info.is_main and t.progress not in ("off", False) and step < t.max_steps:  # before the bar's first frame
        print(start_line(out.name, params=run.counts.total, non_embedding=run.counts.non_embedding,
                         d_model=run.mcfg.d_model, d_ff=run.mcfg.ffn.d_ff, ffn_kind=run.mcfg.ffn.kind,
                         n_layers=run.mcfg.n_layers, steps=t.max_steps, tokens_per_step=run.cfg.tokens_per_step(),
                         from_step=step, n_experts=run.mcfg.ffn.n_experts, top_k=run.mcfg.ffn.top_k,
                         active=run.counts.total_active), file=sys.stderr, flush=True)
    at_last = _at(1.234, t.max_steps)  # the widest a loss shown with its step will be (4 figures)
    progress = Progress(t.max_steps, start=step, description=out.name, tokens_per_unit=run.cfg.tokens_per_step(),
                        mode=cast(str,
                                  t.progress) if info.is_main else "off",  # a mode name once read (runconfig.check)
                        expect={"loss": at_last or "", "mfu": mfu_text(0.999), "val": at_last or ""})
    watch = LossWatch(info.device)
    first_step = step
    shown: Shown = {}
    summary: Summary | None = None
    t_start = time.perf_counter()
    with stop_between_steps() as stop_if_interrupted:
        try:
            if step == t.max_steps:  # restored at the end: the final evaluation again (same weights, same loss)
                shown["val"] = _at(_evaluate(run, tb, step, val_starts), step)
            while step < t.max_steps:
                losses = _train_step(run, step)
                step += 1
                watch.observe(losses[0], step)
                log_now = _due(step, t.log_every, t.max_steps) or step == 1
                eval_now, ckpt_now = _due(step, t.eval_every, t.max_steps), _due(step, t.checkpoint_every, t.max_steps)
                if log_now or eval_now or ckpt_now:
                    watch.raise_if_diverged(out, step, info)
                    wall = time.perf_counter() - t_start
                    if log_now:
                        loss_value, mfu = _log_train(run, tb, step, losses, (wall, elapsed_before, first_step))
                        shown["loss"], shown["mfu"] = _at(loss_value, step), mfu_text(mfu)
                    if eval_now:
                        shown["val"] = _at(_evaluate(run, tb, step, val_starts), step)
                    if ckpt_now:
                        _checkpoint(run, step, elapsed_before + wall)
                progress.update(step, **shown)
                stop_if_interrupted()  # a Ctrl-C that came during the step
            if info.is_main:
                summary = _summary(out, run.cfg, run.mcfg, run.counts, run.data, _fpt(run), run.peak,
                                   elapsed_before + time.perf_counter() - t_start, info, run.threads_set_by)
        finally:
            progress.close()
            if tb is not None:
                tb.close()
    return summary


def _summary(out: Path, cfg: RunConfig, mcfg: Any, counts: Any, data: Any, fpt: int, peak: Peak,
             elapsed: float, info: DistInfo, threads_origin: str) -> Summary:
    records = read_records(out / "metrics.jsonl")
    evals = [r for r in records if r["kind"] == "eval"]
    trains = [r for r in records if r["kind"] == "train"]
    final = evals[-1] if evals else {}
    summary: Summary = {
        "status": "finished", "steps": cfg.train.max_steps, "tokens": cfg.train.max_steps * cfg.tokens_per_step(),
        "final_val_loss": final.get("val_loss"), "final_val_ppl": final.get("val_ppl"),
        "final_val_bpb": final.get("val_bpb"), "final_train_loss": trains[-1]["loss"] if trains else None,
        "d_ff": mcfg.ffn.d_ff, "d_model": mcfg.d_model, "ffn_kind": mcfg.ffn.kind,
        "ratio_raw": mcfg.ffn.d_ff / mcfg.d_model,
        "ratio_param_matched": float(param_matched_ratio(mcfg.d_model, mcfg.ffn.d_ff, mcfg.gated)),
        "params": asdict(counts) | {"total": counts.total, "non_embedding": counts.non_embedding},
        "train_flops_per_token": fpt, "train_flops": fpt * cfg.train.max_steps * cfg.tokens_per_step(),
        "wall_s": elapsed, "peak_flops": peak.flops, "peak_source": peak.describe(), "device": info.device,
        "world_size": info.world_size,
        "torch": torch.__version__, "tokenizer": data.tokenizer_name, "vocab_size": data.vocab_size,
        "threads": torch.get_num_threads(), "threads_set_by": threads_origin,
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
    return SummaryWriter(str(make_dir(out / "tb", out)))


def _tb_write(tb: Any, rec: MetricRecord, step: int) -> None:
    if tb is None:
        return
    for k, v in rec.items():
        if k not in ("kind", "step") and isinstance(v, (int, float)):
            tb.add_scalar(f"{rec['kind']}/{k}", v, step)


__all__ = ["train", "validation_loss", "TrainingDiverged", "FfnlabError"]
