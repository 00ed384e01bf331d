"""Progress for long work: a rich bar on a terminal, periodic lines otherwise.

Shows steps, the latest metrics, tokens/s and an ETA. Used by training, sweeps and verify.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any


def _fmt_eta(seconds: float) -> str:
    seconds = max(0, int(seconds))
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class Progress:
    """``update(done, **metrics)`` as work advances; ``close()`` at the end.

    ``mode``: ``bar`` (rich), ``lines`` (a line every ``every_s`` seconds on stderr), ``off``,
    or ``auto`` (bar on a terminal, lines otherwise).
    """

    def __init__(self, total: int, *, start: int = 0, description: str = "", unit: str = "step",
                 tokens_per_unit: int = 0, mode: str = "auto", every_s: float = 10.0,
                 emit: Callable[[str], None] | None = None):
        if mode == "auto":
            mode = "bar" if sys.stderr.isatty() else "lines"
        from ffnlab.escape import terminal

        description = terminal(description, one_line=True)  # a folder name: shown as text, never escapes
        self.total, self.start, self.done, self.unit = total, start, start, unit
        self.description, self.tokens_per_unit, self.mode, self.every_s = description, tokens_per_unit, mode, every_s
        self.emit = emit or _print_stderr  # where ``lines`` mode writes
        self.t0 = self.last_line = time.perf_counter()
        self.metrics: dict[str, Any] = {}
        self._bar = None
        self._final_shown = False
        if mode == "bar":
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
            from rich.progress import Progress as RichProgress

            self._bar = RichProgress(
                TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                TextColumn("{task.fields[info]}"), TextColumn("elapsed"), TimeElapsedColumn(),
                TextColumn("ETA {task.fields[eta]}"), transient=False, refresh_per_second=4,
                console=_stderr_console())
            self._bar.start()
            from rich.markup import escape as markup_escape

            self._task = self._bar.add_task(markup_escape(description), total=total, completed=start, info="", eta="?")

    def rate(self) -> float:
        elapsed = time.perf_counter() - self.t0
        return (self.done - self.start) / elapsed if elapsed > 0 else 0.0

    def eta_s(self) -> float | None:
        r = self.rate()
        return (self.total - self.done) / r if r > 0 else None

    def info(self) -> str:
        parts = []
        for k, v in self.metrics.items():
            parts.append(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}")
        if self.tokens_per_unit:
            parts.append(f"{self.rate() * self.tokens_per_unit:,.0f} tok/s")
        return " | ".join(parts)

    def update(self, done: int, **metrics: Any) -> None:
        self.done = done
        self.metrics.update({k: v for k, v in metrics.items() if v is not None})
        eta = self.eta_s()
        eta_txt = _fmt_eta(eta) if eta is not None else "?"
        if self._bar is not None:
            self._bar.update(self._task, completed=done, info=self.info(), eta=eta_txt)
        elif self.mode == "lines":
            now = time.perf_counter()
            final = done >= self.total and not self._final_shown  # the last line once, not on every poll
            if final or (now - self.last_line >= self.every_s and done < self.total):
                self.last_line, self._final_shown = now, self._final_shown or final
                self.emit(f"[{self.description}] {self.unit} {done}/{self.total} | {self.info()} | ETA {eta_txt}")

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


def _stderr_console():  # noqa: ANN202
    from rich.console import Console

    return Console(file=sys.stderr)


def _print_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
