"""Sweep specifications: arms (FFN kind x width rule) under a controlled budget.

A spec (YAML) names a ``base`` run config, the ``arms`` (each overrides ``model.ffn``), the
``seeds``, and a ``control``:

* ``iso-params``: every arm keeps the reference arm's non-embedding parameters within
  ``tolerance`` by changing d_model at fixed depth and fixed heads (count and size, so the
  attention width stays the reference's), as Kaplan et al. 2020 (§3.1) varied the
  feed-forward ratio at fixed parameter count;
* ``iso-flops``: the same, holding training FLOPs per token instead;
* ``fixed-d-model``: d_model as in ``base`` (parameters and FLOPs vary with the FFN).

Every arm trains for the same number of tokens. Resolution is pure arithmetic (no torch).
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ffnlab.errors import FfnlabError, require
from ffnlab.sizing.counting import count_params
from ffnlab.sizing.flops import flops_per_token
from ffnlab.training import runconfig

CONTROLS = ("iso-params", "iso-flops", "fixed-d-model")
ANALYSES = ("ratio_optimal", "convergence_speed", "glu_vs_plain", "gated_law")  # what a report decides
# Which arms each analysis compares, fixed before any run: the alternatives to the reference
# (ratio_optimal, convergence_speed) or an ordered pair (glu_vs_plain: gated, plain;
# gated_law: the raw-ratio-4 gated arm, the 8/3 gated arm).
PAIRED = ("glu_vs_plain", "gated_law")
DEFAULT_MARGIN = 0.005  # equivalence margin: 0.5% of the reference's final loss
PRESET_DIR = Path(__file__).resolve().parent / "presets"  # shipped as package data


@dataclass
class Arm:
    name: str
    ffn: dict[str, Any]
    label: str = ""


@dataclass
class SweepSpec:
    name: str
    base: dict[str, Any]
    arms: list[Arm]
    seeds: list[int]
    control: str = "iso-params"
    tolerance: float = 0.02
    reference: str = ""
    d_step: int = 4
    workers: int = 0  # 0 = as many as the cores allow
    threads_per_worker: int = 1
    description: str = ""
    claims: list[str] = field(default_factory=list)
    comparisons: dict[str, list[str]] = field(default_factory=dict)
    margin: float = DEFAULT_MARGIN
    # Model sizes (a scale trend): each {name, model: {d_model, n_layers, n_heads, ...}, train: {...}}
    # repeats every arm at that size (and token budget), as arm "SCALE.ARM" against that size's own reference "SCALE.REFERENCE".
    scales: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class ResolvedRun:
    run: str
    arm: str
    seed: int
    config: dict[str, Any]
    d_model: int
    d_ff: int
    n_heads: int
    params_non_embedding: int
    train_flops_per_token: int


def find_spec(name_or_path: str) -> Path:
    p = Path(name_or_path)
    if p.is_file():
        return p
    for cand in (PRESET_DIR / f"{name_or_path}.yaml", PRESET_DIR / name_or_path):
        if cand.is_file():
            return cand
    known = sorted(x.stem for x in PRESET_DIR.glob("*.yaml")) if PRESET_DIR.is_dir() else []
    raise FfnlabError(f"no sweep spec {name_or_path!r}: not a file, and not a preset ({', '.join(known) or 'none found'})")


def load_spec(name_or_path: str) -> SweepSpec:
    data = runconfig.read_file(find_spec(name_or_path))
    return spec_from_dict(data)


def spec_from_dict(data: dict[str, Any]) -> SweepSpec:
    known = set(SweepSpec.__dataclass_fields__)
    unknown = sorted(set(data) - known)
    require(not unknown, f"sweep spec: unknown key(s) {', '.join(unknown)}")
    for key in ("name", "arms", "seeds"):
        require(key in data, f"sweep spec: missing key {key!r}")
    require(re.fullmatch(r"[A-Za-z0-9_.-]+", str(data["name"])) is not None, "sweep spec: name may hold letters, digits, _ . - only")
    arms_raw = data["arms"]
    require(isinstance(arms_raw, list) and arms_raw, "sweep spec: arms must be a non-empty list")
    arms = []
    for a in arms_raw:
        require(isinstance(a, dict) and "name" in a and isinstance(a.get("ffn", {}), dict),
                f"sweep spec: each arm needs a name and an ffn mapping, got {a!r}")
        require(re.fullmatch(r"[A-Za-z0-9_.-]+", str(a["name"])) is not None, f"sweep spec: bad arm name {a['name']!r}")
        arms.append(Arm(str(a["name"]), dict(a.get("ffn", {})), str(a.get("label", a["name"]))))
    names = [a.name for a in arms]
    require(len(set(names)) == len(names), "sweep spec: arm names must be unique")
    seeds = data["seeds"]
    require(isinstance(seeds, list) and seeds and all(isinstance(s, int) and not isinstance(s, bool) for s in seeds),
            "sweep spec: seeds must be a non-empty list of integers")
    require(len(set(seeds)) == len(seeds), "sweep spec: seeds must be unique")
    require(isinstance(data.get("base", {}), dict), "sweep spec: base must be a mapping (a run config)")
    for key, kind in (("tolerance", (int, float)), ("d_step", int), ("workers", int), ("threads_per_worker", int)):
        value = data.get(key)
        require(value is None or (isinstance(value, kind) and not isinstance(value, bool)),
                f"sweep spec: {key} must be a number, got {value!r}")
    claims = data.get("claims", [])
    require(isinstance(claims, list) and set(claims) <= set(ANALYSES),
            f"sweep spec: claims must be a list drawn from {', '.join(ANALYSES)}")
    comparisons = data.get("comparisons", {})
    require(isinstance(comparisons, dict) and set(comparisons) <= set(ANALYSES),
            f"sweep spec: comparisons must map analyses ({', '.join(ANALYSES)}) to lists of arm names")
    for key, chosen in comparisons.items():
        require(isinstance(chosen, list) and chosen and all(c in names for c in chosen),
                f"sweep spec: comparisons.{key} must list arms of this spec, got {chosen!r}")
        require(key not in PAIRED or len(chosen) == 2,
                f"sweep spec: comparisons.{key} names exactly two arms (in order), got {chosen!r}")
    margin = data.get("margin", DEFAULT_MARGIN)
    require(isinstance(margin, (int, float)) and not isinstance(margin, bool) and 0 < margin < 1,
            f"sweep spec: margin is a fraction of the reference's loss in (0, 1), got {margin!r}")
    scales = data.get("scales", [])
    require(isinstance(scales, list) and all(
        isinstance(x, dict) and {"name", "model"} <= set(x) <= {"name", "model", "train"}
        and isinstance(x["model"], dict) and isinstance(x.get("train", {}), dict)
        and re.fullmatch(r"[A-Za-z0-9_-]+", str(x["name"])) is not None for x in scales),
        "sweep spec: scales must be a list of {name: letters/digits/_/-, model: {...}, train: {...}}")
    require(len({x["name"] for x in scales}) == len(scales), "sweep spec: scale names must be unique")
    spec = SweepSpec(name=str(data["name"]), base=dict(data.get("base", {})), arms=arms, seeds=list(seeds),
                     control=data.get("control", "iso-params"), tolerance=float(data.get("tolerance", 0.02)),
                     reference=str(data.get("reference", names[0])), d_step=int(data.get("d_step", 4)),
                     workers=int(data.get("workers", 0)), threads_per_worker=int(data.get("threads_per_worker", 1)),
                     description=str(data.get("description", "")), claims=list(claims),
                     comparisons={k: list(v) for k, v in comparisons.items()}, margin=float(margin),
                     scales=[{"name": str(x["name"]), "model": dict(x["model"]), "train": dict(x.get("train", {}))}
                             for x in scales])
    require(spec.control in CONTROLS, f"sweep spec: control must be one of {', '.join(CONTROLS)}, got {spec.control!r}")
    require(spec.reference in names, f"sweep spec: reference arm {spec.reference!r} is not among the arms")
    require(spec.tolerance > 0 and spec.d_step >= 1 and spec.threads_per_worker >= 1 and spec.workers >= 0,
            "sweep spec: tolerance > 0, d_step >= 1, threads_per_worker >= 1 and workers >= 0 are required")
    return spec


def arm_config(spec: SweepSpec, arm: Arm, seed: int, d_model: int | None = None, n_heads: int | None = None,
               head_dim: int | None = None) -> runconfig.RunConfig:
    data = copy.deepcopy(spec.base)
    model = data.setdefault("model", {})
    model["ffn"] = {**model.get("ffn", {}), **arm.ffn}
    if d_model is not None:
        model.update(d_model=d_model, n_heads=n_heads, head_dim=head_dim)
    data.setdefault("train", {})["seed"] = seed
    return runconfig.from_dict(data)


def _measure(cfg: runconfig.RunConfig, control: str, vocab: int) -> float:
    mc = runconfig.model_config(cfg, vocab)
    if control == "iso-flops":
        return flops_per_token(mc, cfg.train.seq_len).training
    return count_params(mc).non_embedding


def at_scale(spec: SweepSpec, scale: dict[str, Any]) -> SweepSpec:
    """The sweep at one model size: base.model updated, arms and reference named "SCALE.ARM"."""
    base = copy.deepcopy(spec.base)
    base.setdefault("model", {}).update(scale["model"])
    base.setdefault("train", {}).update(scale.get("train", {}))
    prefix = f"{scale['name']}."
    return SweepSpec(**{**spec.__dict__, "base": base, "scales": [], "reference": prefix + spec.reference,
                        "arms": [Arm(prefix + a.name, a.ffn, a.label) for a in spec.arms],
                        "comparisons": {k: [prefix + x for x in v] for k, v in spec.comparisons.items()}})


def resolve(spec: SweepSpec, vocab_size: int) -> list[ResolvedRun]:
    """One run per (arm, seed), with d_model set by the control (per model size with ``scales``)."""
    if spec.scales:
        return [r for scale in spec.scales for r in resolve(at_scale(spec, scale), vocab_size)]
    base = arm_config(spec, next(a for a in spec.arms if a.name == spec.reference), spec.seeds[0])
    head_dim = base.model.head_dim or base.model.d_model // base.model.n_heads
    target = _measure(base, spec.control, vocab_size)
    runs = []
    for arm in spec.arms:
        shape: tuple[int | None, int | None, int | None] = (None, None, None)
        if spec.control != "fixed-d-model" and arm.name != spec.reference:
            shape = _solve_width(spec, arm, target, head_dim, vocab_size, base.model.d_model)
        for seed in spec.seeds:
            cfg = arm_config(spec, arm, seed, *shape)
            mc = runconfig.model_config(cfg, vocab_size)
            runs.append(ResolvedRun(
                run=f"{arm.name}-s{seed}", arm=arm.name, seed=seed, config=cfg.to_dict(), d_model=mc.d_model,
                d_ff=mc.ffn.d_ff, n_heads=mc.attn.n_heads, params_non_embedding=count_params(mc).non_embedding,
                train_flops_per_token=flops_per_token(mc, cfg.train.seq_len).training))
    return runs


def _solve_width(spec: SweepSpec, arm: Arm, target: float, head_dim: int, vocab: int,
                 base_d: int) -> tuple[int, int, int]:
    best: tuple[float, int, int] | None = None
    n_heads = max(1, round(base_d / head_dim))
    for d in range(spec.d_step, 4 * base_d + 1, spec.d_step):
        try:
            cfg = arm_config(spec, arm, spec.seeds[0], d, n_heads, head_dim)
        except FfnlabError:
            continue
        err = abs(_measure(cfg, spec.control, vocab) / target - 1)
        if best is None or err < best[0]:
            best = (err, d, n_heads)
    require(best is not None and best[0] <= spec.tolerance,
            f"sweep: no d_model (step {spec.d_step}) keeps arm {arm.name!r} within {spec.tolerance:.0%} "
            f"of the reference under {spec.control}" + (f" (best {best[0]:.1%})" if best else ""))
    assert best is not None
    return best[1], best[2], head_dim
