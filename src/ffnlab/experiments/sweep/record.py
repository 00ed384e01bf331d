"""Reading a sweep folder back: ``sweep.json`` and each run's records, validated before any analysis.

:func:`load_sweep` checks the whole record (the spec, every resolved run, each finished run's
``summary.json`` and ``metrics.jsonl``) and returns it, or raises one
:class:`~ffnlab.errors.FfnlabError` line naming the file and the key. A report is written only
from a sweep that passed, so an edited, truncated or foreign ``sweep.json`` (``{}``, ``[]``,
runs without configs, eval records without tokens, non-UTF-8 bytes) never reaches the analysis.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, cast

from ffnlab.errors import FfnlabError, require
from ffnlab.experiments.sweep.spec import SavedSpec, saved_spec
from ffnlab.files import read_mapping
from ffnlab.sizing.kinds import get_kind
from ffnlab.training.runfiles import read_records
from ffnlab.validation import case_twins, confined, integer, number, safe_name, show

if TYPE_CHECKING:
    from typing_extensions import NotRequired  # typing's own from Python 3.11

RUN_INTS = ("d_model", "d_ff")


class RunEntry(TypedDict):
    """One resolved run as ``sweep.json`` keeps it (:class:`ffnlab.experiments.sweep.spec.ResolvedRun`)."""

    run: str
    arm: str
    seed: int
    config: dict[str, Any]  # a run config, as runconfig.to_dict writes it
    d_model: int
    d_ff: int
    n_heads: NotRequired[int]
    params_non_embedding: int
    train_flops_per_token: float


class DataSummary(TypedDict, total=False):
    """The prepared corpus's sizes, kept by a report folder (which does not hold the corpus)."""

    train_tokens: int
    val_tokens: int


class SweepRecord(TypedDict):
    """``sweep.json``: the spec, the vocabulary and prepared corpus, the resolved runs; a report
    folder's copy adds ``data_summary``."""

    spec: SavedSpec
    vocab_size: NotRequired[int]
    prepared_data: NotRequired[str]
    runs: list[RunEntry]
    data_summary: NotRequired[DataSummary]


def _run(entry: object, i: int, where: str) -> RunEntry:
    here = f"{where}: runs[{i}]"
    require(isinstance(entry, dict), f"{here} must be a mapping, got {show(entry)}")
    assert isinstance(entry, dict)  # the require above
    for key in ("run", "arm", "seed", "config", *RUN_INTS, "params_non_embedding", "train_flops_per_token"):
        require(key in entry, f"{here} has no {key!r}")
    safe_name(entry["run"], f"{here}.run")
    safe_name(entry["arm"], f"{here}.arm")
    integer(entry["seed"], f"{here}.seed", 0)
    for key in RUN_INTS:
        integer(entry[key], f"{here}.{key}", 1)
    # >= 1: every run has layers; 0 would leave its tokens per parameter undefined downstream
    integer(entry["params_non_embedding"], f"{here}.params_non_embedding", 1)
    number(entry["train_flops_per_token"], f"{here}.train_flops_per_token", 0, lo_open=True, text_ok=False)
    ffn = entry["config"].get("model", {}).get("ffn") if isinstance(entry["config"], dict) else None
    require(isinstance(ffn, dict) and isinstance(ffn.get("kind"), str) and isinstance(ffn.get("rule"), str),
            f"{here}.config must hold model.ffn.kind and model.ffn.rule")
    assert isinstance(ffn, dict)  # the require above
    get_kind(ffn["kind"])
    return cast(RunEntry, entry)  # each key checked above


def _summary(path: Path) -> None:
    s = read_mapping(path, "run summary", fmt="JSON")
    for key in ("final_val_loss", "final_val_ppl", "final_val_bpb", "wall_s", "train_flops"):
        require(key in s, f"{path} has no {key!r}")
        number(s[key], f"{path}: {key}", 0, text_ok=False)
    require("tokens" in s, f"{path} has no 'tokens'")
    integer(s["tokens"], f"{path}: tokens", 0, 2**62)


def _metrics(path: Path, finished: bool) -> None:
    """Every complete record of a metrics file must be well formed, with steps that increase (a
    line torn by a kill is allowed); a finished run must have been evaluated."""
    evals = read_records(path, kinds=("eval",))  # every line checked, only evals kept
    for r in evals:  # a cross-entropy is never negative
        require(r["val_loss"] >= 0, f"{path}: the eval record of step {r['step']} has val_loss {r['val_loss']} < 0")
    if finished:
        require(bool(evals),
                f"{path} has no eval record although the run finished; rerun the sweep to evaluate it")


def load_sweep(sweep_dir: str | Path) -> SweepRecord:
    """The validated ``sweep.json`` of ``sweep_dir`` (its finished runs' files checked too): each run
    listed once (the analysis counts every entry), its spec by the rules a spec file meets
    (:func:`ffnlab.experiments.sweep.spec.saved_spec`)."""
    root = Path(sweep_dir)
    require(root.is_dir() and (root / "sweep.json").is_file(), f"{root} is not a sweep folder (no sweep.json)")
    where = str(root / "sweep.json")
    record = read_mapping(root / "sweep.json", "sweep record", fmt="JSON")
    for key in ("spec", "runs"):
        require(key in record, f"{where} has no {key!r}; is it a sweep folder written by ffnlab?")
    spec = record["spec"]
    require(isinstance(spec, dict), f"{where}: spec must be a mapping, got {show(spec)}")
    for key in ("name", "reference", "control"):
        if not isinstance(spec.get(key, ""), str):
            raise FfnlabError(f"{where}: spec.{key} must be a string, got {show(spec[key])}")
    base = spec.get("base", {})
    require(isinstance(base, dict), f"{where}: spec.base must be a mapping, got {show(base)}")
    for key in ("model", "data", "train"):
        require(isinstance(base.get(key, {}), dict), f"{where}: spec.base.{key} must be a mapping, got "
                                                      f"{show(base.get(key))}")
    corpus = base.get("data", {}).get("corpus", "")
    require(isinstance(corpus, str), f"{where}: spec.base.data.corpus must be a string, got {show(corpus)}")
    if "vocab_size" in record:
        integer(record["vocab_size"], f"{where}: vocab_size", 1)
    runs = record["runs"]
    require(isinstance(runs, list) and runs, f"{where}: runs must be a non-empty list, got {show(runs)}")
    named: dict[str, int] = {}  # each run once, and each (arm, seed): the analysis counts every entry
    seeded: dict[tuple[str, int], int] = {}
    for i, entry in enumerate(runs):
        r = _run(entry, i, where)
        first = named.setdefault(r["run"], i)
        require(first == i, f"{where}: runs[{i}] lists run {show(r['run'])} again (as runs[{first}]); "
                            "each run is listed once")
        first = seeded.setdefault((r["arm"], r["seed"]), i)
        require(first == i, f"{where}: runs[{i}] ({show(r['run'])}) repeats arm {show(r['arm'])} seed {r['seed']} "
                            f"of runs[{first}] ({show(runs[first]['run'])}); each arm runs each seed once")
        run_dir = confined(root / "runs", r["run"], f"{where}: runs[{i}].run")
        finished = (run_dir / "summary.json").is_file()
        if finished:
            _summary(run_dir / "summary.json")
        if (run_dir / "metrics.jsonl").is_file():
            _metrics(run_dir / "metrics.jsonl", finished)
    case_twins(list(named), f"{where}: runs")  # one folder on a case-insensitive file system
    scales = spec.get("scales") or []
    require(isinstance(scales, list) and all(isinstance(x, dict) for x in scales),
            f"{where}: spec.scales must be a list of mappings, got {show(scales)}")
    for i, x in enumerate(scales):  # scale names label plots and tables, like arm names
        safe_name(x.get("name"), f"{where}: spec.scales[{i}].name")
    arms = sorted({r["arm"] for r in runs})
    ref = spec.get("reference")
    scaled = {f"{x['name']}.{ref}" for x in scales}  # SCALE.ARM
    require(ref in arms or bool(scaled & set(arms)),
            f"{where}: spec.reference {show(spec.get('reference'))} is not an arm "
                                           f"of its runs ({', '.join(arms[:6])})")
    saved_spec(spec, where, arms)  # the rest of the spec, by the rules a spec file meets
    _check_seeds(spec.get("seeds"), runs, where)
    return cast(SweepRecord, record)  # the keys the analysis reads checked above


def run_seeds(runs: Iterable[Mapping[str, object]]) -> list[int]:
    """The seeds a record's runs ran, in order: the spec's seeds where a record from before ffnlab
    saved them has none."""
    return sorted({cast(int, r["seed"]) for r in runs})


def record_seeds(record: Mapping[str, Any]) -> list[int]:
    """A record's seeds for the analysis: its spec's, or (a record from before ffnlab saved them) the
    seeds its runs ran."""
    return list(record["spec"].get("seeds") or run_seeds(record["runs"]))


def _check_seeds(seeds: object, runs: list[dict[str, object]], where: str) -> None:
    """Every arm of the runs ran each of the spec's seeds (a record from before ffnlab saved them: the
    seeds its runs ran, :func:`load_sweep`), and no other: the analysis counts a seed of each arm for each
    entry."""
    wanted = set(run_seeds(runs) if seeds is None else cast(list[object], seeds))
    by_arm: dict[str, set[object]] = {}
    for r in runs:
        by_arm.setdefault(str(r["arm"]), set()).add(r["seed"])
    for arm, ran in sorted(by_arm.items()):
        if ran != wanted:
            extra, missing = sorted(ran - wanted, key=str), sorted(wanted - ran, key=str)
            said = "; ".join(x for x in (
                f"runs seed(s) {', '.join(map(str, extra[:5]))} the spec does not name" if extra else "",
                f"has no run of seed(s) {', '.join(map(str, missing[:5]))}{' ...' if len(missing) > 5 else ''} "
                "the spec names" if missing else "") if x)
            raise FfnlabError(f"{where}: arm {show(arm)} {said}; each arm runs each of the spec's seeds once")
