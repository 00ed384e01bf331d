"""The fit results read one way: frozen dataclasses by attribute (``fit``, ``fit_all``,
``serving_figures``, ``suggestions``), their ``as_dict()`` what ``ffnlab fit ... --json`` prints
for the same inputs (the oracle: tests/golden/fit.json, written by tools/golden.py; the command
adds what it was asked before the result's keys, so the values are compared key by key)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
from result_checks import check_read_only_view, golden

from ffnlab.render import _json_default
from ffnlab.sizing.finetune import FinetuneOptions
from ffnlab.sizing.memory.fit import (
    AcceleratorFit,
    FitResult,
    LayoutFit,
    ServingFigures,
    Suggestion,
    fit,
    fit_all,
    suggestions,
)
from ffnlab.sizing.memory.hardware import load_accelerators, training_time
from ffnlab.sizing.memory.workload import Workload
from ffnlab.sizing.result import Result, plain
from ffnlab.sizing.serving import ServingSpeed
from ffnlab.sizing.zoo import find

E = ("--engine", "ffnlab")  # the command pricing the Workload's own defaults, as the functions do
# (fit's keywords, its Workload's, the fit command's arguments)
FITS: dict[str, tuple[dict[str, Any], dict[str, Any], tuple[str, ...]]] = {
    "train-fits": ({"gpus": 8, "accelerator": "H100"}, {}, ("--gpu", "H100", "--gpus", "8", *E)),
    "train-none-fits": ({"gpus": 1, "accelerator": "A100"}, {}, ("--gpu", "A100", "--gpus", "1", *E)),
    "serve": ({"gpus": 1, "accelerator": "L40S", "mode": "serve"}, {"seq_len": 8192, "batch": 4},
              ("--gpu", "L40S", "--gpus", "1", "--mode", "serve", "--seq-len", "8192", "--batch", "4")),
    "finetune": ({"gpus": 1, "accelerator": "RTX4090"}, {"finetune": FinetuneOptions(mode="qlora")},
                 ("--gpu", "RTX4090", "--gpus", "1", "--finetune", "qlora", *E)),
}


def _printed(args: tuple[str, ...], keys: list[str]) -> dict[str, Any]:
    out = golden("fit", "llama-3-8b", *args)
    return {k: out[k] for k in keys}


def _view(res: Result, expected: dict[str, Any]) -> None:
    """Read one way: by attribute, ``as_dict()`` the JSON; read-only."""
    check_read_only_view(res, expected, "fits")


@pytest.mark.parametrize("name", sorted(FITS))
def test_a_fit_is_what_the_command_prints(name: str) -> None:
    kw, work, args = FITS[name]
    res = fit(find("llama-3-8b").config(), Workload(**work), **kw)  # type: ignore[arg-type]
    expected = _printed(args, list(res.as_dict()))
    assert isinstance(res, FitResult) and plain(res) == expected
    assert json.dumps(res, default=_json_default) == json.dumps(expected)
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
        assert isinstance(res.serving, ServingFigures) and isinstance(res.serving.speed, ServingSpeed)
        assert res.serving.speed.as_dict() == expected["serving"]["speed"]
        _view(res.serving, expected["serving"])
    assert (res.finetune is not None) == ("finetune" in expected)
    assert res.suggestions is None and res.time is None
    assert "suggestions" not in res.as_dict() and "time" not in res.as_dict()


def test_fit_all_is_every_accelerator_on_record_as_the_command_prints() -> None:
    res = fit_all(find("llama-3-8b").config(), Workload(), gpus=8, tokens=15 * 10**12)  # type: ignore[arg-type]
    expected = golden("fit", "llama-3-8b", "--gpus", "8", "--tokens", "15T", *E)["accelerators"]
    assert type(res) is list and all(isinstance(r, AcceleratorFit) for r in res)
    assert [r["accelerator"] for r in expected] == [a.name for a in load_accelerators()]
    for r, e in zip(res, expected, strict=True):
        _view(r, e)


def test_suggestions_are_what_the_command_prints_when_nothing_fits() -> None:
    work = Workload(finetune=FinetuneOptions(mode="lora"))
    res = suggestions(find("llama-3-8b").config(), work, gpus=1, accelerator="RTX4090")  # type: ignore[arg-type]
    expected = golden("fit", "llama-3-8b", "--gpu", "RTX4090", "--gpus", "1", "--finetune", "lora", *E)["suggestions"]
    assert type(res) is list and all(isinstance(r, Suggestion) for r in res)
    for r, e in zip(res, expected, strict=True):
        _view(r, e)


def test_the_commands_fields_come_last_in_their_order() -> None:
    """``fit`` (the command) sets ``suggestions`` and ``time`` with ``dataclasses.replace``: they
    come after ``finetune``, in that order, as the dicts had them."""
    cfg = find("llama-3-8b").config()
    work = Workload(finetune=FinetuneOptions(mode="qlora"))
    res = fit(cfg, work, gpus=1, accelerator="RTX4090")  # type: ignore[arg-type]
    tried = tuple(suggestions(cfg, Workload(finetune=FinetuneOptions(mode="lora")), gpus=1,  # type: ignore[arg-type]
                              accelerator="RTX4090"))
    t = training_time(cfg, tokens=10**9, gpus=1, accelerator="RTX4090")  # type: ignore[arg-type]
    both = replace(res, suggestions=tried, time=t)
    assert list(both.as_dict()) == [*res.as_dict(), "suggestions", "time"]
    assert both.as_dict()["time"] == t.as_dict()
    trained = fit(cfg, Workload(), gpus=8, accelerator="H100")  # type: ignore[arg-type]
    assert list(replace(trained, time=t).as_dict()) == [*trained.as_dict(), "time"]
