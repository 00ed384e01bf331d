"""``ffnlab fit``: the smallest parallel layout on N GPUs of a type that holds a model.

Training: every layout ``dp x tp x pp = N`` (tp up to ``max_tp``, one node's NVLink domain by
default; tp dividing the heads; pp at most the layers; for MoE, ep dividing dp and the experts;
ZeRO stage 0-3; sequence parallelism whenever tp > 1) is priced with
:func:`ffnlab.sizing.parallel.training_table`. Serving: ``tp x pp <= N`` with the weights and the
KV cache of ``batch`` sequences of ``context`` tokens per replica (:func:`serving_table`); ``dp``
counts the replicas the N GPUs hold. A layout *fits* when its per-GPU total is at most ``usable`` x the GPU's memory
(default 90%: the CUDA context, the allocator's fragmentation and communication buffers take the
rest, a rule of thumb, not a measurement).

"Smallest" = least model parallelism first (tp x pp, for serving the GPUs used), then the lowest
ZeRO stage, then the least expert parallelism, then the fewest bytes per GPU.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ffnlab.errors import require
from ffnlab.sizing.config import ModelConfig
from ffnlab.sizing.hardware import find_accelerator, load_accelerators, training_time
from ffnlab.sizing.parallel import Layout, serving_table, table_total, training_table

MODES = ("train", "serve")


def resolve_config(target: str) -> tuple[str, ModelConfig | None]:
    """A zoo name or a config.json path (or folder), as ``ffnlab audit`` reads them."""
    from ffnlab.sizing.hf import load_hf_config
    from ffnlab.sizing.zoo import find, is_zoo_name

    if is_zoo_name(target):
        e = find(target)
        return e.name, e.config()
    p = Path(target)
    if p.exists() or target.endswith(".json") or "/" in target:
        cfg, _ = load_hf_config(p)
        return cfg.name or str(p), cfg
    e = find(target)  # names close zoo entries in its error
    return e.name, e.config()


def _divisors(n: int) -> list[int]:
    return [k for k in range(1, n + 1) if n % k == 0]


def _layouts(cfg: ModelConfig, gpus: int, mode: str, max_tp: int) -> list[Layout]:
    n_exp = max((f.n_experts for f in cfg.layer_ffns()), default=0)
    out = []
    for tp in _divisors(gpus):
        if tp > max_tp or cfg.attn.n_heads % tp:
            continue
        for pp in _divisors(gpus // tp):
            if pp > cfg.n_layers:
                continue
            if mode == "serve":
                out.append(Layout(dp=gpus // (tp * pp), tp=tp, pp=pp))  # dp = replicas
                continue
            dp = gpus // (tp * pp)
            eps = [e for e in _divisors(dp) if n_exp and n_exp % e == 0] or [1]
            out += [Layout(dp=dp, tp=tp, pp=pp, ep=ep, zero=z, sp=tp > 1) for ep in eps for z in range(4)]
    return out


def _key(row: dict[str, Any]) -> tuple:
    lay = row["layout"]
    return (lay["tp"] * lay["pp"], lay["zero"], lay["ep"], lay["pp"], row["per_gpu_bytes"])


def fit(cfg: ModelConfig, *, gpus: int, accelerator: str, mode: str = "train", seq_len: int = 2048,
        batch: int = 1, dtype: str = "bf16", recompute: str = "none", attention: str = "fused",
        kv_dtype: str | None = None, weights_dtype: str | None = None, group_size: int = 128,
        mla: str = "latent", usable: float = 0.9, max_tp: int = 8) -> dict[str, Any]:
    """Every layout priced, those that fit, and the smallest that fits (``best``, or None)."""
    require(mode in MODES, f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    require(gpus >= 1, f"--gpus must be >= 1, got {gpus}")
    require(0 < usable <= 1, f"--usable must be in (0, 1], got {usable}")
    acc = find_accelerator(accelerator)
    budget = int(acc.memory_bytes * usable)
    rows = []
    for lay in _layouts(cfg, gpus, mode, max_tp):
        if mode == "train":
            table = training_table(cfg, lay, seq_len=seq_len, batch=batch, dtype=dtype, recompute=recompute,
                                   attention=attention)
        else:
            table = serving_table(cfg, lay, batch=batch, context=seq_len, weights_dtype=weights_dtype or dtype,
                                  kv_dtype=kv_dtype or dtype, group_size=group_size, mla=mla)
        total = table_total(table)
        rows.append({"layout": lay.as_dict(), "describe": lay.describe(), "per_gpu_bytes": total,
                     "fits": total <= budget, "terms": {r.term: r.per_gpu_bytes for r in table},
                     "table": [r.as_dict() for r in table]})
    rows.sort(key=_key)
    fitting = [r for r in rows if r["fits"]]
    return {"mode": mode, "gpus": gpus, "accelerator": acc.name, "memory_bytes": acc.memory_bytes,
            "usable_bytes": budget, "seq_len": seq_len, "batch": batch, "dtype": dtype,
            "recompute": recompute, "best": fitting[0] if fitting else None, "candidates": fitting,
            "smallest_need_bytes": min((r["per_gpu_bytes"] for r in rows), default=None)}


def fit_all(cfg: ModelConfig, *, gpus: int, tokens: int | None = None, mfu: float = 0.4,
            precision: str = "bf16", **kwargs: Any) -> list[dict[str, Any]]:
    """For each named accelerator: does the model fit on ``gpus`` of them, how, and how long to train."""
    rows = []
    for acc in load_accelerators():
        res = fit(cfg, gpus=gpus, accelerator=acc.name, **kwargs)
        best = res["best"]
        row: dict[str, Any] = {"accelerator": acc.name, "display": acc.display, "memory_bytes": acc.memory_bytes,
                               "fits": best is not None, "layout": best["describe"] if best else None,
                               "per_gpu_bytes": best["per_gpu_bytes"] if best else res["smallest_need_bytes"],
                               "usable_bytes": res["usable_bytes"], "source": acc.source}
        if tokens and res["mode"] == "train" and (precision == "bf16" or acc.fp8_tflops is not None):
            t = training_time(cfg, tokens=tokens, gpus=gpus, accelerator=acc.name,
                              seq_len=kwargs.get("seq_len", 2048), mfu=mfu, precision=precision)
            row.update(days=t.days, gpu_hours=t.gpu_hours, training_flops=t.flops)
        rows.append(row)
    return rows
