"""How long the validating metrics reader takes (``report`` on 10^6 duplicated records
took 85-145 s and 4.3 GB before steps were checked).

Writes three ``metrics.jsonl`` files of N records each (train records like the trainer's, an eval
record every 10 steps) and times :func:`ffnlab.training.runfiles.read_records` on them: a valid
file (every record read and checked), the reported file (N copies of one eval record: refused at
line 2) and a file whose last record repeats a step (refused after reading everything).

    PYTHONPATH=src python benchmarks/metrics_read.py [--records 1000000]
"""

from __future__ import annotations

import argparse
import json
import resource
import tempfile
import time
from pathlib import Path

from ffnlab.errors import FfnlabError
from ffnlab.training.runfiles import read_records


def train(step: int) -> str:
    return json.dumps({"kind": "train", "step": step, "tokens": step * 512, "loss": 5.0 - step * 1e-6,
                       "lr": 3e-4, "grad_norm": 1.0, "tokens_per_s": 1e5, "mfu": 0.3, "elapsed_s": step * 0.01})


def evaluate(step: int) -> str:
    return json.dumps({"kind": "eval", "step": step, "tokens": step * 512, "val_loss": 5.0, "val_ppl": 148.4,
                       "val_bpb": 7.2, "train_flops": step * 1e9})


def timed(path: Path) -> tuple[float, str]:
    t0 = time.perf_counter()
    try:
        n = len(read_records(path))
        what = f"{n:,} records read"
    except FfnlabError as e:
        what = f"refused: {str(e)[:70]}..."
    return time.perf_counter() - t0, what


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=10**6)
    n = ap.parse_args().records
    with tempfile.TemporaryDirectory() as tmp:
        files = {}
        valid = [evaluate(s) if s % 10 == 0 else train(s) for s in range(1, n + 1)]
        files["valid"] = "\n".join(valid) + "\n"
        files["issue: N copies of one eval record"] = (evaluate(4) + "\n") * n
        files["last record repeats a step"] = "\n".join([*valid[:-1], train(n - 2)]) + "\n"
        for name, text in files.items():
            path = Path(tmp) / "metrics.jsonl"
            path.write_text(text)
            seconds, what = timed(path)
            print(f"{name:<40} {path.stat().st_size / 2**20:7.1f} MiB  {seconds:6.2f} s  {what}")
    print(f"peak RSS of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10:.0f} MiB")


if __name__ == "__main__":
    main()
