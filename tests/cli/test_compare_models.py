"""Several models side by side: ``fit A B --gpu NAME`` and ``size --from A --from B`` (subprocess).

The oracles: each model alone (the one-model command's own JSON), and the arithmetic of mixed
precision AdamW, 16 bytes a parameter, which no layout of 8 GPUs can shard below 140 GB for a
70B model, more than an 80 GB H100 holds."""

from __future__ import annotations

from cli_run import assert_usage_error, run, run_json


def test_fit_compares_models_and_exits_1_when_one_does_not_fit() -> None:
    p = run("fit", "gpt2", "llama-2-70b", "--gpu", "H100", "--gpus", "8")
    assert p.returncode == 1, p.stderr  # 70B x 16 bytes / 8 GPUs = 140 GB > 80 GB: llama-2-70b cannot fit
    lines = p.stdout.splitlines()
    gpt2 = next(x for x in lines if "gpt2" in x)
    big = next(x for x in lines if "llama-2-70b" in x)
    assert "fits" in gpt2 and "does not fit" not in gpt2
    assert "does not fit" in big


def test_fit_comparison_json_is_each_models_own_object() -> None:
    p = run("fit", "gpt2", "llama-3-8b", "--gpu", "H100", "--gpus", "8", "--json")
    assert p.returncode == 0, p.stderr
    import json

    both = json.loads(p.stdout)
    alone = [run_json("fit", m, "--gpu", "H100", "--gpus", "8") for m in ("gpt2", "llama-3-8b")]
    assert both == alone


def test_fit_comparison_exit_0_only_when_every_model_fits() -> None:
    assert run("fit", "gpt2", "llama-3-8b", "--gpu", "H100", "--gpus", "8").returncode == 0
    assert run("fit", "llama-2-70b", "llama-3-8b", "--gpu", "H100", "--gpus", "8", "--json").returncode == 1


def test_fit_several_models_need_one_gpu_kind() -> None:
    assert_usage_error(run("fit", "gpt2", "llama-3-8b", "--gpus", "8"), "--gpu")
    assert_usage_error(run("fit", "gpt2", "llama-3-8b", "--gpu", "H100", "--gpus", "auto"), "--gpus auto")
    assert_usage_error(run("fit", "gpt2", "no-such-model", "--gpu", "H100"), "no-such-model")


def test_size_from_twice_is_one_row_each() -> None:
    both = run_json("size", "--from", "gpt2", "--from", "llama-3-8b")
    alone = [run_json("size", "--from", m) for m in ("gpt2", "llama-3-8b")]
    assert both == alone
    # gpt2's published size: 124M parameters (Radford et al. 2019 list it as 117M, counted without
    # tied duplicates; the Hub checkpoint holds 124,439,808)
    assert both[0]["model"]["params"]["total"] == 124_439_808
    p = run("size", "--from", "gpt2", "--from", "llama-3-8b")
    assert p.returncode == 0, p.stderr
    rows = [x for x in p.stdout.splitlines() if "gpt2" in x or "llama-3-8b" in x]
    assert len(rows) == 2 and "124.4M" in rows[0] and "8.03B" in rows[1]
    csv = run("size", "--from", "gpt2", "--from", "llama-3-8b", "--format", "csv").stdout.splitlines()
    assert csv[0].startswith("model,") and len(csv) == 3


def test_size_from_several_refuses_shape_flags() -> None:
    assert_usage_error(run("size", "--from", "gpt2", "--from", "llama-3-8b", "--d-model", "512"), "--d-model")
