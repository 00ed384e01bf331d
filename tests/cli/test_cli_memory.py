"""The memory section of size/audit, the memory JSON object and ``ffnlab fit`` (CLI, subprocess)."""

from __future__ import annotations

import json

import pytest
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
    assert [r["accelerator"] for r in table["accelerators"]] == ["A100-40GB", "A100", "H100", "H200", "B200", "MI300X",
                                                                  "L4", "L40S", "A40", "RTX4090", "RTX-A6000",
                                                                  "RTX-6000-Ada", "RTX3090", "RTX5090"]
    assert all(r["fits"] for r in table["accelerators"] if r["memory_bytes"] > 30 * 2**30)
    p = run("fit", "mixtral-8x7b", "--gpus", "8", "--gpu", "H100")
    assert p.returncode == 1 and "does not fit" in p.stdout


def test_memory_flag_errors_are_one_line() -> None:
    assert_usage_error(run("audit", "gpt2", "--recompute", "some"), "recompute")
    assert_usage_error(run("audit", "gpt2", "--tp", "5"), "n_heads")
    assert_usage_error(run("fit", "gpt2", "--gpu", "X100"), "accelerator")
    assert_usage_error(run("size", "--d-model", "768", "--ratio", "4", "--n-layers", "2", "--dtype", "int4"),
                       "dtype")


def test_fit_shows_the_working_terms_and_its_assumptions() -> None:
    # Markdown keeps each row on one line (an 80-column terminal table wraps the longer term names)
    p = run("fit", "llama-3.1-405b", "--gpus", "256", "--gpu", "H100", "--seq-len", "8192", "--recompute", "full",
            "--format", "markdown")
    assert p.returncode == 0, p.stderr
    out = p.stdout
    for term in ("FSDP: gathered layer", "FSDP: prefetched layers", "FSDP: reduce-scatter buffer", "assumed:",
                 "reserve", "81,559 MiB"):
        assert term in out, term
    first = next(line for line in out.splitlines() if line.startswith("| dp"))
    assert "dp 256, tp 1" not in first  # the layout that cannot hold the gathered layers is not listed
    res = run_json("fit", "llama-3-8b", "--gpus", "8", "--gpu", "H100", "--reserve", "2")
    assert res["reserve_bytes"] == 2 * 2**30 and res["usable_bytes"] == 81559 * 2**20 - 2 * 2**30
    assert any("no term counts" in a for a in res["assumptions"])
    timed = run("fit", "llama-3-8b", "--gpus", "8", "--gpu", "H100", "--tokens", "1T")
    assert "is an assumption" in timed.stdout and "Llama 3 405B 38-43%" in timed.stdout


def test_fit_gpus_by_memory_variant_and_custom_memory() -> None:
    small = run_json("fit", "llama-3-8b", "--gpus", "1", "--gpu", "A100-40GB", "--mode", "serve")
    big = run_json("fit", "llama-3-8b", "--gpus", "1", "--gpu", "A100-80GB", "--mode", "serve")
    assert small["memory_bytes"] == 40960 * 2**20 and big["memory_bytes"] == 81920 * 2**20
    custom = run_json("fit", "llama-3-8b", "--gpus", "1", "--gpu-memory", "94", "--gpu", "H100", "--mode", "serve")
    assert custom["memory_bytes"] == 94 * 2**30
    one = run("fit", "llama-3-8b", "--gpus", "1", "--gpu", "L4", "--mode", "serve", "--weights-dtype", "awq")
    assert one.returncode == 0 and "1 GPU," in one.stdout and "1 GPUs" not in one.stdout


def test_fit_flag_errors_are_one_line() -> None:
    for args, fragment in ((("--top", "0"), "--top"), (("--top", "-1"), "--top"), (("--max-tp", "0"), "--max-tp"),
                           (("--tokens", "1e400"), "--tokens"), (("--seq-len", str(2**62)), "--seq-len"),
                           (("--gpus", "0"), "--gpus"), (("--prefetch", "-1"), "--prefetch"),
                           (("--zero3", "megatron"), "--zero3"), (("--optimizer", "lion"), "--optimizer"),
                           (("--grad-dtype", "fp8"), "--grad-dtype"), (("--reserve", "-1"), "--reserve"),
                           (("--gpu-memory", "0"), "--gpu-memory")):
        assert_usage_error(run("fit", "llama-2-7b", "--gpu", "H100", *args), fragment)


def test_fit_billion_gpus_answers() -> None:
    res = run_json("fit", "llama-2-7b", "--gpus", "1000000000", "--gpu", "H100")
    assert res["best"] is not None and res["gpus"] == 10**9


def test_mfu_without_tokens_says_it_is_ignored() -> None:
    p = run("fit", "llama-2-7b", "--gpus", "8", "--gpu", "H100", "--mfu", "0.5")
    assert p.returncode == 0 and "--mfu is used only" in p.stderr
    s = run("fit", "llama-2-7b", "--gpus", "8", "--gpu", "H100", "--mode", "serve", "--tokens", "1T", "--mfu", "0.5")
    assert "--mfu is used only" in s.stderr and "ignored with --mode serve" in s.stderr


def test_audit_refuses_bad_memory_flags_up_front() -> None:
    for args, fragment in ((("--zero", "4"), "--zero"), (("--weights-dtype", "int3"), "--weights-dtype"),
                           (("--kv-dtype", "int3"), "--kv-dtype"), (("--seq-len", str(2**62)), "--seq-len")):
        assert_usage_error(run("audit", "gpt2", "llama-2-7b", *args), fragment)
    assert_usage_error(run("audit", "--all", "--zero", "4"), "--zero")
    p = run("audit", "gpt2", "llama-2-7b", "--tp", "3")  # gpt2 takes tp 3 (12 heads), llama-2-7b does not
    assert p.returncode == 0 and "llama-2-7b: no memory estimate: --tp 3 must divide n_heads=32" in p.stdout


def test_size_whole_model_flags_need_n_layers_and_one_memory_figure() -> None:
    assert_usage_error(run("size", "--d-model", "768", "--ratio", "4", "--tp", "2"), "--n-layers")
    assert_usage_error(run("size", "--d-model", "768", "--ratio", "4", "--dtype", "fp32"), "--n-layers")
    assert_usage_error(run("size", "--d-model", "768", "--ratio", "4", "--n-layers", "2", "--dp", str(10**30)),
                       "--dp")
    p = run("size", "--d-model", "768", "--ratio", "4", "--n-layers", "2", "--format", "markdown")
    assert p.returncode == 0 and "w+g+AdamW" not in p.stdout
    assert "model states (weights + gradients + optimizer)" in p.stdout
    out = run_json("size", "--d-model", "768", "--ratio", "4", "--n-layers", "2", "--dp", "4", "--zero", "3")
    mem = out["model"]["memory"]
    assert mem["terms_sum_bytes"] == mem["states_bytes"] + mem["activations_bytes"] + mem["working_bytes"]
    # a 2-layer model with GPT-2's 50,257-entry vocabulary: the loss's logit-sized tensors, which no
    # term holds, make the peak exceed the terms' sum
    assert mem["training_total_bytes"] == mem["peak_bytes"] > mem["terms_sum_bytes"]
    assert mem["peak_moment"] == "loss backward"
    assert "total" not in out["model"]["training_memory_bytes"]  # one training figure: the peak
    assert mem["working_bytes"] > 0 and mem["engine"] == "PyTorch FSDP (fully_shard)"


def test_step_peak_flags_reach_the_json_and_the_peak_moves() -> None:
    base = ("size", "--d-model", "4096", "--ffn", "swiglu", "--rule", "llama", "--n-layers", "32", "--n-heads", "32",
            "--n-kv-heads", "8", "--vocab", "128256", "--untied", "--batch", "4", "--keep-logits")
    full = run_json(*base, "--optimizer-impl", "fused")["model"]["memory"]
    fused = run_json(*base, "--optimizer-impl", "fused", "--loss", "fused")["model"]["memory"]
    assert full["peak_moment"] == "loss backward" and fused["peak_moment"] != "loss backward"
    assert full["step"] == {"loss": "full", "loss_chunks": 8, "logits_held": True, "optimizer_impl": "fused",
                            "grad_accum": 1, "recompute_every": 1}
    # the full loss holds 4 x 2048 tokens x 128,256 logits (bf16) and three fp32 tensors of that size
    assert full["peak_bytes"] - fused["peak_bytes"] > 4 * 2048 * 128256 * 10
    accum = run_json(*base, "--optimizer-impl", "fused", "--grad-accum", "4")["model"]["memory"]
    assert accum["peak_bytes"] == full["peak_bytes"] + full["gradients_bytes"]  # every gradient alive in forward


def test_size_prints_the_peak_with_its_moment_and_the_sum_as_a_sum() -> None:
    p = run("size", "--d-model", "768", "--ratio", "4", "--n-layers", "12", "--format", "markdown")
    assert p.returncode == 0
    assert "| training: peak of the step, at " in p.stdout
    assert "| training: sum of the terms (not all alive at once, the step's transients left out) |" in p.stdout
    assert "training: total" not in p.stdout


def test_the_sum_of_the_terms_says_it_leaves_out_the_steps_transients() -> None:
    """A QLoRA step under full recompute peaks at the loss's backward, on tensors no term lists: its
    peak is above the sum, which must not read as an upper bound."""
    p = run("fit", "llama-3-8b", "--finetune", "qlora", "--gpu", "A100-80GB", "--gpus", "1", "--seq-len", "16000",
            "--json")
    assert p.returncode == 0
    best = json.loads(p.stdout)["best"]
    assert best["per_gpu_bytes"] > best["terms_sum_bytes"]
    text = run("fit", "llama-3-8b", "--finetune", "qlora", "--gpu", "A100-80GB", "--gpus", "1", "--seq-len", "16000",
               "--format", "markdown").stdout
    assert ": not all alive at once, the step's transients left out); alive then:" in text


def test_bad_step_flags_get_one_line_and_exit_2() -> None:
    for flag, value in (("--loss", "sampled"), ("--optimizer-impl", "magic"), ("--grad-accum", "0"),
                        ("--recompute-every", "0"), ("--loss-chunks", "-1")):
        assert_usage_error(run("fit", "llama-3-8b", "--gpus", "8", "--gpu", "H100", flag, value), flag)


def test_fit_decides_with_the_peak_and_names_its_moment() -> None:
    foreach = ("--optimizer-impl", "foreach")  # hf-trainer's default is fused
    out = run_json("fit", "llama-3-8b", "--gpus", "8", "--gpu", "H100", *foreach)
    best = out["best"]
    assert best["per_gpu_bytes"] < best["terms_sum_bytes"]
    assert best["peak_moment"] == "optimizer step"  # foreach AdamW's square roots beside every state
    assert sum(a["bytes"] for a in best["peak_alive"]) == best["per_gpu_bytes"]
    p = run("fit", "llama-3-8b", "--gpus", "8", "--gpu", "H100", *foreach)
    assert "peak of the step:" in p.stdout and "at optimizer step" in p.stdout


# -- --finetune full|lora|qlora on size, audit and fit --------------------------------------------------

def test_finetune_reaches_size_audit_and_fit_with_the_same_peak() -> None:
    """One model, one setting: the three commands report the one fine-tuning peak
    (ffnlab.sizing.finetune.finetune_peak, measured against peft steps in test_memory_finetune.py)."""
    from ffnlab.sizing.finetune import FinetuneOptions, finetune_peak, parse_targets
    from ffnlab.sizing.hf.hub import resolve_model
    from ffnlab.sizing.memory.engines import apply_engine
    from ffnlab.sizing.memory.workload import Workload

    flags = ("--finetune", "qlora", "--lora-rank", "16", "--seq-len", "1024", "--batch", "2")
    size = run_json("size", "--from", "llama-3-8b", *flags)["finetune"]
    (row,) = run_json("audit", "llama-3-8b", *flags)
    fit = run_json("fit", "llama-3-8b", "--gpus", "1", "--gpu", "H100", *flags)
    _, cfg = resolve_model("llama-3-8b")
    # the default engine (hf-trainer): gradient checkpointing on and the kbit upcast, as peft's recipe runs it
    want = finetune_peak(cfg, apply_engine(Workload(seq_len=1024, batch=2, finetune=FinetuneOptions(
        "qlora", 16, parse_targets("all-linear"))), "hf-trainer"))
    assert want.states.base_weights > finetune_peak(cfg, Workload(seq_len=1024, batch=2, recompute="full", finetune=(
        FinetuneOptions("qlora", 16, parse_targets("all-linear"))))).states.base_weights
    assert size["peak"]["peak_bytes"] == row["finetune"]["peak"]["peak_bytes"] == want.timeline.peak_bytes
    assert fit["best"]["per_gpu_bytes"] == want.timeline.peak_bytes and fit["best"]["layout"]["tp"] == 1
    assert fit["finetune"]["mode"] == "qlora" and fit["finetune"]["lora"]["trainable"] == 41_943_040
    assert fit["best"]["terms"]["gradients"] == 4 * 41_943_040  # the adapters' only
    # full = ordinary training: no finetune object, the training peak decides
    p = run("fit", "llama-3-8b", "--gpus", "1", "--gpu", "H100", "--finetune", "full", "--json")
    plain = json.loads(p.stdout)
    assert p.returncode == 1 and "finetune" not in plain and plain["best"] is None  # 8B AdamW: not on one H100
    assert "finetune" not in run_json("audit", "llama-3-8b")[0]


def test_fit_finetune_decides_with_the_fine_tuning_peak() -> None:
    p = run("fit", "llama-3-8b", "--finetune", "qlora", "--gpus", "1", "--gpu", "rtx-4090", "--recompute", "none")
    assert p.returncode == 1 and "does not fit" in p.stdout and "--recompute full: fits" in p.stdout
    assert "--gpus" not in p.stdout.split("what would change it")[1].split("assumed")[0]  # more GPUs do not help
    # the default engine (hf-trainer) runs peft's recipe: gradient checkpointing on, so it fits as it runs
    ok = run_json("fit", "llama-3-8b", "--finetune", "qlora", "--gpus", "1", "--gpu", "rtx-4090")
    assert ok["best"] is not None and ok["best"]["peak_moment"] == "loss backward" and ok["recompute"] == "full"
    p = run("fit", "llama-3-8b", "--finetune", "lora", "--gpus", "1", "--gpu", "rtx-4090", "--recompute", "none",
            "--json")
    lora = json.loads(p.stdout)
    assert p.returncode == 1 and [s["change"] for s in lora["suggestions"]][0] == "--finetune qlora"


def test_finetune_flag_errors_are_one_line() -> None:
    assert_usage_error(run("fit", "llama-3-8b", "--finetune", "dora"), "--finetune")
    assert_usage_error(run("fit", "llama-3-8b", "--lora-rank", "8"), "--finetune lora or qlora")
    assert_usage_error(run("audit", "gpt2", "--finetune", "lora", "--qlora-base", "int8"), "--finetune qlora")
    assert_usage_error(run("fit", "llama-3-8b", "--finetune", "lora", "--mode", "serve"), "--mode serve")
    assert_usage_error(run("fit", "llama-3-8b", "--finetune", "lora", "--tokens", "1B"), "--tokens")
    assert_usage_error(run("size", "--from", "llama-3-8b", "--finetune", "lora", "--tp", "2"), "--tp")
    assert_usage_error(run("audit", "gpt2", "--finetune", "qlora", "--qlora-base", "fp4"), "--qlora-base")
    assert_usage_error(run("size", "--from", "gpt2", "--finetune", "lora", "--lora-targets", "mlp"), "--lora-targets")
    assert_usage_error(run("audit", "mixtral-8x7b", "--finetune", "lora"), "--lora-targets attention")
    p = run("audit", "gpt2", "mixtral-8x7b", "--finetune", "lora")  # several models: a note for the one refused
    assert p.returncode == 0 and "mixtral-8x7b: no fine-tuning estimate" in p.stdout
    assert "gpt2: lora rank 16" in p.stdout


def test_lora_with_the_frozen_base_sharded() -> None:
    """--dp 2 --zero 3 halves the frozen base and the adapters' states on each GPU; --zero 0 keeps
    them whole (the per-rank bytes are measured against FSDP2 in tests/sizing/memory/test_memory_finetune_fsdp.py)."""
    got = {}
    for zero in ("0", "3"):
        p = run("size", "--from", "llama-3-8b", "--finetune", "lora", "--dp", "2", "--zero", zero, "--json")
        assert p.returncode == 0, p.stderr
        got[zero] = json.loads(p.stdout)["finetune"]["states"]
    for key in ("base_weights", "adapter_weights", "adapter_gradients", "adapter_optimizer"):
        assert got["3"][key] == -(-got["0"][key] // 2), key


# -- one Workload and one Layout: the command line builds what the Python API takes ------------------

MEMORY_ARGS = ("--seq-len", "4096", "--batch", "2", "--recompute", "selective", "--loss", "chunked", "--loss-chunks",
               "4", "--grad-accum", "2", "--optimizer-impl", "for-loop", "--kv-dtype", "fp8", "--grad-dtype", "fp32",
               "--optimizer", "sgd-momentum", "--dropout")


def _workload() -> tuple[object, object]:
    from ffnlab.sizing.memory.parallel import Layout
    from ffnlab.sizing.memory.sharding import Sharding
    from ffnlab.sizing.memory.step import StepOptions
    from ffnlab.sizing.memory.workload import Workload

    work = Workload(seq_len=4096, batch=2, recompute="selective", kv_dtype="fp8", grad_dtype="fp32",
                    optimizer="sgd-momentum", dropout=True,
                    step=StepOptions(loss="chunked", loss_chunks=4, grad_accum=2, optimizer_impl="for-loop"))
    lay = Layout(dp=8, zero=3, sharding=Sharding(zero3="fsdp", prefetch=2, reshard_after_forward=False))
    from ffnlab.sizing.memory.engines import apply_engine

    # the default engine (hf-trainer) sets the facts no flag gave: here whether the logits are kept
    work = apply_engine(work, "hf-trainer", explicit=frozenset({"recompute", "step.loss", "step.optimizer_impl",
                                                                 "optimizer"}))
    assert work.engine is not None and not work.step.logits_held
    return work, lay


def test_the_flags_build_the_workload_and_layout_the_api_takes() -> None:
    from ffnlab.cli.memory_flags import MemoryFlags
    from ffnlab.sizing.finetune import FinetuneOptions

    work, lay = _workload()
    flags = MemoryFlags(batch=2, recompute="selective", loss="chunked", loss_chunks=4, grad_accum=2,
                        optimizer_impl="for-loop", kv_dtype="fp8", grad_dtype="fp32", optimizer="sgd-momentum",
                        dropout=True, dp=8, zero=3, prefetch=2, reshard_after_forward=False)
    assert flags.workload(seq_len=4096, dtype="bf16") == work and flags.layout() == lay
    lora = MemoryFlags(finetune="lora", lora_rank=8)
    assert lora.workload(seq_len=2048, dtype="bf16").finetune == FinetuneOptions(mode="lora", rank=8)
    qlora = MemoryFlags(finetune="qlora").workload(seq_len=2048, dtype="bf16")
    assert qlora.finetune == FinetuneOptions(mode="qlora", upcast_fp32=True) and qlora.recompute == "full"
    kept = MemoryFlags(finetune="qlora", upcast_fp32=False, given=frozenset({"upcast_fp32"}))
    assert kept.workload(seq_len=2048, dtype="bf16").finetune == FinetuneOptions(mode="qlora")
    assert MemoryFlags().workload(seq_len=2048, dtype="bf16").finetune is None  # full: every weight trains


def test_size_audit_and_fit_print_what_the_api_returns_for_the_same_workload() -> None:
    import json
    from dataclasses import replace

    from ffnlab.sizing.audit import memory_of
    from ffnlab.sizing.hf.hub import resolve_model
    from ffnlab.sizing.memory.fit import fit
    from ffnlab.sizing.memory.parallel import Layout, memory_summary
    from ffnlab.sizing.result import plain

    def as_json(res: object) -> object:
        return json.loads(json.dumps(plain(res)))

    work, lay = _workload()
    layout = ("--dp", "8", "--zero", "3", "--prefetch", "2", "--no-reshard")
    _, cfg = resolve_model("llama-3-8b")
    want = as_json(memory_summary(cfg, work, lay))
    assert run_json("size", "--from", "llama-3-8b", *MEMORY_ARGS, *layout)["model"]["memory"] == want
    (row,) = run_json("audit", "llama-3-8b", *MEMORY_ARGS, *layout)
    assert row["memory"] == want == as_json(memory_of(cfg, work, lay))
    got = run_json("fit", "llama-3-8b", "--gpu", "H100", "--gpus", "8", *MEMORY_ARGS, "--prefetch", "2",
                   "--no-reshard-after-forward")  # the old spelling of --no-reshard, hidden, still works
    res = as_json(fit(cfg, work, gpus=8, accelerator="H100", sharding=lay.sharding, context_limit=8192))
    assert isinstance(res, dict) and {k: got[k] for k in res} == res
    best = got["best"]["layout"]
    if (best["dp"], best["tp"], best["pp"], best["zero"]) == (8, 1, 1, 3):  # the same layout, priced alone
        assert got["best"]["per_gpu_bytes"] == memory_summary(cfg, work, lay).peak_bytes
    from ffnlab.sizing.finetune import FinetuneOptions, finetune_summary

    at = MEMORY_ARGS.index("--grad-dtype")  # not with adapters: the base is frozen
    qlora = (*MEMORY_ARGS[:at], *MEMORY_ARGS[at + 2:], "--finetune", "qlora", "--lora-rank", "8")
    ft = replace(work, grad_dtype=None, finetune=FinetuneOptions(mode="qlora", rank=8, upcast_fp32=True))
    out = run_json("size", "--from", "llama-3-8b", *qlora)
    assert out["finetune"] == as_json(finetune_summary(cfg, ft))
    assert out["model"]["memory"] == as_json(memory_summary(cfg, ft, Layout()))  # full training, beside it


def test_a_bad_flag_and_the_same_bad_field_give_one_and_the_same_line() -> None:
    import pytest

    from ffnlab.errors import FfnlabError
    from ffnlab.sizing.memory.parallel import Layout
    from ffnlab.sizing.memory.step import StepOptions
    from ffnlab.sizing.memory.workload import Workload

    cases = [(("--batch", "0"), lambda: Workload(batch=0)),
             (("--loss", "sampled"), lambda: Workload(step=StepOptions(loss="sampled"))),
             (("--kv-dtype", "fp7"), lambda: Workload(kv_dtype="fp7")),
             (("--zero", "4"), lambda: Layout(zero=4)),
             (("--sp",), lambda: Layout(sp=True))]
    for flags, make in cases:
        with pytest.raises(FfnlabError) as e:
            make()
        p = run("size", "--from", "llama-3-8b", *flags)
        assert_usage_error(p)
        assert p.stderr.strip() == f"error: {e.value}"


def test_fit_refuses_a_bad_mla_cache_before_any_model_is_read() -> None:
    """Once a training fit took any --mla-cache and echoed it in its JSON; serving refused it late,
    in other words. The workload checks it with the other flags, for both modes."""
    for mode in ("train", "serve"):
        p = run("fit", "llama-3-8b", "--gpu", "H100", "--mode", mode, "--mla-cache", "bogus")
        assert_usage_error(p, "--mla-cache must be one of latent, expanded, got 'bogus'")


def test_the_old_reshard_flag_is_hidden_and_errors_name_the_new_one() -> None:
    """--reshard/--no-reshard replaced --reshard-after-forward/--no-reshard-after-forward in
    --help (60 columns wide with its negative, it squeezed every help text); the old spelling
    still works and prices the same (LoRA with its frozen base under FSDP takes it too)."""
    assert "reshard-after-forward" not in run("size", "--help").stdout
    assert "--no-reshard" in run("size", "--help").stdout
    args = ("size", "--from", "llama-3-8b", "--finetune", "lora", "--dp", "2", "--zero", "3", "--json")
    got = [json.loads(run(*args, spelling).stdout)["finetune"]
           for spelling in ("--no-reshard", "--no-reshard-after-forward")]
    assert got[0] == got[1]
    assert got[0]["peak"]["peak_bytes"] > json.loads(run(*args).stdout)["finetune"]["peak"]["peak_bytes"]


def test_pure_bf16_drops_the_master_copy_and_halves_the_moments() -> None:
    args = ("size", "--from", "llama-7b", "--seq-len", "2048")
    mixed = run_json(*args)["model"]["memory"]
    pure = run_json(*args, "--pure-bf16")["model"]["memory"]
    assert pure["optimizer_bytes"] * 3 == mixed["optimizer_bytes"]  # 4 B (bf16 moments) against 8 + 4
    assert pure["weights_bytes"] == mixed["weights_bytes"] and pure["peak_bytes"] < mixed["peak_bytes"]
    assert_usage_error(run(*args, "--pure-bf16", "--dtype", "fp32"), "--pure-bf16 trains in bf16")


def test_free_logits_drops_the_held_logits_from_the_peak() -> None:
    args = ("size", "--from", "llama-7b", "--seq-len", "2048")
    held = run_json(*args, "--keep-logits")["model"]["memory"]
    freed = run_json(*args, "--free-logits")["model"]["memory"]
    assert run_json(*args)["model"]["memory"]["peak_bytes"] == freed["peak_bytes"]  # hf-trainer frees them
    assert held["step"]["logits_held"] and not freed["step"]["logits_held"]
    assert held["peak_bytes"] - freed["peak_bytes"] == 2048 * 32000 * 2  # one bf16 logits tensor


def test_engine_flag_names_engine_and_version_and_lists_overridden_facts() -> None:
    args = ("size", "--from", "llama-7b", "--seq-len", "2048")
    mem = run_json(*args, "--engine", "torchtune")["model"]["memory"]
    assert mem["trainer"]["name"] == "torchtune" and mem["trainer"]["version"] == "0.6.1"
    assert mem["recompute"] == "full" and mem["step"]["loss"] == "chunked" and mem["trainer"]["overridden"] == []
    over = run_json(*args, "--engine", "torchtune", "--recompute", "none", "--keep-logits")["model"]["memory"]
    assert over["recompute"] == "none" and over["trainer"]["overridden"] == ["keeps_logits", "recompute"]
    p = run(*args, "--engine", "trl@0.1")
    assert p.returncode == 0 and "trl@0.1 is not known: priced as trl@" in p.stderr
    from ffnlab.sizing.memory.published_ranges import range_text

    assert f"engine torchtune@0.6.1 ({range_text('torchtune')}; flags overrode: recompute)" in run(
        *args, "--engine", "torchtune", "--recompute", "none", "--format", "markdown").stdout
    fit = run_json("fit", "llama-7b", "--engine", "trl@1.6.0")
    assert fit["trainer"]["name"] == "trl" and fit["trainer"]["version"] == "1.6.0"
    assert_usage_error(run(*args, "--engine", "nope"), "--engine must be one of")


def test_fit_exit_status_says_whether_anything_fits() -> None:
    """0: a layout fits; 1: nothing does (scripts can test it); 2: bad input."""
    assert run("fit", "gpt2", "--gpus", "1", "--gpu", "H100").returncode == 0
    nothing = run("fit", "llama-3-70b", "--gpus", "1", "--gpu", "H100")
    assert nothing.returncode == 1 and "does not fit" in nothing.stdout
    assert run("fit", "llama-3-70b", "--gpus", "1").returncode == 1  # on no accelerator of the table
    assert run("fit", "gpt2", "--gpus", "1").returncode == 0
    assert_usage_error(run("fit", "gpt2", "--gpus", "eight"), "whole number of GPUs or auto")


def test_fit_gpus_auto_finds_the_fewest_gpus_of_a_kind_that_fit() -> None:
    p = run("fit", "llama-3-70b", "--gpu", "H100", "--gpus", "auto", "--json")
    assert p.returncode == 0
    out = json.loads(p.stdout)
    found = out["gpus_search"]["found"]
    assert out["verdict"] == "fits" and out["gpus_search"]["tried"][-1] == found
    assert run("fit", "llama-3-70b", "--gpu", "H100", "--gpus", str(found // 2)).returncode == 1
    assert run("fit", "llama-3-70b", "--gpu", "H100", "--gpus", str(found)).returncode == 0
    capped = run("fit", "llama-3-70b", "--gpu", "H100", "--gpus", "auto", "--max-gpus", "2")
    assert capped.returncode == 1 and "nothing fits on up to 2 GPUs" in capped.stdout
    assert_usage_error(run("fit", "gpt2", "--gpus", "auto"), "--gpus auto searches one kind of GPU")


def test_fit_within_the_reserve_is_said_as_borderline() -> None:
    args = ("fit", "gpt2", "--gpu-memory", "10", "--reserve", "9.5", "--gpus", "1", "--seq-len", "1024")
    p = run(*args)
    assert p.returncode == 1 and p.stdout.startswith("borderline: gpt2 fits within the reserve")
    assert json.loads(run(*args, "--json").stdout)["verdict"] == "borderline"


def test_plot_writes_the_step_figure_of_size_and_fit(tmp_path) -> None:  # noqa: ANN001 - pytest's tmp_path
    from ffnlab.experiments.reporting.step_figure import peak_label_of

    svg = tmp_path / "size.svg"
    p = run("size", "--from", "gpt2", "--seq-len", "1024", "--plot", str(svg), "--json")
    assert p.returncode == 0 and f"wrote the step figure to {svg}" in p.stderr
    mem = json.loads(p.stdout)["model"]["memory"]
    text = svg.read_text(encoding="utf-8")
    assert peak_label_of(text)[0] == mem["peak_bytes"] and mem["peak_moment"] in peak_label_of(text)[1]
    assert f"engine {mem['trainer']['name']}@{mem['trainer']['version']}" in text
    d = run("size", "--d-model", "768", "--n-layers", "12", "--ratio", "4", "--plot", str(tmp_path / "d.svg"),
            "--json")
    assert peak_label_of((tmp_path / "d.svg").read_text())[0] == json.loads(d.stdout)["model"]["memory"]["peak_bytes"]
    out = run_json("fit", "llama-3-8b", "--finetune", "qlora", "--gpu", "rtx-4090", "--gpus", "1", "--plot",
                   str(tmp_path / "fit.svg"))
    assert peak_label_of((tmp_path / "fit.svg").read_text())[0] == out["best"]["per_gpu_bytes"]
    assert sorted(x.name for x in tmp_path.iterdir()) == ["d.svg", "fit.svg", "size.svg"]  # nothing else written
    assert_usage_error(run("size", "--from", "gpt2", "--plot", str(tmp_path / "x.pdf")), "--plot must name a .svg")
    assert_usage_error(run("size", "--d-model", "768", "--plot", str(tmp_path / "x.svg")), "--plot")
    assert_usage_error(run("fit", "gpt2", "--plot", str(tmp_path / "x.svg")), "give --gpu")
    assert_usage_error(run("fit", "gpt2", "--gpu", "H100", "--mode", "serve", "--plot", str(tmp_path / "x.svg")),
                       "--mode serve")
    assert_usage_error(run("size", "--from", "gpt2", "--plot", str(tmp_path / "none" / "x.svg")), "does not exist")


def test_engine_config_sets_the_workload_and_says_what_it_used(tmp_path) -> None:  # noqa: ANN001 - tmp_path
    toml = tmp_path / "llama3_8b.toml"
    toml.write_text('[job]\ndump_folder = "./outputs"\n[optimizer]\nname = "AdamW"\nlr = 3e-4\n'
                    '[training]\nlocal_batch_size = 2\nseq_len = 8192\nmixed_precision_param = "bfloat16"\n'
                    '[parallelism]\ndata_parallel_shard_degree = 8\n'
                    '[activation_checkpoint]\nmode = "full"\n', encoding="utf-8")
    p = run("size", "--from", "llama-3.1-8b", "--engine-config", str(toml), "--batch", "1", "--json")
    assert p.returncode == 0, p.stderr
    mem = json.loads(p.stdout)["model"]["memory"]
    assert (mem["batch"], mem["seq_len"], mem["recompute"]) == (1, 8192, "full")  # --batch over the file's 2
    assert (mem["layout"]["dp"], mem["layout"]["zero"]) == (8, 3) and mem["trainer"]["name"] == "torchtitan"
    assert "used: optimizer.name = AdamW (optimizer adamw)" in p.stderr
    assert "the command line's --batch over the file's" in p.stderr
    assert "ignored, not a memory setting (2): job.dump_folder, optimizer.lr" in p.stderr
    fit = run("fit", "llama-3.1-8b", "--gpu", "H100", "--engine-config", str(toml), "--engine", "hf-trainer", "--json")
    out = json.loads(fit.stdout)
    assert out["seq_len"] == 8192 and out["batch"] == 2 and out["trainer"]["name"] == "hf-trainer"
    assert "left out: dp, zero (fit searches the layout itself" in fit.stderr
    yaml = tmp_path / "qlora.yml"
    yaml.write_text("base_model: NousResearch/Meta-Llama-3-8B\nadapter: qlora\nsequence_len: 1024\n"
                    "micro_batch_size: 2\nlora_r: 32\ngradient_checkpointing: true\n", encoding="utf-8")
    q = run_json("fit", "llama-3-8b", "--gpu", "rtx-4090", "--gpus", "1", "--engine-config", str(yaml))
    assert q["finetune"]["mode"] == "qlora" and q["finetune"]["rank"] == 32 and q["seq_len"] == 1024
    assert_usage_error(run("size", "--from", "gpt2", "--engine-config", str(tmp_path / "x.ini")), "--engine-config")
    assert_usage_error(run("size", "--from", "gpt2", "--engine-config", str(tmp_path / "none.toml")), "none.toml")
    assert_usage_error(run("size", "--d-model", "768", "--engine-config", str(toml)), "--engine-config")
    listed = tmp_path / "list.yaml"
    listed.write_text("- a\n- b\n", encoding="utf-8")
    assert_usage_error(run("fit", "gpt2", "--gpu", "H100", "--engine-config", str(listed)),
                       "the top level of a launch config must be a mapping")


@pytest.mark.parametrize("command", [("size", "--from", "gpt2", "--seq-len", "1024"),
                                     ("fit", "gpt2", "--gpu", "H100", "--gpus", "1", "--seq-len", "1024")])
def test_plot_never_replaces_a_file_unless_told(tmp_path, command) -> None:  # noqa: ANN001 - pytest's tmp_path
    """--plot FILE onto an existing file, a link to one outside, or a dangling link: one error line,
    exit 2, every byte kept; --overwrite replaces the name with the figure, never writing through
    a link (the file it pointed at keeps its bytes)."""
    import os

    kept = tmp_path / "kept.svg"
    kept.write_bytes(b"my own figure\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    target = outside / "target.svg"
    target.write_bytes(b"not ffnlab's\n")
    plot = tmp_path / "plots"
    plot.mkdir()
    link, dangling = plot / "link.svg", plot / "dangling.svg"
    link.symlink_to(target)
    dangling.symlink_to(outside / "absent.svg")
    for path in (kept, link, dangling):
        assert_usage_error(run(*command, "--plot", str(path)), "--overwrite")
    assert kept.read_bytes() == b"my own figure\n" and target.read_bytes() == b"not ffnlab's\n"
    assert os.readlink(link) == str(target) and not (outside / "absent.svg").exists()
    assert sorted(x.name for x in plot.iterdir()) == ["dangling.svg", "link.svg"]  # no temporary left
    for path in (kept, link):
        p = run(*command, "--plot", str(path), "--overwrite")
        assert p.returncode == 0, p.stderr
        assert path.read_bytes().startswith(b"<svg") and not path.is_symlink()
    assert target.read_bytes() == b"not ffnlab's\n"  # replaced the link, did not follow it
    assert sorted(x.name for x in plot.iterdir()) == ["dangling.svg", "link.svg"]
    assert_usage_error(run(*command, "--overwrite"), "--overwrite replaces an existing --plot FILE")


def test_write_figure_does_not_replace_a_file_that_appeared_after_the_check(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    """The file is linked into place without replacing: one that appears between the command's
    first look and the write (while the model is read) keeps its bytes."""
    from ffnlab.errors import FfnlabError
    from ffnlab.experiments.reporting import step_figure as sf
    from ffnlab.sizing.memory.step_figure import StepFigure

    path = tmp_path / "late.svg"
    fig = StepFigure.__new__(StepFigure)
    monkeypatch.setattr(sf, "svg_text", lambda f: (path.write_bytes(b"arrived first\n"), "<svg/>")[1])
    with pytest.raises(FfnlabError, match="already exists"):
        sf.write_figure(path, fig)
    assert path.read_bytes() == b"arrived first\n" and [x.name for x in tmp_path.iterdir()] == ["late.svg"]


def test_fused_kernels_flag_and_the_unsloth_engine_price_one_step_and_refuse_one_line() -> None:
    """--engine unsloth sets --fused-kernels unsloth and the facts its kernels need; the flag given by
    hand with those facts prices the same step; a step the kernels do not describe is one line, exit 2."""
    args = ("size", "--from", "llama-3.1-8b", "--finetune", "qlora", "--lora-rank", "32", "--seq-len", "8192")
    eng = run_json(*args, "--engine", "unsloth")["finetune"]
    hand = run_json(*args, "--fused-kernels", "unsloth", "--recompute", "full", "--offload-acts", "--loss", "fused",
                    "--free-logits", "--optimizer", "adam8bit", "--no-upcast")["finetune"]
    assert eng["peak"]["peak_bytes"] == hand["peak"]["peak_bytes"]
    assert eng["peak"]["peak_moment"].endswith("FFN (recomputed, unsloth kernels)")
    eager = run_json(*args, "--engine", "unsloth", "--fused-kernels", "none")["finetune"]
    assert eager["peak"]["peak_bytes"] > eng["peak"]["peak_bytes"]
    assert_usage_error(run(*args, "--engine", "unsloth", "--lora-dropout", "0.1"), "lora_dropout 0")
    assert_usage_error(run(*args, "--engine", "unsloth", "--loss", "chunked"), "Cut Cross Entropy")
    assert_usage_error(run(*args, "--fused-kernels", "unsloth"), "--offload-acts")
    assert_usage_error(run(*args, "--fused-kernels", "liger"), "--fused-kernels must be one of none, unsloth")
    assert_usage_error(run("fit", "llama-3.1-8b", "--gpu", "a100", "--engine", "unsloth"), "--finetune lora or qlora")
    # fit: 8-bit AdamW's row and the kernels' assumption; its suggestions never propose another loss
    fit = run("fit", "llama-3.1-8b", "--gpu", "a100", "--gpus", "1", "--engine", "unsloth", "--finetune", "qlora",
              "--lora-rank", "32", "--seq-len", "342733", "--format", "markdown")
    assert fit.returncode == 1 and "Traceback" not in fit.stderr, fit.stderr  # within the reserve, not beside it
    assert "unsloth's fused kernels keep them" in fit.stdout and "--loss chunked" not in fit.stdout
    assert "none of the one-setting changes fit tries applies" in fit.stdout
