"""Serving speed (roofline bounds) and capacity (`fit --mode serve`, `size --gpu`). Oracles: a Monte-Carlo
simulation of routing, published parameter counts with the datasheets' bandwidths, and the
memory model priced one token (or one sequence) past what was found."""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ffnlab.sizing.memory.fit import fit
from ffnlab.sizing.memory.hardware import custom_accelerator, find_accelerator, load_accelerators
from ffnlab.sizing.memory.parallel import Layout, serving_table, table_total
from ffnlab.sizing.memory.workload import Workload
from ffnlab.sizing.serving import capacity, decode_speed, experts_touched
from ffnlab.sizing.zoo import find


def get_config(name):
    return find(name).config()


ROOT = Path(__file__).resolve().parents[2]
H100_BYTES_PER_S = 3.35e12  # H100 SXM datasheet: 3.35 TB/s
H100_BF16 = 989e12  # dense


@pytest.mark.parametrize(("n", "k", "batch"), [(8, 2, 1), (8, 2, 4), (64, 8, 16), (256, 8, 64), (128, 4, 100)])
def test_expected_experts_touched_matches_simulated_routing(n, k, batch):
    rng = random.Random(f"{n}-{k}-{batch}")
    trials = 2000
    mean = sum(len({e for _ in range(batch) for e in rng.sample(range(n), k)}) for _ in range(trials)) / trials
    assert experts_touched(n, k, batch) == pytest.approx(mean, rel=0.02)
    assert experts_touched(n, k, 1) == pytest.approx(k)


def test_llama2_7b_decode_at_batch_1_is_the_weights_over_the_bandwidth():
    """6,738,415,616 parameters (Llama 2 7B as transformers counts it), less the 32,000 x 4,096
    embedding table a step only indexes, in bf16, read once per token at 3.35 TB/s."""
    cfg = get_config("llama-2-7b")
    sp = decode_speed(cfg, find_accelerator("H100"), batch=1, context=1)
    weights = (6_738_415_616 - 32_000 * 4_096) * 2
    kv = 32 * 2 * 4_096 * 2  # one token: 32 layers x K and V x 4,096 x 2 B
    assert sp.weights_read_bytes == weights and sp.kv_read_bytes == kv
    assert sp.tokens_per_s_per_sequence == pytest.approx(H100_BYTES_PER_S / (weights + kv), rel=1e-12)
    assert sp.bound == "memory bandwidth" and sp.experts_read is None


def test_large_batches_become_compute_bound_and_aggregate_grows():
    cfg = get_config("llama-2-7b")
    acc = find_accelerator("H100")
    small, big = (decode_speed(cfg, acc, batch=b, context=1) for b in (1, 4096))
    assert small.bound == "memory bandwidth" and big.bound == "compute"
    assert big.tokens_per_s_total > 50 * small.tokens_per_s_total
    assert big.step_s == pytest.approx(big.flops_per_step / H100_BF16, rel=1e-12)


def test_mixtral_at_batch_1_reads_its_active_parameters():
    """Mixtral 8x7B: 12.9B active of 46.7B (Mistral AI's announcement); at batch 1 a step reads
    two of the eight experts per layer, so about the active parameters less the embedding."""
    cfg = get_config("mixtral-8x7b")
    acc = find_accelerator("H100")
    one = decode_speed(cfg, acc, batch=1, context=1)
    assert one.experts_read == pytest.approx(2)
    embedding = 32_000 * 4_096
    assert one.weights_read_bytes / 2 == pytest.approx(12.9e9 - embedding, rel=0.01)
    many = decode_speed(cfg, acc, batch=256, context=1)
    assert many.experts_read == pytest.approx(8, rel=1e-6)
    assert many.weights_read_bytes / 2 == pytest.approx(46.7e9 - embedding, rel=0.01)


def test_tensor_parallel_splits_reads_and_flops():
    cfg = get_config("llama-2-70b")
    acc = find_accelerator("H100")
    one, four = (decode_speed(cfg, acc, batch=1, context=1, tp=t) for t in (1, 4))
    # 8 KV heads: each of 4 GPUs keeps 2; the weights are split 4 ways
    assert four.kv_read_bytes * 4 == one.kv_read_bytes
    assert four.step_s == pytest.approx((one.weights_read_bytes / 4 + four.kv_read_bytes) / H100_BYTES_PER_S)


@pytest.mark.parametrize("name", ["llama-2-7b", "mistral-7b", "mixtral-8x7b", "deepseek-v3", "gemma-2-9b"])
def test_capacity_is_the_edge_of_what_fits(name):
    cfg = get_config(name)
    lay = Layout(tp=8, pp=2) if name == "deepseek-v3" else Layout()
    usable = int(0.9 * find_accelerator("H200").memory_bytes)
    cap = capacity(cfg, lay, usable_bytes=usable, context=4096).as_dict()

    def need(batch, ctx):
        return table_total(serving_table(cfg, lay, batch=batch, context=ctx))

    n, b = cap["max_context_at_batch_1"], cap["max_batch_at_context"]
    if name == "mistral-7b":  # every layer slides over 4,096 tokens: the cache stops growing there
        assert n is None and need(1, 4096) == need(1, 10**9) <= usable
    else:
        assert n >= 1 and need(1, n) <= usable < need(1, n + 1)
    assert b >= 1 and need(b, 4096) <= usable < need(b + 1, 4096)


def test_capacity_of_llama2_7b_by_hand():
    """MHA, 32 layers x 2 x 4,096 x 2 B = 512 KiB per token; the rest after the bf16 weights."""
    cfg = get_config("llama-2-7b")
    usable = 60 * 2**30
    cap = capacity(cfg, Layout(), usable_bytes=usable, context=2048).as_dict()
    left = usable - 6_738_415_616 * 2
    assert cap["max_context_at_batch_1"] == left // (512 * 1024)
    assert cap["max_batch_at_context"] == left // (512 * 1024 * 2048)


def test_a_model_too_big_for_one_sequence_has_capacity_zero():
    cap = capacity(get_config("llama-2-70b"), Layout(), usable_bytes=100 * 2**30, context=4096)
    assert cap.as_dict() == {"max_context_at_batch_1": 0, "max_batch_at_context": 0, "context": 4096}


def test_every_listed_accelerator_has_a_sourced_bandwidth():
    for acc in load_accelerators():
        assert acc.bandwidth_gbps and acc.bandwidth_gbps > 100, acc.name
        assert any(w in acc.bandwidth_source.lower() for w in ("datasheet", "data sheet", "whitepaper"))


def test_fit_serve_carries_capacity_and_speed_and_a_bare_card_has_no_speed():
    cfg = get_config("llama-3-8b")
    res = fit(cfg, Workload(seq_len=8192, batch=4), gpus=1, accelerator="L40S", mode="serve").as_dict()
    s = res["serving"]
    assert s["capacity"]["max_batch_at_context"] >= 4 and s["speed"]["batch"] == 4
    assert any("roofline upper bound" in a for a in s["assumptions"])
    bare = fit(cfg, Workload(seq_len=8192, batch=4), gpus=1, accelerator=custom_accelerator(48), mode="serve").as_dict()
    assert bare["serving"]["speed"] is None and "no memory bandwidth" in bare["serving"]["assumptions"][0]
    assert fit(cfg, Workload(seq_len=8192, batch=64), gpus=1, accelerator="L4", mode="serve").serving is None


def test_cli_prints_what_fits_and_how_fast():
    p = subprocess.run([sys.executable, "-m", "ffnlab", "fit", "llama-2-7b", "--gpu", "H100", "--gpus", "1",
                        "--mode", "serve", "--seq-len", "4096", "--batch", "8"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    out = " ".join(p.stdout.split())
    assert "KV cache holds" in out and "tokens/s per sequence" in out
    # cache capacity and the model's context limit are named apart (Llama-2-7B takes 4,096 tokens)
    assert "the model accepts at most 4,096 tokens per sequence; concurrency at 4,096: 29." in out
    assert "at batch 1" not in out
    assert "roofline upper bound" in out
    j = subprocess.run([sys.executable, "-m", "ffnlab", "fit", "llama-2-7b", "--gpu", "H100", "--gpus", "1",
                        "--mode", "serve", "--seq-len", "4096", "--batch", "8", "--json"],
                       capture_output=True, text=True)
    doc = json.loads(j.stdout)
    assert doc["serving"]["capacity"]["max_batch_at_context"] == 29
    assert doc["serving"]["speed"]["bound"] == "memory bandwidth"


def test_size_gpu_serves_as_fit_does_and_needs_a_whole_model(capsys):
    """``size --gpu``: the serving figures of ``fit --mode serve`` on the same layout; the capacity
    by hand as above (512 KiB per token of Llama-2-7B's KV cache, after the weights and the reserve)."""
    from cli_inproc import run_cli

    args = ["--seq-len", "4096", "--batch", "8", "--json"]
    p = run_cli(capsys, "size", "--from", "llama-2-7b", "--gpu", "H100", *args)
    assert p.returncode == 0, p.stderr
    sv = json.loads(p.stdout)["model"]["serving"]
    f = json.loads(run_cli(capsys, "fit", "llama-2-7b", "--gpu", "H100", "--gpus", "1", "--mode", "serve",
                           *args).stdout)["serving"]
    assert {k: sv[k] for k in ("capacity", "speed", "assumptions")} == {k: f[k] for k in ("capacity", "speed",
                                                                                         "assumptions")}
    h100 = find_accelerator("H100")
    left = h100.memory_bytes - sv["reserve_bytes"] - 6_738_415_616 * 2
    assert sv["capacity"]["max_context_at_batch_1"] == left // (512 * 1024)
    assert sv["capacity"]["max_batch_at_context"] == left // (512 * 1024 * 4096)
    text = run_cli(capsys, "size", "--from", "llama-2-7b", "--gpu", "H100", "--seq-len", "4096", "--batch", "8",
                   "--format", "markdown")
    assert "concurrency at 4,096: 29." in text.stdout and "roofline upper bound" in text.stdout
    longer = run_cli(capsys, "size", "--from", "llama-2-7b", "--gpu", "H100", "--seq-len", "2048", "--format",
                     "markdown").stdout
    assert "at most 4,096 tokens per sequence" in longer and "sequences of 2,048 tokens fit" in longer
    unknown = run_cli(capsys, "size", "--from", "llama-2-7b", "--gpu", "H900")
    assert unknown.returncode == 2 and "did you mean H200" in unknown.stderr and "--gpu-memory" not in unknown.stderr
    bad = run_cli(capsys, "size", "--d-model", "4096", "--gpu", "H100")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "--gpu needs a whole model" in bad.stderr


# the figures a quoted line can give for a card's total, each in its own unit: exact bytes
# (deviceQuery, the H200 measurement), whole MiB (deviceQuery's MBytes, torch's total_memory=...MB)
# and GiB to 0.01 (vLLM's total_gpu_memory, PyTorch's out-of-memory "total capacity")
QUOTED_BYTES = re.compile(r"([\d,]{9,}) bytes")
QUOTED_MIB = re.compile(r"(\d+) MBytes|total_memory=(\d+)MB")
QUOTED_GIB = re.compile(r"total_gpu_memory \(?(\d+\.\d\d) ?GiB|total capacity of (\d+\.\d\d) GiB"
                        r"|(\d+\.\d\d) GiB total capacity|bytes \((\d+\.\d\d) GiB\)")
CARDS_WITHOUT_CUDA_TOTAL = {"MI300X"}  # none published (docs/serving.md says so)


def quoted_totals(quote: str) -> list[tuple[str, float]]:
    """(unit, value) for every figure of the total the quoted line gives."""
    out: list[tuple[str, float]] = [("bytes", int(m.replace(",", ""))) for m in QUOTED_BYTES.findall(quote)]
    out += [("MiB", int(a or b)) for a, b in QUOTED_MIB.findall(quote)]
    out += [("GiB", float(next(g for g in m if g))) for m in QUOTED_GIB.findall(quote)]
    return out


def test_cuda_reported_totals_are_quoted_sourced_and_below_nvidia_smi():
    """What CUDA reports (torch.cuda.mem_get_info, vLLM's total_gpu_memory) is kept apart from
    nvidia-smi's total for every listed card, with its source, the quoted line and its address;
    each figure in the quote agrees with the recorded bytes in its own unit (bytes exactly,
    MiB to the MiB, GiB to 0.01), and the figure is stated once in the rendered line."""
    accs = {a.name: a for a in load_accelerators()}
    assert {n for n, a in accs.items() if a.cuda_reported_bytes is None} == CARDS_WITHOUT_CUDA_TOTAL
    for a in accs.values():
        if a.cuda_reported_bytes is None:
            continue
        total = a.cuda_reported_bytes
        figures = quoted_totals(a.cuda_reported_quote)
        assert figures, (a.name, a.cuda_reported_quote)
        for unit, value in figures:
            if unit == "bytes":
                assert total == value, (a.name, total, value)
            elif unit == "MiB":
                assert total // 2**20 == value, (a.name, total / 2**20, value)
            else:
                assert round(total / 2**30, 2) == value, (a.name, total / 2**30, value)
        assert 0.95 * a.memory_bytes < a.cuda_total_bytes < a.memory_bytes, a.name
        url = a.cuda_reported_url
        assert url.startswith("https://") or (ROOT / url).is_file(), (a.name, url)
        gib = f"{total / 2**30:,.2f} GiB"
        line = a.cuda_total_assumption()
        assert line.startswith(f"{a.name}: CUDA reports {gib} in total (") and url in line
        assert gib not in a.cuda_reported_source and line.replace(a.cuda_reported_quote, "").count(gib) == 1, line
    # the H200 as measured on the lent machine; the L40S line is the log suite's own line
    results = ROOT / "benchmarks" / "results" / "cuda-memory-h200.txt"
    assert accs["H200"].cuda_reported_quote in results.read_text()
    logs = json.loads((ROOT / "src" / "ffnlab" / "data" / "serving_logs.json").read_text())
    l40s = [c for c in logs["cases"] if c["gpu"] == "L40S"]
    assert l40s and accs["L40S"].cuda_reported_quote in l40s[0]["lines"]


def test_a_card_without_a_cuda_total_says_so_and_what_is_used_instead(capsys):
    """No invented figure: a card with no published total says in the data, the text and the
    JSON that it is not known, and sizes the cache from the device's own total instead."""
    from cli_inproc import run_cli

    for name in CARDS_WITHOUT_CUDA_TOTAL:
        acc = find_accelerator(name)
        assert acc.cuda_reported_source.startswith("not known: ")
        assert acc.cuda_reported_quote == acc.cuda_reported_url == ""
        assert acc.cuda_total_bytes == acc.memory_bytes
        said = acc.cuda_total_assumption()
        assert "CUDA total not known" in said and f"{acc.usable_mib:,} MiB instead" in said
        text = run_cli(capsys, "size", "--from", "llama-2-7b", "--gpu", name)
        assert text.returncode == 0 and "CUDA total not known" in text.stdout
        data = json.loads(run_cli(capsys, "size", "--from", "llama-2-7b", "--gpu", name, "--json").stdout)
        assert "CUDA total not known" in json.dumps(data)
    custom = custom_accelerator(40)
    assert custom.cuda_total_bytes == custom.memory_bytes and "--gpu-memory" in custom.cuda_total_assumption()


def test_the_cuda_totals_table_in_the_docs_is_the_data():
    """docs/serving.md's table of CUDA totals shows each listed card's recorded figure (or that it
    is not known) and its nvidia-smi total, so the page cannot drift from the data."""
    text = (ROOT / "docs" / "serving.md").read_text()
    table = text[text.index("| card | CUDA total | nvidia-smi | from |"):].split("\n\n")[0].splitlines()[2:]
    rows = {}
    for line in table:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        rows[cells[0]] = cells
    card_of = {"A100 40GB": "A100-40GB", "A100 80GB": "A100", "H100 80GB": "H100", "H200": "H200", "B200": "B200",
               "L4": "L4", "L40S": "L40S", "A40": "A40", "RTX A6000": "RTX-A6000", "RTX 6000 Ada": "RTX-6000-Ada",
               "RTX 3090": "RTX3090", "RTX 4090": "RTX4090", "RTX 5090": "RTX5090", "MI300X": "MI300X"}
    assert set(rows) == set(card_of) and set(card_of.values()) == {a.name for a in load_accelerators()}
    for label, name in card_of.items():
        acc = find_accelerator(name)
        _, total, smi, _ = rows[label]
        want = "not known" if acc.cuda_reported_bytes is None else f"{acc.cuda_reported_bytes / 2**30:,.2f} GiB"
        assert total == want, (label, total, want)
        assert smi.split(" MiB")[0] == f"{acc.usable_mib:,}", (label, smi)
