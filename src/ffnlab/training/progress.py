"""Progress for long work: a rich bar on a terminal, periodic lines otherwise.

Shows steps, the latest metrics, tokens/s and an ETA. Used by training, sweeps and verify.
The bar's line fits the terminal by leaving whole fields out, least important first (:func:`fit_fields`).
In ``lines`` mode a line comes at most every ``every_s`` seconds while work remains, when the
step or a metric changed, and the final state once, at ``close()`` (however often the caller reports it). Names and
metrics are shown as plain text (never rich markup, control characters escaped).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from ffnlab import escape

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Column


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
    ``expect``: the metrics the caller will report, in display order, each with a sample of its
    text: the bar is laid out from its first frame as it will be once they come (the name, the
    bar's width and the elapsed time kept or left out once), a metric not reported yet left out
    of the line rather than its room given to other fields. Tokens/s is shown once a unit (or a
    token) is done, not as ``0 tok/s`` before.
    """

    def __init__(self, total: int, *, start: int = 0, description: str = "", unit: str = "step",
                 tokens_per_unit: int = 0, mode: str = "auto", every_s: float = 10.0,
                 emit: Callable[[str], None] | None = None, work_total: float = 0.0, work_start: float = 0.0,
                 tokens_start: int | None = None, expect: dict[str, str] | None = None):
        if mode == "auto":
            mode = "bar" if sys.stderr.isatty() else "lines"
        self.total, self.start, self.done, self.unit = total, start, start, unit
        description = escape.one_line(description)  # a folder name: shown as text, never escapes
        self.description, self.tokens_per_unit, self.mode, self.every_s = description, tokens_per_unit, mode, every_s
        self.work_total, self.work_start, self.work = work_total, work_start, work_start
        self.tokens_start = tokens_start  # tokens done when counting began (with ``update(tokens=)``)
        self.tokens = tokens_start or 0
        self.expect = dict(expect or {})  # metric -> a sample of its text (its room in the bar line)
        self._emitted: tuple[Any, ...] | None = None  # (done, metrics) of the last line written
        self.emit = emit or _print_stderr  # where ``lines`` mode writes
        self.t0 = self.last_line = time.perf_counter()
        self.metrics: dict[str, str | float] = {}  # name -> latest value (a float shown to 4 figures)
        self._bar = None
        self._final_shown = False
        if mode == "bar":
            from rich.progress import Progress as RichProgress

            self._bar = RichProgress(cast(Any, _LineColumn(self)), transient=False, refresh_per_second=4,
                                     console=_stderr_console())
            self._bar.start()
            self._task = self._bar.add_task(description, total=total, completed=start)

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

    def _measured(self) -> bool:
        """Whether a rate can be told yet: a unit done (or, counting tokens, a token)."""
        return self.tokens != self.tokens_start if self.tokens_start is not None else self.done > self.start

    def _tokens_per_s(self) -> str | None:
        if self.tokens_start is not None:
            elapsed = time.perf_counter() - self.t0
            rate = (self.tokens - self.tokens_start) / elapsed if elapsed > 0 else 0.0
        elif self.tokens_per_unit:
            rate = self.rate() * self.tokens_per_unit
        else:
            return None
        return f"{rate:,.0f} tok/s"

    def fields_of_info(self) -> list[tuple[str | None, str]]:
        """The metrics (the expected ones in their order, then any other in the order first
        reported) and tokens/s, each as (its text, or None while not known yet; the text its room
        is sized by: the longer of the two where both are known)."""
        def text(k: str, v: str | float) -> str:
            return escape.one_line(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}")

        out: list[tuple[str | None, str]] = []
        for k in [*self.expect, *(k for k in self.metrics if k not in self.expect)]:
            shown = text(k, self.metrics[k]) if k in self.metrics else None
            sample = text(k, self.expect[k]) if k in self.expect else ""
            out.append((shown, _wider(shown or "", sample)))
        rate = self._tokens_per_s()
        if rate is not None:
            out.append((rate if self._measured() else None, _wider(rate, f"{TOKS_SAMPLE} tok/s")))
        return out

    def info_parts(self) -> list[str]:
        """The metrics known so far, then tokens/s once measured (each one line of plain text)."""
        return [shown for shown, _ in self.fields_of_info() if shown is not None]

    def info(self) -> str:
        return " | ".join(self.info_parts())

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

    def update(self, done: int, *, work: float | None = None, tokens: int | None = None,
               **metrics: str | float | None) -> None:
        self.done = done
        if work is not None:
            self.work = work
        if tokens is not None:
            self.tokens = tokens
        self.metrics.update({k: v for k, v in metrics.items() if v is not None})
        if self._bar is not None:
            self._bar.update(self._task, completed=done)  # the line itself is drawn by _LineColumn
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


TOKS_SAMPLE = "99,999"  # the room kept for tokens/s before it is measured (a rate of 5 digits)
BAR_MIN, BAR_MAX = 10, 40  # the bar's width: drawn only with at least BAR_MIN columns to spare


def fit_fields(fields: list[tuple[int, str]], width: int, gap: int = 1) -> list[int]:
    """Which of ``fields`` (``(priority, text)``, in display order; 0 = most important) fit in
    ``width`` columns, ``gap`` apart: taken whole in order of priority (display order among
    equals), each one that still fits beside those taken, the rest left out; priority 0 is always
    kept. Returns the kept fields' indices in display order."""
    from rich.cells import cell_len

    kept: list[int] = []
    used = -gap
    for i in sorted(range(len(fields)), key=lambda i: (fields[i][0], i)):
        need = gap + cell_len(fields[i][1])
        if used + need <= width or fields[i][0] == 0:
            kept.append(i)
            used += need
    return sorted(kept)


class _LineColumn:
    """The whole bar line as one rich progress column, laid out at the width it is drawn at: the
    fields are whole or left out by priority (rich's columns each cut with '…' when the line is
    too long: '80…', 'elapsed 0…' at 100 columns). Priority: the count, the ETA, the metrics in
    the order reported, tokens/s, the bar (10 to 40 columns, taking what is left), the name,
    the elapsed time."""

    def __init__(self, progress: Progress):
        self.progress = progress

    # the rich ProgressColumn interface (duck-typed: rich only calls these two)
    def get_table_column(self) -> Column:
        from rich.table import Column

        return Column(no_wrap=True, ratio=1)

    def __call__(self, task: Any) -> Any:
        return _FittedLine(self.progress, task)


class _FittedLine:
    """One render of the bar line (see :class:`_LineColumn`), fitted to ``options.max_width``."""

    def __init__(self, progress: Progress, task: Any):
        self.progress, self.task = progress, task

    def fields(self) -> list[tuple[int, str | None, str]]:
        """(priority, text, room) in display order: the bar's text is None (it is drawn, not
        written); a field not known yet has text "" and the room of the text it will have."""
        p, task = self.progress, self.task
        eta = p.eta_s()
        parts = p.fields_of_info()
        n = len(parts)
        count = f"{task.completed:,.0f}/{task.total:,.0f}"
        elapsed = f"elapsed {_fmt_elapsed(task.elapsed or 0.0)}"
        eta_text = f"ETA {_fmt_eta(eta) if eta is not None else '?'}"
        return [(n + 4, p.description, p.description), (n + 3, None, " " * BAR_MIN),
                (0, count, _wider(count, f"{task.total:,.0f}/{task.total:,.0f}")),  # room for the last count
                *((2 + i, "" if shown is None else f"| {shown}", f"| {room}") for i, (shown, room) in enumerate(parts)),
                (n + 5, elapsed, elapsed), (1, eta_text, _wider(eta_text, "ETA 0:00"))]  # an ETA once known

    def __rich_console__(self, console: Any, options: Any) -> Any:
        from rich.cells import cell_len
        from rich.progress_bar import ProgressBar
        from rich.table import Table
        from rich.text import Text

        fields = self.fields()
        sized = [(pr, room) for pr, _, room in fields]  # the bar at its least, each field at its room
        kept = fit_fields(sized, options.max_width)
        spare = options.max_width - sum(cell_len(sized[i][1]) for i in kept) - max(0, len(kept) - 1)
        grid = Table.grid(padding=(0, 1))
        cells: list[Any] = []
        for i in kept:
            text = fields[i][1]
            if text is None:
                width = min(BAR_MAX, BAR_MIN + spare)
                grid.add_column(width=width, no_wrap=True)
                cells.append(ProgressBar(total=self.task.total, completed=self.task.completed, width=width))
            elif text:  # a field not known yet keeps its room in the layout, not on the line
                grid.add_column(no_wrap=True, min_width=cell_len(text))
                cells.append(Text(text, style="bold" if i == 0 else ""))
        grid.add_row(*cells)
        yield grid


def _wider(text: str, other: str) -> str:
    """The wider of two texts (``text`` where they are as wide): the room a field keeps."""
    from rich.cells import cell_len

    return other if cell_len(other) > cell_len(text) else text


def _fmt_elapsed(seconds: float) -> str:
    """H:MM:SS, as rich's elapsed column writes it."""
    seconds = max(0, int(seconds))
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}"


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


def _stderr_console() -> Console:
    from ffnlab.render import console

    return console(sys.stderr)


def _print_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
