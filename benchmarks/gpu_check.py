"""One prepared GPU check: what only a GPU can answer, in one command, in at most 8 minutes.

    make gpu-check                 # = python3 benchmarks/gpu_check.py (CUDA device 0)
    make gpu-check DEVICE=cpu      # the same script at toy sizes on CPU: the dry run CI runs

Sections, each in its own process under its own time limit (one that fails or runs out of time
is recorded as such and the others still run):

* ``ffn``: forward+backward time of every FFN kind over its six bare matmuls (tensor cores);
* ``alignment``: benchmarks/width_alignment.py (SwiGLU at widths that are and are not multiples of
  64/128/256, several d_model), its JSON, and the verdict ``ffnlab claims --evidence`` draws from it;
* ``throughput``: tokens/s and MFU at GPT-2-124M shape (bf16, context 1024) of ffnlab's full
  training loop, its bare model step and the nanoGPT-style reference of train_throughput.py, each
  eager and under ``torch.compile``; the loop's overhead over its bare step;
* ``tests``: ``pytest -m cuda`` (tests/training/test_cuda.py);
* ``sweep``: the ``golden-h200`` preset (byte-level built-in Shakespeare: the CPU bridge cell and the next
  size, ~20 tokens per parameter) and its report;
* ``memory``: benchmarks/memory_cuda.py's measurement: every training-step case of the CPU
  measured-step suite (tests/helpers/memory_step_cases.py) in fp32, bf16 autocast and pure bf16,
  then the LoRA cases (memory_finetune_cases.py): the allocator's peak allocated and reserved bytes
  over the second step, the baseline before it and the states' bytes (on CPU: LiveBytes' peak).
  ``python benchmarks/memory_cuda.py`` then tables ffnlab's prediction against it, locally.

The three timed sections run one after another with the device to themselves; then the sweep,
the tests and the memory cases share it (each in its own process, so its CUDA peak statistics
are its own). Writes ``OUT/gpu-check-<device>.json`` and ``.md``; scratch (corpora, runs,
the sweep) goes under ``--work``. A bare machine needs only torch and ffnlab's runtime
dependencies plus what ``--bundle DIR`` copies from this environment (pytest; the Shakespeare corpus
ships inside ``src/``); the script puts ``src/`` and ``.gpu-bundle/`` on the path itself.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BUNDLE = ROOT / ".gpu-bundle"
for _p in (BUNDLE, ROOT / "benchmarks", ROOT / "src"):
    if _p.is_dir() and str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

# packages a bare GPU machine lacks, copied by --bundle from wherever this environment has them
BUNDLE_PACKAGES = ("pytest", "_pytest", "pluggy", "iniconfig", "packaging", "py",
                   "exceptiongroup", "tomli")
BUNDLE_REQUIRED = ("pytest", "_pytest", "pluggy", "iniconfig", "packaging")  # the corpus ships in src/



@dataclass(frozen=True)
class Sizes:
    """Everything that differs between the GPU check and its CPU dry run."""

    d_model: int
    n_layers: int
    n_heads: int
    ctx: int
    batch: int
    tokenizer: str
    bpe_vocab_size: int
    compile: tuple[bool, ...]
    loop_steps: int
    log_every: int
    bare_steps: int
    ffn_d: int
    ffn_tokens: int
    ffn_repeats: int
    align_d: tuple[int, ...]
    align_tokens: int
    align_iters: int
    sweep_overrides: dict[str, Any] = field(default_factory=dict)
    limits_s: dict[str, int] = field(default_factory=dict)
    memory_cases: tuple[str, ...] | None = None  # memory_step_cases.CASES by name; None: all
    memory_lora: tuple[str, ...] | None = None  # memory_finetune_cases.CASES by name; None: all


SIZES = {
    # GPT-2-124M shape; the vocabulary is whatever BPE with 50304 merges-and-bytes reaches on the plays
    "cuda": Sizes(768, 12, 12, 1024, 16, "bpe", 50304, (False, True), 40, 10, 20, 2048, 8192, 3,
                  (1024, 2048, 4096), 8192, 5,
                  limits_s={"ffn": 30, "alignment": 45, "throughput": 170, "tests": 240, "sweep": 330,
                            "memory": 150}),
    # toy sizes: every code path, no compiler (inductor on CPU needs a C++ toolchain and minutes)
    "cpu": Sizes(64, 2, 2, 64, 4, "byte", 256, (False,), 12, 3, 4, 64, 256, 1, (64,), 256, 1,
                 sweep_overrides={
                     "seeds": [0, 1], "workers": 2, "threads_per_worker": 1, "arms": ["gelu-r2", "gelu-r4"],
                     "comparisons": {"ratio_optimal": ["gelu-r2"], "convergence_speed": ["gelu-r2"]},
                     "scales": [{"name": "s3", "model": {"d_model": 32, "n_layers": 1, "n_heads": 2}},
                                {"name": "s4", "model": {"d_model": 48, "n_layers": 1, "n_heads": 3}}],
                     "trends": [{"name": "size", "axis": "params", "scales": ["s3", "s4"]}], "decide_at": "s4",
                     "require_mature": False,  # toy steps: far below the rule
                     "base": {"model": {"d_model": 32, "n_layers": 1, "n_heads": 2},
                              "data": {"tokenizer": "byte"},
                              "train": {"seq_len": 32, "batch_size": 4, "max_steps": 6, "warmup_steps": 1,
                                        "eval_every": 3, "eval_tokens": 256, "log_every": 3,
                                        "checkpoint_every": 6}}},
                 # safety nets only: about 30 s in all on 2 idle cores, far more on shared ones
                 limits_s={"ffn": 300, "alignment": 300, "throughput": 300, "tests": 300, "sweep": 300,
                           "memory": 300},
                 memory_cases=("ffnlab relu, batch 8 x 64, logits not held",
                               "transformers Llama 8 layers, gradient checkpointing"),
                 memory_lora=("ffnlab gelu, vocab 97, all adapters",)),
}
TIMED = ("ffn", "alignment", "throughput")  # need the device to themselves, in this order
SHARED = ("sweep", "tests", "memory")  # run side by side afterwards
PRESET = "golden-h200"


def kind_of(device: str) -> str:
    return "cuda" if device.startswith("cuda") else "cpu"


def device_name(device: str) -> str:
    import torch

    return torch.cuda.get_device_name(device) if device.startswith("cuda") else "cpu"


# -- sections (each runs in a child process: python gpu_check.py --section NAME ...) -------------

def section_ffn(device: str, sizes: Sizes, work: Path, save: Callable[[dict], None]) -> dict[str, Any]:
    from train_throughput import ffn_overheads

    with contextlib.redirect_stdout(sys.stderr):
        rows = ffn_overheads(device, quick=kind_of(device) == "cpu", d=sizes.ffn_d, n=sizes.ffn_tokens,
                             repeats=sizes.ffn_repeats)
    return {"rows": rows, "max_ratio": max(r["ratio"] for r in rows)}


def section_alignment(device: str, sizes: Sizes, work: Path, save: Callable[[dict], None]) -> dict[str, Any]:
    from width_alignment import measure, table

    from ffnlab.sizing.claims import alignment_evidence

    doc = measure(device, list(sizes.align_d), sizes.align_tokens, sizes.align_iters)
    path = work / f"width-alignment-{kind_of(device)}.json"
    path.write_text(json.dumps(doc, indent=1))
    print(table(doc), file=sys.stderr)
    return {"json": str(path), "document": doc, "claim": alignment_evidence(doc, path)}


def section_throughput(device: str, sizes: Sizes, work: Path, save: Callable[[dict], None]) -> dict[str, Any]:
    from train_throughput import reference_step_fn
    from trainer_overhead import Shape, measure, time_bare

    from ffnlab.training.peak import measure_peak, model_flops_utilisation, published_peak

    cuda = kind_of(device) == "cuda"
    shape = Shape(sizes.d_model, sizes.n_layers, sizes.n_heads, sizes.ctx, sizes.batch, tokenizer=sizes.tokenizer,
                  bpe_vocab_size=sizes.bpe_vocab_size)
    peak = measure_peak(device, "bf16" if cuda else "fp32").flops
    # the dense bf16 datasheet peak of data/accelerators.json, the denominator nanoGPT's MFU uses (A100: 312e12)
    published = published_peak(device_name(device), "bf16") if cuda else None
    sheet = published.flops if published is not None else None
    out: dict[str, Any] = {"peak_flops_measured": peak, "peak_flops_datasheet": sheet, "rows": [], "overhead": {}}
    tokens = shape.batch * shape.ctx

    def row(name: str, compiled: bool, s_per_step: float, fpt: int) -> None:
        tok_s = tokens / s_per_step
        out["rows"].append({"name": name, "compile": compiled, "ms_per_step": s_per_step * 1000,
                            "tokens_per_s": tok_s, "mfu": model_flops_utilisation(tok_s * fpt, peak),
                            "mfu_datasheet": model_flops_utilisation(tok_s * fpt, sheet) if sheet else None})
        save(out)

    for compiled in sizes.compile:
        r = measure(shape, device, compile_=compiled, rounds=1, steps=sizes.loop_steps, log_every=sizes.log_every,
                    bare_steps=sizes.bare_steps, peak=peak, work=work, cache_dir=str(work / "data_cache"))
        out["vocab_size"], out["train_flops_per_token"] = r["vocab_size"], r["train_flops_per_token"]
        row("ffnlab bare step", compiled, r["bare_s_per_step"], r["train_flops_per_token"])
        row("ffnlab trainer loop", compiled, r["loop_s_per_step"], r["train_flops_per_token"])
        out["overhead"]["compiled" if compiled else "eager"] = r["overhead"]
        out.setdefault("loop_work_share", {})["compiled" if compiled else "eager"] = r["loop_work_share"]
        step = reference_step_fn(r["vocab_size"], shape.d_model, shape.n_layers, shape.n_heads, shape.ctx,
                                 shape.batch, device, compiled)
        warm = 3 if compiled or cuda else 1
        row("nanoGPT-style reference", compiled,
            min(time_bare(step, device, warm, sizes.bare_steps, block=sizes.log_every)), r["train_flops_per_token"])
    out["shape"] = asdict(shape)
    return out


def section_tests(device: str, sizes: Sizes, work: Path, save: Callable[[dict], None]) -> dict[str, Any]:
    import xml.etree.ElementTree as ET

    xml = work / "pytest-cuda.xml"
    env = {**os.environ, "PYTHONPATH": _pythonpath()}
    p = subprocess.run([sys.executable, "-m", "pytest", "-m", "cuda", "-q", "-p", "no:cacheprovider",
                        f"--junitxml={xml}", str(ROOT / "tests" / "training" / "test_cuda.py")], cwd=ROOT, env=env,
                       capture_output=True, text=True)
    root = ET.parse(xml).getroot()
    suite = root if root.tag == "testsuite" else root.find("testsuite")
    assert suite is not None  # pytest's JUnit XML holds a testsuite
    counts = {k: int(suite.get(k, 0)) for k in ("tests", "failures", "errors", "skipped")}
    cases = [{"name": c.get("name"), "time_s": float(c.get("time", 0)),
              "outcome": next((ch.tag for ch in c if ch.tag in ("failure", "error", "skipped")), "passed")}
             for c in suite.iter("testcase")]
    return {"returncode": p.returncode, **counts, "passed": counts["tests"] - counts["failures"] - counts["errors"]
            - counts["skipped"], "cases": cases, "tail": p.stdout[-2000:]}


def sweep_spec(sizes: Sizes) -> Any:
    """The golden-h200 preset, with the CPU dry run's toy overrides applied."""
    from ffnlab.experiments.sweep.spec import find_spec, spec_from_dict
    from ffnlab.training.runconfig import read_file

    data = read_file(find_spec(PRESET))
    o = sizes.sweep_overrides
    if o:
        data = {**data, **{k: v for k, v in o.items() if k not in ("arms", "base")}}
        data["arms"] = [a for a in data["arms"] if a["name"] in o["arms"]]
        data["base"] = {sec: {**data["base"].get(sec, {}), **o["base"].get(sec, {})}
                        for sec in set(data["base"]) | set(o["base"])}
        data["name"] = f"{PRESET}-dry-run"
    return spec_from_dict(data)


def section_sweep(device: str, sizes: Sizes, work: Path, save: Callable[[dict], None]) -> dict[str, Any]:
    from ffnlab.experiments.reporting.report import write_report
    from ffnlab.experiments.sweep.run import execute

    spec = sweep_spec(sizes)
    spec.base.setdefault("data", {})["cache_dir"] = str(work / "data_cache")
    folder = work / "sweep" / spec.name
    t0 = time.perf_counter()
    status = execute(spec, folder, progress_mode="lines")
    train_s = time.perf_counter() - t0
    paths = write_report(folder)
    return {"preset": PRESET, "spec": spec.name, "runs": len(status), "train_wall_s": train_s,
            "status": status, "claims": json.loads(paths["claims"].read_text()),
            "report_md": paths["markdown"].read_text(), "report_dir": str(paths["markdown"].parent)}


def section_memory(device: str, sizes: Sizes, work: Path, save: Callable[[dict], None]) -> dict[str, Any]:
    """The training-step cases' peak memory (benchmarks/memory_cuda.py: what each record holds)."""
    import warnings

    from memory_cuda import measure_cases

    warnings.filterwarnings("ignore")  # transformers' config notes, once per case
    if kind_of(device) == "cuda":  # tiny models built on the host: leave its cores to the sweep beside it
        import torch

        torch.set_num_threads(2)
    with contextlib.redirect_stdout(sys.stderr):
        return measure_cases(device, save, names=sizes.memory_cases, lora_names=sizes.memory_lora)


SECTIONS: dict[str, Callable[[str, Sizes, Path, Callable[[dict], None]], dict[str, Any]]] = {
    "ffn": section_ffn, "alignment": section_alignment, "throughput": section_throughput,
    "tests": section_tests, "sweep": section_sweep, "memory": section_memory,
}


def run_section(name: str, device: str, work: Path, result: Path) -> None:
    """Child-process entry: run one section and write its result (partial results as they come)."""
    def save(partial: dict[str, Any]) -> None:
        result.write_text(json.dumps({"partial": True, **partial}, indent=1, default=str))

    out = SECTIONS[name](device, SIZES[kind_of(device)], work, save)
    result.write_text(json.dumps(out, indent=1, default=str))


# -- orchestration --------------------------------------------------------------------------

def _pythonpath() -> str:
    parts = [str(ROOT / "src"), str(ROOT / "benchmarks")] + ([str(BUNDLE)] if BUNDLE.is_dir() else [])
    return os.pathsep.join(parts + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])


def start_section(name: str, device: str, work: Path) -> tuple[subprocess.Popen, Path, Path, float]:
    result, log = work / f"section-{name}.json", work / f"section-{name}.log"
    result.unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": _pythonpath(), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    with open(log, "w") as f:
        proc = subprocess.Popen([sys.executable, __file__, "--section", name, "--device", device, "--work", str(work),
                                 "--result", str(result)], stdout=f, stderr=subprocess.STDOUT, env=env, cwd=ROOT,
                                start_new_session=True)
    return proc, result, log, time.perf_counter()


def finish_section(proc: subprocess.Popen, result: Path, log: Path, t0: float, limit: float) -> dict[str, Any]:
    """Wait up to ``limit`` seconds; a section out of time is killed (its process group) and marked."""
    try:
        proc.wait(timeout=max(1.0, limit - (time.perf_counter() - t0)))
        status = "ok" if proc.returncode == 0 else f"failed (exit {proc.returncode})"
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        proc.wait()
        status = f"timed out after {limit:.0f} s"
    entry: dict[str, Any] = {"status": status, "wall_s": time.perf_counter() - t0}
    if result.is_file():
        entry["result"] = json.loads(result.read_text())
    if status != "ok":
        entry["log_tail"] = log.read_text(errors="replace")[-3000:]
    return entry


def run_check(device: str, out: Path, work: Path, budget_s: float) -> dict[str, Any]:
    """All sections within ``budget_s``; returns (and writes) the summary document."""
    import torch

    sizes = SIZES[kind_of(device)]
    out.mkdir(parents=True, exist_ok=True)
    started, t_start = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), time.perf_counter()

    def left(name: str) -> float:
        return min(sizes.limits_s[name], budget_s - (time.perf_counter() - t_start))

    sections: dict[str, Any] = {}
    for name in TIMED:
        print(f"gpu-check: {name} ...", file=sys.stderr, flush=True)
        sections[name] = finish_section(*start_section(name, device, work), limit=left(name))
        print(f"gpu-check: {name} {sections[name]['status']} ({sections[name]['wall_s']:.0f} s)", file=sys.stderr)
    evidence = work / f"width-alignment-{kind_of(device)}.json"
    if evidence.is_file():  # what `ffnlab claims --evidence` reads, kept next to the summary
        shutil.copy2(evidence, out / evidence.name)
    running = {name: (start_section(name, device, work), left(name)) for name in SHARED}
    for name, (handles, limit) in running.items():
        sections[name] = finish_section(*handles, limit=limit)
        print(f"gpu-check: {name} {sections[name]['status']} ({sections[name]['wall_s']:.0f} s)", file=sys.stderr)
    doc = {"device": device, "device_name": device_name(device), "torch": torch.__version__,
           "cuda": torch.version.cuda, "python": sys.version.split()[0], "started": started,
           "wall_s": time.perf_counter() - t_start,
           "budget_s": budget_s, "dry_run": kind_of(device) == "cpu", "sizes": asdict(sizes), "sections": sections}
    base = out / f"gpu-check-{kind_of(device)}"
    base.with_suffix(".json").write_text(json.dumps(doc, indent=1, default=str))
    base.with_suffix(".md").write_text(markdown(doc))
    return doc


# -- the Markdown summary -------------------------------------------------------------------

def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.1%}"


def _md_ffn(r: dict[str, Any]) -> list[str]:
    lines = ["| FFN kind | d_ff | module ms | bare matmuls ms | ratio |", "|---|---:|---:|---:|---:|"]
    return lines + [f"| {x['kind']} | {x['d_ff']} | {x['module_ms']:.3f} | {x['bare_ms']:.3f} | {x['ratio']:.3f}x |"
                    for x in r["rows"]]


def _md_alignment(r: dict[str, Any]) -> list[str]:
    lines = [f"`unaligned-widths-slow`: **{r['claim']['verdict']}**: {r['claim']['evidence']}", "",
             "| d_model | d_ff | group | ms | TFLOP/s | vs median /128 |", "|---:|---:|---|---:|---:|---:|"]
    return lines + [f"| {x['d_model']} | {x['d_ff']} | {x['group']} | {x['seconds'] * 1000:.3f} | {x['tflops']:.2f} "
                    f"| {x['relative']:.1%} |" for x in r["document"]["rows"]]


def _md_throughput(r: dict[str, Any]) -> list[str]:
    sheet = r.get("peak_flops_datasheet")
    lines = [f"Shape {r.get('shape', {})}, vocabulary {r.get('vocab_size')}, measured peak "
             f"{r['peak_flops_measured'] / 1e12:.3g} TFLOP/s" + (f", datasheet {sheet / 1e12:.0f}" if sheet else ""),
             "", "| what | compile | ms/step | tokens/s | MFU (measured peak) | MFU (datasheet) |",
             "|---|---|---:|---:|---:|---:|"]
    # an MFU above 100% would mean the peak was underestimated: it is stored as None, shown as "-"
    lines += [f"| {x['name']} | {x['compile']} | {x['ms_per_step']:.1f} | {x['tokens_per_s']:,.0f} | {_pct(x['mfu'])} "
              f"| {_pct(x['mfu_datasheet'])} |" for x in r["rows"]]
    return lines + ["", "Trainer loop over its bare step: " + ", ".join(f"{k} {v:+.1%}" for k, v in
                                                                        r["overhead"].items()),
                    "", "The loop's own host work per step, timed alone, as a share of the bare step: "
                    + ", ".join(f"{k} {v:.2%}" for k, v in r.get("loop_work_share", {}).items())]


def _md_tests(r: dict[str, Any]) -> list[str]:
    lines = [f"{r['passed']} passed, {r['failures']} failed, {r['errors']} errors, {r['skipped']} skipped", "",
             "| test | outcome | s |", "|---|---|---:|"]
    return lines + [f"| {c['name']} | {c['outcome']} | {c['time_s']:.1f} |" for c in r["cases"]]


def _md_sweep(r: dict[str, Any]) -> list[str]:
    lines = [f"{r['spec']}: {r['runs']} runs trained in {r['train_wall_s']:.0f} s", ""]
    lines += [f"- **{k}**: `{v['verdict']}`: {v['evidence']}" for k, v in r["claims"].items()]
    return lines + ["", "<details><summary>sweep report</summary>", "", r["report_md"], "", "</details>"]


def _mib(b: Any) -> str:
    return "-" if b is None else f"{b / 2**20:,.2f}"


def _md_memory(r: dict[str, Any]) -> list[str]:
    recs = r.get("records", [])
    bad = [x for x in recs if x.get("error")]
    lines = [f"torch {r.get('torch')}, transformers {r.get('transformers')}, peft {r.get('peft')}; "
             f"{len(recs)} records, {len(bad)} errors; {r.get('convention')}. "
             "`python benchmarks/memory_cuda.py` tables ffnlab's prediction against these.",
             "", "| kind | case | precision | attention | peak MiB | max allocated MiB | max reserved MiB "
             "| baseline MiB | states MiB | reserved / allocated |", "|---|---|---|---|---:|---:|---:|---:|---:|---:|"]
    for x in recs:
        share = (f"{x['max_reserved'] / x['max_allocated']:.3f}" if x.get("max_reserved") and x.get("max_allocated")
                 else "-")
        peak = f"error: {x['error']}" if x.get("error") else _mib(x.get("peak_bytes"))
        lines.append(f"| {x.get('kind')} | {x.get('case')} | {x.get('precision')} | {x.get('attn_implementation')} "
                     f"| {peak} | {_mib(x.get('max_allocated'))} | {_mib(x.get('max_reserved'))} "
                     f"| {_mib(x.get('baseline_allocated'))} | {_mib(x.get('states_bytes'))} | {share} |")
    if r.get("lora_skipped"):
        lines += ["", f"LoRA cases skipped: {r['lora_skipped']}"]
    return lines


MD_SECTIONS = {"ffn": ("FFN forward+backward over bare matmuls", _md_ffn),
               "alignment": ("Width alignment", _md_alignment),
               "throughput": ("Throughput and MFU", _md_throughput),
               "tests": ("CUDA tests (pytest -m cuda)", _md_tests),
               "sweep": ("GPU sweep", _md_sweep),
               "memory": ("Training-step peak memory (allocator)", _md_memory)}


def markdown(doc: dict[str, Any]) -> str:
    head = "CPU dry run (toy sizes)" if doc["dry_run"] else "GPU check"
    lines = [f"# ffnlab {head}: {doc['device_name']}", "",
             f"torch {doc['torch']} (CUDA {doc['cuda']}), Python {doc['python']}, started {doc['started']}, "
             f"{doc['wall_s']:.0f} s of a {doc['budget_s']:.0f} s budget.", ""]
    if doc["dry_run"]:
        lines += ["Toy sizes on a CPU: this shows that every section runs and what it records; its timings "
                  "measure nothing (tiny shapes, shared cores).", ""]
    for name, (title, render) in MD_SECTIONS.items():
        s = doc["sections"].get(name, {})
        lines += [f"## {title}", "", f"status: {s.get('status', 'not run')}, {s.get('wall_s', 0):.0f} s", ""]
        res = s.get("result")
        if res and not res.get("partial"):
            lines += render(res)
        elif res and name == "memory":  # its records so far, as the full result shows them
            lines += ["(partial results)", ""] + render(res)
        elif res:
            lines += ["(partial results)", "", "```", json.dumps(res, indent=1, default=str)[:3000], "```"]
        if "log_tail" in s:
            lines += ["", "```", s["log_tail"][-1500:], "```"]
        lines.append("")
    return "\n".join(lines)


def bundle(dest: Path) -> list[str]:
    """Copy the packages a bare GPU machine lacks from this environment into ``dest``."""
    import importlib.util

    dest.mkdir(parents=True, exist_ok=True)
    copied = []
    for name in BUNDLE_PACKAGES:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin in (None, "built-in"):
            if name in BUNDLE_REQUIRED:
                raise SystemExit(f"error: {name} is not installed here; `make test` installs it")
            continue
        if spec.submodule_search_locations:
            src = Path(next(iter(spec.submodule_search_locations)))
            shutil.copytree(src, dest / src.name, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(spec.origin, dest / Path(spec.origin).name)
        copied.append(name)
    return copied


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda:0", help="cuda[:N] for the check, cpu for the dry run")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results"), help="where the JSON and Markdown go")
    ap.add_argument("--work", default=None, help="scratch folder (default runs/gpu-check-<device>)")
    ap.add_argument("--budget-s", type=float, default=None, help="total time (default 460 on CUDA, 600 on CPU)")
    ap.add_argument("--bundle", default=None, metavar="DIR", help="only copy pytest and the corpus package to DIR")
    ap.add_argument("--section", choices=sorted(SECTIONS), help=argparse.SUPPRESS)
    ap.add_argument("--result", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.bundle:
        print(f"copied {', '.join(bundle(Path(a.bundle)))} into {a.bundle}")
        return
    device = "cuda:0" if a.device == "cuda" else a.device
    if kind_of(device) == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise SystemExit("error: this torch has no CUDA device; `make gpu-check DEVICE=cpu` is the dry run")
    work = Path(a.work or ROOT / "runs" / f"gpu-check-{kind_of(device)}")
    if a.section:
        run_section(a.section, device, work, Path(a.result))
        return
    marker = work / ".gpu-check-scratch"
    if work.exists() and any(work.iterdir()):
        if not marker.is_file():
            raise SystemExit(f"error: {work} is not empty and was not made by gpu_check.py; choose another --work")
        shutil.rmtree(work)  # a previous check's scratch: every check starts clean
    work.mkdir(parents=True, exist_ok=True)
    marker.touch()
    budget = a.budget_s or (460.0 if kind_of(device) == "cuda" else 600.0)
    doc = run_check(device, Path(a.out), work, budget)
    bad = {k: v["status"] for k, v in doc["sections"].items() if v["status"] != "ok"}
    print(f"gpu-check: wrote {Path(a.out) / f'gpu-check-{kind_of(device)}'}.{{json,md}} in {doc['wall_s']:.0f} s"
          + (f"; not ok: {bad}" if bad else ""))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
