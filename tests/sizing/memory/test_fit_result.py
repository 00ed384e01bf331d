"""The fit result against a snapshot of its dicts (tests/data/fit_result_snapshot.json, written by
the code before the result became a dataclass): ``fit``, ``fit_all``, ``serving_figures`` and
``suggestions`` for fixed inputs; same keys, same order, same values, same JSON."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
from paths import DATA
from result_checks import check_read_only_view, workload

from ffnlab.render import _json_default
from ffnlab.sizing.memory.fit import (
    AcceleratorFit,
    FitResult,
    LayoutFit,
    ServingFigures,
    Suggestion,
    fit,
    fit_all,
    reserve_bytes,
    serving_figures,
    suggestions,
)
from ffnlab.sizing.memory.hardware import (
    Accelerator,
    custom_accelerator,
    find_accelerator,
    load_accelerators,
    training_time,
)
from ffnlab.sizing.memory.parallel import Layout
from ffnlab.sizing.result import Result, plain
from ffnlab.sizing.serving import ServingSpeed
from ffnlab.sizing.zoo import find

SNAPSHOT_PATH = DATA / "fit_result_snapshot.json"

# name: (function, its arguments as JSON): "model" a zoo name, "accelerator" a name or
# {"custom": GiB, "like": name}, "sharding" / "step" / "finetune" their dataclasses' keywords
CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "train-llama-3-8b-h100x8": ("fit", {"model": "llama-3-8b", "gpus": 8, "accelerator": "H100"}),
    "train-llama-3-8b-a100x1-none-fits": ("fit", {"model": "llama-3-8b", "gpus": 1, "accelerator": "A100"}),
    "train-gpt2-h100x2-options": ("fit", {"model": "gpt2", "gpus": 2, "accelerator": "H100", "seq_len": 1024,
                                          "batch": 4, "recompute": "selective", "attention": "eager",
                                          "grad_dtype": "fp32", "optimizer": "adam8bit", "dropout": True,
                                          "reserve_gib": 2.5, "max_tp": 2}),
    "train-gpt2-warning": ("fit", {"model": "gpt2", "gpus": 1, "accelerator": "H100", "seq_len": 4096,
                                   "context_limit": 1024}),
    "train-deepseek-v3-h100x64-deepspeed": ("fit", {"model": "deepseek-v3", "gpus": 64, "accelerator": "H100",
                                                    "sharding": {"zero3": "deepspeed"}}),
    "train-mixtral-h100x8-fsdp-chunked": ("fit", {"model": "mixtral-8x7b", "gpus": 8, "accelerator": "H100",
                                                   "max_tp": 2,
                                                   "sharding": {"prefetch": 2, "reshard_after_forward": False},
                                                   "step": {"loss": "chunked"}, "recompute": "full"}),
    "serve-llama-2-70b-int4-h100x2": ("fit", {"model": "llama-2-70b", "gpus": 2, "accelerator": "H100",
                                              "mode": "serve", "weights_dtype": "int4", "seq_len": 4096,
                                              "batch": 16}),
    "serve-llama-3-8b-l40s": ("fit", {"model": "llama-3-8b", "gpus": 1, "accelerator": "L40S", "mode": "serve",
                                      "seq_len": 8192, "batch": 4}),
    "serve-mixtral-h200x8": ("fit", {"model": "mixtral-8x7b", "gpus": 8, "accelerator": "H200", "mode": "serve"}),
    "serve-deepseek-v3-h200x8-fp8-kv": ("fit", {"model": "deepseek-v3", "gpus": 8, "accelerator": "H200",
                                                "mode": "serve", "weights_dtype": "fp8", "kv_dtype": "fp8",
                                                "mla": "expanded"}),
    "serve-custom-no-bandwidth": ("fit", {"model": "llama-3-8b", "gpus": 1, "accelerator": {"custom": 48},
                                          "mode": "serve", "seq_len": 8192, "batch": 4}),
    "serve-l4-none-fits": ("fit", {"model": "llama-3-8b", "gpus": 1, "accelerator": "L4", "mode": "serve",
                                   "seq_len": 8192, "batch": 64}),
    "finetune-qlora-rtx4090": ("fit", {"model": "llama-3-8b", "gpus": 1, "accelerator": "RTX4090",
                                       "finetune": {"mode": "qlora"}}),
    "finetune-lora-h100x2": ("fit", {"model": "llama-3-8b", "gpus": 2, "accelerator": "H100",
                                     "finetune": {"mode": "lora", "rank": 64, "alpha": 32.0}}),
    "all-llama-3-8b-x8-15t": ("fit_all", {"model": "llama-3-8b", "gpus": 8, "tokens": 15 * 10**12}),
    "all-llama-3-8b-x8-fp8-mfu": ("fit_all", {"model": "llama-3-8b", "gpus": 8, "tokens": 10**12, "mfu": 0.5,
                                              "precision": "fp8", "seq_len": 4096}),
    "all-llama-3-8b-serve-x2": ("fit_all", {"model": "llama-3-8b", "gpus": 2, "mode": "serve"}),
    "all-gpt2-custom": ("fit_all", {"model": "gpt2", "gpus": 1, "tokens": 10**9,
                                    "accelerators": [{"custom": 24}, {"custom": 40, "like": "A100"}]}),
    "all-qlora": ("fit_all", {"model": "llama-3-8b", "gpus": 1, "finetune": {"mode": "qlora"}}),
    "figures-llama-3-8b-h100-tp2": ("serving_figures", {"model": "llama-3-8b", "accelerator": "H100",
                                                        "lay": {"dp": 2, "tp": 2}, "batch": 8, "context": 4096,
                                                        "weights_dtype": "bf16", "kv_dtype": "fp8",
                                                        "group_size": None, "mla": "latent"}),
    "figures-custom": ("serving_figures", {"model": "mixtral-8x7b", "accelerator": {"custom": 96},
                                           "lay": {"tp": 4}, "batch": 1, "context": 2048, "weights_dtype": "awq",
                                           "kv_dtype": "bf16", "group_size": 64, "mla": "latent"}),
    "suggest-llama-3-8b-a100x1": ("suggestions", {"model": "llama-3-8b", "gpus": 1, "accelerator": "A100"}),
    "suggest-serve-l4": ("suggestions", {"model": "llama-3-8b", "gpus": 1, "accelerator": "L4", "mode": "serve",
                                         "seq_len": 8192, "batch": 64}),
    "suggest-lora-rtx4090": ("suggestions", {"model": "llama-3-8b", "gpus": 1, "accelerator": "RTX4090",
                                             "finetune": {"mode": "lora"}}),
}


def _accelerator(spec: Any) -> str | Accelerator:
    if isinstance(spec, dict):
        return custom_accelerator(spec["custom"], spec.get("like"))
    assert isinstance(spec, str)
    return spec


def _kwargs(args: dict[str, Any]) -> dict[str, Any]:
    a = dict(args)
    a.pop("model")
    if "accelerator" in a:
        a["accelerator"] = _accelerator(a["accelerator"])
    if "accelerators" in a:
        a["accelerators"] = [_accelerator(x) for x in a["accelerators"]]
    return a


def compute(name: str) -> Any:
    """The result of the case ``name``."""
    fn, args = CASES[name]
    cfg, a = find(args["model"]).config(), _kwargs(args)
    if fn == "serving_figures":
        acc = a.pop("accelerator")
        acc = acc if isinstance(acc, Accelerator) else find_accelerator(acc)
        context = a.pop("context")
        work, lay, rest = workload({**a, "seq_len": context})
        assert not rest
        return serving_figures(cfg, acc, lay, work, usable_bytes=acc.memory_bytes - reserve_bytes(acc, None))
    work, lay, rest = workload(a)
    assert lay.as_dict() == Layout().as_dict()  # fit searches the layouts itself, with the case's sharding
    if fn == "fit":
        return fit(cfg, work, sharding=lay.sharding, **rest)
    if fn == "fit_all":
        return fit_all(cfg, work, sharding=lay.sharding, **rest)
    return suggestions(cfg, work, sharding=lay.sharding, **rest)


SNAPSHOT = json.loads(SNAPSHOT_PATH.read_text()) if SNAPSHOT_PATH.exists() else {}


def test_the_snapshot_has_every_case() -> None:
    assert sorted(SNAPSHOT) == sorted(CASES)


def test_the_cases_cover_every_accelerator_on_record() -> None:
    assert [r["accelerator"] for r in SNAPSHOT["all-llama-3-8b-x8-15t"]] == [a.name for a in load_accelerators()]


@pytest.mark.parametrize("name", sorted(CASES))
def test_fit_result_matches_the_snapshot(name: str) -> None:
    res, expected = compute(name), SNAPSHOT[name]
    got = plain(res)
    assert type(got) is type(expected)
    assert got == expected
    assert json.dumps(got, indent=2) == json.dumps(expected, indent=2)  # keys in order, nested ones too
    # as the command writes it: the result itself, through render's JSON default
    assert json.dumps(res, indent=2, default=_json_default) == json.dumps(expected, indent=2)
    # one typed result, its nested results typed too
    fn = CASES[name][0]
    if fn == "fit":
        _typed_fit(res, expected)
    elif fn == "serving_figures":
        _typed_serving(res, expected)
    else:
        kind = AcceleratorFit if fn == "fit_all" else Suggestion
        assert type(res) is list and all(isinstance(r, kind) for r in res)
        for r, e in zip(res, expected, strict=True):
            _view(r, e)


def _view(res: Result, expected: dict[str, Any]) -> None:
    """Read one way: by attribute, ``as_dict()`` the JSON; read-only."""
    check_read_only_view(res, expected, "fits")


def _typed_serving(res: Any, expected: dict[str, Any]) -> None:
    assert isinstance(res, ServingFigures) and res.as_dict() == expected
    assert (res.speed is None) == (expected["speed"] is None)
    assert res.speed is None or isinstance(res.speed, ServingSpeed) and res.speed.as_dict() == expected["speed"]
    _view(res, expected)


def _typed_fit(res: Any, expected: dict[str, Any]) -> None:
    assert isinstance(res, FitResult)
    _view(res, expected)
    assert all(isinstance(r, LayoutFit) and r.fits for r in res.candidates)
    assert [r.as_dict() for r in res.candidates] == expected["candidates"]
    assert (res.best is None) == (expected["best"] is None) and (res.best is None) == (not res.candidates)
    if res.best is not None:
        assert res.best is res.candidates[0] and res.best.layout.as_dict() == expected["best"]["layout"]
        assert res.best.per_gpu_bytes <= res.usable_bytes == res.memory_bytes - res.reserve_bytes
        _view(res.best, expected["best"])
    assert (res.serving is None) == (expected["serving"] is None)
    if res.serving is not None:
        _typed_serving(res.serving, expected["serving"])
    assert (res.finetune is not None) == ("finetune" in expected)
    assert res.suggestions is None and res.time is None
    assert "suggestions" not in res.as_dict() and "time" not in res.as_dict()


def test_the_commands_fields_come_last_in_their_order() -> None:
    """``fit`` (the command) sets ``suggestions`` and ``time`` with ``dataclasses.replace``: they
    come after ``finetune``, in that order, as the dicts had them."""
    name = "finetune-qlora-rtx4090"
    res = compute(name)
    tried = tuple(compute("suggest-lora-rtx4090"))
    t = training_time(find("llama-3-8b").config(), tokens=10**9, gpus=1, accelerator="RTX4090")
    both = replace(res, suggestions=tried, time=t)
    assert list(both.as_dict()) == [*SNAPSHOT[name], "suggestions", "time"]
    assert both.as_dict()["suggestions"] == SNAPSHOT["suggest-lora-rtx4090"] and both.as_dict()["time"] == t.as_dict()
    assert list(replace(compute("train-llama-3-8b-h100x8"), time=t).as_dict()) == [*SNAPSHOT["train-llama-3-8b-h100x8"],
                                                                         "time"]


if __name__ == "__main__":  # rewrite the snapshot (only ever with the code before the dataclasses)
    SNAPSHOT_PATH.write_text(json.dumps({n: plain(compute(n)) for n in sorted(CASES)}, indent=2,
                                        default=_json_default) + "\n")
