"""Does an FFN width that is not a multiple of 64/128 run slower? Measure it.

Times forward+backward of a SwiGLU FFN at widths around an aligned one and prints achieved
TFLOP/s and the slowdown per unit of work against the best aligned width. The claim under test
(second seed document) is about GPU tensor cores; on a CPU the answer can differ, and the
printout says which device produced it.

    python benchmarks/width_alignment.py [--device cpu|cuda] [--d-model 1024] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

from ffnlab.sizing.widths import alignment
from ffnlab.training.nn import DenseFFN


def bench(d: int, width: int, tokens: int, device: str, dtype: torch.dtype, iters: int) -> float:
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--d-model", type=int, default=None)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--json", default=None, help="also write the figures to this file")
    a = ap.parse_args()
    cuda = a.device.startswith("cuda")
    d = a.d_model or (4096 if cuda else 1024)
    tokens = 8192 if cuda else 2048
    dtype = torch.bfloat16 if cuda else torch.float32
    base = 128 * round(8 * d / 3 / 128)  # an aligned width near 8/3 d
    widths = sorted({base, base - 1, base + 1, base - 64, base + 8, (8 * d + 2) // 3, base - 128, base + 128})
    print(f"SwiGLU FFN forward+backward, d_model={d}, tokens={tokens}, {dtype}, device {a.device} "
          f"(torch {torch.__version__}, {torch.get_num_threads()} threads)")
    rows = []
    for w in widths:
        t = bench(d, w, tokens, a.device, dtype, a.iters)
        flops = 3 * 2 * 3 * tokens * d * w  # 3 matmuls, x3 for forward + backward, 2 FLOPs per MAC
        rows.append({"d_ff": w, "seconds": t, "tflops": flops / t / 1e12, "pow2": alignment(w)["pow2_divisor"]})
    best_aligned = max(r["tflops"] for r in rows if r["d_ff"] % 128 == 0)
    print(f"{'d_ff':>7} {'2^k | d_ff':>10} {'ms':>9} {'TFLOP/s':>9} {'vs best /128':>13}")
    for r in rows:
        r["relative"] = r["tflops"] / best_aligned
        print(f"{r['d_ff']:>7} {r['pow2']:>10} {r['seconds'] * 1000:>9.2f} {r['tflops']:>9.3f} {r['relative']:>12.1%}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"device": a.device, "d_model": d, "tokens": tokens, "dtype": str(dtype), "rows": rows}, f,
                      indent=1)


if __name__ == "__main__":
    main()
