"""ffnlab's memory and serving figures next to what other calculators print for the same inputs.

For a fixed list of cases (serving on a GPU, LoRA/QLoRA fine-tuning, pre-training) this runs ffnlab's
own command line with ``--json`` and every peer it can import, and prints one Markdown table per
quantity: the case, ffnlab's figure, each peer's figure (with its difference from ffnlab's) and a
short note on why they differ, derived from what each tool counts. Every figure is in GiB (2^30 B).

Peers (none is a dependency of ffnlab; each is imported only here, only when present):

* ``accelerate`` (Hugging Face): the functions ``accelerate estimate-memory`` runs
  (``accelerate.commands.estimate.gather_data`` and ``estimate_command``: ``calculate_maximum_sizes``
  of an empty model and ``estimate_training_usage``). The command asks the Hub for the model's
  metadata first; here that one look-up (``verify_on_hub``) is replaced by "a transformers model"
  and the model is read from a local config.json, so nothing is downloaded.
* ``llm-analysis`` (cli99): ``llm_analysis.analysis.infer`` and ``train`` with its built-in model
  and GPU configs where it has them, otherwise its own Hugging Face loader
  (``get_model_config_from_hf``) on the local config.json, and a GPU config from ffnlab's datasheet
  figures.
* ``hf-vram-calc``: its command line (``python -m hf_vram_calc.cli --model_path DIR --output_json``).

A peer that is not importable is skipped with a line ``peer X not installed: pip install X``; its
numbers are never made up. The peers pin versions that cannot share one environment (llm-analysis
0.2.2 wants huggingface-hub<0.15 and transformers<5), so ``--peer-python PY`` also runs the peer
side of this script in another interpreter (a virtual environment with that peer installed); that
side never imports ffnlab. The config.json files come from ffnlab's zoo (the fields of each model's
Hugging Face config), written to a temporary folder. Nothing reaches the network.

    python benchmarks/peers.py                                # peers importable here
    python benchmarks/peers.py --peer-python /tmp/peers-venv/bin/python \\
                               --peer-python /tmp/peers-hvc/bin/python --json peers.json

docs/peers.md has the tables as measured, the versions and the setup of the environments.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import dataclasses
import importlib.util
import io
import json
import os
import subprocess
import sys
import tempfile
import types
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
GiB = 2**30
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}

# (id, model, GPU, GPUs, weights dtype, --seq-len, --batch): `ffnlab fit ... --mode serve`
SERVE = [
    ("llama-2-70b int4, 2 x H100", "llama-2-70b", "H100", 2, "int4", 4096, 16),
    ("llama-3-8b, 1 x L40S", "llama-3-8b", "L40S", 1, "bf16", 8192, 4),
    ("llama-2-7b, 1 x A100 80GB", "llama-2-7b", "A100", 1, "bf16", 4096, 8),
]
# (model, mode, rank): `ffnlab size --from MODEL --finetune MODE --lora-rank R`
FINETUNE = [("llama-3-8b", "qlora", 16), ("llama-3-8b", "lora", 16), ("llama-2-7b", "lora", 16)]
# (model, --seq-len, --batch): `ffnlab size --from MODEL` (1 GPU, bf16 + AdamW, no recompute)
PRETRAIN = [("llama-2-7b", 2048, 1), ("llama-3-8b", 2048, 1)]

PEERS = {  # name as pip knows it -> module to import
    "accelerate": "accelerate",
    "llm-analysis": "llm_analysis",
    "hf-vram-calc": "hf_vram_calc",
}


# ----------------------------------------------------------------------------------------------
# The peer side: runs in any interpreter, never imports ffnlab.
# ----------------------------------------------------------------------------------------------

def _accelerate(req: dict[str, Any]) -> dict[str, Any]:
    from accelerate.commands import estimate

    # the command's only Hub call: the model's metadata (library name, auto_map)
    estimate.verify_on_hub = lambda repo, token=None: types.SimpleNamespace(
        config={}, library_name="transformers")
    out: dict[str, Any] = {}
    for model, cfg_dir in sorted(req["configs"].items()):
        args = argparse.Namespace(model_name=cfg_dir, library_name="transformers",
                                  dtypes=["float32", "float16", "int8", "int4"], trust_remote_code=False)
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            data = estimate.gather_data(args)
            real = estimate.gather_data
            estimate.gather_data = lambda a, d=data: copy.deepcopy(d)  # print the same rows
            try:
                estimate.estimate_command(args)
            finally:
                estimate.gather_data = real
        rows = {}
        for dtype, largest, total, training in data:
            adam = max(training.values())
            rows[dtype] = {"largest_layer_bytes": float(largest), "total_bytes": float(total),
                           "training_adam_bytes": None if adam == -1 else float(adam),
                           "training_terms_bytes": training}
        out[model] = {"rows": rows, "printed": buf.getvalue().strip()}
    return {"function": "accelerate.commands.estimate.gather_data / estimate_command "
                        "(verify_on_hub replaced; config.json read locally)", "models": out}


LA_MODELS = {"llama-2-7b": "NousResearch_Llama-2-7b-hf", "llama-2-70b": "upstage_Llama-2-70b-instruct-v2"}
LA_GPUS = {"H100": "h100-sxm-80gb", "A100": "a100-sxm-80gb"}
LA_KEYS_INFER = ("weight_memory_per_gpu", "kv_cache_memory_per_gpu", "decode_max_batch_size_per_gpu",
                 "decode_latency", "decode_tokens_per_sec", "prefill_latency", "kv_cache_latency",
                 "decode_activation_memory_per_gpu", "prefill_activation_memory_per_gpu")
LA_KEYS_TRAIN = ("num_params_total", "weight_memory_per_gpu", "gradient_memory_per_gpu",
                 "optimizer_state_memory_per_gpu", "activation_memory_per_gpu",
                 "(weight+op_state+grad)_memory_per_gpu", "(weight+op_state+grad+act)_memory_per_gpu")


def _llm_analysis(req: dict[str, Any]) -> dict[str, Any]:
    import llm_analysis.config as C
    from llm_analysis import analysis as A

    C.populate_model_and_gpu_configs()

    def model(name: str) -> tuple[str, str]:
        if name in LA_MODELS:
            return LA_MODELS[name], "built-in config"
        cfg = C.get_model_config_from_hf(req["configs"][name])  # its Hub loader, on a local folder
        C.model_configs[cfg.name] = cfg
        return cfg.name, "its get_model_config_from_hf on config.json"

    def gpu(name: str, spec: dict[str, Any]) -> tuple[str, str]:
        if name in LA_GPUS:
            return LA_GPUS[name], "built-in config"
        base = C.gpu_configs["a6000-48gb"]  # a PCIe card's interconnect fields (unused at tp 1)
        key = f"{name.lower()}-ffnlab-datasheet"
        C.gpu_configs[key] = dataclasses.replace(
            base, name=key, mem_per_GPU_in_GB=spec["memory_gb"],
            hbm_bandwidth_in_GB_per_sec=spec["bandwidth_gbps"], peak_fp16_TFLOPS=spec["bf16_tflops"],
            peak_i8_TFLOPS=None, peak_i4_TFLOPS=None)
        return key, (f"not built in: GPUConfig of ffnlab's datasheet figures ({spec['memory_gb']} GB, "
                     f"{spec['bandwidth_gbps']} GB/s, {spec['bf16_tflops']} TFLOPS)")

    def params(model_name: str) -> float:
        cfg = C.get_model_config_by_name(model_name)
        return float(A.LLMAnalysis(cfg, C.gpu_configs["a100-sxm-80gb"]).get_num_params_total())

    serve = []
    for case in req["serve"]:
        m, m_src = model(case["model"])
        g, g_src = gpu(case["gpu"], case["accelerator"])
        dtype = "w4a16e16" if case["weights"] == "int4" else "w16a16e16"
        call = dict(model_name=m, gpu_name=g, dtype_name=dtype, batch_size_per_gpu=case["batch"],
                    seq_len=case["seq"], num_tokens_to_generate=1, tp_size=case["tp"],
                    pp_size=case["pp"], log_level="ERROR")
        try:
            r = A.infer(**call)
            serve.append({"id": case["id"], "call": call, "model_config": m_src, "gpu_config": g_src,
                          "params": params(m), **{k: r[k] for k in LA_KEYS_INFER}})
        except Exception as e:  # record what the peer said
            serve.append({"id": case["id"], "call": call, "error": f"{type(e).__name__}: {e}"})
    train = []
    for case in req["pretrain"]:
        m, m_src = model(case["model"])
        call = dict(model_name=m, gpu_name="a100-sxm-80gb", dtype_name="w16a16e16",
                    batch_size_per_gpu=case["batch"], seq_len=case["seq"], log_level="ERROR")
        row: dict[str, Any] = {"id": case["id"], "model_config": m_src}
        try:
            r = A.train(**call)
        except AssertionError as e:
            # it refuses a micro-batch that does not fit; its terms do not depend on the card's size
            row["error_on_80gb"] = f"AssertionError: {e}"
            big = dataclasses.replace(C.gpu_configs["a100-sxm-80gb"], name="a100-sxm-80gb-as-1000gb",
                                      mem_per_GPU_in_GB=1000)
            C.gpu_configs[big.name] = big
            call["gpu_name"] = big.name
            r = A.train(**call)
        row.update(call=call, **{k: r[k] for k in LA_KEYS_TRAIN})
        train.append(row)
    return {"function": "llm_analysis.analysis.infer / train", "serve": serve, "pretrain": train}


def _hf_vram_calc(req: dict[str, Any]) -> dict[str, Any]:
    def run(model: str, dtypes: str, batch: int, seq: int, rank: int) -> dict[str, Any]:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "out.json"
            cmd = [sys.executable, "-m", "hf_vram_calc.cli", "--model", model, "--model_path",
                   req["configs"][model], "--dtype", dtypes, "--max_batch_size", str(batch),
                   "--max_seq_len", str(seq), "--lora_rank", str(rank), "--output_json", str(path)]
            p = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **OFFLINE},
                               timeout=600)
            shown = "hf-vram-calc " + " ".join(cmd[3:-2])
            if not path.exists():
                return {"command": shown, "error": (p.stdout + p.stderr).strip().splitlines()[-1:]}
            res = json.loads(path.read_text())
        rows = {r["dtype"].lower(): r for r in res["memory_requirements"]}
        return {"command": shown, "params": res["model"]["parameters"], "rows": rows}

    serve = [{"id": c["id"], **run(c["model"], c["weights"], c["batch"], c["seq"], 16)}
             for c in req["serve"]]
    ranks = sorted({(c["model"], c["rank"]) for c in req["finetune"]})
    finetune = {f"{m} r{r}": run(m, "bf16,int4", 1, 2048, r) for m, r in ranks}
    pretrain = [{"id": c["id"], **run(c["model"], "bf16", c["batch"], c["seq"], 16)}
                for c in req["pretrain"]]
    return {"function": "hf_vram_calc.cli (its command line, --output_json)", "serve": serve,
            "finetune": finetune, "pretrain": pretrain}


RUNNERS = {"accelerate": _accelerate, "llm-analysis": _llm_analysis, "hf-vram-calc": _hf_vram_calc}


def peer_side(req_path: str, out_path: str) -> int:
    req = json.loads(Path(req_path).read_text())
    os.environ.update(OFFLINE)
    found: dict[str, Any] = {}
    for peer, module in PEERS.items():
        if importlib.util.find_spec(module) is None:
            continue
        entry: dict[str, Any] = {"version": metadata.version(peer), "python": sys.executable}
        try:
            entry.update(RUNNERS[peer](req))
        except Exception as e:  # a peer that fails is reported, not faked
            entry["error"] = f"{type(e).__name__}: {e}"
        found[peer] = entry
    Path(out_path).write_text(json.dumps(found, indent=1, default=str))
    return 0


# ----------------------------------------------------------------------------------------------
# ffnlab's side and the tables.
# ----------------------------------------------------------------------------------------------

def _ffnlab(args: list[str]) -> dict[str, Any]:
    env = {**os.environ, **OFFLINE, "PYTHONPATH": os.pathsep.join(
        [str(SRC), *filter(None, [os.environ.get("PYTHONPATH")])])}
    p = subprocess.run([sys.executable, "-m", "ffnlab", *args, "--json"], capture_output=True,
                       text=True, env=env, cwd=ROOT, timeout=600)
    if p.returncode:
        raise SystemExit(f"ffnlab {' '.join(args)} failed: {p.stderr.strip()}")
    return json.loads(p.stdout)


def ffnlab_side() -> dict[str, Any]:
    serve = []
    for cid, model, gpu, gpus, weights, seq, batch in SERVE:
        cmd = ["fit", model, "--gpu", gpu, "--gpus", str(gpus), "--mode", "serve",
               *(["--weights-dtype", weights] if weights != "bf16" else []),
               "--seq-len", str(seq), "--batch", str(batch)]
        d = _ffnlab(cmd)
        best = d["best"]
        serve.append({"id": cid, "model": model, "gpu": gpu, "gpus": gpus, "weights": weights,
                      "seq": seq, "batch": batch, "command": "ffnlab " + " ".join(cmd),
                      "layout": best["describe"], "tp": best["layout"]["tp"], "pp": best["layout"]["pp"],
                      "weights_bytes": best["terms"]["weights"], "kv_bytes": best["terms"]["kv_cache"],
                      "per_gpu_bytes": best["per_gpu_bytes"], "memory_bytes": d["memory_bytes"],
                      "usable_bytes": d["usable_bytes"], **d["serving"]})
    finetune = []
    for model, mode, rank in FINETUNE:
        cmd = ["size", "--from", model, "--finetune", mode, "--lora-rank", str(rank)]
        d = _ffnlab(cmd)["finetune"]
        finetune.append({"id": f"{model} {mode} r{rank}", "model": model, "mode": mode, "rank": rank,
                         "command": "ffnlab " + " ".join(cmd), **d})
    pretrain = []
    for model, seq, batch in PRETRAIN:
        cmd = ["size", "--from", model, "--seq-len", str(seq), "--batch", str(batch)]
        d = _ffnlab(cmd)["model"]
        pretrain.append({"id": f"{model}, 1 x {seq}", "model": model, "seq": seq, "batch": batch,
                         "command": "ffnlab " + " ".join(cmd), "params": d["params"], **d["memory"]})
    models = sorted({c["model"] for c in serve + finetune + pretrain})
    params = {m: _ffnlab(["size", "--from", m])["model"]["params"]["total"] for m in models}
    accs = _accelerators()
    return {"serve": serve, "finetune": finetune, "pretrain": pretrain, "params": params,
            "accelerators": {c["gpu"]: accs[c["gpu"]] for c in serve}}


def _zoo_configs(folder: Path, models: set[str]) -> dict[str, str]:
    sys.path.insert(0, str(SRC))
    from ffnlab.sizing.zoo import find

    out = {}
    for m in sorted(models):
        d = folder / m
        d.mkdir(parents=True)
        (d / "config.json").write_text(json.dumps(find(m).hf_config, indent=1))
        out[m] = str(d)
    return out


def _accelerators() -> dict[str, Any]:
    data = json.loads((SRC / "ffnlab" / "data" / "accelerators.json").read_text())
    return {a["name"]: a for a in data["accelerators"]}


def collect(peer_pythons: list[str]) -> dict[str, Any]:
    ours = ffnlab_side()
    accs = ours["accelerators"]
    models = set(ours["params"])
    found: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        req = {"configs": _zoo_configs(Path(tmp) / "configs", models),
               "serve": [{k: c[k] for k in ("id", "model", "gpu", "weights", "seq", "batch", "tp", "pp")}
                         | {"accelerator": accs[c["gpu"]]} for c in ours["serve"]],
               "finetune": [{k: c[k] for k in ("id", "model", "mode", "rank")} for c in ours["finetune"]],
               "pretrain": [{k: c[k] for k in ("id", "model", "seq", "batch")} for c in ours["pretrain"]]}
        req_path = Path(tmp) / "request.json"
        req_path.write_text(json.dumps(req))
        for i, py in enumerate([sys.executable, *peer_pythons]):
            out = Path(tmp) / f"peers-{i}.json"
            p = subprocess.run([py, str(Path(__file__).resolve()), "--peer-side", str(req_path), str(out)],
                               capture_output=True, text=True, env={**os.environ, **OFFLINE}, timeout=1800)
            if p.returncode or not out.exists():
                print(f"peer side in {py} failed: {(p.stderr.strip().splitlines() or ['?'])[-1]}")
                continue
            for peer, entry in json.loads(out.read_text()).items():
                found.setdefault(peer, entry)
    for peer in PEERS:
        if peer not in found:
            print(f"peer {peer} not installed: pip install {peer}")
        elif "error" in found[peer]:
            print(f"peer {peer} {found[peer]['version']} failed: {found[peer]['error']}")
    return {"ffnlab": ours, "peers": found}


def _g(b: float | None) -> str:
    return "-" if b is None else f"{b / GiB:,.2f}"


def _vs(x: float | None, ref: float) -> str:
    if x is None:
        return "-"
    return f"{x / GiB:,.2f} ({(x - ref) / ref:+.0%})"


def _num_vs(x: float | None, ref: float, fmt: str = "{:,.0f}") -> str:
    if x is None:
        return "-"
    return f"{fmt.format(x)} ({(x - ref) / ref:+.0%})"


def _by_id(rows: list[dict[str, Any]] | None) -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in rows or []}


def tables(res: dict[str, Any]) -> str:
    ours, peers = res["ffnlab"], res["peers"]
    acc = peers.get("accelerate", {}).get("models", {})
    la = peers.get("llm-analysis", {})
    la_serve, la_train = _by_id(la.get("serve")), _by_id(la.get("pretrain"))
    hv = peers.get("hf-vram-calc", {})
    hv_serve, hv_train, hv_ft = _by_id(hv.get("serve")), _by_id(hv.get("pretrain")), hv.get("finetune", {})
    out: list[str] = []
    has = [p for p in PEERS if p in peers and "error" not in peers[p]]
    out.append("Peers: " + (", ".join(f"{p} {peers[p]['version']}" for p in has) or "none installed") + ".")

    # 1. serving memory
    out += ["", "**Serving memory per GPU (GiB): weights + KV cache of `--batch` x `--seq-len`**", "",
            "| case | ffnlab | llm-analysis | accelerate (weights) | hf-vram-calc | why they differ |",
            "|---|---:|---:|---:|---:|---|"]
    for c in ours["serve"]:
        ref, w, kv = c["per_gpu_bytes"], c["weights_bytes"], c["kv_bytes"]
        cell_ours = f"{_g(w)} + {_g(kv)} = {_g(ref)}"
        r = la_serve.get(c["id"], {})
        cell_la = ("-" if "weight_memory_per_gpu" not in r else
                   f"{_g(r['weight_memory_per_gpu'])} + {_g(r['kv_cache_memory_per_gpu'])} = "
                   f"{_vs(r['weight_memory_per_gpu'] + r['kv_cache_memory_per_gpu'], ref)}")
        adt = "int4" if c["weights"] == "int4" else "float16"
        a = acc.get(c["model"], {}).get("rows", {}).get(adt)
        split = c["tp"] * c["pp"]
        cell_acc = "-" if a is None else _vs(a["total_bytes"] / split, w)
        h = hv_serve.get(c["id"], {}).get("rows", {}).get(c["weights"])
        if h is None:
            cell_hv = "-"
        else:
            tot = h["model_size_gib"] + h["kv_cache_size_gib"]
            cell_hv = (f"{h['model_size_gib']:.2f} + {h['kv_cache_size_gib']:.2f} = {_vs(tot * GiB, ref)}; "
                       f"'inference total' {h['inference_total_gib']:.2f}")
        notes = []
        if "params" in r:
            notes.append(f"llm-analysis counts {r['params'] / 1e9:.2f}B params, ffnlab "
                         f"{ours['params'][c['model']] / 1e9:.2f}B (its FFN: 2 x d x 4d)")
        if c["weights"] == "int4":
            notes.append("peers: 4 bits a weight, no group scales, embeddings "
                         + ("16-bit (llm-analysis), 4-bit (accelerate, hf-vram-calc)"))
        if a is not None:
            notes.append("accelerate: AutoModel, no LM head, weights only")
        if h is not None:
            notes.append("hf-vram-calc 'inference total' = weights x 1.2, without its KV column")
        if split > 1:
            notes.append(f"ffnlab's layout {c['layout']}: accelerate's figure / {split}")
        out.append(f"| {c['id']} | {cell_ours} | {cell_la} | {cell_acc} | {cell_hv} | "
                   f"{'; '.join(n for n in notes if n)} |")

    # 2. serving capacity
    out += ["", "**Serving capacity per replica: most sequences of `--seq-len` tokens, longest context at "
            "batch 1**", "",
            "| case | ffnlab sequences | ffnlab longest context | llm-analysis sequences "
            "(decode_max_batch_size_per_gpu) | accelerate | hf-vram-calc | why they differ |",
            "|---|---:|---:|---:|---|---|---|"]
    for c in ours["serve"]:
        cap = c["capacity"]
        r = la_serve.get(c["id"], {})
        seqs = r.get("decode_max_batch_size_per_gpu")
        mem_gb = ours["accelerators"][c["gpu"]]["memory_gb"]
        note = (f"ffnlab: {_g(c['memory_bytes'])} GiB the device reports - 10% reserve = "
                f"{_g(c['usable_bytes'])} GiB usable; llm-analysis: {mem_gb} 'GB' taken as {mem_gb} GiB "
                f"(x 1024^3), no reserve, its smaller weights (first table), KV of seq_len + 1 tokens "
                f"and a decode step's activations per sequence")
        out.append(f"| {c['id']} | {cap['max_batch_at_context']:,} | {cap['max_context_at_batch_1']:,} | "
                   f"{'-' if seqs is None else _num_vs(seqs, cap['max_batch_at_context'])} | not offered | "
                   f"not offered | {note} |")

    # 3. decode speed
    out += ["", "**Decode speed bound (tokens/s, no efficiency factor) and prefill**", "",
            "| case | ffnlab per sequence / per replica | llm-analysis per sequence / per GPU | "
            "ffnlab step (ms) | llm-analysis step (ms) | ffnlab prefill of one prompt (ms) | "
            "llm-analysis prefill of the batch (ms) | why they differ |",
            "|---|---:|---:|---:|---:|---:|---:|---|"]
    for c in ours["serve"]:
        s = c["speed"]
        r = la_serve.get(c["id"], {})
        if "decode_tokens_per_sec" in r:
            per_seq = r["decode_tokens_per_sec"] / c["batch"]
            cell = (f"{_num_vs(per_seq, s['tokens_per_s_per_sequence'], '{:,.1f}')} / "
                    f"{r['decode_tokens_per_sec']:,.0f}")
            step = f"{r['decode_latency'] * 1e3:.2f}"
            pre = (f"{r['prefill_latency'] * 1e3:,.1f} "
                   f"({r['prefill_latency'] * 1e3 / c['batch']:,.1f} a prompt)")
            kv_ms = r["kv_cache_latency"] * 1e3
            note = (f"llm-analysis: reads the KV cache twice, 'load and store' ({kv_ms:.2f} ms of its "
                    f"step), and its {_g(r['weight_memory_per_gpu'])} GiB of weights once, the embedding "
                    f"table included; sums max(compute, memory) per sublayer. ffnlab: one read of "
                    f"{_g(s['weights_read_bytes'])} GiB of weights (the embedding table is only indexed) "
                    f"+ {_g(s['kv_read_bytes'])} GiB of KV; max of bytes and FLOPs over the whole step. "
                    f"Prefill: llm-analysis runs the batch's {c['batch']} prompts, ffnlab one")
        else:
            cell, step, pre, note = "-", "-", "-", ""
        out.append(f"| {c['id']} | {s['tokens_per_s_per_sequence']:,.1f} / {s['tokens_per_s_total']:,.0f} | "
                   f"{cell} | {s['step_s'] * 1e3:.2f} | {step} | {s['prefill_s'] * 1e3:,.1f} | {pre} | {note} |")

    # 4. fine-tuning
    out += ["", "**LoRA / QLoRA fine-tuning: model states (GiB; activations not counted by ffnlab)**", "",
            "| case | ffnlab states (trainable params) | hf-vram-calc 'LoRA' | accelerate | llm-analysis | "
            "why they differ |",
            "|---|---:|---:|---|---|---|"]
    for c in ours["finetune"]:
        st, lo = c["states"], c["lora"]
        h = hv_ft.get(f"{c['model']} r{c['rank']}", {}).get("rows", {})
        hdt = "int4" if c["mode"] == "qlora" else "bf16"
        hrow = h.get(hdt)
        cell_hv = "-" if hrow is None else _vs(hrow["lora_size_gib"] * GiB, st["total"])
        if hrow is not None:
            p = hv_ft[f"{c['model']} r{c['rank']}"]["params"]
            implied = p * 0.25 * 2 * c["rank"] / 4096
            note = (f"hf-vram-calc: (weights in {hdt} + {implied / 1e6:.1f}M guessed adapter params "
                    f"x 2 B x 4) x 1.2, the guess being 25% of the params x 2r/4096 (peft's count: "
                    f"{lo['trainable'] / 1e6:.1f}M)")
            if c["mode"] == "qlora":
                note += "; it has no NF4, int4 is its nearest 4-bit format (no quantisation constants)"
        else:
            note = ""
        out.append(f"| {c['id']} | {_g(st['total'])} ({lo['trainable'] / 1e6:.1f}M) | {cell_hv} | "
                   f"not offered | not offered | {note} |")

    # 5. pre-training
    out += ["", "**Pre-training memory, 1 GPU, bf16 + AdamW, micro-batch 1 x 2048 (GiB)**", "",
            "| case | ffnlab step peak (terms' sum) | llm-analysis weights + grads + optimizer + "
            "activations | accelerate 'Training using Adam' float32 / float16 | hf-vram-calc "
            "'Training (Adam)' bf16 | why they differ |",
            "|---|---:|---:|---:|---:|---|"]
    for c in ours["pretrain"]:
        peak, terms = c["peak_bytes"], c["terms_sum_bytes"]
        r = la_train.get(c["id"], {})
        if "weight_memory_per_gpu" in r:
            cell_la = (f"{_g(r['weight_memory_per_gpu'])} + {_g(r['gradient_memory_per_gpu'])} + "
                       f"{_g(r['optimizer_state_memory_per_gpu'])} + {_g(r['activation_memory_per_gpu'])} = "
                       f"{_vs(r['(weight+op_state+grad+act)_memory_per_gpu'], peak)}")
        else:
            cell_la = "-"
        a = acc.get(c["model"], {}).get("rows", {})
        cell_acc = ("-" if not a else
                    f"{_vs(a['float32']['training_adam_bytes'], peak)} / "
                    f"{_vs(a['float16']['training_adam_bytes'], peak)}")
        h = hv_train.get(c["id"], {}).get("rows", {}).get("bf16")
        cell_hv = "-" if h is None else _vs(h["training_gib"] * GiB, peak)
        notes = [f"ffnlab: {_g(c['weights_bytes'])} weights + {_g(c['gradients_bytes'])} bf16 grads + "
                 f"{_g(c['optimizer_bytes'])} AdamW (fp32 moments + master) + {_g(c['activations_bytes'])} "
                 f"activations; the peak ({c['peak_moment']}) adds the optimizer's temporaries"]
        if r:
            notes.append(f"llm-analysis: {r['num_params_total'] / 1e9:.2f}B params (no untied head; FFN "
                         f"2 x d x 4d) x (2 B weights + 4 B fp32 grads + 12 B Adam) + its activations"
                         + ("; run on an A100 config raised to 1000 GB (on 80 GB train() stops)"
                            if "error_on_80gb" in r else ""))
        if a:
            acc_params = a["float32"]["total_bytes"] / 4
            notes.append(f"accelerate: {acc_params / 1e9:.2f}B params (AutoModel, no LM head) x 16 B "
                         f"(float32: 4 x the fp32 model) or x 8 B (float16: its largest term, the two fp32 "
                         f"Adam moments), no activations")
        if h is not None:
            notes.append("hf-vram-calc: bf16 weights x 4 x 1.3 (10.4 B a parameter), no activations")
        out.append(f"| {c['id']} | {_g(peak)} ({_g(terms)}) | {cell_la} | {cell_acc} | {cell_hv} | "
                   f"{'; '.join(notes)} |")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="Peers: pip install accelerate transformers torch | llm-analysis | hf-vram-calc "
               "(each in its own venv; see docs/peers.md)",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--peer-python", action="append", default=[], metavar="PY",
                    help="also run the peers importable in this interpreter (repeatable)")
    ap.add_argument("--json", type=Path, metavar="PATH", help="write every figure to PATH as JSON")
    ap.add_argument("--peer-side", nargs=2, metavar=("REQUEST", "OUT"), help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.peer_side:
        return peer_side(*a.peer_side)
    res = collect(a.peer_python)
    print(tables(res), end="")
    if a.json:
        a.json.write_text(json.dumps(res, indent=1, default=str) + "\n")
        print(f"wrote {a.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
