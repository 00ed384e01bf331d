"""Progress for long work: a rich bar on a terminal, periodic lines otherwise.

Shows steps, the latest metrics, tokens/s and an ETA. Used by training, sweeps and verify.
In ``lines`` mode a line comes at most every ``every_s`` seconds while work remains, when the
step or a metric changed, and the final state once, at ``close()`` (however often the caller reports it). Names and metrics are shown
as plain text (never rich markup, control characters escaped).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

from ffnlab import escape


def _fmt_eta(seconds: float) -> str:
    seconds = max(0, int(seconds))
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class Progress:
    """``update(done, **metrics)`` as work advances; ``close()`` at the end.

    ``mode``: ``bar`` (rich), ``lines`` (a line every ``every_s`` seconds on stderr), ``off``,
    or ``auto`` (bar on a terminal, lines otherwise). Where units cost unequal work (a sweep's
    steps at several model sizes), ``work_total`` (e.g. training FLOPs) with ``update(done,
    work=...)`` makes the ETA follow the work done, not the units counted; where units carry
    unequal tokens (a sweep's sizes at different batches), ``update(done, tokens=...)`` with the
    tokens done so far (and ``tokens_start``) makes tokens/s count them instead of ``tokens_per_unit`` per unit.
    """

    def __init__(self, total: int, *, start: int = 0, description: str = "", unit: str = "step",
                 tokens_per_unit: int = 0, mode: str = "auto", every_s: float = 10.0,
                 emit: Callable[[str], None] | None = None, work_total: float = 0.0, work_start: float = 0.0,
                 tokens_start: int | None = None):
        if mode == "auto":
            mode = "bar" if sys.stderr.isatty() else "lines"
        self.total, self.start, self.done, self.unit = total, start, start, unit
        description = escape.one_line(description)  # a folder name: shown as text, never escapes
        self.description, self.tokens_per_unit, self.mode, self.every_s = description, tokens_per_unit, mode, every_s
        self.work_total, self.work_start, self.work = work_total, work_start, work_start
        self.tokens_start = tokens_start  # tokens done when counting began (with ``update(tokens=)``)
        self.tokens = tokens_start or 0
        self._emitted: tuple[Any, ...] | None = None  # (done, metrics) of the last line written
        self.emit = emit or _print_stderr  # where ``lines`` mode writes
        self.t0 = self.last_line = time.perf_counter()
        self.metrics: dict[str, Any] = {}
        self._bar = None
        self._final_shown = False
        if mode == "bar":
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
            from rich.progress import Progress as RichProgress

            self._bar = RichProgress(
                TextColumn("{task.description}", style="bold", markup=False), BarColumn(), MofNCompleteColumn(),
                TextColumn("{task.fields[info]}", markup=False), TextColumn("elapsed"), TimeElapsedColumn(),
                TextColumn("ETA {task.fields[eta]}"), transient=False, refresh_per_second=4,
                console=_stderr_console())
            self._bar.start()
            from rich.markup import escape as markup_escape

            self._task = self._bar.add_task(markup_escape(description), total=total, completed=start, info="", eta="?")

    def rate(self) -> float:
        elapsed = time.perf_counter() - self.t0
        return (self.done - self.start) / elapsed if elapsed > 0 else 0.0

    def eta_s(self) -> float | None:
        if self.work_total:
            elapsed = time.perf_counter() - self.t0
            per_s = (self.work - self.work_start) / elapsed if elapsed > 0 else 0.0
            return (self.work_total - self.work) / per_s if per_s > 0 else None
        r = self.rate()
        return (self.total - self.done) / r if r > 0 else None

    def info(self) -> str:
        parts = []
        for k, v in self.metrics.items():
            parts.append(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}")
        if self.tokens_start is not None:
            elapsed = time.perf_counter() - self.t0
            parts.append(f"{(self.tokens - self.tokens_start) / elapsed if elapsed > 0 else 0.0:,.0f} tok/s")
        elif self.tokens_per_unit:
            parts.append(f"{self.rate() * self.tokens_per_unit:,.0f} tok/s")
        return escape.one_line(" | ".join(parts))

    def line(self) -> str:
        """The current state as one line: ``[name] step 40/300 | loss 2.1 | 9,000 tok/s | ETA 0:31``."""
        eta = self.eta_s()
        info = self.info()
        return (f"[{self.description}] {self.unit} {self.done}/{self.total} | {info + ' | ' if info else ''}"
                f"ETA {_fmt_eta(eta) if eta is not None else '?'}")

    def _state(self) -> tuple[Any, ...]:
        return (self.done, tuple((k, str(v)) for k, v in self.metrics.items()))

    def _emit_line(self) -> None:
        self._emitted = self._state()
        self.emit(self.line())

    def update(self, done: int, *, work: float | None = None, tokens: int | None = None, **metrics: Any) -> None:
        self.done = done
        if work is not None:
            self.work = work
        if tokens is not None:
            self.tokens = tokens
        self.metrics.update({k: v for k, v in metrics.items() if v is not None})
        eta = self.eta_s()
        eta_txt = _fmt_eta(eta) if eta is not None else "?"
        if self._bar is not None:
            self._bar.update(self._task, completed=done, info=self.info(), eta=eta_txt)
        elif self.mode == "lines":
            now = time.perf_counter()
            # a line says something new: the same step and metrics again (a sweep polling while
            # its runs train between logs) is not repeated
            if now - self.last_line >= self.every_s and done < self.total and self._state() != self._emitted:
                self.last_line = now
                self._emit_line()

    def close(self) -> None:
        """Stop the bar, or write the final state's line (once, unless it was the last line)."""
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
        elif self.mode == "lines" and self._emitted != self._state() and self.done > self.start:
            self._emit_line()


def start_line(name: str, *, params: int, non_embedding: int, d_model: int, d_ff: int, ffn_kind: str,
               n_layers: int, steps: int, tokens_per_step: int, from_step: int = 0, n_experts: int = 0,
               top_k: int = 0, active: int | None = None) -> str:
    """What a training run is about to do, in one line (printed when it starts); an MoE names its
    experts, top-k and the parameters a token uses (``active``)."""
    from ffnlab.render import human

    start = f"resuming at step {from_step} of {steps}" if from_step else f"{steps} steps"
    moe = (f", {n_experts} experts top-{top_k} ({human(active)} active params)"
           if n_experts and active is not None else "")
    return escape.one_line(
        f"[{name}] {human(params)} params ({human(non_embedding)} non-embedding): d_model {d_model}, "
        f"d_ff {d_ff} ({ffn_kind}, ratio {d_ff / d_model:.4g}){moe}, {n_layers} layers; {start} x "
        f"{tokens_per_step:,} tokens ({human(steps * tokens_per_step)} in all)")


def _stderr_console():  # noqa: ANN202
    from rich.console import Console

    return Console(file=sys.stderr)


def _print_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
