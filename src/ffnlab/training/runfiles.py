"""Reading a run folder's files (no torch): the one typed reader of ``model.json`` and of
``summary.json``, the validating metrics reader, and the one test of a finished run
(:func:`finished_summary`, for ``train --resume``, ``sweep`` and the analysis); writes are in
ffnlab.files.

Every command that reads a run folder (``generate``, ``export``, ``probe``, ``capacity``, the sweep
record and its maturity) reads ``model.json`` with :func:`read_run_model` and ``summary.json`` with
:func:`read_run_summary`: each field is checked once, here, and a tampered one is one
:class:`ffnlab.errors.FfnlabError` line naming the file and the key.
"""

from __future__ import annotations

import json
import math
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypedDict, Union

from ffnlab.errors import FfnlabError
from ffnlab.files import DuplicateKey, unique_pairs
from ffnlab.validation import integer, number, show

if TYPE_CHECKING:
    from ffnlab.sizing.config import ModelConfig
    from ffnlab.training.runconfig import RunConfig

MAX_METRICS_BYTES = 2**30  # a metrics.jsonl of a long run is large, but not this large
EVAL_KEYS = ("tokens", "val_loss")
KINDS = ("train", "eval")


class _TrainExtras(TypedDict, total=False):
    aux_loss: float  # mixture-of-experts runs only


class TrainRecord(_TrainExtras):
    """A ``metrics.jsonl`` line the trainer writes at a logged step."""

    kind: Literal["train"]
    step: int
    tokens: int
    loss: float
    lr: float
    grad_norm: float
    tokens_per_s: float
    mfu: float | None  # None: above 100% of the peak, so the peak is wrong
    elapsed_s: float


class EvalRecord(TypedDict):
    """A ``metrics.jsonl`` line the trainer writes at an evaluation."""

    kind: Literal["eval"]
    step: int
    tokens: int
    val_loss: float
    val_ppl: float
    val_bpb: float
    train_flops: int


MetricRecord = Union[TrainRecord, EvalRecord]


MAX_PARAMS = 2**62
MAX_TOKENS = 2**62
SUMMARY_NUMBERS = ("final_val_loss", "final_val_ppl", "final_val_bpb", "final_train_loss", "wall_s", "train_flops")


@dataclass(frozen=True)
class RunParams:
    """A run's parameter counts (``params`` of model.json and of summary.json): both >= 1."""

    total: int
    non_embedding: int


def run_params(value: Any, where: str) -> RunParams:
    """``params`` of a run file (``where`` names it) checked: a mapping whose ``total`` and
    ``non_embedding`` are integers, 1 <= non_embedding <= total (a model with a layer has some)."""
    if not isinstance(value, dict):
        raise FfnlabError(f"{where}: params must be a mapping of parameter counts, got {show(value)}")
    for key in ("total", "non_embedding"):
        if key not in value:
            raise FfnlabError(f"{where}: params has no {key!r}")
    total = integer(value["total"], f"{where}: params.total", 1, MAX_PARAMS)
    non_embedding = integer(value["non_embedding"], f"{where}: params.non_embedding", 1, total)
    return RunParams(total=total, non_embedding=non_embedding)


@dataclass(frozen=True)
class RunModelFile:
    """``model.json`` of a run folder, checked field by field (:func:`read_run_model`)."""

    path: Path
    model: ModelConfig
    params: RunParams
    prepared_data: str  # the prepared corpus's folder (its tokenizer, its token counts)
    # ``build``: the settings beyond ``model`` the model was built with (runconfig.BUILD_KEYS), each
    # absent one not recorded; None where model.json has no ``build`` (a run written before it was kept)
    build: dict[str, float] | None = None


def read_run_model(run_dir: str | Path) -> RunModelFile:
    """``RUN/model.json``, every field checked: ``model`` a model config ffnlab builds, ``params``
    (:func:`run_params`), ``prepared_data`` a non-empty path, ``build`` (when present) a mapping of
    some of :data:`ffnlab.training.runconfig.BUILD_KEYS` to numbers > 0. One error line naming the
    file and the key otherwise; nothing is written."""
    from ffnlab.files import read_mapping
    from ffnlab.sizing.config import ModelConfig

    path = Path(run_dir) / "model.json"
    meta = read_mapping(path, "run model file", fmt="JSON")
    for key in ("model", "params", "prepared_data"):
        if key not in meta:
            raise FfnlabError(f"{path} has no {key!r}; is it a run folder written by ffnlab?")
    if not isinstance(meta["model"], dict):
        raise FfnlabError(f"{path}: model must be a mapping, got {show(meta['model'])}")
    try:
        model = ModelConfig.from_dict(meta["model"])
    except FfnlabError as e:
        raise FfnlabError(f"{path}: model is not a valid model config ({show(str(e), 200)})") from None
    except (KeyError, TypeError, ValueError) as e:
        raise FfnlabError(f"{path} is corrupt: model ({show(str(e), 200)})") from None
    prepared = meta["prepared_data"]
    if not isinstance(prepared, str) or not prepared.strip() or "\x00" in prepared:
        raise FfnlabError(f"{path}: prepared_data must be the path of the prepared corpus, got {show(prepared)}")
    return RunModelFile(path=path, model=model, params=run_params(meta["params"], str(path)), prepared_data=prepared,
                        build=build_record(meta.get("build"), str(path)))


def build_record(build: object, where: str) -> dict[str, float] | None:
    """A ``build`` record (model.json's, a checkpoint's state.json's) checked: a mapping of some of
    :data:`ffnlab.training.runconfig.BUILD_KEYS` to numbers > 0, or None where absent (null): none
    kept. One error line starting with ``where`` and naming the key otherwise."""
    from ffnlab.training.runconfig import BUILD_KEYS

    if build is None:
        return None
    if not isinstance(build, dict):
        raise FfnlabError(f"{where}: build must be a mapping of model settings, got {show(build)}")
    for key in build:
        if key not in BUILD_KEYS:
            raise FfnlabError(f"{where}: build has an unknown key {show(key)}; the keys are {', '.join(BUILD_KEYS)}")
    return {k: number(v, f"{where}: build.{k}", 0, lo_open=True, text_ok=False) for k, v in build.items()}


def differences(a: Mapping[str, object], b: Mapping[str, object], prefix: str = "") -> list[str]:
    """The dotted keys whose values differ between two nested config dicts (any depth)."""
    out = []
    for k in sorted(set(a) | set(b)):
        x, y = a.get(k), b.get(k)
        if isinstance(x, dict) and isinstance(y, dict):
            out += differences(x, y, f"{prefix}{k}.")
        elif x != y:
            out.append(f"{prefix}{k}")
    return out


def check_run_model(files: RunModelFile, cfg: RunConfig, config_path: Path) -> None:
    """Refuse a run whose model.json describes another model than its config.yaml (``cfg``, read
    from ``config_path``) does, in one line naming both files and the keys: the trainer writes
    model.json from config.yaml, so any difference is an edit, and one the checkpoint's shapes may
    not tell (``attn.n_heads`` of the same width, ``rope_theta``, ``norm_eps``). The vocabulary
    size, which config.yaml leaves to the corpus, is model.json's (the checkpoint's shapes check
    it); the name is a label. The one home of this rule: ``export``/``generate`` (the checkpoint
    loader) and ``train --resume`` call it.

    A build setting model.json does not record (a run written before ``build`` was kept, or before
    one of its keys was) is not compared: such a run keeps loading, on config.yaml's word for it."""
    from ffnlab.training.runconfig import model_config

    described = model_config(cfg, files.model.vocab_size).to_dict()
    check_recorded(files.path, files.model.to_dict(), described, files.build, cfg, config_path)


def check_recorded(record: Path, recorded: dict[str, Any], described: dict[str, Any],
                   build: Mapping[str, float] | None, cfg: RunConfig, config_path: Path) -> None:
    """The rule of :func:`check_run_model`, for any record of the model trained: ``recorded`` (a
    model dict as ``record`` holds it, or {} where it holds none) against ``described`` (what
    ``cfg``, read from ``config_path``, builds), and each build setting ``build`` records against
    ``cfg``'s (:func:`ffnlab.training.runconfig.build_settings`); a setting not recorded (``build``
    None: a record written before it was kept) is not compared. One line naming both files and the
    keys where they differ (``name``, a label, is not compared)."""
    from ffnlab.training.runconfig import build_settings

    recorded, described = dict(recorded), dict(described)
    settings = build_settings(cfg)
    for key, value in (build or {}).items():  # only what is recorded
        assert key not in recorded, key  # BUILD_KEYS are no ModelConfig field
        recorded[key], described[key] = value, settings[key]
    changed = [k for k in differences(recorded, described) if k != "name"]
    if changed:
        parts = [f"{k} {value_at(recorded, k)!r} vs {value_at(described, k)!r}" for k in changed[:4]]
        more = f" and {len(changed) - 4} more" if len(changed) > 4 else ""
        raise FfnlabError(f"{record} describes another model than {config_path}: "
                          f"{', '.join(parts)}{more}; was either file changed after training?")


def check_build(record: Path, build: Mapping[str, float] | None, cfg: RunConfig, config_path: Path) -> None:
    """A checkpoint's own record of the build settings it was trained with (its state.json's
    ``build``, None where it was written before they were kept) against ``cfg``'s, by the rule of
    :func:`check_recorded`: ``train --resume`` and the checkpoint loader of ``export``/``generate``
    call it, so a run whose model.json is gone or was rewritten still answers for its weights."""
    check_recorded(record, {}, {}, build, cfg, config_path)


def value_at(tree: Mapping[str, object], dotted: str) -> object:
    """The value at a dotted key of a nested dict (None where it is absent)."""
    node: object = tree
    for part in dotted.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return node


@dataclass(frozen=True)
class RunSummaryFile:
    """``summary.json`` of a finished run, checked field by field (:func:`read_run_summary`);
    a figure the run did not record (no evaluation) is None."""

    path: Path
    status: str | None  # absent from summaries written before it was kept
    tokens: int
    final_val_loss: float | None
    final_val_ppl: float | None
    final_val_bpb: float | None
    final_train_loss: float | None
    wall_s: float | None
    train_flops: float | None
    params: RunParams | None  # absent from summaries written before it was kept

    def need(self, *keys: str) -> RunSummaryFile:
        """This summary, refused in one line if any of ``keys`` is absent or null."""
        for key in keys:
            if getattr(self, key) is None:
                raise FfnlabError(f"{self.path} has no {key!r}")
        return self


def read_run_summary(path: str | Path) -> RunSummaryFile:
    """A run's ``summary.json`` at ``path``: ``tokens`` an integer >= 0, each figure of
    :data:`SUMMARY_NUMBERS` a finite number >= 0 or null, ``status`` a string, ``params``
    (:func:`run_params`) when present. One error line naming the file and the key otherwise."""
    from ffnlab.files import read_mapping

    path = Path(path)
    s = read_mapping(path, "run summary", fmt="JSON")
    if "tokens" not in s:
        raise FfnlabError(f"{path} has no 'tokens'")
    tokens = integer(s["tokens"], f"{path}: tokens", 0, MAX_TOKENS)
    figures: dict[str, float | None] = {}
    for key in SUMMARY_NUMBERS:
        value = s.get(key)
        figures[key] = None if value is None else number(value, f"{path}: {key}", 0, text_ok=False)
    status = s.get("status")
    if status is not None and not isinstance(status, str):
        raise FfnlabError(f"{path}: status must be a string, got {show(status)}")
    params = run_params(s["params"], str(path)) if s.get("params") is not None else None
    return RunSummaryFile(path=path, status=status, tokens=tokens, params=params, **figures)


def finished_summary(run_dir: Path, max_steps: object, *, evaluated: bool = False) -> dict[str, Any] | None:
    """The run's summary if it says the run finished ``max_steps`` steps (``evaluated``: and its
    metrics, which must be valid, hold the eval record of that step), else None: absent, torn by a
    kill, not a file, another status ("running"), another step count. The one test of "finished":
    the sweep skips such a run and the analysis takes it; any other it reruns, and refuses;
    ``train --resume`` of such a run trains nothing and writes nothing."""
    from ffnlab.files import read_data

    try:  # a NaN loss is the run's own record of blowing up (the analysis sets such a run aside)
        s = read_data(run_dir / "summary.json", "run summary", fmt="JSON", json_constants=True)
    except (OSError, FfnlabError):
        return None
    if not isinstance(s, dict) or s.get("status") != "finished":
        return None
    if type(s.get("steps")) is not int or s["steps"] != max_steps:  # a bool is no step count
        return None
    try:
        evals = read_records(run_dir / "metrics.jsonl", kinds=("eval",)) if evaluated else []
        if evaluated and not any(r["step"] == max_steps for r in evals):
            return None
    except OSError:
        return None
    return s


def _bad(path: Path, n: int, why: str) -> FfnlabError:
    return FfnlabError(f"{path}: line {n} {why}; the run's metrics are damaged (was the file edited or "
                       "written by something else?)")


def _check(rec: Any, path: Path, n: int, last: dict[str, int]) -> None:
    if not isinstance(rec, dict) or not isinstance(rec.get("kind"), str) or "step" not in rec:
        raise _bad(path, n, "must be a record with a kind and a step")
    kind, step = rec["kind"], rec["step"]
    if isinstance(step, bool) or not isinstance(step, int) or not 0 <= step < 2**62:
        raise _bad(path, n, f"step must be an integer >= 0, got {show(step)}")
    if kind not in KINDS:
        raise _bad(path, n, f"has kind {show(kind)}; records are {' or '.join(KINDS)}")
    before = last.get(kind)
    if before is not None and step <= before:
        raise _bad(path, n, f"repeats or goes back in steps ({kind} step {step} after step {before}): "
                            "steps must increase")
    last[kind] = step
    if kind == "train":
        loss = rec.get("loss")
        if isinstance(loss, bool) or not isinstance(loss, (int, float)) or not math.isfinite(loss):
            raise _bad(path, n, f"is a train record whose loss is not a finite number ({show(loss)})")
    if kind == "eval":
        for key in EVAL_KEYS:
            if key not in rec:
                raise _bad(path, n, f"is an eval record with no {key!r}")
        tokens, loss = rec["tokens"], rec["val_loss"]
        if isinstance(tokens, bool) or not isinstance(tokens, int) or not 0 <= tokens < 2**62:
            raise _bad(path, n, f"tokens must be an integer >= 0, got {show(tokens)}")
        if isinstance(loss, bool) or not isinstance(loss, (int, float)) or not math.isfinite(loss):
            raise _bad(path, n, f"val_loss must be a finite number, got {show(loss)}")


def read_records(path: Path, *, kinds: tuple[str, ...] | None = None,
                 max_bytes: int = MAX_METRICS_BYTES) -> list[dict[str, Any]]:
    """The records of a ``metrics.jsonl`` (only those of ``kinds`` if given), validated; a last
    line torn by a kill is dropped.

    Every other line must be a JSON object with ``kind`` train or eval and an integer ``step`` >= 0,
    steps strictly increasing within each kind (a repeated or reordered record is refused, so a
    damaged file cannot change a verdict), train records with a finite ``loss``, eval records with
    integer ``tokens`` and a finite ``val_loss``. The file is read line by line, so a bad line
    is refused without reading the rest. Refused files raise one :class:`ffnlab.errors.FfnlabError` naming the
    file and the line; a missing file raises ``FileNotFoundError``.
    """
    path = Path(path)
    info = path.stat()
    if not stat.S_ISREG(info.st_mode):  # a FIFO would block the reader forever, a folder is no file
        raise FfnlabError(f"{path} is not a regular file; a metrics file must be one")
    if info.st_size > max_bytes:
        raise FfnlabError(f"{path} is {info.st_size:,} bytes, over the {max_bytes:,}-byte limit for a metrics file")
    out: list[dict[str, Any]] = []
    last: dict[str, int] = {}
    with open(path, "rb") as fh:
        lines = iter(fh)
        line, n = next(lines, None), 1
        while line is not None:
            following = next(lines, None)
            try:
                rec = json.loads(line.decode("utf-8"), object_pairs_hook=unique_pairs)
            except UnicodeDecodeError as e:
                raise _bad(path, n, f"is not UTF-8 text (bad byte at offset {e.start})") from None
            except DuplicateKey as e:  # a whole record, on any line: two values for one figure
                raise _bad(path, n, f"gives a key twice ({e})") from None
            except (ValueError, RecursionError):
                if following is None:  # the line a kill cut short
                    break
                raise _bad(path, n, "is not a JSON record") from None
            _check(rec, path, n, last)
            if kinds is None or rec["kind"] in kinds:
                out.append(rec)
            line, n = following, n + 1
    return out


def last_step(path: Path, tail_bytes: int = 65536) -> int:
    """The step of the last complete record of a ``metrics.jsonl`` (0 if none or unreadable),
    from the file's tail only: a progress poll that costs the same for any length of run."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # a FIFO never blocks a poll
    except OSError:
        return 0
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return 0
        size = os.fstat(fd).st_size
        fh.seek(max(0, size - tail_bytes))
        lines = fh.read().split(b"\n")
    for line in reversed(lines):
        try:
            step = json.loads(line).get("step")
        except (ValueError, AttributeError, RecursionError):
            continue
        if isinstance(step, int) and not isinstance(step, bool) and step >= 0:
            return step
    return 0
