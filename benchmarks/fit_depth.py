"""Wall time and step-timeline count of ``ffnlab fit --gpu H100`` on deep configs that do not fit.

``fit`` prices every layout and, when nothing fits, ``suggestions`` prices each one-setting change
and more GPUs: this prints, per case, the seconds one in-process run took and how many step
timelines (:func:`ffnlab.sizing.memory.step.step_timeline`, each a walk over every layer) it built.

    PYTHONPATH=src python benchmarks/fit_depth.py [--quick]
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from unittest import mock

import ffnlab.sizing.memory.parallel as parallel
from ffnlab.cli import main as cli_main
from ffnlab.sizing.memory.step import step_timeline

LLAMA = {"model_type": "llama", "hidden_size": 16384, "intermediate_size": 3 * 16384, "num_attention_heads": 64,
         "num_key_value_heads": 8, "vocab_size": 1000}
# DeepSeek-V3's published config.json shape (huggingface.co/deepseek-ai/DeepSeek-V3), depth varied
DEEPSEEK_V3 = {"model_type": "deepseek_v3", "hidden_size": 7168, "intermediate_size": 18432,
               "moe_intermediate_size": 2048, "n_routed_experts": 256, "num_experts_per_tok": 8,
               "n_shared_experts": 1, "first_k_dense_replace": 3, "num_attention_heads": 128,
               "num_key_value_heads": 128, "kv_lora_rank": 512, "q_lora_rank": 1536, "qk_rope_head_dim": 64,
               "qk_nope_head_dim": 128, "v_head_dim": 128, "vocab_size": 129280, "n_group": 8, "topk_group": 4}

CASES = [("llama", LLAMA, 100, ["--gpus", "8"]), ("llama", LLAMA, 25_000, ["--gpus", "1"]),
         ("deepseek_v3", DEEPSEEK_V3, 3_000, ["--gpus", "auto"]),
         ("deepseek_v3", DEEPSEEK_V3, 5_000, ["--gpus", "auto"]),
         ("deepseek_v3", DEEPSEEK_V3, 10_000, ["--gpus", "auto"])]
QUICK = CASES[:3]


def run(raw: dict[str, object], layers: int, argv: list[str], where: Path) -> tuple[float, int, int, str]:
    folder = where / f"{raw['model_type']}-{layers}"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({**raw, "num_hidden_layers": layers}))
    built = [0]
    timeline = step_timeline

    def counted(*a: Any, **k: Any) -> Any:
        built[0] += 1
        return timeline(*a, **k)

    out, code = io.StringIO(), 0
    sys.argv = ["ffnlab", "fit", str(folder), *argv, "--gpu", "H100", "--json"]
    with mock.patch.object(parallel, "step_timeline", counted):
        t0 = time.perf_counter()
        try:
            with contextlib.redirect_stdout(out):
                cli_main()
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 2
        took = time.perf_counter() - t0
    return took, built[0], code, out.getvalue()


def main() -> None:
    cases = QUICK if "--quick" in sys.argv else CASES
    with tempfile.TemporaryDirectory() as tmp:
        for name, raw, layers, argv in cases:
            took, built, code, _ = run(raw, layers, argv, Path(tmp))
            print(f"{name:12} {layers:>7,} layers {' '.join(argv):12} exit {code}: {took:8.2f} s, "
                  f"{built:5,} step timelines", flush=True)


if __name__ == "__main__":
    main()
