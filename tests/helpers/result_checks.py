"""Helpers of the result snapshot tests (``test_*_result.py``): a case's options, stored as JSON,
back into the option dataclasses the functions take; and the checks of the transitional read-only
dict view (:class:`ffnlab.sizing.result.Result`) against the snapshot's dict."""

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
    """The transitional dict view mirrors as_dict's top level, read-only (``key``, one of its keys
    and a field, can be neither set as an item nor as an attribute)."""
    assert list(res) == list(res.keys()) == list(expected) and len(res) == len(expected)
    assert {k: res[k] for k in expected} == expected and dict(res) == expected and {**res} == expected
    assert res.items() == list(expected.items()) and res.values() == list(expected.values())
    assert all(k in res and res.get(k) == v for k, v in expected.items())
    assert res.get("no such key", 7) == 7
    with pytest.raises(KeyError):
        res["no such key"]
    with pytest.raises(TypeError):
        res[key] = 0
    with pytest.raises(FrozenInstanceError):
        setattr(res, key, 0)
