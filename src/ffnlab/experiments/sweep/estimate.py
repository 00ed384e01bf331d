"""What a sweep would train and how long it would take, from its spec alone (``ffnlab sweep SPEC
--estimate``): nothing is written, no corpus is prepared or downloaded, no run starts.

The runs are resolved at the spec's nominal vocabulary (256 for the byte tokenizer, the spec's
``bpe_vocab_size`` for BPE, before a tokenizer is trained: the BPE vocabulary trained may be
smaller, which changes the embedding's FLOPs only). Each cell states its tokens per non-embedding
parameter against the spec's maturity rule (:func:`ffnlab.experiments.sweep.spec.design_maturity`),
and the time is the runs' training FLOPs over 10-30% of a device's peak
(:func:`ffnlab.experiments.sweep.run.time_estimate`): an accelerator's published dense bf16 peak
(``--gpu NAME``, from ``data/accelerators.json``), shared by the spec's workers, or this machine's
own (its CPU measured by the matmul probe; a local GPU's published peak).

On a GPU, small models are bound by kernel launches rather than FLOPs, so the estimate adds a
floor and a start-up cost, each an assumption printed with its figures (none is measured here):
about ``KERNELS_PER_LAYER`` kernels per layer per training step (forward, backward, the bf16
casts) and ``KERNELS_PER_STEP`` more (embedding, loss, clipping, the foreach optimizer); each costs
``DISPATCH_S`` of its process's CPU (parallel across workers) and at least ``GPU_KERNEL_S`` of the
GPU, which runs one process's kernels at a time (no MPS); and each run pays ``START_S`` to start
(interpreter, torch, CUDA context, corpus, evaluations), parallel across workers.
"""

from __future__ import annotations

from ffnlab.experiments.sweep.run import (
    cpu_peak,
    duration,
    estimate_seconds,
    resolution_lines,
    run_flops,
    time_estimate,
    worker_count,
    worker_share,
)
from ffnlab.experiments.sweep.spec import SweepSpec, design_maturity, resolve
from ffnlab.training import runconfig
from ffnlab.training.memory import vocab_guess

KERNELS_PER_LAYER = 55
KERNELS_PER_STEP = 40
DISPATCH_S = 10e-6
GPU_KERNEL_S = 3e-6
START_S = 10.0


def gpu_overheads(kernels: float, runs: int, workers: int) -> tuple[float, float]:
    """(the launch-bound floor of the training time, the start-up time) of ``kernels`` kernel
    launches over ``runs`` runs on ``workers`` processes sharing one GPU, in seconds."""
    return max(kernels * DISPATCH_S / workers, kernels * GPU_KERNEL_S), runs * START_S / workers


def maturity_lines(spec: SweepSpec) -> list[str]:
    """Each cell's tokens per non-embedding parameter (its reference arm) against the rule."""
    rule = f"the rule needs {spec.maturity:g}" + (", required by the spec" if spec.require_mature else "")
    return [f"cell {name}: {tpp:,.3g} tokens per non-embedding parameter "
            f"({'mature' if tpp >= spec.maturity else 'below the maturity rule'}; {rule})"
            for name, tpp in design_maturity(spec)]


def estimate_lines(spec: SweepSpec, gpu: str | None = None, workers: int | None = None) -> list[str]:
    """The arms' resolution, each cell's maturity and the whole sweep's time estimate."""
    runs = resolve(spec, vocab_guess(runconfig.from_dict(spec.base)))  # a trained BPE's may come out smaller
    n_workers = worker_count(spec, workers)
    flops, kernels = 0, 0
    for r in runs:
        m = runconfig.from_dict(r.config)
        flops += run_flops(r)
        kernels += m.train.max_steps * (KERNELS_PER_LAYER * m.model.n_layers + KERNELS_PER_STEP)
    if gpu is not None:
        from ffnlab.sizing.memory.hardware import find_accelerator

        acc = find_accelerator(gpu, otherwise="")  # no --gpu-memory here
        per_worker, where, on_gpu = acc.peak_flops("bf16") / n_workers, f"one {acc.display} shared", True
    else:
        peak = cpu_peak(spec.threads_per_worker)
        per_worker, on_gpu = worker_share(peak, n_workers), peak is None
        where = ("this machine's GPU shared" if on_gpu else
                 f"this machine's CPU, measured at {spec.threads_per_worker} thread(s) a worker")
    lines = [*resolution_lines(runs), *maturity_lines(spec),
             f"{time_estimate(flops, len(runs), n_workers, per_worker)}; {where}"]
    if on_gpu:
        floor, start = gpu_overheads(kernels, len(runs), n_workers)
        fast, slow = (start + max(floor, s) for s in estimate_seconds(flops, n_workers, per_worker))
        lines.append(f"launch-bound floor: {kernels:,.0f} kernel launches, at least {duration(floor)} "
                     f"({DISPATCH_S * 1e6:g} us of CPU each over {n_workers} worker(s), {GPU_KERNEL_S * 1e6:g} us "
                     f"of GPU each, one process at a time); start-up about {duration(start)} ({START_S:g} s a run "
                     f"over the workers); so {duration(fast)}-{duration(slow)} in all: assumptions, not measurements")
    return lines

