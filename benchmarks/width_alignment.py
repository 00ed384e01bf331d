"""Does an FFN width that is not a multiple of 64/128 run slower? Measure it.

Times forward+backward of a SwiGLU FFN at widths around an aligned one (about 8/3 d_model) for a
few d_model, and gives each width's achieved TFLOP/s relative to the median of the widths that
are multiples of 128 at the same d_model. Widths fall into groups by the largest of 128, 64, 8
that divides them (``div128``, ``div64``, ``div8``, ``not8``). The claim under test
(``unaligned-widths-slow``, second seed document) is about GPU tensor cores; on a CPU the answer
can differ, and the JSON says which device produced it. ``ffnlab claims --evidence FILE.json``
reads the JSON (``"benchmark": "width-alignment"``) and decides the claim from it.

    python benchmarks/width_alignment.py [--device cpu|cuda] [--d-model 1024 --d-model 2048] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

import torch

from ffnlab.sizing.widths import alignment
from ffnlab.training.nn import DenseFFN

BENCHMARK = "width-alignment"  # the tag ffnlab.sizing.claims.load_evidence recognises
GROUPS = ((128, "div128"), (64, "div64"), (8, "div8"))


def group(width: int) -> str:
    """The alignment group of a width: the largest of 128, 64, 8 dividing it, else ``not8``."""
    return next((name for k, name in GROUPS if width % k == 0), "not8")


def widths_for(d: int) -> list[int]:
    """Widths around the multiple of 128 nearest 8/3 d: aligned, 64-, 8-aligned, odd, and int(8d/3)+1."""
    base = 128 * max(1, round(8 * d / 3 / 128))
    return sorted({base - 128, base, base + 128, base + 64, base + 8, base + 24, base - 1, base + 1,
                   (8 * d + 2) // 3} - {0})


def bench(d: int, width: int, tokens: int, device: str, dtype: torch.dtype, iters: int) -> float:
    """Median seconds of one forward+backward of a SwiGLU FFN (d -> width -> d) on ``tokens`` rows."""
    torch.manual_seed(0)
    mod = DenseFFN(d, width, "swiglu").to(device=device, dtype=dtype)
    x = torch.randn(tokens, d, device=device, dtype=dtype, requires_grad=True)
    gy = torch.randn(tokens, d, device=device, dtype=dtype)
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    for _ in range(2):
        mod(x).backward(gy)
    sync()
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        mod(x).backward(gy)
        sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def measure(device: str, d_models: list[int], tokens: int, iters: int) -> dict[str, Any]:
    """Every width of :func:`widths_for` at each d_model; the JSON document ``--json`` writes."""
    cuda = device.startswith("cuda")
    dtype = torch.bfloat16 if cuda else torch.float32
    rows: list[dict[str, Any]] = []
    for d in d_models:
        for w in widths_for(d):
            t = bench(d, w, tokens, device, dtype, iters)
            flops = 3 * 2 * 3 * tokens * d * w  # 3 matmuls, x3 for forward + backward, 2 FLOPs per MAC
            rows.append({"d_model": d, "d_ff": w, "group": group(w), "pow2": alignment(w)["pow2_divisor"],
                         "seconds": t, "tflops": flops / t / 1e12})
        aligned = statistics.median(r["tflops"] for r in rows if r["d_model"] == d and r["group"] == "div128")
        for r in rows:
            if r["d_model"] == d:
                r["relative"] = r["tflops"] / aligned
    name = torch.cuda.get_device_name(device) if cuda else "cpu"
    return {"benchmark": BENCHMARK, "device": device, "device_name": name, "dtype": str(dtype).split(".")[-1],
            "tokens": tokens, "torch": torch.__version__, "d_models": d_models, "rows": rows}


def table(doc: dict[str, Any]) -> str:
    lines = [f"SwiGLU FFN forward+backward, tokens={doc['tokens']}, {doc['dtype']}, {doc['device_name']} "
             f"(torch {doc['torch']})", f"{'d_model':>7} {'d_ff':>7} {'group':>7} {'ms':>9} {'TFLOP/s':>9} "
             f"{'vs /128':>8}"]
    lines += [f"{r['d_model']:>7} {r['d_ff']:>7} {r['group']:>7} {r['seconds'] * 1000:>9.3f} {r['tflops']:>9.3f} "
              f"{r['relative']:>8.1%}" for r in doc["rows"]]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--d-model", type=int, action="append", default=None,
                    help="repeatable; default 1024, 2048, 4096 on CUDA and 1024 on CPU")
    ap.add_argument("--tokens", type=int, default=None, help="rows per batch (default 8192 on CUDA, 2048 on CPU)")
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--json", default=None, help="also write the figures to this file")
    a = ap.parse_args()
    cuda = a.device.startswith("cuda")
    doc = measure(a.device, a.d_model or ([1024, 2048, 4096] if cuda else [1024]),
                  a.tokens or (8192 if cuda else 2048), a.iters)
    print(table(doc))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
