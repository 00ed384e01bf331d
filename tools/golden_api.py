"""The golden cases no command line can express: a Python function's answer for inputs no flag
gives (a list of custom cards, a fixed serving layout on a custom card, a capacity on one GPU for a
model that fits none, a MoE capacity factor, DeepSpeed's overlap_comm, the expanded MLA cache, a
structure counted once and stored). Each file ``tests/golden/api_FUNCTION.json`` holds cases of
``{"name", "call": {...}}`` with the JSON the function's result writes (``plain``), written and
checked by ``tools/golden.py`` like the command files.

The ``call`` keys are the function's inputs as JSON: ``model`` a zoo name (its translated config),
``structure`` a :class:`ffnlab.sizing.hf.structure.Structure` as its dict, ``accelerator`` a name or
``{"custom": GiB, "like": name}``, ``workload`` the :class:`Workload`'s keywords (``step`` and
``finetune`` their dataclasses' keywords), ``lay`` the :class:`Layout`'s and ``sharding`` the
:class:`Sharding`'s."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ffnlab.sizing.config import ModelConfig
from ffnlab.sizing.finetune import FinetuneOptions
from ffnlab.sizing.hf.structure import Structure
from ffnlab.sizing.memory.fit import fit_all, reserve_bytes, serving_figures
from ffnlab.sizing.memory.hardware import Accelerator, custom_accelerator, find_accelerator
from ffnlab.sizing.memory.parallel import Layout, memory_summary
from ffnlab.sizing.memory.sharding import Sharding
from ffnlab.sizing.memory.step import StepOptions
from ffnlab.sizing.memory.structure import structure_memory
from ffnlab.sizing.memory.workload import Workload
from ffnlab.sizing.result import plain
from ffnlab.sizing.serving import capacity
from ffnlab.sizing.zoo import find


def _config(name: str) -> ModelConfig:
    cfg = find(name).config()
    assert cfg is not None, f"{name} has no translated config"
    return cfg


def _accelerator(spec: str | dict[str, Any]) -> Accelerator:
    if isinstance(spec, dict):
        return custom_accelerator(spec["custom"], spec.get("like"))
    return find_accelerator(spec)


def _workload(call: dict[str, Any]) -> Workload:
    w = dict(call.get("workload", {}))
    if "step" in w:
        w["step"] = StepOptions(**w["step"])
    if "finetune" in w:
        w["finetune"] = FinetuneOptions(**w["finetune"])
    return Workload(**w)


def _layout(call: dict[str, Any]) -> Layout:
    return Layout(**call.get("lay", {}), sharding=Sharding(**call.get("sharding", {})))


def _memory_summary(call: dict[str, Any]) -> Any:
    return memory_summary(_config(call["model"]), _workload(call), _layout(call))


def _structure_memory(call: dict[str, Any]) -> Any:
    return structure_memory(Structure.from_dict(call["structure"]), _workload(call), _layout(call))


def _fit_all(call: dict[str, Any]) -> Any:
    return fit_all(_config(call["model"]), _workload(call), gpus=call["gpus"], tokens=call.get("tokens"),
                   accelerators=[_accelerator(a) for a in call["accelerators"]])


def _serving_figures(call: dict[str, Any]) -> Any:
    acc = _accelerator(call["accelerator"])
    return serving_figures(_config(call["model"]), acc, _layout(call), _workload(call),
                           usable_bytes=acc.memory_bytes - reserve_bytes(acc, None))


def _capacity(call: dict[str, Any]) -> Any:
    return capacity(_config(call["model"]), _layout(call), usable_bytes=call["usable_gib"] * 2**30,
                    context=call["context"])


FUNCTIONS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "memory_summary": _memory_summary, "structure_memory": _structure_memory, "fit_all": _fit_all,
    "serving_figures": _serving_figures, "capacity": _capacity,
}


def answer(function: str, call: dict[str, Any]) -> Any:
    """The JSON of ``function``'s result for the inputs ``call``."""
    return plain(FUNCTIONS[function](call))
