"""Print rows as a rich table, Markdown, CSV or JSON (the CLI's only output path).

Every cell and title goes through :mod:`ffnlab.escape` for its format (names come from files)."""

from __future__ import annotations

import csv
import io
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ffnlab import escape

FORMATS = ("table", "markdown", "csv")


def human(n: float | int | None) -> str:
    """125_000_000 -> '125.0M'."""
    if n is None:
        return "-"
    for unit, scale in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.2f}{unit}" if abs(n) < 10 * scale else f"{n / scale:.1f}{unit}"
    return f"{n:g}"


def pct(x: float | None) -> str:
    return "-" if x is None else f"{x:+.1%}"


def num(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


@dataclass(frozen=True)
class Column:
    key: str
    header: str
    fmt: Callable[[Any], str] = str
    justify: str = "right"


def _cell(col: Column, row: dict[str, Any]) -> str:
    value = row.get(col.key)
    return "-" if value is None and col.fmt is str else col.fmt(value)


def emit_json(obj: Any) -> None:
    json.dump(obj, sys.stdout, indent=2, default=_json_default)
    sys.stdout.write("\n")


def _json_default(o: Any) -> Any:
    from fractions import Fraction

    if isinstance(o, Fraction):
        return float(o)
    if hasattr(o, "as_dict"):
        return o.as_dict()
    raise TypeError(f"cannot serialise {type(o).__name__}")


def emit(rows: Sequence[dict[str, Any]], columns: Sequence[Column], fmt: str = "table",
         title: str | None = None) -> None:
    if fmt == "csv":
        w = csv.writer(sys.stdout)
        w.writerow([c.key for c in columns])
        for r in rows:
            w.writerow([escape.csv_cell(r.get(c.key)) for c in columns])
        return
    if fmt == "markdown":
        sys.stdout.write(markdown_table(rows, columns, title))
        return
    from rich.table import Table

    t = Table(title=escape.terminal_text(title) if title else None, show_lines=False, header_style="bold")
    for c in columns:
        t.add_column(c.header, justify=c.justify, overflow="fold")
    for r in rows:
        t.add_row(*[escape.terminal_text(_cell(c, r)) for c in columns])  # text, never rich markup
    console_for_tables().print(t)


def console_for_tables():  # noqa: ANN201 - rich type kept out of the signature
    """A console as wide as the terminal, or 200 columns when output is piped."""
    import shutil

    from rich.console import Console

    width = shutil.get_terminal_size((200, 24)).columns if sys.stdout.isatty() else 200
    return Console(width=width, soft_wrap=False)


def output(rows: Sequence[dict[str, Any]], columns: Sequence[Column], *, as_json: bool, fmt: str,
           title: str | None = None) -> None:
    """JSON of the rows with ``--json``, otherwise the table in ``fmt``."""
    if as_json:
        emit_json(list(rows))
    else:
        emit(rows, columns, fmt, title)


def markdown_table(rows: Sequence[dict[str, Any]], columns: Sequence[Column], title: str | None = None) -> str:
    buf = io.StringIO()
    if title:
        buf.write(f"**{escape.markdown(title)}**\n\n")
    buf.write("| " + " | ".join(c.header for c in columns) + " |\n")
    buf.write("|" + "|".join("---:" if c.justify == "right" else "---" for c in columns) + "|\n")
    for r in rows:
        buf.write("| " + " | ".join(escape.markdown(_cell(c, r)) for c in columns) + " |\n")
    return buf.getvalue()


def key_values(pairs: Sequence[tuple[str, Any]], fmt: str = "table", title: str | None = None) -> None:
    rows = [{"key": k, "value": v} for k, v in pairs]
    emit(rows, [Column("key", "quantity", justify="left"), Column("value", "value", justify="left")], fmt, title)
