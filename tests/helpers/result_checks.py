"""Helpers of the result snapshot tests (``test_*_result.py``): a case's options, stored as JSON,
back into the option dataclasses the functions take; and the check that a result
(:class:`ffnlab.sizing.result.Result`) is read one way, by attribute, its ``as_dict()`` the snapshot's dict."""

from __future__ import annotations

from dataclasses import FrozenInstanceError, fields, replace
from typing import Any

import pytest

from ffnlab.sizing.finetune import FinetuneOptions
from ffnlab.sizing.memory.parallel import Layout
from ffnlab.sizing.memory.sharding import Sharding
from ffnlab.sizing.memory.step import StepOptions
from ffnlab.sizing.memory.workload import Workload

OPTION_TYPES: dict[str, Any] = {"lay": Layout, "sharding": Sharding, "step": StepOptions, "finetune": FinetuneOptions}


WORKLOAD_FIELDS = frozenset(f.name for f in fields(Workload))


def options(stored: dict[str, Any]) -> dict[str, Any]:
    """``stored`` with each option dataclass (``lay``, ``sharding``, ``step``, ``finetune``) rebuilt."""
    return {k: OPTION_TYPES[k](**v) if k in OPTION_TYPES else v for k, v in stored.items()}


def workload(stored: dict[str, Any]) -> tuple[Workload, Layout, dict[str, Any]]:
    """``stored`` (the keyword arguments the functions took before the workload, as JSON) as the
    :class:`Workload` of its workload keys, the :class:`Layout` of ``lay`` with ``sharding``, and
    the other keys."""
    opts = options(stored)
    work = Workload(**{k: v for k, v in opts.items() if k in WORKLOAD_FIELDS})
    lay = opts.get("lay") or Layout()
    if opts.get("sharding") is not None:
        lay = replace(lay, sharding=opts["sharding"])
    return work, lay, {k: v for k, v in opts.items() if k not in WORKLOAD_FIELDS | {"lay", "sharding"}}


def check_read_only_view(res: Any, expected: dict[str, Any], key: str) -> None:
    """One way to read a result: its attributes, with ``as_dict()`` the JSON object (its keys those
    of ``expected``, in order); it is no mapping (the transitional dict view is gone) and is
    read-only (``key``, one of its fields, cannot be set)."""
    assert res.as_dict() == expected and list(res.keys()) == list(expected)
    with pytest.raises(TypeError):
        res[key]  # noqa: B018 - not subscriptable
    with pytest.raises(TypeError):
        dict(res)
    with pytest.raises(FrozenInstanceError):
        setattr(res, key, 0)
