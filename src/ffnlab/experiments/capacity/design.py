"""The knowledge-capacity sweep: bits stored per parameter against the FFN ratio.

A capacity preset (``presets/capacity*.yaml``) is an ordinary sweep spec under ``sweep:``,
run once per parameter ``budgets`` entry (each overrides ``base.model``, e.g. d_model), on a
``facts:`` corpus, with ``train.max_steps`` set from ``exposures``: the steps that show every
training token that many times in expectation (see
:func:`ffnlab.training.capacity.steps_for_exposures`). Each budget is a sweep folder
``OUT/BUDGET`` that ``ffnlab sweep``'s machinery fills (resumable, the same iso-params control).

The analysis is :mod:`ffnlab.experiments.capacity.analysis`, the report
:mod:`ffnlab.experiments.capacity.report`.
"""

from __future__ import annotations

import copy
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict, cast

from ffnlab.errors import FfnlabError, require
from ffnlab.experiments.sweep.spec import PRESET_DIR, SweepSpec, spec_from_dict
from ffnlab.files import check_inside, write_atomic
from ffnlab.training import runconfig
from ffnlab.training.capacity import steps_for_exposures
from ffnlab.validation import case_twins, safe_name, show

PRESET_RECORD = "capacity-preset.json"  # run_preset writes it beside the budgets' sweeps: out/PRESET_RECORD
REPORT_DIR = "capacity-report"  # the report's default folder beside them: out/REPORT_DIR (report.write_report)
OWN_NAMES = (PRESET_RECORD, REPORT_DIR)  # what a capacity folder holds beside out/BUDGET: no budget's name

if TYPE_CHECKING:
    from typing_extensions import NotRequired  # typing's own from Python 3.11

    from ffnlab.training.runconfig import ConfigTree

PRESET_KEYS = {"name", "description", "exposures", "budgets", "sweep"}


class Budget(TypedDict):
    """One parameter budget of a capacity preset, as its YAML gives it (and capacity-preset.json
    keeps it): its name (a folder inside --out) and what it sets in ``base.model``."""

    name: str
    model: NotRequired[dict[str, object]]


@dataclass
class CapacityPreset:
    name: str
    description: str
    exposures: float | None
    budgets: list[Budget]
    sweep: dict[str, object]  # a sweep spec without its name: spec_from_dict checks it per budget


def _merge(a: dict[str, object], b: dict[str, object]) -> dict[str, object]:
    out = copy.deepcopy(a)
    for k, v in b.items():
        here = out.get(k)
        out[k] = _merge(here, v) if isinstance(v, dict) and isinstance(here, dict) else v
    return out


def find_preset(name_or_path: str) -> Path:
    p = Path(name_or_path)
    if p.is_file():
        return p
    cand = PRESET_DIR / f"{name_or_path}.yaml"
    require(cand.is_file(), f"no capacity preset {name_or_path!r}: not a file, and not a preset "
                            f"({', '.join(sorted(x.stem for x in PRESET_DIR.glob('capacity*.yaml')))})")
    return cand


def load_preset(name_or_path: str) -> CapacityPreset:
    data = runconfig.read_file(find_preset(name_or_path))
    unknown = sorted(set(data) - PRESET_KEYS)
    require(not unknown, f"capacity preset: unknown key(s) {', '.join(unknown)}")
    require("budgets" in data and "sweep" in data and "name" in data,
            "capacity preset: needs name, budgets and sweep (a sweep spec without a name)")
    # the default folder sweeps/NAME and every budget's sweep name: the sweep spec's name rule (NAME)
    safe_name(data["name"], "capacity preset: name")
    budgets = data["budgets"]
    require(isinstance(budgets, list) and budgets and all(
        isinstance(b, dict) and isinstance(b.get("name"), str) and isinstance(b.get("model", {}), dict)
        for b in budgets), "capacity preset: budgets must be a list of {name, model: {...}}")
    for i, b in enumerate(budgets):  # each budget is a folder inside --out: a name, never . or a path
        safe_name(b["name"], f"capacity preset: budgets[{i}].name")
        require(b["name"].casefold() not in {n.casefold() for n in OWN_NAMES},
                f"capacity preset: budgets[{i}].name {b['name']!r} is the name of a file capacity run writes "
                f"beside the budgets' sweeps ({', '.join(OWN_NAMES)}); name the budget otherwise")
    require(len({b["name"] for b in budgets}) == len(budgets), "capacity preset: budget names must be unique")
    case_twins([b["name"] for b in budgets], "capacity preset: budget names")  # each budget a folder out/BUDGET
    require(isinstance(data["sweep"], dict) and "name" not in data["sweep"],
            "capacity preset: sweep must be a mapping (a sweep spec; its name comes from the preset)")
    exposures = data.get("exposures")
    require(exposures is None or (isinstance(exposures, (int, float)) and not isinstance(exposures, bool)
                                  and math.isfinite(exposures) and exposures > 0),
            f"capacity preset: exposures must be a positive number, got {exposures!r}")
    return CapacityPreset(str(data["name"]), str(data.get("description", "")), exposures, budgets, data["sweep"])


def budget_spec(preset: CapacityPreset, budget: Budget) -> SweepSpec:
    """The sweep spec of one budget, ``train.max_steps`` set from the exposures."""
    data = copy.deepcopy(preset.sweep)
    data["name"] = f"{preset.name}-{budget['name']}"
    data["description"] = f"{preset.description} (budget {budget['name']})".strip()
    given = data.get("base", {})
    require(isinstance(given, dict), f"capacity preset: sweep.base must be a mapping (a run config), got {show(given)}")
    assert isinstance(given, dict)  # the require above
    base = _merge(given, {"model": budget.get("model", {})})
    cfg = runconfig.from_dict(cast("ConfigTree", base))  # the preset's YAML: runconfig's ConfigTree values
    require(cfg.data.corpus.startswith("facts:") and cfg.data.tokenizer == "byte",
            "capacity preset: base.data must use a 'facts:...' corpus with the byte tokenizer")
    if preset.exposures is not None:
        data_prepared = runconfig.prepare_data(cfg.data, progress=False)
        steps = steps_for_exposures(preset.exposures, data_prepared.train_tokens, cfg.tokens_per_step())
        train = base.setdefault("train", {})
        assert isinstance(train, dict)  # runconfig.from_dict read base.train as a mapping
        train["max_steps"] = steps
        train["checkpoint_every"] = steps
        train["eval_every"] = min(int(train.get("eval_every", steps)), steps)
        train["warmup_steps"] = min(int(train.get("warmup_steps", 0)), steps // 10)
    data["base"] = base
    return spec_from_dict(data)


def run_preset(preset: CapacityPreset, out: Path, *, workers: int | None = None,
               backend: str = "local", address: str | None = None) -> dict[str, dict[str, str]]:
    """Train every budget's sweep into ``out/BUDGET``; return the runs' statuses."""
    from ffnlab.experiments.sweep.run import execute

    status = {}
    for b in preset.budgets:
        spec = budget_spec(preset, b)
        status[b["name"]] = execute(spec, check_inside(out / b["name"], out), backend=backend, address=address,
                                    workers=workers)
    write_atomic(out / PRESET_RECORD, json.dumps(
        {"name": preset.name, "description": preset.description, "exposures": preset.exposures,
         "budgets": preset.budgets}, indent=1))
    return status


__all__ = ["OWN_NAMES", "PRESET_RECORD", "REPORT_DIR", "FfnlabError", "budget_spec", "load_preset", "run_preset"]
