"""Training steps' peak memory on a GPU against ffnlab's prediction: the measurement (the ``memory``
section of ``benchmarks/gpu_check.py``) and its table (this script, run locally on what it wrote).

    python benchmarks/memory_cuda.py [benchmarks/results/gpu-check-cuda.json] [--out benchmarks/results]

**What is measured** (:func:`measure_cases`). Every step case of ``tests/helpers/memory_step_cases.py``
(the CPU measured-step suite, ``tests/sizing/memory/test_memory_step.py``), each in three precisions:

* ``fp32``: as on CPU;
* ``bf16-autocast``: fp32 weights, gradients and AdamW state, forward and loss under
  ``torch.autocast(dtype=torch.bfloat16)`` (backward and the optimizer step outside it, as usual);
* ``bf16``: the model cast to bf16 before the optimizer is made, so weights, gradients and AdamW's
  moments are all bf16 and there is no fp32 master copy;

then the LoRA cases of ``tests/helpers/memory_finetune_cases.py`` in their own dtype (fp32, or a bf16
base with fp32 adapters). The convention is the CPU suite's (``memory_step_cases.measure``): the same
seeds and batch, one warm-up step (it makes AdamW's state), then the measured second step, whose
peak counts the weights, buffers and optimizer state alive before it (gradients are None after
``zero_grad(set_to_none=True)``). On CUDA a record holds

* ``baseline_allocated`` / ``baseline_reserved``: ``torch.cuda.memory_allocated`` / ``memory_reserved``
  after the warm-up step (synchronised, garbage collected), just before the measured step;
* ``states_bytes``: the bytes of the distinct storages of the weights, buffers and optimizer state on
  the device (what the CPU suite adds as existing tensors);
* ``max_allocated`` / ``max_reserved``: ``torch.cuda.max_memory_allocated`` / ``max_memory_reserved``
  over the measured step (peak stats reset just before it), ``end_allocated`` after it;
* ``peak_bytes`` = ``states_bytes + max_allocated - baseline_allocated``: the step's peak over the
  states, the figure comparable with the CPU suite's and ffnlab's (the baseline's remainder beside the
  states, ``baseline_allocated - states_bytes``, is the cuBLAS workspace, the input ids and the
  allocator's rounding of the states to 512 B blocks, none of which the CPU figure or ffnlab counts).

On CPU (the dry run) ``peak_bytes`` is ``LiveBytes``'s peak, as ``memory_step_cases.measure`` gives it,
with the op at the peak; the allocator's figures are None. Every record also holds the case's attention
implementation, its wall time, or the error that stopped it; one failing record does not stop the rest.

**The table** (:func:`analyse`): per case and precision, ffnlab's predicted peak (``fp32``:
``memory_step_cases.predict``; ``bf16-autocast``: the same step timeline in ffnlab's mixed-precision
model, ``dtype="bf16"`` (bf16 weights and activations, fp32 master and AdamW moments) with
``grad_dtype="fp32"``, the dtype autocast leaves the gradients of fp32 weights in; ``bf16``: the
pure-bf16 model, ``dtype="bf16", pure_bf16=True`` (bf16 weights, gradients and AdamW moments, no
master copy); LoRA: ``memory_finetune_cases.predict``), the measured ``peak_bytes``, their ratio, and the
allocator share ``max_reserved / max_allocated``, with the median and range over the cases.
Nothing here is a figure of its own: it only computes from the measured file.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
HELPERS = ROOT / "tests" / "helpers"
RESULTS = ROOT / "benchmarks" / "results"
PRECISIONS = ("fp32", "bf16-autocast", "bf16")


def _helpers() -> None:
    if str(HELPERS) not in sys.path:
        sys.path.insert(0, str(HELPERS))


def _version(name: str) -> str | None:
    try:
        return str(__import__(name).__version__)
    except Exception:  # noqa: BLE001 - a missing or broken package is recorded as None
        return None


# -- the measurement -------------------------------------------------------------------------

def _storage_bytes(tensors: Iterable[Any], device_type: str) -> int:
    import torch

    seen: dict[int, int] = {}
    for t in tensors:
        if isinstance(t, torch.Tensor) and t.device.type == device_type:
            st = t.untyped_storage()
            seen[st._cdata] = st.nbytes()
    return sum(seen.values())


def _attn_implementation(case: Any, model: Any) -> str:
    if case.family == "ffnlab":  # DecoderLM calls scaled_dot_product_attention; "eager" runs its math kernel
        return "sdpa (math kernel)" if case.attention == "eager" else "sdpa"
    cfg = getattr(model, "config", None)
    return str(getattr(cfg, "_attn_implementation", None) or getattr(cfg, "attn_implementation", None))


def measure_step(case: Any, precision: str, device: str, built: tuple[Any, Any, Callable[[Any], Any]] | None = None
                 ) -> dict[str, Any]:
    """One case in one precision: a warm-up step, then the measured step (see the module's doc)."""
    import contextlib

    import torch
    from memory_step_cases import build, optimizer, run_step
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from ffnlab.training.live_bytes import LiveBytes, model_tensors, optimizer_tensors

    dev = torch.device(device)
    cuda = dev.type == "cuda"
    if cuda:
        gc.collect()
        torch.cuda.empty_cache()
    model, cfg, loss_fn = built or build(case)
    if precision == "bf16":
        model.to(torch.bfloat16)
    model.to(dev)
    model.train()
    opt = optimizer(case, model)
    g = torch.Generator().manual_seed(1)
    x = torch.randint(0, cfg.vocab_size, (case.batch, case.seq_len), generator=g).to(dev)
    step_loss = loss_fn
    if precision == "bf16-autocast":
        def step_loss(x: Any) -> Any:
            with torch.autocast(device_type=dev.type, dtype=torch.bfloat16):
                return loss_fn(x)
    rec: dict[str, Any] = {"attn_implementation": _attn_implementation(case, model)}
    math_sdpa = case.attention == "eager" and case.family == "ffnlab"
    with sdpa_kernel(SDPBackend.MATH) if math_sdpa else contextlib.nullcontext():
        torch.manual_seed(2)
        run_step(case, model, opt, x, step_loss)
        states = model_tensors(model) + optimizer_tensors(opt)
        rec["states_bytes"] = _storage_bytes(states, dev.type)
        if cuda:
            torch.cuda.synchronize(dev)
            del states
            gc.collect()
            rec["baseline_allocated"] = torch.cuda.memory_allocated(dev)
            rec["baseline_reserved"] = torch.cuda.memory_reserved(dev)
            torch.cuda.reset_peak_memory_stats(dev)
            run_step(case, model, opt, x, step_loss)
            torch.cuda.synchronize(dev)
            rec["max_allocated"] = torch.cuda.max_memory_allocated(dev)
            rec["max_reserved"] = torch.cuda.max_memory_reserved(dev)
            rec["end_allocated"] = torch.cuda.memory_allocated(dev)
            rec["peak_bytes"] = rec["states_bytes"] + rec["max_allocated"] - rec["baseline_allocated"]
            rec["peak_op"] = None
        else:
            lb = LiveBytes()
            with lb:
                lb.add_existing(states, "before the step")
                del states
                run_step(case, model, opt, x, step_loss)
            rec.update(baseline_allocated=rec["states_bytes"], baseline_reserved=None, max_allocated=lb.peak,
                       max_reserved=None, end_allocated=None, peak_bytes=lb.peak, peak_op=lb.peak_op)
    return rec


def _hf_config(model: Any) -> dict[str, Any] | None:
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    to_dict = getattr(getattr(base, "config", None), "to_dict", None)
    return to_dict() if callable(to_dict) else None


def measure_cases(device: str, save: Callable[[dict[str, Any]], None], names: Iterable[str] | None = None,
                  lora_names: Iterable[str] | None = None, precisions: Iterable[str] = PRECISIONS,
                  scale: bool = False) -> dict[str, Any]:
    """Every step case (or those named) in every precision, then the LoRA cases; ``save`` gets the
    result so far after each record (a section that runs out of time still returns what it has).
    ``scale``: the realistic-size cases (``SCALE_CASES``) instead, built on the device, no LoRA."""
    _helpers()
    import torch
    from memory_step_cases import CASES, SCALE_CASES, build

    wanted = None if names is None else set(names)
    lora_wanted = set() if scale else None if lora_names is None else set(lora_names)
    steps = [c for c in (SCALE_CASES if scale else CASES) if wanted is None or c.name in wanted]
    out: dict[str, Any] = {
        "device": device, "torch": torch.__version__, "cuda": torch.version.cuda,
        "transformers": _version("transformers"), "peft": _version("peft"),
        "device_name": torch.cuda.get_device_name(device) if device.startswith("cuda") else "cpu",
        "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF"),
        "convention": "peak of the second step (one warm-up step first); peak_bytes = states_bytes + "
                      "max_allocated - baseline_allocated on CUDA, LiveBytes' peak on CPU",
        "configs": {}, "lora_configs": {}, "records": []}

    def run(kind: str, name: str, precision: str, fn: Callable[[], dict[str, Any]]) -> None:
        t0 = time.perf_counter()
        rec: dict[str, Any] = {"kind": kind, "case": name, "precision": precision}
        try:
            rec.update(fn())
        except Exception as e:  # noqa: BLE001 - recorded; the other records still run
            rec["error"] = f"{type(e).__name__}: {e}"[:500]
        rec["wall_s"] = round(time.perf_counter() - t0, 3)
        out["records"].append(rec)
        print(f"memory: {kind} {precision:13s} {name}: "
              + (rec.get("error") or f"peak {rec.get('peak_bytes'):,} B"), file=sys.stderr, flush=True)
        save(out)

    for precision in precisions:
        for case in steps:
            def one(case: Any = case, precision: str = precision) -> dict[str, Any]:
                with torch.device(device) if scale else contextlib.nullcontext():  # 1B weights: init on the GPU
                    built = build(case)
                if case.family != "ffnlab" and case.name not in out["configs"]:
                    out["configs"][case.name] = _hf_config(built[0])
                return measure_step(case, precision, device, built)
            run("step", case.name, precision, one)
    if lora_wanted is not None and not lora_wanted:
        return out
    try:
        from memory_finetune_cases import CASES as LORA
        from memory_finetune_cases import build_lora
    except ImportError as e:  # peft missing: the step cases stand alone
        out["lora_skipped"] = f"{type(e).__name__}: {e}"
        return out
    for lcase in [c for c in LORA if lora_wanted is None or c.name in lora_wanted]:
        def lone(lcase: Any = lcase) -> dict[str, Any]:
            model, cfg, loss_fn, _ = build_lora(lcase)
            if lcase.step.family != "ffnlab":
                out["lora_configs"][lcase.name] = _hf_config(model)
            return measure_step(lcase.step, "fp32", device, built=(model, cfg, loss_fn))
        run("lora", lcase.name, lcase.dtype, lone)
    return out


# -- the table -------------------------------------------------------------------------------

def _config(case: Any, saved: dict[str, Any] | None) -> Any:
    from memory_step_cases import ffnlab_config

    from ffnlab.sizing.hf import from_hf_dict

    if case.family == "ffnlab":
        return ffnlab_config(case.model, case.seq_len)
    if saved is None:
        raise KeyError(f"no transformers config recorded for {case.name!r}")
    return from_hf_dict(saved)


def predict_bf16(case: Any, cfg: Any, *, dropout_mask_bytes: float | None = None, pure: bool = False) -> Any:
    """ffnlab's step timeline in its mixed-precision model (bf16 weights and activations, fp32 master
    and moments), gradients fp32 as autocast keeps those of fp32 weights; otherwise as ``predict``.
    ``pure``: the pure-bf16 model instead (bf16 gradients and moments, no master copy)."""
    from memory_step_cases import step_options

    from ffnlab.sizing.memory.activations import DROPOUT_MASK_BYTES
    from ffnlab.sizing.memory.parallel import Layout, Workload, training_peak, training_table

    work = Workload(seq_len=case.seq_len, batch=case.batch, dtype="bf16", grad_dtype=None if pure else "fp32",
                    pure_bf16=pure, recompute=case.recompute, attention=case.attention, dropout=case.dropout,
                    step=step_options(case),
                    dropout_mask_bytes=DROPOUT_MASK_BYTES if dropout_mask_bytes is None else dropout_mask_bytes)
    return training_peak(cfg, work, Layout(), training_table(cfg, work, Layout()))


def _spread(xs: list[float]) -> dict[str, float | int | None]:
    if not xs:
        return {"n": 0, "median": None, "min": None, "max": None}
    return {"n": len(xs), "median": statistics.median(xs), "min": min(xs), "max": max(xs)}


def analyse(result: dict[str, Any]) -> dict[str, Any]:
    """The predicted/measured rows of a memory section's result, and their summary."""
    _helpers()
    from memory_step_cases import CASES, SCALE_CASES, predict

    steps = {c.name: c for c in CASES + SCALE_CASES}
    cpu = not str(result.get("device", "")).startswith("cuda")
    rows = []
    for r in result["records"]:
        row: dict[str, Any] = {k: r.get(k) for k in ("kind", "case", "precision", "attn_implementation",
                                                     "peak_bytes", "max_allocated", "max_reserved",
                                                     "baseline_allocated", "states_bytes", "peak_op", "error")}
        row.update(predicted=None, moment=None, note=None, ratio=None, allocator_share=None)
        if r.get("error") is None:
            try:
                if r["kind"] == "step":
                    case = steps[r["case"]]
                    cfg = _config(case, result.get("configs", {}).get(case.name))
                    tl = (predict(case, cfg) if r["precision"] == "fp32"
                          else predict_bf16(case, cfg, dropout_mask_bytes=4 if cpu else None,
                                                pure=r["precision"] == "bf16"))
                else:
                    from memory_finetune_cases import CASES as LORA
                    from memory_finetune_cases import predict as predict_lora

                    lcase = {c.name: c for c in LORA}[r["case"]]
                    tl = predict_lora(lcase, _config(lcase.step, result.get("lora_configs", {}).get(
                        lcase.name))).timeline
                if tl is not None:
                    row.update(predicted=tl.peak_bytes, moment=tl.peak.name, ratio=tl.peak_bytes / r["peak_bytes"])
            except Exception as e:  # noqa: BLE001 - a case this checkout no longer has, say
                row["note"] = f"no prediction: {type(e).__name__}: {e}"[:300]
            if r.get("max_reserved") and r.get("max_allocated"):
                row["allocator_share"] = r["max_reserved"] / r["max_allocated"]
        rows.append(row)
    summary: dict[str, Any] = {}
    for kind, precision in dict.fromkeys((r["kind"], r["precision"]) for r in rows):
        mine = [r for r in rows if (r["kind"], r["precision"]) == (kind, precision)]
        summary[f"{kind} {precision}"] = {
            "records": len(mine), "errors": sum(r["error"] is not None for r in mine),
            "ratio": _spread([r["ratio"] for r in mine if r["ratio"] is not None]),
            "allocator_share": _spread([r["allocator_share"] for r in mine if r["allocator_share"] is not None])}
    summary["all"] = {"allocator_share": _spread([r["allocator_share"] for r in rows
                                                  if r["allocator_share"] is not None])}
    meta = {k: result.get(k) for k in ("device", "device_name", "torch", "cuda", "transformers", "peft",
                                       "alloc_conf", "convention")}
    return {"source": result.get("source"), **meta, "rows": rows, "summary": summary}


def _mib(b: float | None) -> str:
    return "n/a" if b is None else f"{b / 2**20:,.2f}"


def _x(v: float | None, fmt: str = ".3f") -> str:
    return "n/a" if v is None else format(v, fmt)


def markdown(doc: dict[str, Any]) -> str:
    lines = [f"# Training-step peak memory: {doc.get('device_name')} ({doc.get('device')})", "",
             f"torch {doc.get('torch')} (CUDA {doc.get('cuda')}), transformers {doc.get('transformers')}, "
             f"peft {doc.get('peft')}; from `{doc.get('source')}`.", "",
             f"Convention: {doc.get('convention')}. Predicted: fp32 `memory_step_cases.predict`; bf16-autocast "
             "the step timeline with dtype bf16 (fp32 master and moments) and fp32 gradients; bf16 (pure: "
             "weights, gradients and AdamW state bf16) the same with `pure_bf16`; LoRA "
             "`memory_finetune_cases.predict`. Ratio = predicted / measured. Allocator share = max_reserved / "
             "max_allocated.", "",
             "| kind | precision | median ratio | ratio range | median allocator share | share range | records "
             "| errors |", "|---|---|---:|---|---:|---|---:|---:|"]
    for key, s in doc["summary"].items():
        if key == "all":
            continue
        kind, precision = key.split(" ", 1)
        rt, sh = s["ratio"], s["allocator_share"]
        lines.append(f"| {kind} | {precision} | {_x(rt['median'])} | {_x(rt['min'])}-{_x(rt['max'])} | "
                     f"{_x(sh['median'])} | {_x(sh['min'])}-{_x(sh['max'])} | {s['records']} | {s['errors']} |")
    a = doc["summary"]["all"]["allocator_share"]
    lines += ["", f"Allocator share over all {a['n']} records: median {_x(a['median'])}, range "
              f"{_x(a['min'])}-{_x(a['max'])}.", "",
              "| kind | case | precision | attention | predicted MiB | at moment | measured MiB | ratio | "
              "max allocated MiB | max reserved MiB | share |", "|---|---|---|---|---:|---|---:|---:|---:|---:|---:|"]
    for r in doc["rows"]:
        pred = _mib(r["predicted"]) if r["predicted"] is not None else (r["note"] or "n/a")
        measured = f"error: {r['error']}" if r["error"] else _mib(r["peak_bytes"])
        lines.append(f"| {r['kind']} | {r['case']} | {r['precision']} | {r['attn_implementation']} | {pred} | "
                     f"{r['moment'] or ''} | {measured} | {_x(r['ratio'])} | {_mib(r['max_allocated'])} | "
                     f"{_mib(r['max_reserved'])} | {_x(r['allocator_share'])} |")
    return "\n".join(lines) + "\n"


def load_result(path: Path) -> dict[str, Any]:
    """The memory section's result from a gpu-check JSON (or a section result file itself)."""
    doc = json.loads(path.read_text())
    if "sections" in doc:
        sec = doc["sections"].get("memory")
        if not sec or "result" not in sec:
            raise SystemExit(f"error: {path} has no memory section result (status: {(sec or {}).get('status')})")
        doc = sec["result"]
    return {**doc, "source": str(path)}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path", nargs="?", default=str(RESULTS / "gpu-check-cuda.json"),
                    help="a gpu-check JSON (or the memory section's result file)")
    ap.add_argument("--out", default=str(RESULTS), help="folder for memory-<device>.md and .json")
    ap.add_argument("--measure-scale", metavar="DEVICE", default=None,
                    help="measure the realistic-size cases on DEVICE first (GPU minutes; writes "
                         "memory-scale-<device>-raw.json), then table them")
    a = ap.parse_args(argv)
    out = Path(a.out)
    if a.measure_scale:
        kind = "cuda" if a.measure_scale.startswith("cuda") else "cpu"
        raw = out / f"memory-scale-{kind}-raw.json"
        out.mkdir(parents=True, exist_ok=True)
        def save(d: dict[str, Any]) -> None:
            raw.write_text(json.dumps(d, indent=1, default=str))

        measure_cases(a.measure_scale, save, scale=True)
        a.path, stem = str(raw), "memory-scale"
    else:
        stem = "memory"
    doc = analyse(load_result(Path(a.path)))
    kind = "cuda" if str(doc.get("device", "")).startswith("cuda") else "cpu"
    out.mkdir(parents=True, exist_ok=True)
    md = markdown(doc)
    (out / f"{stem}-{kind}.json").write_text(json.dumps(doc, indent=1, default=str))
    (out / f"{stem}-{kind}.md").write_text(md)
    print(md)
    print(f"wrote {out / f'{stem}-{kind}'}.{{md,json}}", file=sys.stderr)
    return doc


if __name__ == "__main__":
    main()
