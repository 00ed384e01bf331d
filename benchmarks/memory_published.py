"""Published memory and time figures beside ffnlab's, with the error of each (Markdown on stdout).

    PYTHONPATH=src python benchmarks/memory_published.py

Each row names its source; ffnlab's figure is computed here from the zoo config (or, for the ZeRO
paper's 7.5B model, per parameter). docs/memory.md quotes this output.

The second table prices every published training peak of ``data/published_peaks.json`` (each
trainer's own figure, its source, its settings) with the Python API: ``memory_summary`` for full
training, ``finetune_summary`` for LoRA / QLoRA, from the case's settings
(:func:`ffnlab.sizing.memory.published_peaks.pricing`). It prints ffnlab's peak, the published one
and their ratio, the kind of memory published (ffnlab predicts allocated bytes: a reserved figure
sits above allocated by the allocator's slack) and, for a case ffnlab cannot express today
(torch.compile without checkpointing, fused kernels, unstated settings), why: the ratio is then of the nearest
setting ffnlab can price. A capacity (the longest sequence that fit a card) is compared as a
capacity: ffnlab's longest sequence whose peak fits the card (its reported memory less the
allocator's assumed reserved share) over the published one.

    PYTHONPATH=src python benchmarks/memory_published.py [--peaks-only] [--write-ranges]

``--write-ranges`` also writes ``src/ffnlab/data/published_ranges.json`` (temp + rename): per
engine, ffnlab's error on each published peak of that trainer it expresses, the range every
``size``/``audit``/``fit`` answer names beside its engine; a test recomputes it and compares.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ffnlab.files import write_atomic
from ffnlab.sizing.config import ModelConfig, make_config
from ffnlab.sizing.counting import count_params
from ffnlab.sizing.memory import published_peaks, published_ranges
from ffnlab.sizing.memory.activations import activation_memory
from ffnlab.sizing.memory.engines import engine_names
from ffnlab.sizing.memory.hardware import training_time
from ffnlab.sizing.memory.parallel import Layout, Workload, training_table
from ffnlab.sizing.memory.quant import weight_bytes
from ffnlab.sizing.zoo import find

GB, GiB = 1e9, 2**30


def zoo_config(name: str) -> ModelConfig:
    """The zoo model's architecture (every model quoted here has one)."""
    cfg = find(name).config()
    assert cfg is not None
    return cfg


def row(what: str, source: str, published: float, ours: float, unit: str) -> str:
    return f"| {what} | {source} | {published:,.4g} {unit} | {ours:,.4g} {unit} | {ours / published - 1:+.2%} |"


def zero_rows() -> list[str]:
    cfg = zoo_config("llama-3-8b")
    p = count_params(cfg).total
    out = []
    for zero, gb, name in ((0, 120, "baseline"), (1, 31.4, "P_os"), (2, 16.6, "P_os+g"), (3, 1.9, "P_os+g+p")):
        rows = training_table(cfg, Workload(seq_len=16), Layout(dp=64, zero=zero))
        states = sum(r.per_gpu_bytes for r in rows if r.group == "states") / p * 7.5e9 / GB
        out.append(row(f"ZeRO model states per GPU, 7.5B on 64 GPUs, {name}",
                       "Rajbhandari et al. 2020, Figure 1 (one decimal)", gb, states, "GB"))
    return out


def korthikanti_rows() -> list[str]:
    s, b, h, a = 2048, 1, 12288, 96
    cfg = make_config(h, 1, a, 4 * h, kind="gelu", vocab_size=50257, max_positions=s)
    out = []
    for label, kw, paper in (
            ("no recompute, dropout", {}, s * b * h * (34 + 5 * a * s / h)),
            ("selective recompute", {"recompute": "selective"}, 34 * s * b * h),
            ("tensor + sequence parallel t=8", {"tp": 8, "sp": True}, s * b * h * (34 + 5 * a * s / h) / 8)):
        ours = activation_memory(cfg, seq_len=s, batch=b, attention="eager", dropout=True, **kw).per_layer[0]
        out.append(row(f"activations of one GPT-3 175B layer, s 2048, {label}",
                       "Korthikanti et al. 2022, eq. 1, 2, 5", paper / GiB, ours / GiB, "GiB"))
    return out


QUANT = [
    ("llama-2-70b", "awq", 128, 36.61, "TheBloke/Synthia-70B-v1.2b-AWQ (= TheBloke/Llama-2-70B-AWQ), README"),
    ("llama-2-70b", "gptq", 0, 35.33, "TheBloke/vigogne-2-70B-chat-GPTQ, README, main (4-bit, no groups)"),
    ("llama-2-70b", "gptq", 128, 36.65, "same, gptq-4bit-128g-actorder_True"),
    ("llama-2-70b", "gptq", 32, 40.66, "same, gptq-4bit-32g-actorder_True"),
    ("llama-2-70b", "gptq-3bit", 0, 26.77, "same, gptq-3bit--1g-actorder_True"),
    ("llama-2-70b", "gptq-3bit", 128, 28.03, "same, gptq-3bit-128g-actorder_True"),
    ("llama-2-70b", "gptq-3bit", 32, 31.84, "same, gptq-3bit-32g-actorder_True"),
]


def quant_rows() -> list[str]:
    out = []
    for model, fmt, group, gb, source in QUANT:
        ours = weight_bytes(zoo_config(model), fmt, group_size=group).total / GB
        out.append(row(f"{model} {fmt}, group {group or 'none'}", source, gb, ours, "GB"))
    ds = weight_bytes(zoo_config("deepseek-v3"), "fp8-block128", mtp=True).total / GB
    out.append(row("deepseek-v3 fp8-block128 (with the MTP layer, as stored)",
                   "deepseek-ai/DeepSeek-V3 safetensors, 688,586,727,753 B", 688.586727753, ds, "GB"))
    for model, gib in (("gpt-oss-120b", 60.8), ("gpt-oss-20b", 12.8)):
        ours = weight_bytes(zoo_config(model), "mxfp4").total / GiB
        out.append(row(f"{model} mxfp4", "gpt-oss model card (arXiv:2508.10925), one decimal", gib, ours, "GiB"))
    return out


def time_rows() -> list[str]:
    # Llama 3.1 model card: 1.46M / 7.0M / 30.84M H100-80GB hours; Llama 3 paper: 15.6T tokens
    # at 8,192 context for 405B and 38-43% bf16 MFU (Table 4)
    out = []
    cfg = zoo_config("llama-3.1-405b")
    t = training_time(cfg, tokens=int(15.6e12), gpus=16384, accelerator="H100", seq_len=8192, mfu=0.38)
    out.append(row("Llama 3.1 405B H100-hours at the paper's 38% MFU", "Llama 3.1 model card; Dubey et al. 2024",
                   30.84e6, t.gpu_hours, "h"))
    for model, hours in (("llama-3.1-8b", 1.46e6), ("llama-3.1-70b", 7.0e6)):
        t = training_time(zoo_config(model), tokens=int(15.6e12), gpus=1, accelerator="H100", seq_len=8192,
                          mfu=1.0)
        out.append(f"| {model}: the MFU its model-card hours imply (15.6T tokens, 8,192 context) | Llama 3.1 model "
                   f"card | {hours:,.4g} h | MFU {t.gpu_hours / hours:.1%} | - |")
    return out


RANGES = Path(__file__).resolve().parents[1] / "src" / "ffnlab" / "data" / published_ranges.DATA


def peak_rows() -> list[str]:
    out = ["| case | trainer | setting | kind | published | ffnlab | ffnlab / published | ffnlab expresses it |",
           "|---|---|---|---|---:|---:|---:|---|"]
    for case in published_peaks.cases():
        ratio, price = published_peaks.compared(case)
        s, fig = case["settings"], case["figure"]
        ft = s["finetune"]
        what = (f"{s['model']}, {ft['mode'] + ' r' + str(ft['rank']) if ft else 'full'}, {s['gpus']} GPU(s), "
                f"b {s['micro_batch']} x s {s['seq_len']:,}, AC {s['recompute']}, {s['precision']}")
        if case["memory_kind"] == "capacity":
            budget = published_peaks.card_budget(case)
            shown = f"fits {fig['seq_len_fitting']:,} tokens in {fig['value']} {fig['unit']}"
            ours = f"fits {price.work.seq_len:,} tokens ({budget / GiB:.1f} GiB allocated)"
        else:
            published = published_peaks.peak_bytes(case)
            shown = f"{published / GiB:.2f} GiB"
            ours = f"{ratio * published / GiB:.2f} GiB"
        verdict = "yes" if price.expressible else "no: " + "; ".join(price.not_expressible)
        out.append(f"| {case['id']} | {case['trainer']} | {what} | {case['memory_kind']} | {shown} | "
                   f"{ours} | {ratio:.3f} | {verdict} |")
    return out


def main() -> None:
    if "--write-ranges" in sys.argv[1:]:
        write_atomic(RANGES, published_ranges.render_file(published_peaks.engine_ranges(engine_names())))
        print(f"wrote {RANGES}", file=sys.stderr)
    if "--peaks-only" not in sys.argv[1:]:
        print("| quantity | source | published | ffnlab | error |")
        print("|---|---|---:|---:|---:|")
        for line in zero_rows() + korthikanti_rows() + quant_rows() + time_rows():
            print(line)
        print()
    print("Published training peaks (data/published_peaks.json), ffnlab's allocated peak per GPU:")
    print()
    for line in peak_rows():
        print(line)


if __name__ == "__main__":
    main()
