"""``fit --mode serve`` as a serving engine sizes it: the engine's knobs as flags, a launch line
read with ``--engine-config``, and the answer naming engine, version, each logged part, the cache
in tokens and blocks, the context limit and the concurrency (CLI, subprocess). The oracle is the
published start-up logs of data/serving_logs.json: the command, given a log's settings, lands
within max(3%, 0.25 GiB) of what the engine logged."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

from cli_run import assert_usage_error, run, run_json

CASES = {c["id"]: c
         for c in json.loads(resources.files("ffnlab").joinpath("data/serving_logs.json").read_text())["cases"]}


def test_fit_serve_names_engine_version_tokens_blocks_limit_and_concurrency() -> None:
    log = CASES["vllm019-llama31-8b-h100-tp1"]["logged"]
    p = run("fit", "llama-3.1-8b", "--gpu", "H100", "--gpus", "1", "--mode", "serve", "--seq-len", "8192",
            "--gpu-memory-utilization", "0.95")
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert "as vLLM 0.19.0 sizes it (--engine vllm@0.19.0, tp 1, per GPU):" in out
    for part in ("model weights:", "non-torch memory:", "activation peak (profile run):", "CUDA graphs:",
                 "KV cache memory:", "context limit: the model accepts at most 131,072 tokens per sequence",
                 "maximum concurrency for 8,192 tokens per request:"):
        assert part in out, part
    line = next(x for x in out.splitlines() if "KV cache: " in x and "blocks of 16" in x)
    tokens = int(line.split("KV cache: ")[1].split(" tokens")[0].replace(",", ""))
    assert abs(tokens - log["tokens"]) / log["tokens"] <= 0.03, (tokens, log["tokens"])


def test_every_serving_comparison_names_the_engine_and_its_cache() -> None:
    """Comparing cards (no --gpu) and comparing models (several, one --gpu) are serving answers
    too: each names the engine and version, the cache in tokens and blocks, the context limit and
    the concurrency, in text and JSON; the H100 figure lands on the published log as the one-card
    answer does (the comparison of models once named the training engine in its title)."""
    log = CASES["vllm019-llama31-8b-h100-tp1"]["logged"]
    args = ["--gpus", "1", "--mode", "serve", "--seq-len", "8192", "--gpu-memory-utilization", "0.95"]
    cards = run_json("fit", "llama-3.1-8b", *args)["accelerators"]
    h100 = next(r for r in cards if r["accelerator"] == "H100")["engine"]
    assert (h100["engine"], h100["version"], h100["context_limit"]) == ("vllm", "0.19.0", 131072)
    assert abs(h100["tokens"] - log["tokens"]) / log["tokens"] <= 0.03, (h100["tokens"], log["tokens"])
    assert h100["blocks"] * h100["block_size"] == h100["tokens"] and h100["concurrency"] > 0
    assert all("engine" in r for r in cards if r["fits"])
    text = run("fit", "llama-3.1-8b", *args, "--format", "markdown").stdout
    assert "KV cache (vLLM 0.19.0)" in text and "concurrency at 8,192" in text
    assert f"{h100['tokens']:,} tokens ({h100['blocks']:,} blocks)" in text
    assert "context limit: the model accepts at most 131,072 tokens per sequence" in text
    models = run_json("fit", "llama-3.1-8b", "llama-2-7b", "--gpu", "H100", *args)
    assert models[0]["engine"]["tokens"] == h100["tokens"] and models[1]["engine"]["context_limit"] == 4096
    text = run("fit", "llama-3.1-8b", "llama-2-7b", "--gpu", "H100", *args, "--format", "markdown").stdout
    assert "hf-trainer" not in text and "KV cache (vLLM 0.19.0)" in text and "| 131,072 |" in text, text


def test_json_engine_object_matches_the_log(tmp_path: Path) -> None:
    case = CASES["vllm019-qwen25-7b-h100-tp2"]
    f = tmp_path / "serve.sh"
    f.write_text(case["settings"]["command"] + "\n")  # the log's own non-default args
    res = run_json("fit", "qwen2.5-7b", "--gpu", "H100", "--gpus", "2", "--mode", "serve", "--seq-len", "8192",
                   "--engine", "vllm@0.19.0", "--engine-config", str(f))
    eng = res["engine"]
    assert eng["engine"] == "vllm" and eng["version"] == "0.19.0" and eng["tp"] == 2
    assert abs(eng["tokens"] - case["logged"]["tokens"]) / case["logged"]["tokens"] <= 0.03
    assert eng["blocks"] * eng["block_size"] == eng["tokens"]
    assert abs(eng["concurrency"] - case["logged"]["concurrency"]) / case["logged"]["concurrency"] <= 0.03


def test_engine_config_reads_a_published_sglang_line(tmp_path: Path) -> None:
    case = CASES["sglang-qwen3-235b-fp8-h100-tp4"]
    f = tmp_path / "launch.sh"
    f.write_text("python3 -m sglang.launch_server --model /path/to/Qwen3-235B-A22B-FP8 --tp 4 "
                 "--trust-remote-code --host 0.0.0.0 --port 8000 --mem-fraction-static 0.93\n")
    res = run_json("fit", "qwen3-235b-a22b", "--gpu", "H100", "--gpus", "4", "--mode", "serve",
                   "--weights-dtype", "fp8", "--engine-config", str(f))
    eng = res["engine"]
    assert eng["engine"] == "sglang" and eng["tp"] == 4 and eng["knobs"]["mem_fraction_static"] == 0.93
    assert abs(eng["tokens"] - case["logged"]["tokens"]) / case["logged"]["tokens"] <= 0.03
    p = run("fit", "qwen3-235b-a22b", "--gpu", "H100", "--gpus", "4", "--mode", "serve", "--weights-dtype", "fp8",
            "--engine-config", str(f))
    assert "used --tp 4, --mem-fraction-static 0.93" in p.stdout and "--trust-remote-code" in p.stdout


def test_enforce_eager_and_knobs_change_what_they_should() -> None:
    base = run_json("fit", "llama-3-8b", "--gpu", "H100", "--gpus", "1", "--mode", "serve")["engine"]
    more = run_json("fit", "llama-3-8b", "--gpu", "H100", "--gpus", "1", "--mode", "serve", "--max-num-seqs",
                    "2048", "--block-size", "32", "--enforce-eager")["engine"]
    assert more["activation_bytes"] > base["activation_bytes"] and more["block_size"] == 32
    assert more["cuda_graphs"].startswith("none") and more["tokens"] < base["tokens"]


def test_bad_engine_input_is_one_line_exit_2(tmp_path: Path) -> None:
    serve = ("fit", "llama-3-8b", "--gpu", "H100", "--gpus", "1", "--mode", "serve")
    assert_usage_error(run(*serve, "--engine", "tgi"), "unknown serving engine")
    assert_usage_error(run(*serve, "--engine", "sglang"), "--mem-fraction-static")
    assert_usage_error(run(*serve, "--gpu-memory-utilization", "1.5"), "--gpu-memory-utilization")
    assert_usage_error(run(*serve, "--engine-config", str(tmp_path / "none.sh")), "--engine-config")
    f = tmp_path / "bad.sh"
    f.write_text("torchrun train.py\n")
    assert_usage_error(run(*serve, "--engine-config", str(f)), "--engine-config")
    vllm = tmp_path / "vllm.sh"
    vllm.write_text("vllm serve m\n")
    assert_usage_error(run(*serve, "--engine", "sglang", "--engine-config", str(vllm)), "--engine-config")


def test_engine_names_are_read_as_written_for_serving_and_training_alike() -> None:
    """The engines' names are the lower-case ones data/serving_engines.json and data/engines.json
    list; a name in other case is refused with them, for a serving engine as for a trainer (vLLM's
    was lower-cased while hf-trainer's was not)."""
    from ffnlab.sizing.memory.engines import engine_names
    from ffnlab.sizing.serving_engines import engine_names as serving_names

    serve = ("fit", "llama-3-8b", "--gpu", "H100", "--gpus", "1", "--mode", "serve")
    for name in serving_names():
        assert "unknown serving engine" not in run(*serve, "--engine", name).stderr  # (SGLang wants a flag more)
        assert_usage_error(run(*serve, "--engine", name.upper()), f"choose one of {', '.join(serving_names())}")
    trainer = ("size", "--d-model", "1024", "--ratio", "4", "--n-layers", "2")
    assert run(*trainer, "--engine", "hf-trainer").returncode == 0 and "hf-trainer" in engine_names()
    assert_usage_error(run(*trainer, "--engine", "HF-Trainer"), "--engine must be one of hf-trainer")


def test_a_serving_engine_in_size_without_a_gpu_says_what_it_needs() -> None:
    """size prices a serving engine only for a real model on a GPU: without --gpu the line says so
    (it said the name was not one of the training engines)."""
    assert_usage_error(run("size", "--from", "llama-3-8b", "--engine", "vllm"), "needs --from MODEL and --gpu")
    assert_usage_error(run("size", "--d-model", "1024", "--ratio", "4", "--n-layers", "2", "--engine", "sglang"),
                       "a serving engine (--engine vllm")


def test_llamacpp_engine_prices_the_published_cache() -> None:
    """The published llama.cpp log of Llama-3-8B at -c 8192 (nehaai/kvcalc): a 1,024 MiB f16 cache."""
    log = CASES["llamacpp-llama3-8b-f16-8k"]["logged"]
    eng = run_json("fit", "llama-3-8b", "--gpu", "RTX4090", "--gpus", "1", "--mode", "serve", "--seq-len", "8192",
                   "--engine", "llama.cpp")["engine"]
    assert eng["engine"] == "llama.cpp" and eng["tokens"] == log["cells"]
    assert eng["cache_bytes"] == log["size_mib"] * 2**20


def test_size_from_gpu_shows_the_engine_too() -> None:
    log = CASES["vllm019-llama31-8b-h100-tp1"]["logged"]
    out = run_json("size", "--from", "llama-3.1-8b", "--gpu", "H100", "--seq-len", "8192",
                   "--gpu-memory-utilization", "0.95")
    eng = out["engine"]
    assert eng["engine"] == "vllm" and abs(eng["tokens"] - log["tokens"]) / log["tokens"] <= 0.03
    p = run("size", "--from", "llama-3.1-8b", "--gpu", "H100", "--engine", "sglang", "--mem-fraction-static", "0.9")
    assert p.returncode == 0 and "SGLang 0.4.9.post2, tp 1" in p.stdout
    assert_usage_error(run("size", "--d-model", "4096", "--n-layers", "32", "--gpu", "H100", "--engine", "sglang"),
                       "--from MODEL")


def test_no_engine_section_when_nothing_fits() -> None:
    p = run("fit", "llama-3-70b", "--gpu", "L4", "--gpus", "1", "--mode", "serve")
    assert p.returncode == 1 and "sizes it" not in p.stdout
