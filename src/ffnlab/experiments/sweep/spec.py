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
from collections import Counter
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypedDict

from ffnlab.errors import FfnlabError, require
from ffnlab.files import read_mapping
from ffnlab.sizing.counting import count_params
from ffnlab.sizing.flops import flops_per_token
from ffnlab.training import runconfig
from ffnlab.validation import (
    NAME,
    NONEMPTY_UNIQUE,
    SEED_MAX,
    Check,
    above,
    between,
    build,
    case_twins,
    check_fields,
    fail,
    one_of,
    show,
)

if TYPE_CHECKING:
    from typing_extensions import NotRequired  # typing's own from Python 3.11

CONTROLS = ("iso-params", "iso-flops", "fixed-d-model")
ANALYSES = ("ratio_optimal", "convergence_speed", "glu_vs_plain", "gated_law")  # what a report decides
# Which arms each analysis compares, fixed before any run: the alternatives to the reference
# (ratio_optimal, convergence_speed) or an ordered pair (glu_vs_plain: gated, plain;
# gated_law: the raw-ratio-4 gated arm, the 8/3 gated arm).
PAIRED = ("glu_vs_plain", "gated_law")
DEFAULT_MARGIN = 0.005  # equivalence margin: 0.5% of the reference's final loss
DEFAULT_MATURITY = 20.0  # tokens per parameter: compute-optimal training (Hoffmann et al. 2022)
MAX_WIDTHS_TRIED = 4096  # bound on the d_model search of iso-params / iso-flops (d_step widens it)
MAX_RUNS = 10_000  # runs of one design (arms x seeds x scales); the presets have at most about 100
PRESET_DIR = Path(__file__).resolve().parents[1] / "presets"  # shipped as package data (experiments/presets)
TREND_AXES = ("params", "tokens_per_param", "lr")


@dataclass
class Arm:
    name: Annotated[str, Check(name=True, label="the arm name")]
    ffn: dict[str, object] = field(default_factory=dict)  # over base.model.ffn; runconfig.from_dict checks it
    label: str = ""  # default: the name


@dataclass
class Scale:
    """One model size of a scale sweep (checked in :func:`spec_from_dict`): its name, what it sets
    in ``base.model`` and ``base.train`` (runconfig.from_dict checks the values)."""

    name: str
    model: dict[str, object] = field(default_factory=dict)
    train: dict[str, object] = field(default_factory=dict)


@dataclass
class Trend:
    """A trend of the best ratio fixed before the runs (checked in :func:`spec_from_dict`): its
    name, its axis (one of :data:`TREND_AXES`) and the scales along it, in order."""

    name: str
    axis: str
    scales: list[str]


@dataclass
class Hypothesis:
    """A sentence the spec states before any run, and how the report decides it: ``comparison``
    (one of :data:`ANALYSES`: the reference against alternatives for ``ratio_optimal`` and
    ``convergence_speed``, an ordered pair for ``glu_vs_plain`` and ``gated_law``), the ``arms``
    it compares (default: the spec's ``comparisons`` for it, else the analysis's default), its
    equivalence ``margin`` (default: the spec's) and the effect it claims, if any
    (``claimed_effect``: a tokens ratio for ``convergence_speed``, nats otherwise, where it sets
    the power the report quotes; ``effect_source`` says where the figure comes from)."""

    id: Annotated[str, Check(name=True, label="the hypothesis id")]
    sentence: str  # the hypothesis in words, as the report states it
    comparison: Annotated[str, one_of(*ANALYSES)]
    arms: list[str] = field(default_factory=list)
    margin: Annotated[float, above(0, 1)] | None = None
    claimed_effect: Annotated[float, above(0, 1e6)] | None = None
    effect_source: str | None = ""  # None: a sweep record saved before hypotheses named none


@dataclass
class SweepSpec:
    name: Annotated[str, NAME]
    arms: Annotated[list[Arm], NONEMPTY_UNIQUE]
    seeds: Annotated[list[Annotated[int, between(0, SEED_MAX)]], NONEMPTY_UNIQUE]
    base: dict[str, Any] = field(default_factory=dict)  # a run config
    control: Annotated[str, one_of(*CONTROLS)] = "iso-params"
    tolerance: Annotated[float, above(0, 1)] = 0.02
    reference: str = ""  # default: the first arm
    d_step: Annotated[int, between(1, 4096)] = 4
    workers: Annotated[int, between(0, 4096)] = 0  # 0 = as many as the cores allow
    threads_per_worker: Annotated[int, between(1, 4096)] = 1
    description: str = ""
    # the hypotheses the report decides, and no others (a spec without them gets the comparisons'
    # tables and no verdicts); ``claims`` lists their comparisons (filled from them when not given)
    hypotheses: list[Hypothesis] = field(default_factory=list)
    claims: list[Annotated[str, one_of(*ANALYSES)]] = field(default_factory=list)
    comparisons: dict[str, list[str]] = field(default_factory=dict)  # checked in spec_from_dict
    margin: Annotated[float, above(0, 1)] = DEFAULT_MARGIN
    # tokens per non-embedding parameter the runs must reach before a verdict about an optimal
    # ratio is given (experiments/analysis/maturity.py); below it those claims are inconclusive
    maturity: Annotated[float, above(0, 1e9)] = DEFAULT_MATURITY
    # a design that must reach ``maturity`` in every cell (the presets meant to decide an optimal
    # ratio): a cell below it is refused when the spec is read, before any run (design_maturity)
    require_mature: bool = False
    # Model sizes (a scale trend): each {name, model: {d_model, n_layers, n_heads, ...}, train: {...}}
    # repeats every arm at that size (and token budget), as arm "SCALE.ARM" against that size's own
    # reference "SCALE.REFERENCE".
    scales: list[Scale] = field(default_factory=list)  # checked in spec_from_dict
    # The convergence target, fixed before the runs (None: the reference's mean validation loss at
    # the evaluation nearest half its training tokens, see analysis.target_loss).
    target_loss: Annotated[float, above(0, 1e6)] | None = None
    # With scales: the cell whose verdicts head the report (default: the last), and the trends of
    # the best ratio fixed before the runs: each {name, axis: params | tokens_per_param | lr, scales: [...]}.
    decide_at: str = ""
    trends: list[Trend] = field(default_factory=list)  # checked in spec_from_dict


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


class SavedArm(TypedDict):
    """An arm as a sweep record saved it."""

    name: str
    ffn: NotRequired[dict[str, object]]
    label: NotRequired[str]


class SavedHypothesis(TypedDict):
    """A hypothesis as a sweep record (or a preset's YAML) states it."""

    id: str
    sentence: str
    comparison: str
    arms: NotRequired[list[str]]
    margin: NotRequired[float | None]
    claimed_effect: NotRequired[float | None]
    effect_source: NotRequired[str | None]


class SavedScale(TypedDict):
    """A scale as a sweep record saved it."""

    name: str
    model: NotRequired[dict[str, object]]
    train: NotRequired[dict[str, object]]


class SavedTrend(TypedDict):
    """A trend as a sweep record saved it."""

    name: str
    axis: str
    scales: list[str]


class SavedSpec(TypedDict):
    """A :class:`SweepSpec` as a sweep record (``sweep.json``'s ``spec``) saved it: ``asdict`` of the
    spec; a record written before a field existed lacks its key (:func:`spec_field`)."""

    name: str
    arms: list[SavedArm]
    seeds: list[int]
    base: dict[str, Any]  # a run config, as runconfig reads and writes it
    control: NotRequired[str]
    tolerance: NotRequired[float]
    reference: NotRequired[str]
    d_step: NotRequired[int]
    workers: NotRequired[int]
    threads_per_worker: NotRequired[int]
    description: NotRequired[str]
    hypotheses: NotRequired[list[SavedHypothesis]]
    claims: NotRequired[list[str]]
    comparisons: NotRequired[dict[str, list[str]]]
    margin: NotRequired[float | None]
    maturity: NotRequired[float | None]
    require_mature: NotRequired[bool]
    scales: NotRequired[list[SavedScale]]
    target_loss: NotRequired[float | None]
    decide_at: NotRequired[str]
    trends: NotRequired[list[SavedTrend]]


def spec_field(spec: Mapping[str, object], name: str) -> Any:
    """A field of a spec as a sweep record saved it; a field added to :class:`SweepSpec` since the
    record was written (or saved as null) reads as the dataclass's default: the one place readers
    of saved specs get ``margin``, ``maturity`` and the rest."""
    f = {x.name: x for x in fields(SweepSpec)}[name]
    if spec.get(name) is not None:
        return spec[name]
    if f.default is not MISSING:
        return f.default
    if f.default_factory is not MISSING:
        return f.default_factory()
    raise KeyError(f"the saved spec has no {name!r} (a field without a default)")


def saved_spec(saved: object, where: str = "sweep.json", run_arms: list[str] | None = None) -> SweepSpec:
    """The spec a sweep record saved (``sweep.json``'s ``spec``) as a :class:`SweepSpec`, checked by
    the rules a spec file meets (:func:`spec_from_dict`'s, one home): each field's type and range by
    its annotation, the hypotheses, claims and comparisons, the scales, trends and ``decide_at``;
    numbers must be JSON numbers (ffnlab writes no number as text). A field the record lacks or saved
    as null reads as :func:`spec_field` reads it (its default: a record from an older ffnlab);
    ``name``, ``arms`` and ``seeds``, which have none, as empty. The hypotheses are those
    :func:`saved_hypotheses` gives, and ``claims`` their comparisons. ``run_arms``: the arms of the
    record's runs ("SCALE.ARM" with scales), which the comparisons and hypotheses must name (the
    analysis compares the runs); without it, the spec's own arms where it lists them. What the
    runs' configs train (``base``, each arm's ``ffn``) is not resolved again: the runs were.

    Raises one :class:`~ffnlab.errors.FfnlabError` line that starts with ``where``."""
    try:
        return _saved_spec(saved, run_arms)
    except FfnlabError as e:
        raise FfnlabError(f"{where}: {e}") from None


def _saved_spec(saved: object, run_arms: list[str] | None) -> SweepSpec:
    if not isinstance(saved, dict):
        raise fail("sweep spec", "a mapping", saved)
    laid_out = ("hypotheses", "scales", "trends")  # checked below, as spec_from_dict checks them
    given = check_fields(SweepSpec, {k: v for k, v in saved.items() if v is not None and k not in laid_out},
                         "", "sweep spec", text_ok=False)
    kept = {f.name: spec_field(given, f.name) for f in fields(SweepSpec) if f.name not in ("name", "arms", "seeds")}
    spec = SweepSpec(**{**kept, "name": given.get("name", ""), "arms": given.get("arms", []),
                        "seeds": given.get("seeds", [])})
    if "hypotheses" in saved:  # as saved (null: none)
        hyps, text_ok = [] if saved["hypotheses"] is None else saved["hypotheses"], False
    else:  # from before specs named hypotheses: its preset's or its claims', as a spec file states them
        hyps, text_ok = saved_hypotheses({"name": spec.name, **({"claims": spec.claims} if spec.claims else {})}), True
    if isinstance(hyps, list):  # an effect_source a hypothesis does not name reads as None, as the record shows it
        hyps = [{"effect_source": None, **h} if isinstance(h, dict) else h for h in hyps]
    spec.hypotheses = check_fields(SweepSpec, {"hypotheses": hyps}, "", "sweep spec", text_ok=text_ok)["hypotheses"]
    for arm in spec.arms:
        arm.label = arm.label or arm.name
    _lay_out(spec, *(_listed(saved[key] if saved.get(key) is not None else [], key) for key in ("scales", "trends")))
    names = [a.name for a in spec.arms] or None
    if run_arms is not None:  # each cell's arms named without their scale: "s1.gelu-r4" is gelu-r4
        prefixes = tuple(f"{x.name}." for x in spec.scales)
        names = sorted({next((a.removeprefix(p) for p in prefixes if a.startswith(p)), a) for a in run_arms})
    _check_hypotheses(spec, names)
    _check_comparisons(spec, names)
    spec.claims = [h.comparison for h in spec.hypotheses]
    return spec


def _some(names: list[str], limit: int = 12) -> str:
    """At most ``limit`` names for a message, then how many there are: a spec of thousands of arms
    gets an error line, not a page."""
    if len(names) <= limit:
        return ", ".join(names)
    return f"{', '.join(names[:limit])}, ... ({len(names):,} in all)"


def find_spec(name_or_path: str) -> Path:
    p = Path(name_or_path)
    if p.is_file():
        return p
    for cand in (PRESET_DIR / f"{name_or_path}.yaml", PRESET_DIR / name_or_path):
        if cand.is_file():
            return cand
    known = sorted(x.stem for x in PRESET_DIR.glob("*.yaml")) if PRESET_DIR.is_dir() else []
    raise FfnlabError(f"no sweep spec {show(name_or_path)}: not a file, and not a preset "
                      f"({', '.join(known) or 'none found'})")


def load_spec(name_or_path: str) -> SweepSpec:
    return spec_from_dict(read_mapping(find_spec(name_or_path), "sweep spec"))


def spec_from_dict(data: object) -> SweepSpec:
    """The sweep a parsed mapping describes; every field, and every arm's run config, checked."""
    require(not (isinstance(data, dict) and "budgets" in data),
            "this is a capacity preset (it has budgets): run it with "
            f"'ffnlab capacity run {data.get('name', 'NAME') if isinstance(data, dict) else 'NAME'}'")
    # scales and trends are checked below, as mappings, and then read as Scale and Trend
    given = {k: v for k, v in data.items() if k not in ("scales", "trends")} if isinstance(data, dict) else data
    spec: SweepSpec = build(SweepSpec, given, "", "sweep spec")
    assert isinstance(data, dict)  # build refused anything else
    scales, trends = (_listed(data.get(key, []), key) for key in ("scales", "trends"))
    n_cells = max(1, len(scales))
    runs = len(spec.arms) * len(spec.seeds) * n_cells
    require(runs <= MAX_RUNS,
            f"sweep spec: the design has {runs:,} runs ({len(spec.arms):,} arms x {len(spec.seeds):,} seeds"
            f"{f' x {n_cells:,} scales' if spec.scales else ''}), over the limit of {MAX_RUNS:,} for one sweep; "
            "use fewer seeds or split it into several sweeps")
    names = [a.name for a in spec.arms]
    twice = sorted(n for n, k in Counter(names).items() if k > 1)
    require(not twice, f"sweep spec: arm names must be unique; given more than once: {_some(twice)}")
    case_twins(names, "sweep spec: arm names")  # each arm's runs are folders A-s0, a-s0
    for arm in spec.arms:
        arm.label = arm.label or arm.name
    spec.reference = spec.reference or names[0]
    require(spec.reference in names, f"sweep spec: reference arm {show(spec.reference)} is not among the arms "
                                     f"({_some(names)})")
    _check_hypotheses(spec, names)
    _check_comparisons(spec, names)
    _lay_out(spec, scales, trends)
    for arm in spec.arms:  # an arm that cannot train is named now, not as a failed width search
        try:
            arm_config(spec, arm, spec.seeds[0])
        except FfnlabError as e:
            raise FfnlabError(f"sweep spec: arm {show(arm.name)}: {e}") from None
    if spec.require_mature:
        short = [f"{name} trains {tpp:.3g}" for name, tpp in design_maturity(spec) if tpp < spec.maturity]
        require(not short, f"sweep spec {spec.name}: a design below its maturity rule ({spec.maturity:g} tokens per "
                           f"non-embedding parameter): {', '.join(short)}; train longer or a smaller model")
    return spec


def _check_comparisons(spec: SweepSpec, names: list[str] | None) -> None:
    """``comparisons`` maps analyses to arms of the spec (``names``; None: not checked), a pair in order
    for the paired analyses."""
    comparisons = spec.comparisons
    require(set(comparisons) <= set(ANALYSES),
            f"sweep spec: comparisons must map analyses ({', '.join(ANALYSES)}) to lists of arm names")
    for key, chosen in comparisons.items():
        require(isinstance(chosen, list) and chosen and all(isinstance(c, str) for c in chosen)
                and (names is None or all(c in names for c in chosen)),
                f"sweep spec: comparisons.{key} must list arms of this spec, got {show(chosen)}")
        require(key not in PAIRED or len(chosen) == 2,
                f"sweep spec: comparisons.{key} names exactly two arms (in order), got {show(chosen)}")


def _lay_out(spec: SweepSpec, scales: list[Any], trends: list[Any]) -> None:
    """The spec's ``scales`` and ``trends`` (as given: lists of mappings) checked and read as
    :class:`Scale` and :class:`Trend`, and ``decide_at`` one of the scales."""
    require(all(
        isinstance(x, dict) and {"name", "model"} <= set(x) <= {"name", "model", "train"}
        and isinstance(x["model"], dict) and isinstance(x.get("train", {}), dict)
        and re.fullmatch(r"[A-Za-z0-9_-]+", str(x["name"])) is not None for x in scales),
        "sweep spec: scales must be a list of {name: letters/digits/_/-, model: {...}, train: {...}}")
    require(len({x["name"] for x in scales}) == len(scales), "sweep spec: scale names must be unique")
    case_twins([x["name"] for x in scales], "sweep spec: scale names")  # a scale's runs: folders SCALE.ARM-s0
    spec.scales = [Scale(name=str(x["name"]), model=dict(x["model"]), train=dict(x.get("train", {})))
                   for x in scales]
    cells = [x.name for x in spec.scales]
    require(not spec.decide_at or spec.decide_at in cells,
            f"sweep spec: decide_at must name one of the scales ({', '.join(cells) or 'none'}), got "
            f"{show(spec.decide_at)}")
    require(all(isinstance(t, dict) and set(t) == {"name", "axis", "scales"} and t["axis"] in TREND_AXES
                and isinstance(t["scales"], list) and len(t["scales"]) >= 2 and set(t["scales"]) <= set(cells)
                for t in trends),
            f"sweep spec: trends must be a list of {{name, axis: {' | '.join(TREND_AXES)}, scales: [two or more "
            f"of {', '.join(cells) or 'the scales'}]}}")
    spec.trends = [Trend(name=str(t["name"]), axis=str(t["axis"]), scales=[str(x) for x in t["scales"]])
                   for t in trends]


def _listed(value: object, key: str) -> list[Any]:
    """A spec's ``scales`` or ``trends`` as given: a list (its items are checked by the caller)."""
    if not isinstance(value, list):
        raise fail(f"sweep spec: {key}", "a list of mappings", value)
    return value


def _check_hypotheses(spec: SweepSpec, names: list[str] | None) -> None:
    """Each hypothesis names its own id and comparison, once; its arms are the spec's. ``claims``
    without hypotheses asks for the seed document's claims by their analyses (the presets and
    ``verify`` test those): they become those claims' hypotheses (:func:`seed_hypotheses`);
    with hypotheses, ``claims`` (kept by older sweep folders) must list their comparisons. ``names``:
    the spec's arms (None: not checked)."""
    hyps = spec.hypotheses
    if not hyps:
        spec.hypotheses = [Hypothesis(**h) for h in seed_hypotheses(spec.claims)]
        return
    blank = [h.id for h in hyps if not h.sentence.strip()]
    require(not blank, f"sweep spec: hypothesis {_some(blank)} needs a sentence (the hypothesis in words)")
    ids = [h.id for h in hyps]
    require(len(set(ids)) == len(ids), f"sweep spec: hypothesis ids must be unique, got {_some(ids)}")
    kinds = [h.comparison for h in hyps]
    require(len(set(kinds)) == len(kinds),
            f"sweep spec: one hypothesis per comparison ({', '.join(ANALYSES)}), got {_some(kinds)}")
    require(not spec.claims or set(spec.claims) == set(kinds),
            f"sweep spec: claims ({', '.join(spec.claims)}) must be the hypotheses' comparisons ({', '.join(kinds)})")
    spec.claims = list(kinds)
    for h in hyps:
        if h.arms:
            require(names is None or all(a in names for a in h.arms),
                    f"sweep spec: hypothesis {h.id} compares arms of this spec, got {show(h.arms)}")
            require(h.comparison not in spec.comparisons or spec.comparisons[h.comparison] == h.arms,
                    f"sweep spec: hypothesis {h.id}'s arms differ from comparisons.{h.comparison}")
            spec.comparisons[h.comparison] = list(h.arms)


# The seed document's claims each analysis tests (their sentences: data/claims.json)
SEED_CLAIM_OF = {"ratio_optimal": "ratio-4-optimal", "convergence_speed": "golden-transformer-8pct",
                 "glu_vs_plain": "glu-beats-plain", "gated_law": "gated-ratio-4"}
SEED_SPEEDUP = 1.08  # the first source note's "8% faster"


def seed_hypotheses(analyses: list[str]) -> list[SavedHypothesis]:
    """The seed document's claims as hypotheses, for the analyses a spec lists under ``claims``
    (the claims' sentences from data/claims.json; the 8% speed-up as the claimed effect)."""
    from ffnlab.sizing.claims import load_claims

    said = {c["id"]: c["claim"] for c in load_claims()}
    out = []
    for key in analyses:
        h: SavedHypothesis = {"id": SEED_CLAIM_OF[key], "sentence": said[SEED_CLAIM_OF[key]], "comparison": key}
        if key == "convergence_speed":
            h["claimed_effect"] = SEED_SPEEDUP
            h["effect_source"] = "the first source note's '8% faster'"
        out.append(h)
    return out


def saved_hypotheses(spec: Mapping[str, Any]) -> list[SavedHypothesis]:
    """The hypotheses of a spec as a sweep record saved it. A record written before specs named
    hypotheses has none saved: a preset's reads its preset's (when they cover its ``claims``), any
    other its ``claims``' seed hypotheses (by default, as then, ratio_optimal, convergence_speed
    and glu_vs_plain)."""
    if "hypotheses" in spec:
        return list(spec.get("hypotheses") or [])
    claims = list(spec.get("claims") or ["ratio_optimal", "convergence_speed", "glu_vs_plain"])
    preset = PRESET_DIR / f"{spec.get('name')}.yaml"
    if preset.is_file():
        kept = (read_mapping(preset, "sweep spec").get("hypotheses") or [])
        if kept and {h.get("comparison") for h in kept} >= set(claims):
            return [h for h in kept if h.get("comparison") in claims]
    return seed_hypotheses(claims)


def design_maturity(spec: SweepSpec) -> list[tuple[str, float]]:
    """Each cell's tokens per non-embedding parameter of its reference arm, from the spec alone
    (non-embedding parameters do not depend on the vocabulary)."""
    cells = [(s.name, at_scale(spec, s)) for s in spec.scales] if spec.scales else [(spec.name, spec)]
    out = []
    for name, sub in cells:
        cfg = arm_config(sub, next(a for a in sub.arms if a.name == sub.reference), sub.seeds[0])
        params = count_params(runconfig.model_config(cfg, 256)).non_embedding
        out.append((name, cfg.train.max_steps * cfg.tokens_per_step() / params))
    return out


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


def at_scale(spec: SweepSpec, scale: Scale) -> SweepSpec:
    """The sweep at one model size: base.model updated, arms and reference named "SCALE.ARM"."""
    base = copy.deepcopy(spec.base)
    base.setdefault("model", {}).update(scale.model)
    base.setdefault("train", {}).update(scale.train)
    prefix = f"{scale.name}."
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
                run=f"{arm.name}-s{seed}", arm=arm.name, seed=seed, config=dict(cfg.to_dict()), d_model=mc.d_model,
                d_ff=mc.ffn.d_ff, n_heads=mc.attn.n_heads, params_non_embedding=count_params(mc).non_embedding,
                train_flops_per_token=flops_per_token(mc, cfg.train.seq_len).training))
    return runs


def _solve_width(spec: SweepSpec, arm: Arm, target: float, head_dim: int, vocab: int,
                 base_d: int) -> tuple[int, int, int]:
    best: tuple[float, int, int] | None = None
    n_heads = max(1, round(base_d / head_dim))
    widths = range(spec.d_step, 4 * base_d + 1, spec.d_step)
    require(len(widths) <= MAX_WIDTHS_TRIED,
            f"sweep spec: the {spec.control} search for arm {show(arm.name)} would try {len(widths):,} values of "
            f"d_model (up to 4 x {base_d}); raise d_step to at least {-(-4 * base_d // MAX_WIDTHS_TRIED)}")
    for d in widths:
        try:
            cfg = arm_config(spec, arm, spec.seeds[0], d, n_heads, head_dim)
        except FfnlabError:
            continue
        err = abs(_measure(cfg, spec.control, vocab) / target - 1)
        if best is None or err < best[0]:
            best = (err, d, n_heads)
    require(best is not None and best[0] <= spec.tolerance,
            f"sweep: no d_model (step {spec.d_step}) keeps arm {show(arm.name)} within {spec.tolerance:.0%} "
            f"of the reference under {spec.control}" + (f" (best {best[0]:.1%})" if best else ""))
    assert best is not None
    return best[1], best[2], head_dim
