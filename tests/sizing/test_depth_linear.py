"""The work of sizing a model grows linearly with its depth (up to MAX_LAYERS), measured by
counting, not timing: every line ffnlab runs and every element its ``sum``/``max``/``min`` go
through, at depth L and at 2L. Linear work a + bL at most doubles; work that rebuilds a per-layer
list for each layer (c L^2) more than doubles (it made ``size --n-layers 100000`` take minutes)."""

from __future__ import annotations

import builtins
import json
import sys
from pathlib import Path

import pytest
from cli_inproc import run_cli

import ffnlab

SRC = str(Path(ffnlab.__file__).parent)


def llama(n: int) -> dict:
    return {"model_type": "llama", "hidden_size": 64, "intermediate_size": 172, "num_hidden_layers": n,
            "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 100}


def moe(n: int) -> dict:  # every other layer dense (mlp_only_layers): the dense_ffn layout
    return {"model_type": "qwen3_moe", "hidden_size": 64, "intermediate_size": 172, "moe_intermediate_size": 32,
            "num_experts": 4, "num_experts_per_tok": 2, "num_hidden_layers": n, "num_attention_heads": 4,
            "num_key_value_heads": 2, "vocab_size": 100, "mlp_only_layers": list(range(0, n, 2)),
            "decoder_sparse_step": 1}


def work(capsys, monkeypatch, argv: list[str]) -> int:
    """Lines of ffnlab run plus elements its reductions iterate, for one command (which must succeed)."""
    count = 0

    def counted(reduce):
        def wrapper(*args, **kwargs):
            nonlocal count
            if len(args) == 1 and not isinstance(args[0], (int, float)):
                items = list(args[0])
                count += len(items)
                return reduce(items, **kwargs)
            count += len(args)
            return reduce(*args, **kwargs)
        return wrapper

    for name, module in list(sys.modules.items()):
        if name.startswith("ffnlab.sizing") and module is not None:
            for reduce in (builtins.sum, builtins.max, builtins.min):
                monkeypatch.setattr(module, reduce.__name__, counted(reduce), raising=False)

    def line(frame, event, arg):
        nonlocal count
        count += event == "line"
        return line

    def call(frame, event, arg):
        return line if frame.f_code.co_filename.startswith(SRC) else None

    sys.settrace(call)
    try:
        p = run_cli(capsys, *argv)
    finally:
        sys.settrace(None)
        monkeypatch.undo()
    assert p.returncode == 0, p.stderr
    return count


def ratio(capsys, monkeypatch, argv_at) -> float:
    run_cli(capsys, *argv_at(2))  # imports done before counting
    small, large = (work(capsys, monkeypatch, argv_at(n)) for n in (DEPTH, 2 * DEPTH))
    return large / small


DEPTH = 150


def config_argv(tmp_path: Path, make, *command: str):
    def argv(n: int) -> list[str]:
        path = tmp_path / f"{make.__name__}{n}.json"
        path.write_text(json.dumps(make(n)))
        return [command[0], str(path), *command[1:]]
    return argv


@pytest.mark.parametrize("extra", [[], ["--recompute", "selective"], ["--recompute", "full"]])
def test_size_n_layers_is_linear(capsys, monkeypatch, extra):
    r = ratio(capsys, monkeypatch, lambda n: ["size", "--d-model", "64", "--ffn", "swiglu", "--rule", "llama",
                                              "--n-layers", str(n), "--json", *extra])
    assert r <= 2.02, f"work grew {r:.2f}x when the depth doubled"


@pytest.mark.parametrize("make", [llama, moe])
@pytest.mark.parametrize("command", [("size", "--json"), ("audit", "--json")])
def test_a_deep_config_json_is_linear(capsys, monkeypatch, tmp_path, make, command):
    # size --from takes the path after --from
    argv = config_argv(tmp_path, make, "audit", "--json") if command[0] == "audit" else \
        (lambda n: ["size", "--from", config_argv(tmp_path, make, "x")(n)[1], "--json"])
    r = ratio(capsys, monkeypatch, argv)
    assert r <= 2.02, f"work grew {r:.2f}x when the depth doubled"


def test_fit_and_fine_tuning_are_linear(capsys, monkeypatch, tmp_path):
    r = ratio(capsys, monkeypatch, config_argv(tmp_path, llama, "fit", "--gpu", "H100", "--gpus", "1", "--json"))
    assert r <= 2.02, f"fit: work grew {r:.2f}x when the depth doubled"
    r = ratio(capsys, monkeypatch, config_argv(tmp_path, llama, "fit", "--gpu", "H100", "--gpus", "1",
                                               "--finetune", "lora", "--json"))
    assert r <= 2.02, f"fit --finetune lora: work grew {r:.2f}x when the depth doubled"


def test_the_depth_bound_is_one_error_line(capsys, tmp_path):
    from ffnlab.sizing.config import MAX_LAYERS

    p = run_cli(capsys, "size", "--d-model", "64", "--ffn", "swiglu", "--rule", "llama",
                "--n-layers", str(MAX_LAYERS + 1))
    assert p.returncode == 2 and p.stderr.startswith("error: --n-layers")
    path = tmp_path / "deep.json"
    path.write_text(json.dumps(llama(MAX_LAYERS + 1)))
    p = run_cli(capsys, "audit", str(path))
    assert p.returncode == 2 and f"at most {MAX_LAYERS:,}" in p.stderr and len(p.stderr.splitlines()) == 1
