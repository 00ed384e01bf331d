"""The memory section of size/audit, the memory JSON object and ``ffnlab fit`` (CLI, subprocess)."""

from __future__ import annotations

from cli_run import assert_usage_error, run, run_json

from ffnlab.sizing.config import make_config
from ffnlab.sizing.counting import count_params

KEYS = ("weights_bytes", "gradients_bytes", "optimizer_bytes", "activations_bytes", "kv_cache_bytes")


def test_size_memory_object() -> None:
    out = run_json("size", "--d-model", "4096", "--ffn", "swiglu", "--rule", "llama", "--n-layers", "32",
                   "--n-heads", "32", "--n-kv-heads", "8", "--vocab", "32000", "--seq-len", "8192", "--batch", "2",
                   "--recompute", "full", "--kv-dtype", "fp8", "--tp", "2", "--dp", "4", "--zero", "3")
    mem = out["model"]["memory"]
    assert all(isinstance(mem[k], int) for k in KEYS)
    p = make_config(4096, 32, 32, 11008, kind="swiglu", n_kv_heads=8, vocab_size=32000)
    n = count_params(p).total
    assert out["model"]["params"]["total"] == n
    assert mem["weights_bytes"] == -(-2 * n // 8)  # bf16 / (tp 2 x dp 4 under ZeRO-3)
    assert mem["kv_cache_bytes"] == 2 * 8 * 128 * 32 * 1 * 8192 * 2 // 2  # fp8, batch 2, kv heads / tp 2
    assert mem["layout"] == {"dp": 4, "tp": 2, "pp": 1, "ep": 1, "zero": 3, "sp": False, "gpus": 8}
    assert mem["recompute"] == "full"


def test_audit_memory_per_row_and_table() -> None:
    rows = run_json("audit", "llama-3-8b", "gpt2", "--seq-len", "8192")
    assert rows[0]["memory"]["kv_cache_bytes"] == 2**30
    assert all(isinstance(r["memory"][k], int) for r in rows for k in KEYS)
    p = run("audit", "gpt2", "--format", "markdown", "--batch", "4")
    assert p.returncode == 0 and "| model | weights | grads | optimizer | activations |" in p.stdout


def test_fit_command() -> None:
    res = run_json("fit", "llama-3-8b", "--gpus", "8", "--gpu", "H100", "--tokens", "1T")
    assert res["best"]["layout"]["zero"] == 1 and res["time"]["tokens"] == 10**12
    table = run_json("fit", "llama-3-8b", "--gpus", "8", "--mode", "serve", "--weights-dtype", "int4")
    assert [r["accelerator"] for r in table["accelerators"]] == ["A100", "H100", "H200", "B200", "MI300X"]
    assert all(r["fits"] for r in table["accelerators"])
    p = run("fit", "mixtral-8x7b", "--gpus", "8", "--gpu", "H100")
    assert p.returncode == 0 and "does not fit" in p.stdout


def test_memory_flag_errors_are_one_line() -> None:
    assert_usage_error(run("audit", "gpt2", "--recompute", "some"), "recompute")
    assert_usage_error(run("audit", "gpt2", "--tp", "5"), "n_heads")
    assert_usage_error(run("fit", "gpt2", "--gpu", "X100"), "accelerator")
    assert_usage_error(run("size", "--d-model", "768", "--ratio", "4", "--n-layers", "2", "--dtype", "int4"),
                       "dtype")
