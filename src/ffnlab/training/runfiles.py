"""Reading a run folder's files (no torch): the validating metrics reader; writes are in ffnlab.files."""

from __future__ import annotations

import json
import math
import os
import stat
from pathlib import Path
from typing import Any, Literal, TypedDict, Union

from ffnlab.errors import FfnlabError
from ffnlab.validation import show

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
                rec = json.loads(line.decode("utf-8"))
            except UnicodeDecodeError as e:
                raise _bad(path, n, f"is not UTF-8 text (bad byte at offset {e.start})") from None
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
