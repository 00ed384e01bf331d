"""Run a sweep: every (arm, seed) is an ``ffnlab train`` run in its own folder.

Layout of a sweep folder::

    sweep.json          the spec and the resolved runs (what each arm's d_model became)
    configs/RUN.yaml    the run config given to ``ffnlab train``
    runs/RUN/           the run itself (metrics, checkpoints, summary)
    logs/RUN.log        its output

Resumable: finished runs are skipped; unfinished ones (crashed, killed) continue from their
last checkpoint via ``ffnlab train --resume``. Nothing finished is rerun or overwritten.
Backends: ``local`` (worker processes sharing the cores, ``threads_per_worker`` each) and
``ray`` (the same commands as Ray tasks on a cluster sharing the sweep folder).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ffnlab import escape
from ffnlab.errors import FfnlabError, require
from ffnlab.experiments.sweep.spec import ResolvedRun, SweepSpec, arm_config, at_scale, resolve, saved_spec
from ffnlab.files import (
    check_inside,
    make_dir,
    open_append,
    provisional_dir,
    read_mapping,
    write_atomic,
)
from ffnlab.training import runconfig
from ffnlab.training.locking import die_with_parent, folder_lock
from ffnlab.training.memory import check_fits
from ffnlab.training.progress import Progress
from ffnlab.training.runfiles import finished_summary, last_step, read_records
from ffnlab.validation import show

MAX_WORKERS = 4096  # parallel runs of one sweep (as a spec's workers key allows)
SWEEP_FOLDERS = ("configs", "logs", "runs")  # a sweep folder's folders; none may lead outside it


def run_finished(run_dir: Path, max_steps: int, *, evaluated: bool = False) -> bool:
    """Whether the run finished ``max_steps`` (:func:`ffnlab.training.runfiles.finished_summary`,
    the one test of it that the analysis uses too)."""
    return finished_summary(run_dir, max_steps, evaluated=evaluated) is not None


def _same_run(path: Path, config: dict[str, Any]) -> bool:
    """Whether the config saved at ``path`` trains the same run as ``config``."""
    saved = runconfig.without_locations(dict(runconfig.load(path).to_dict()))
    for d in (saved, config := runconfig.without_locations(json.loads(json.dumps(config)))):
        for key in runconfig.RESUMABLE_CHANGES:
            d["train"].pop(key, None)
    return saved == config


def _trained(runs: object) -> object:
    """A sweep record's runs without where their files live (runconfig.LOCATION_KEYS)."""
    if not isinstance(runs, list):
        return runs
    return [{**r, "config": runconfig.without_locations(r["config"])}
            if isinstance(r, dict) and isinstance(r.get("config"), dict) else r for r in runs]


def _as_trained(spec: object) -> object:
    """A spec as a sweep record holds it (``asdict``, or whatever JSON a record read back holds) with
    what feeds the run configs (``base``, each arm's ``ffn``, each scale's ``model`` and ``train``)
    replaced by the run config each (scale, arm) resolves to before its width is solved: the record
    read as :func:`ffnlab.experiments.sweep.spec.saved_spec` reads it, each scale's sweep by
    :func:`~ffnlab.experiments.sweep.spec.at_scale` and each arm's config by
    :func:`~ffnlab.experiments.sweep.spec.arm_config` (one seed for all: every run's seed is the spec's
    ``seeds``, compared as they are) without :data:`ffnlab.training.runconfig.LOCATION_KEYS`.
    ``rope_theta: 1e4`` and ``1.0e+4``, ``norm_eps: '0.00001'`` and ``1e-05``, another
    ``data.cache_dir`` are the same sweep; what resolves to another run is not. A spec whose parts do not
    resolve (a record written by hand) is returned as it is."""
    if not isinstance(spec, dict):
        return spec

    def mapping(d: object, *keys: str) -> bool:  # d a dict, and each of its keys absent or a dict
        return isinstance(d, dict) and all(isinstance(d.get(k, {}), dict) for k in keys)

    arms, scales = spec.get("arms"), spec.get("scales", [])
    if not (mapping(spec.get("base"), "model", "train") and isinstance(arms, list) and isinstance(scales, list)
            and all(mapping(a, "ffn") and "name" in a for a in arms)
            and all(mapping(c, "model", "train") and "name" in c for c in scales)):
        return spec
    try:
        parsed = saved_spec(spec)
        cells = [at_scale(parsed, scale) for scale in parsed.scales] or [parsed]
        configs = [runconfig.without_locations(dict(arm_config(cell, arm, 0).to_dict()))
                   for cell in cells for arm in cell.arms]  # where files live is no part of what is trained
    except (FfnlabError, TypeError, ValueError, KeyError):  # a scale's model.ffn no mapping, a field unread
        return spec
    return {**spec, "base": None, "configs": configs,
            "arms": [{k: v for k, v in a.items() if k != "ffn"} for a in arms],
            "scales": [{k: v for k, v in c.items() if k not in ("model", "train")} for c in scales]}


def steps_done(run_dir: Path) -> int:
    """Latest logged step of a run (0 if none), read from the tail of its metrics file (a poll)."""
    return last_step(run_dir / "metrics.jsonl")


def prepare_sweep(spec: SweepSpec, out: Path) -> list[ResolvedRun]:
    """Resolve the runs (preparing the corpus once for its vocabulary) and write sweep.json."""
    path = out / "sweep.json"
    old: dict[str, object] = {}  # the record already there, as read (checked only by comparison)
    if path.exists():  # refuse a different sweep before any work
        old = read_mapping(path, "sweep record", fmt="JSON")
        new = json.loads(json.dumps(asdict(spec)))
        saved = old.get("spec")
        # keys added to specs since that folder was written (e.g. comparisons, margin, scales) take
        # their defaults, so a folder from an older ffnlab still resumes when nothing else differs
        saved = {**{k: v for k, v in new.items() if k not in saved}, **saved} if isinstance(saved, dict) else saved
        # compared as the runs they resolve to: a number spelled otherwise (1e4, 1.0e+4) is the same sweep
        require(_as_trained(saved) == _as_trained(new),
                f"{out} holds a different sweep (its spec differs); use another --out")
    data = runconfig.prepare_data(runconfig.from_dict(spec.base).data)
    runs = resolve(spec, data.vocab_size)
    from ffnlab.training.distributed import pick_device  # torch: only once a sweep runs

    for r in runs:  # a run that cannot fit this machine is refused now, not after the others ran
        cfg = runconfig.from_dict(r.config)
        try:
            check_fits(cfg, pick_device(cfg.train.device), vocab_size=data.vocab_size)
        except FfnlabError as e:
            raise FfnlabError(f"sweep run {r.run}: {e}") from None
    record = {"spec": asdict(spec), "vocab_size": data.vocab_size, "prepared_data": str(data.dir),
              "runs": [asdict(r) for r in runs]}
    if path.exists():
        require(_trained(old.get("runs")) == _trained(record["runs"]),
                f"{out} holds a different sweep (its spec or resolved runs differ); use another --out")
    else:
        make_dir(out)
        write_atomic(path, json.dumps(record, indent=1))
    for sub in SWEEP_FOLDERS:
        make_dir(out / sub, out)
    for r in runs:  # leftovers of another spec (e.g. after sweep.json was moved away) are refused
        run_dir = check_inside(out / "runs" / r.run, out)  # the run's own folder is its train's --out
        for saved in (out / "configs" / f"{r.run}.yaml", run_dir / "config.yaml"):
            require(not saved.exists() or _same_run(saved, r.config),
                    f"{saved} was written for a different sweep; use another --out")
        if (run_dir / "metrics.jsonl").is_file():
            read_records(run_dir / "metrics.jsonl")  # a damaged run is refused now, not in its child
        cfg_path = out / "configs" / f"{r.run}.yaml"
        if not cfg_path.exists():
            runconfig.save(runconfig.from_dict(r.config), cfg_path)
    return runs


def resolution_lines(runs: list[ResolvedRun]) -> list[str]:
    """How each arm was resolved under the spec's control, one line per arm (seeds share it)."""
    seen: dict[str, ResolvedRun] = {}
    for r in runs:
        seen.setdefault(r.arm, r)
    return [escape.one_line(f"arm {a}: d_model {r.d_model}, d_ff {r.d_ff} (ratio {r.d_ff / r.d_model:.3g}), "
                            f"{r.n_heads} heads, {r.params_non_embedding:,} non-embedding params, "
                            f"{r.train_flops_per_token / 1e6:,.2f} MFLOP per training token")
            for a, r in seen.items()]


ESTIMATE_UTILISATION = (0.10, 0.30)  # of a device's peak: what small models reach (an assumption, printed)


def duration(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:,.1f} h"
    return f"{seconds / 60:.0f} min" if seconds >= 60 else f"{seconds:.0f} s"


def duration_span(fast: float, slow: float) -> str:
    """A range of seconds in words: ``3 min-10 min``; one figure where both ends read the same, and
    ``under 1 s`` where even the slow end is (never ``0 s-0 s``)."""
    if slow < 0.5:
        return "under 1 s"
    a, b = duration(fast), duration(slow)
    return a if a == b else f"{a}-{b}"


def worker_count(spec: SweepSpec, workers: int | None = None) -> int:
    """Runs side by side: ``--workers``, else the spec's, else the cores over each run's threads."""
    return workers or spec.workers or max(1, (os.cpu_count() or 1) // spec.threads_per_worker)


def run_flops(r: ResolvedRun) -> int:
    """The training FLOPs of one run: its steps x its own tokens per step x FLOPs per token."""
    cfg = runconfig.from_dict(r.config)
    return cfg.train.max_steps * cfg.tokens_per_step() * r.train_flops_per_token


def cpu_peak(threads: int) -> float | None:
    """This machine's CPU peak measured at ``threads`` (square shapes: the arms' own differ); None
    where a GPU trains the runs (each takes its accelerator's published peak)."""
    import torch

    from ffnlab.training.peak import measure_peak

    return None if torch.cuda.is_available() else measure_peak("cpu", "fp32", threads=threads).flops


def worker_share(peak: float | None, workers: int) -> float:
    """Each worker's share of this machine's peak: the CPU's measured ``peak``, or (None) the local
    GPU's published one shared by ``workers``."""
    if peak is not None:
        return peak
    from ffnlab.training.peak import device_peak

    return device_peak("cuda", "bf16").flops / workers


def estimate_seconds(flops: float, workers: int, peak: float) -> tuple[float, float]:
    """(fastest, slowest): ``flops`` over ``workers`` x ``peak`` at 30% and at 10% of it."""
    lo, hi = ESTIMATE_UTILISATION
    return flops / (workers * peak * hi), flops / (workers * peak * lo)


def time_estimate(flops: float, runs: int, workers: int, peak: float) -> str:
    """The time the runs left would take, from their training FLOPs and each worker's share of the
    device's peak (:func:`ffnlab.training.peak.device_peak`: the CPU's measured, a listed GPU's
    published), at 10-30% of it: an estimate, said as one, with its assumption."""
    lo, hi = ESTIMATE_UTILISATION
    fast, slow = estimate_seconds(flops, workers, peak)
    return (f"estimate: {runs} run(s) left, {flops:.3g} training FLOPs, {duration_span(fast, slow)} on "
            f"{workers} worker(s) at {lo:.0%}-{hi:.0%} of a {peak / 1e9:,.0f} GFLOP/s peak each (an assumption, "
            "not a measurement; start-up and evaluation come on top)")


def command(out: Path, run: ResolvedRun, threads: int, peak: float | None) -> list[str]:
    """The ``ffnlab train`` command of one run; ``peak``: the CPU peak measured once for all runs
    (None on a GPU: each run takes its accelerator's published peak). A sweep arm need not be
    exportable to a transformers architecture (iso-params keeps the heads' count and size while
    d_model moves, which e.g. the StableLM layout cannot express), so the export check is skipped:
    the sweep measures, it does not ship models."""
    sets = [f"train.threads={threads}", "train.progress=lines"] + ([f"train.peak_flops={peak}"] if peak else [])
    # a sweep folder named -sw or ~/sw (./~/sw) as ./-sw/..., ./~/sw/...: not an option, not $HOME's
    args = [sys.executable, "-m", "ffnlab", "train", escape.path_arg(out / "configs" / f"{run.run}.yaml"),
            "--out", escape.path_arg(out / "runs" / run.run), "--resume", "--no-export-check"]
    for s in sets:
        args += ["--set", s]
    return args


def _env(threads: int) -> dict[str, str]:
    return {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}


POLL_S = 1.0  # progress poll while runs train
STOP_WAIT_S = 20.0  # after a Ctrl-C, how long a run may take to checkpoint and exit before SIGTERM


class Children:
    """The trainer processes a sweep has running, so a Ctrl-C can stop them and start no more."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running: set[subprocess.Popen[bytes]] = set()
        self.stopping = False

    def run(self, cmd: list[str], log: Path, threads: int) -> int:
        with open_append(log) as f:  # a link planted at the log's name is refused, not followed
            f.write(f"$ {' '.join(cmd)}\n")
            f.flush()
            with self.lock:
                if self.stopping:  # interrupted before this run started: it never starts
                    return INTERRUPTED
                proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=_env(threads),
                                        preexec_fn=die_with_parent)
                self.running.add(proc)
            try:
                code = proc.wait()
            finally:
                with self.lock:
                    self.running.discard(proc)
            if code in (INTERRUPTED, -signal.SIGINT):  # a Ctrl-C reached the run: start no other
                self.stopping = True
            return code

    def stop(self, wait_s: float = STOP_WAIT_S) -> None:
        """Start nothing more; ask each running trainer to stop (SIGINT: it checkpoints between
        steps, as at a terminal's Ctrl-C, which may have reached it already) and wait for it."""
        with self.lock:
            self.stopping = True
            procs = list(self.running)
        for p in procs:
            with contextlib.suppress(OSError):
                p.send_signal(signal.SIGINT)
        deadline = time.monotonic() + wait_s
        for p in procs:
            try:
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.terminate()


INTERRUPTED = 130


def _run_local(cmd: list[str], log: Path, threads: int) -> int:
    return Children().run(cmd, log, threads)


def execute(spec: SweepSpec, out: Path, *, backend: str = "local", address: str | None = None,
            workers: int | None = None, progress_mode: str = "auto") -> dict[str, str]:
    """Run every unfinished run; return {run: 'finished'|'skipped'|'failed (code)'}."""
    require(backend in ("local", "ray"), f"--backend must be local or ray, got {show(backend)}")
    require(workers is None or 1 <= workers <= MAX_WORKERS,
            f"--workers must be between 1 and {MAX_WORKERS}, got {workers}")
    out = Path(out)
    with provisional_dir(out), folder_lock(out, "ffnlab sweep"):  # a refused sweep leaves no folder
        return _execute(spec, out, backend, address, workers, progress_mode)


def _execute(spec: SweepSpec, out: Path, backend: str, address: str | None, workers: int | None,
             progress_mode: str) -> dict[str, str]:
    runs = prepare_sweep(spec, out)
    if progress_mode != "off":
        for line in resolution_lines(runs):  # what the sweep is about to train: output, not progress
            print(line, flush=True)
    threads = spec.threads_per_worker
    n_workers = worker_count(spec, workers)
    steps = {r.run: r.config["train"]["max_steps"] for r in runs}
    status: dict[str, str] = {}
    pending = []
    for r in runs:
        if run_finished(out / "runs" / r.run, steps[r.run], evaluated=True):
            status[r.run] = "skipped (finished)"
        else:
            pending.append(r)
    peak = cpu_peak(threads)  # at the runs' thread count, before they start
    total = sum(steps.values())
    # sizes may differ in batch: tokens/s counts each run's own tokens per step
    tokens_per_step = {r.run: runconfig.from_dict(r.config).tokens_per_step() for r in runs}
    # the ETA follows training FLOPs: a step of the largest model costs many of the smallest's
    flops_per_step = {r.run: r.train_flops_per_token * tokens_per_step[r.run] for r in runs}

    def progress_now() -> tuple[int, float, int]:
        done = {r.run: steps_done(out / "runs" / r.run) for r in runs}
        return (sum(done.values()), sum(n * flops_per_step[k] for k, n in done.items()),
                sum(n * tokens_per_step[k] for k, n in done.items()))

    cost = {r.run: run_flops(r) for r in runs}
    # the costliest runs start first (longest-processing-time order: the last worker to finish is
    # not left alone with the largest model); runs of equal cost keep the spec's order
    pending.sort(key=lambda r: cost[r.run], reverse=True)
    if progress_mode != "off" and pending:
        print(time_estimate(sum(cost[r.run] for r in pending), len(pending), n_workers,
                            worker_share(peak, n_workers)), flush=True)
    start, work_start, tokens_start = progress_now()
    bar = Progress(total, start=start, description=spec.name, unit="step", tokens_start=tokens_start,
                   mode=progress_mode, work_total=sum(cost.values()),
                   work_start=work_start)

    def poll() -> None:
        done, work, tokens = progress_now()
        finished = sum(run_finished(out / "runs" / r.run, steps[r.run]) for r in runs)
        bar.update(done, work=work, tokens=tokens, runs=f"{finished}/{len(runs)}")

    try:
        if backend == "local":
            children = Children()
            pool = ThreadPoolExecutor(max_workers=n_workers)
            try:
                futures = {r.run: pool.submit(children.run, command(out, r, threads, peak),
                                              out / "logs" / f"{r.run}.log", threads) for r in pending}
                while not all(f.done() for f in futures.values()):
                    poll()
                    time.sleep(POLL_S)
            except KeyboardInterrupt:  # Ctrl-C: the queue is dropped, the runs in flight checkpoint and stop
                pool.shutdown(wait=False, cancel_futures=True)
                children.stop()
                raise
            finally:
                pool.shutdown(wait=True)
            for name, f in futures.items():
                status[name] = "finished" if f.result() == 0 else f"failed (exit {f.result()})"
        else:
            status.update(_execute_ray(out, pending, threads, peak, address, poll))
        poll()
    finally:
        bar.close()
    failed = [k for k, v in status.items() if v.startswith("failed")]
    write_atomic(out / "status.json", json.dumps(status, indent=1))
    if failed:
        raise RunsFailed(f"{len(failed)} of {len(runs)} runs failed ({', '.join(failed[:4])}); see {out}/logs; "
                         "rerun the same command to retry them (finished runs are kept)")
    return status


class RunsFailed(RuntimeError):
    """Some runs of a sweep failed (exit status 1: not a usage error)."""


def _execute_ray(out: Path, pending: list[ResolvedRun], threads: int, peak: float | None, address: str | None,
                 poll: Callable[[], None]) -> dict[str, str]:
    try:
        import ray
    except ImportError:
        raise FfnlabError("the ray backend needs Ray: pip install 'ffnlab[ray]'") from None
    try:
        ray.init(address=address, ignore_reinit_error=True, include_dashboard=False, log_to_driver=False)
    except Exception as e:  # connection problems come in many types
        raise FfnlabError(f"cannot connect to Ray at {address or 'a new local instance'}: {e}") from None

    @ray.remote(num_cpus=threads)
    def run_one(cmd: list[str], log: str, n_threads: int) -> int:
        return _run_local(cmd, Path(log), n_threads)

    refs = {r.run: run_one.remote(command(out, r, threads, peak), str(out / "logs" / f"{r.run}.log"), threads)
            for r in pending}
    remaining = list(refs.values())
    try:
        while remaining:
            _, remaining = ray.wait(remaining, num_returns=len(remaining), timeout=1.0)
            poll()
    except KeyboardInterrupt:  # Ctrl-C: cancel the queued runs and interrupt those in flight
        for ref in remaining:
            with contextlib.suppress(Exception):
                ray.cancel(ref)
        raise
    status = {}
    for name, ref in refs.items():
        try:
            code = ray.get(ref)
        except Exception as e:  # a task that died (node lost, worker crash) fails that run only
            status[name] = f"failed ({type(e).__name__})"
            continue
        status[name] = "finished" if code == 0 else f"failed (exit {code})"
    return status
