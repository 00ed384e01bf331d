"""The GPU check cannot rot between leases: its CPU dry run, the preset it sweeps, and the
verdict ``ffnlab claims --evidence`` draws from a width-alignment JSON."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from paths import ROOT

from ffnlab.errors import FfnlabError
from ffnlab.sizing.claims import check_claims, load_evidence


def alignment_doc(device: str, relative: dict[int, float]) -> dict:
    """A width-alignment JSON at d_model 1024: two multiples of 128 at 100 TFLOP/s and others at
    ``relative`` x that (the group follows from the width)."""
    rows = [{"d_model": 1024, "d_ff": w, "tflops": 100.0} for w in (2688, 2816)]
    rows += [{"d_model": 1024, "d_ff": w, "tflops": 100.0 * r} for w, r in relative.items()]
    return {"benchmark": "width-alignment", "device": device, "device_name": "test", "dtype": "bfloat16",
            "rows": rows}


@pytest.mark.parametrize("device, relative, verdict", [
    ("cuda:0", {2696: 0.70, 2712: 0.80, 2687: 0.50, 2731: 0.60}, "true"),  # both groups >= 10% slower
    ("cuda:0", {2696: 0.99, 2712: 0.97, 2687: 0.95, 2731: 0.96}, "false"),  # at most 5% slower
    ("cuda:0", {2696: 0.99, 2712: 1.00, 2687: 0.60, 2731: 0.70}, "misleading"),  # only odd widths slow
    ("cpu", {2696: 0.50, 2712: 0.50, 2687: 0.50, 2731: 0.50}, "needs-experiment"),  # not tensor cores
])
def test_alignment_json_decides_the_claim(tmp_path, device, relative, verdict):
    path = tmp_path / "width-alignment.json"
    path.write_text(json.dumps(alignment_doc(device, relative)))
    row = {r.id: r.as_dict() for r in check_claims(load_evidence(path))}["unaligned-widths-slow"]
    assert row["verdict"] == verdict
    slow = row["numbers"]["slowdown"]
    # medians by hand: multiples of 8 are 2696, 2712; not of 8 are 2687, 2731
    assert slow["div8"] == pytest.approx(1 - (relative[2696] + relative[2712]) / 2)
    assert slow["not8"] == pytest.approx(1 - (relative[2687] + relative[2731]) / 2)
    assert slow["div64"] is None


def test_alignment_json_without_an_aligned_width_is_refused(tmp_path):
    doc = alignment_doc("cuda:0", {2687: 0.5})
    doc["rows"] = [r for r in doc["rows"] if r["d_ff"] % 128]
    path = tmp_path / "a.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(FfnlabError, match="divisible by 128"):
        load_evidence(path)


def test_h200_preset_bridges_the_kept_cpu_cell_and_holds_parameters_equal():
    from ffnlab.experiments.sweep.spec import load_spec, resolve

    spec = load_spec("golden-h200")
    assert spec.base["data"] == {"corpus": "shakespeare", "tokenizer": "byte"}  # ships in the package
    runs = {r.run: r for r in resolve(spec, 256)}
    # the bridge: cell s3's runs are the kept CPU cell's, config for config (docs/results/size-fixed-steps)
    kept = {r["run"]: r for r in json.loads((ROOT / "docs/results/size-fixed-steps/sweep.json").read_text())["runs"]
            if r["arm"].startswith("s3.")}
    bridged = [k for k in kept if k in runs]
    assert len(bridged) == 12  # 4 arms x seeds 0-2
    for k in bridged:
        assert runs[k].config == kept[k]["config"]
        assert (runs[k].d_model, runs[k].d_ff, runs[k].params_non_embedding) == (
            kept[k]["d_model"], kept[k]["d_ff"], kept[k]["params_non_embedding"])
    for cell in ("s3", "s4", "s4lr05", "s4lr2"):
        arms = [r for r in runs.values() if r.arm.startswith(cell + ".") and r.seed == spec.seeds[0]]
        assert {r.arm.split(".")[1] for r in arms} == {"gelu-r1", "gelu-r2", "gelu-r4", "gelu-r8"}
        ref = next(r for r in arms if r.arm.endswith("gelu-r4")).params_non_embedding
        assert all(abs(r.params_non_embedding / ref - 1) <= spec.tolerance for r in arms)


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory):
    """``gpu_check.py --device cpu``, run once: its output folder and its scratch folder, where each
    section's own result file stays (``section-NAME.json``, what ``--section NAME --result`` writes)."""
    base = tmp_path_factory.mktemp("gpu-check")
    out, work = base / "out", base / "work"
    p = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu_check.py"), "--device", "cpu",
                        "--out", str(out), "--work", str(work)], capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-3000:]
    return out, work


@pytest.mark.slow
def test_cpu_dry_run_runs_every_section(dry_run):
    out, _ = dry_run
    doc = json.loads((out / "gpu-check-cpu.json").read_text())
    sec = doc["sections"]
    assert {k: v["status"] for k, v in sec.items()} == dict.fromkeys(
        ("ffn", "alignment", "throughput", "sweep", "tests", "memory"), "ok")
    # the device machine returns at most 8 files: the summary, its Markdown, the alignment evidence
    assert sorted(p.name for p in out.iterdir()) == ["gpu-check-cpu.json", "gpu-check-cpu.md",
                                                     "width-alignment-cpu.json"]
    memory = sec["memory"]["result"]
    assert [(r["kind"], r["precision"]) for r in memory["records"]] == [
        ("step", "fp32")] * 2 + [("step", "bf16-autocast")] * 2 + [("step", "bf16")] * 2 + [("lora", "fp32")]
    assert all(r.get("error") is None and r["peak_bytes"] > r["states_bytes"] > 0 for r in memory["records"])
    from ffnlab.sizing.kinds import FFN_KINDS

    assert [r["kind"] for r in sec["ffn"]["result"]["rows"]] == list(FFN_KINDS)
    assert sec["alignment"]["result"]["claim"]["verdict"] == "needs-experiment"  # CPU is not a tensor core
    assert load_evidence(out / "width-alignment-cpu.json")["alignment"]["verdict"] == "needs-experiment"
    assert {r["group"] for r in sec["alignment"]["result"]["document"]["rows"]} == {"div128", "div64", "div8",
                                                                                      "not8"}
    names = [r["name"] for r in sec["throughput"]["result"]["rows"]]
    assert names == ["ffnlab bare step", "ffnlab trainer loop", "nanoGPT-style reference"]
    tests = sec["tests"]["result"]
    assert tests["tests"] == tests["skipped"] >= 6 and tests["failures"] == tests["errors"] == 0
    sweep = sec["sweep"]["result"]
    # 2 cells x 2 arms x 2 seeds
    assert sweep["runs"] == 8 and set(sweep["status"].values()) == {"finished"} and sweep["claims"]
    md = (out / "gpu-check-cpu.md").read_text()
    assert md.startswith("# ffnlab CPU dry run") and "## GPU sweep" in md and "## Training-step peak memory" in md


@pytest.mark.slow
def test_memory_section_on_cpu_measures_what_the_step_suite_measures_and_tables_it(dry_run, tmp_path):
    """The memory section's CPU path, in the dry run's own subprocess (its ``--section memory
    --result`` file), against an independent oracle (``memory_step_cases.measure``, the CPU suite's
    measurement), then memory_cuda.py's table of it."""
    from memory_step_cases import CASES, measure, predict

    result = dry_run[1] / "section-memory.json"
    doc = json.loads(result.read_text())
    assert "partial" not in doc and doc["device"] == "cpu" and doc["torch"] and doc["transformers"]
    cases = {c.name: c for c in CASES}
    fp32 = [r for r in doc["records"] if r["kind"] == "step" and r["precision"] == "fp32"]
    assert len(fp32) == 2
    oracle = {}
    for r in fp32:
        measured, op, cfg = measure(cases[r["case"]])
        assert (r["peak_bytes"], r["peak_op"]) == (measured, op)
        assert r["max_reserved"] is None  # no allocator on CPU
        oracle[r["case"]] = (measured, predict(cases[r["case"]], cfg).peak_bytes)
    assert doc["records"][1]["attn_implementation"] == "sdpa" and doc["configs"]  # the Llama case as stated

    out = tmp_path / "table"
    q = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "memory_cuda.py"), str(result), "--out", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert q.returncode == 0, q.stdout[-2000:] + q.stderr[-3000:]
    table = json.loads((out / "memory-cpu.json").read_text())
    rows = {(r["kind"], r["precision"], r["case"]): r for r in table["rows"]}
    for name, (measured, predicted) in oracle.items():
        row = rows["step", "fp32", name]
        assert (row["peak_bytes"], row["predicted"]) == (measured, predicted)
        assert row["ratio"] == pytest.approx(predicted / measured)
        # pure bf16 (model cast before AdamW): no fp32 master copy, bf16 gradients and moments, so below
        # autocast's fp32 master, moments and gradients for the same step
        pure, mixed = rows["step", "bf16", name]["predicted"], rows["step", "bf16-autocast", name]["predicted"]
        assert 0 < pure < mixed and rows["step", "bf16", name]["note"] is None
    assert rows["lora", "fp32", "ffnlab gelu, vocab 97, all adapters"]["predicted"] > 0
    assert table["summary"]["step fp32"]["ratio"]["n"] == 2 and table["summary"]["all"]["allocator_share"]["n"] == 0
    md = (out / "memory-cpu.md").read_text()
    assert "| step | fp32 |" in md and "| step | bf16 |" in md and "not modelled" not in md
