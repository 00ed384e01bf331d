"""Measured peak of whole training steps on CPU against ffnlab's step timeline, one row per case.

    PYTHONPATH=src:tests/helpers python benchmarks/memory_peak.py [--markdown]

Each case (``tests/helpers/memory_step_cases.py``: ffnlab's model and transformers' Llama, Qwen2, GPT-2,
Mixtral, Qwen2-MoE and Gemma, across vocabulary, batch, depth, recompute, loss and optimizer
implementation, gradient accumulation) runs one warm-up step and one measured step in fp32; the
measured peak is the most bytes of live tensor storage at any op (``ffnlab.training.live_bytes``,
which equals torch's ``MemTracker``). Beside it: ffnlab's predicted peak and the moment it names,
and the sum of the term table that ffnlab called the training total before the timeline.
``tests/sizing/memory/test_memory_step.py`` requires every gap within 5%.

With ``--finetune``: the LoRA steps of ``tests/helpers/memory_finetune_cases.py`` instead (peft on the same
families, fp32 and bf16), against :func:`ffnlab.sizing.finetune.finetune_peak`, and peft's
trainable count beside ffnlab's; ``tests/sizing/memory/test_memory_finetune.py`` requires every gap within 5%.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "helpers"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--markdown", action="store_true", help="print a markdown table")
    parser.add_argument("--finetune", action="store_true", help="the LoRA fine-tuning steps instead")
    args = parser.parse_args()
    import warnings

    warnings.filterwarnings("ignore")
    if args.finetune:
        finetune(args.markdown)
        return
    from memory_step_cases import CASES, measure, predict

    from ffnlab.sizing.memory.parallel import Layout, Workload, table_total, training_table

    rows = []
    t0 = time.perf_counter()
    for case in CASES:
        measured, op, cfg = measure(case)
        tl = predict(case, cfg)
        work = Workload(seq_len=case.seq_len, batch=case.batch, dtype="fp32", recompute=case.recompute,
                        attention=case.attention, dropout=case.dropout)
        terms = table_total(training_table(cfg, work, Layout()))
        rows.append((case.name, measured, op, tl.peak_bytes, tl.peak.name, terms))
        if not args.markdown:
            print(f"{case.name:62s} measured {measured:>12,} ({op}); predicted {tl.peak_bytes:>12,} "
                  f"{tl.peak_bytes / measured - 1:+.2%} at {tl.peak.name}; terms' sum {terms / measured:.2f}x",
                  flush=True)
    if args.markdown:
        print("| case (fp32, CPU) | measured peak | at op | predicted | gap | at moment | terms' sum / measured |")
        print("|---|---:|---|---:|---:|---|---:|")
        for name, measured, op, pred, moment, terms in rows:
            print(f"| {name} | {measured:,} B | `{op}` | {pred:,} B | {pred / measured - 1:+.2%} | {moment} | "
                  f"{terms / measured:.2f}x |")
    gaps = [abs(p / m - 1) for _, m, _, p, _, _ in rows]
    print(f"\n{len(rows)} cases in {time.perf_counter() - t0:.0f} s; largest gap {max(gaps):.2%}, "
          f"median {sorted(gaps)[len(gaps) // 2]:.2%}")


def finetune(markdown: bool) -> None:
    from memory_finetune_cases import CASES, build_lora, predict
    from memory_step_cases import measure

    from ffnlab.sizing.finetune import lora_params, parse_targets

    rows = []
    t0 = time.perf_counter()
    for case in CASES:
        model, cfg, loss_fn, (trainable, _) = build_lora(case)
        ours = lora_params(cfg, case.rank, parse_targets(case.targets)).trainable
        measured, op, _ = measure(case.step, built=(model, cfg, loss_fn))
        tl = predict(case, cfg).timeline
        rows.append((case.name, measured, op, tl.peak_bytes, tl.peak.name, trainable, ours))
        if not markdown:
            print(f"{case.name:62s} measured {measured:>12,} ({op}); predicted {tl.peak_bytes:>12,} "
                  f"{tl.peak_bytes / measured - 1:+.2%} at {tl.peak.name}; trainable peft {trainable:,} "
                  f"ffnlab {ours:,}", flush=True)
    if markdown:
        print("| case (CPU) | measured peak | at op | predicted | gap | at moment | trainable (peft = ffnlab) |")
        print("|---|---:|---|---:|---:|---|---:|")
        for name, measured, op, pred, moment, trainable, ours in rows:
            same = f"{trainable:,}" if trainable == ours else f"{trainable:,} != {ours:,}"
            print(f"| {name} | {measured:,} B | `{op}` | {pred:,} B | {pred / measured - 1:+.2%} | {moment} | {same} |")
    gaps = [abs(p / m - 1) for _, m, _, p, _, _, _ in rows]
    print(f"\n{len(rows)} cases in {time.perf_counter() - t0:.0f} s; largest gap {max(gaps):.2%}, "
          f"median {sorted(gaps)[len(gaps) // 2]:.2%}")


if __name__ == "__main__":
    main()
