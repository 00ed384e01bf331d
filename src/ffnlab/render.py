"""Print rows as a rich table, Markdown, CSV or JSON (the CLI's only output path).

Every cell passes through one escaping step per format (:func:`table_cell`, :func:`markdown_cell`,
:func:`csv_value`), so a name read from a file can never act as rich markup, a terminal escape, a
Markdown row break or raw HTML, or a spreadsheet formula. CSV carries the raw values (numbers as
numbers, no units, no thousands separators); the table and Markdown carry the display strings.
"""

from __future__ import annotations

import csv
import errno
import functools
import io
import json
import math
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, fields, is_dataclass
from fractions import Fraction
from pathlib import PurePath
from typing import TYPE_CHECKING, Any

from ffnlab import escape, interrupt
from ffnlab.errors import FfnlabError

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

FORMATS = ("table", "markdown", "csv")
PIPED_WIDTH = 200  # table width when stdout is not a terminal and COLUMNS is not set
TEXT_MIN_WIDTH = 12  # a text column keeps its longest word whole up to this many characters


def human(n: float | int | None) -> str:
    """125_000_000 -> '125.0M'."""
    if n is None:
        return "-"
    for unit, scale in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.2f}{unit}" if abs(n) < 10 * scale else f"{n / scale:.1f}{unit}"
    return f"{n:g}"


GIB = 2**30  # bytes in a GiB: every GiB figure ffnlab reads or prints converts with it
MIB = 2**20  # bytes in a MiB


def in_gib(n: float, digits: int = 2) -> str:
    """``n`` bytes in GiB with thousands separators, no unit: 2**31 -> '2.00' (table cells)."""
    return f"{n / GIB:,.{digits}f}"


def gib(n: float | None, digits: int = 2) -> str:
    """``n`` bytes as '1,234.56 GiB'; "-" for a missing value."""
    return "-" if n is None else f"{in_gib(n, digits)} GiB"


def mib(n: float, digits: int = 1) -> str:
    """``n`` bytes as '12.5 MiB'."""
    return f"{n / MIB:,.{digits}f} MiB"


def gib_or_mib(n: float) -> str:
    """``n`` bytes in GiB to one decimal, or in MiB below one GiB: '2.5 GiB', '512.0 MiB'."""
    return gib(n, 1) if n >= GIB else mib(n)


def pct(x: float | None) -> str:
    return "-" if x is None else f"{x:+.1%}"


def decimals(x: float | None, digits: int = 3) -> str:
    """``x`` with ``digits`` decimals; "-" for a missing value (tables; verdicts use
    :func:`ffnlab.experiments.fmt.num`, which writes "n/a")."""
    return "-" if x is None else f"{x:.{digits}f}"


@dataclass(frozen=True)
class Column:
    """One column: ``key`` in the row (and the CSV header), its table header and display format.

    ``wide``: left out of the terminal table unless ``--wide`` is given (CSV and Markdown always
    carry it), so the default table fits an 80-column terminal. ``justify="right"`` marks a
    number: it never wraps. A text column wraps at words unless ``wrap`` is False.
    """

    key: str
    header: str
    fmt: Callable[[Any], str] = str
    justify: str = "right"
    wide: bool = False
    wrap: bool = True


def _display(col: Column, row: Mapping[str, Any]) -> str:
    value = row.get(col.key)
    if value is None and col.fmt is str:
        return "-"
    if col.fmt is str and isinstance(value, (list, tuple)):
        return ", ".join(map(str, value)) or "-"
    return col.fmt(value)


# ---------------------------------------------------------------- one escaping step per format


def table_cell(text: str, *, one_line: bool = False) -> Text:
    """A terminal-table cell: plain ``rich.text.Text`` (never markup), controls shown as escapes
    (``one_line``, for a title or a note: line breaks and tabs too, so a path's line break starts no
    line of its own)."""
    from rich.text import Text

    return Text(escape.terminal(text, one_line=one_line))


def markdown_cell(text: str) -> str:
    """A Markdown table cell: one line, pipes, HTML and link brackets escaped."""
    return escape.markdown(text)


def csv_value(value: Any) -> Any:
    """A raw value as one CSV cell: numbers stay numbers, text cannot start a formula."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Fraction):
        return float(value)
    if isinstance(value, (int, float)):
        return value  # csv writes repr: 6738415616, 0.6683663046661198, inf, nan
    if isinstance(value, (list, tuple)):
        return escape.csv_cell(";".join(str(csv_value(v)) for v in value))
    if isinstance(value, Mapping):
        return escape.csv_cell(json.dumps(value, sort_keys=True, default=_json_default))
    return escape.csv_cell(str(value))


# ---------------------------------------------------------------- the formats


def emit_json(obj: Any, indent: int = 2, ensure_ascii: bool = True) -> None:
    """``obj`` on stdout as strict JSON: the CLI's one JSON writer (every ``--json``).

    A NaN or an infinity has no JSON spelling (``json.dumps`` would write ``NaN``/``Infinity``,
    which JSON parsers refuse), so one is refused as an :class:`ffnlab.errors.FfnlabError` naming
    where it is (exit 2) and nothing is printed; the flags' bounds keep valid input finite."""
    text = json_text(obj, indent=indent, ensure_ascii=ensure_ascii)
    interrupt.check()  # a Ctrl-C a finalizer dropped: no answer is printed after it
    sys.stdout.write(text + "\n")


def json_text(obj: Any, indent: int | None = 2, ensure_ascii: bool = True) -> str:
    """``obj`` as strict JSON text (see :func:`emit_json`)."""
    try:
        return json.dumps(obj, indent=indent, default=_json_default, allow_nan=False, ensure_ascii=ensure_ascii)
    except ValueError:
        found = first_non_finite(json.loads(json.dumps(obj, default=_json_default)))
        where, value = found or ("", float("nan"))
        raise FfnlabError(f"the result holds {value} at {where or 'the top'}, which JSON cannot hold: "
                          "an input is out of the range ffnlab computes in") from None


def first_non_finite(x: Any, where: str = "") -> tuple[str, float] | None:
    """(path, value) of the first NaN or infinity in a JSON-like value, None if there is none; the
    path as the JSON writer names it (``layers[0].summary.mean_abs_coefficient``)."""
    if isinstance(x, float) and not math.isfinite(x):
        return where, x
    items = x.items() if isinstance(x, dict) else enumerate(x) if isinstance(x, list) else ()
    for k, v in items:
        found = first_non_finite(v, f"{where}[{k}]" if isinstance(k, int) else f"{where}.{k}" if where else str(k))
        if found is not None:
            return found
    return None


def plain(value: Any, non_finite: Callable[[float], Any] | None = None) -> Any:
    """``value`` as JSON-ready data: the one walker every JSON ffnlab writes goes through.

    An object with an ``as_dict`` (a :class:`ffnlab.sizing.result.Result`, a layout adding its
    ``gpus``) through it, other dataclasses field by field, tuples as lists, paths as strings,
    mappings and lists walked; anything else as it is (a :class:`~fractions.Fraction` stays exact
    until :func:`json_text` writes it). ``non_finite`` replaces a NaN or an infinity (the report
    files write NaN as null); without it they stay, and :func:`json_text` refuses them."""
    if isinstance(value, float):
        return value if non_finite is None or math.isfinite(value) else non_finite(value)
    if isinstance(value, PurePath):
        return str(value)
    if hasattr(value, "as_dict") and not isinstance(value, type):
        return plain(value.as_dict(), non_finite)  # its tuples as lists too
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name), non_finite) for f in fields(value)}
    if isinstance(value, (list, tuple)):
        return [plain(v, non_finite) for v in value]
    if isinstance(value, dict):
        return {k: plain(v, non_finite) for k, v in value.items()}
    return value


def _json_default(o: Any) -> Any:
    """What ``json.dumps`` writes for a value it has no spelling for: a Fraction as a float, an
    object :func:`plain` turns into data as that data."""
    if isinstance(o, Fraction):
        return float(o)
    data = plain(o)
    if data is o:
        raise TypeError(f"cannot serialise {type(o).__name__}")
    return data


def csv_text(rows: Iterable[Mapping[str, Any]], keys: Sequence[str]) -> str:
    """Rows as CSV with ``keys`` as the header, each cell through :func:`csv_value`."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([escape.csv_cell(k) for k in keys])
    for r in rows:
        w.writerow([csv_value(r.get(k)) for k in keys])
    return buf.getvalue()


def markdown_table(rows: Sequence[Mapping[str, Any]], columns: Sequence[Column], title: str | None = None) -> str:
    buf = io.StringIO()
    if title:
        buf.write(f"**{markdown_cell(title)}**\n\n")
    buf.write("| " + " | ".join(markdown_cell(c.header) for c in columns) + " |\n")
    buf.write("|" + "|".join("---:" if c.justify == "right" else "---" for c in columns) + "|\n")
    for r in rows:
        buf.write("| " + " | ".join(markdown_cell(_display(c, r)) for c in columns) + " |\n")
    return buf.getvalue()


def rich_table(rows: Sequence[Mapping[str, Any]], columns: Sequence[Column],
               lines: bool = False) -> Table:
    """A rich Table whose cells stay whole: a number column is never narrower than its widest
    number (its header wraps instead), a text column never narrower than its longest word (up to
    TEXT_MIN_WIDTH; longer words fold). ``lines``: a rule between rows (rows of several lines).
    It has no title: :func:`print_table` prints one as a paragraph above it."""
    from rich.cells import cell_len
    from rich.table import Table

    cells = [[_display(c, r) for c in columns] for r in rows]
    t = Table(show_lines=lines, header_style="bold")
    for j, c in enumerate(columns):
        column = [row[j] for row in cells]
        if c.justify == "right":  # a number
            least = max((cell_len(x) for x in column), default=1)
        else:
            words = [w for x in [c.header, *column] for w in x.split()]
            least = max((cell_len(w) for w in words), default=1) if c.wrap else max(
                (cell_len(line) for x in column for line in x.splitlines()), default=1)
            least = least if not c.wrap else min(least, TEXT_MIN_WIDTH)
        t.add_column(table_cell(c.header), justify=c.justify, overflow="fold",  # type: ignore[arg-type]
                     min_width=least)
    for row in cells:
        t.add_row(*[table_cell(x) for x in row])
    return t


def print_table(console: Any, rows: Sequence[Mapping[str, Any]], columns: Sequence[Column],
                title: str | None = None, lines: bool = False) -> None:
    """The table on ``console`` (a rich Console), its ``title`` first as a paragraph: left-aligned
    and wrapped at words to the console's width (a rich table title wraps to the table's width,
    centred: a long title over a narrow table stood as a column of short lines)."""
    if title:  # one paragraph: a line break in it (a path's) is shown as an escape, never a line of its own
        console.print(table_cell(title, one_line=True), style="table.title")
    console.print(rich_table(rows, columns, lines))


def emit(rows: Sequence[Mapping[str, Any]], columns: Sequence[Column], fmt: str = "table",
         title: str | None = None, *, wide: bool = False, lines: bool = False) -> None:
    """Print ``rows`` in ``fmt``; the terminal table leaves out ``wide`` columns unless ``wide``
    (and draws a rule between rows with ``lines``)."""
    interrupt.check()  # a Ctrl-C a finalizer dropped: no answer is printed after it
    if fmt == "csv":
        sys.stdout.write(csv_text(rows, [c.key for c in columns]))
        return
    if fmt == "markdown":  # a blank line ends the table, so a title or note printed next stays outside it
        sys.stdout.write(markdown_table(rows, columns, title) + "\n")
        return
    shown = [c for c in columns if wide or not c.wide]
    console = console_for_tables(wide)
    print_table(console, rows, shown, title, lines)
    hidden = [c.header for c in columns if c not in shown]
    if hidden:
        console.print(table_cell(f"--wide adds: {', '.join(hidden)}"), style="dim")


def table_width() -> int:
    """COLUMNS when set, else the terminal's width, else PIPED_WIDTH (output piped)."""
    import shutil

    if "COLUMNS" in os.environ or sys.stdout.isatty():
        return max(20, shutil.get_terminal_size((PIPED_WIDTH, 24)).columns)
    return PIPED_WIDTH


def console_for_tables(wide: bool = False) -> Console:
    """A console as wide as :func:`table_width` (``wide``: at least PIPED_WIDTH, so a table asked
    for with every column keeps its cells whole), writing to the current ``sys.stdout``."""
    width = max(table_width(), PIPED_WIDTH) if wide else table_width()
    return console(sys.stdout, width=width, soft_wrap=False)


def console(file: Any, **settings: Any) -> Console:
    """A rich console writing to ``file`` (ffnlab's only way to make one) whose broken pipe is a
    ``BrokenPipeError``: rich's own (``Console.on_broken_pipe``) ends the process with
    ``SystemExit(1)``, the status of a "nothing fits" answer, where ``ffnlab.cli.main`` stops a
    command whose reader went away with the broken-pipe status."""
    return _console_class()(file=file, **settings)


@functools.cache
def _console_class() -> type[Console]:
    from rich.console import Console

    class PipeConsole(Console):
        def on_broken_pipe(self) -> None:
            self.quiet = True  # nothing more is written to the pipe
            raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))

    return PipeConsole


def output(rows: Sequence[Mapping[str, Any]], columns: Sequence[Column], *, as_json: bool, fmt: str,
           title: str | None = None, wide: bool = False) -> None:
    """JSON of the rows with ``--json``, otherwise the table in ``fmt``."""
    if as_json:
        emit_json(list(rows))
    else:
        emit(rows, columns, fmt, title, wide=wide)


def flatten(obj: Any, prefix: str = "") -> dict[str, Any]:
    """A nested JSON-like object as one flat record: ``{"a": {"b": 1}, "c": [2]}`` -> ``a.b``, ``c.0``;
    a result with ``as_dict`` (:mod:`ffnlab.sizing.result`) as its JSON object."""
    if hasattr(obj, "as_dict"):
        obj = obj.as_dict()
    if isinstance(obj, Mapping):
        items: Iterable[tuple[Any, Any]] = obj.items()
    elif isinstance(obj, (list, tuple)):
        items = enumerate(obj)
    else:
        return {prefix: obj}
    out: dict[str, Any] = {}
    for k, v in items:
        out.update(flatten(v, f"{prefix}.{k}" if prefix else str(k)))
    return out


def record(obj: Any) -> None:
    """One result as a one-row CSV: the JSON flattened (``model.params.total``), raw values; a
    mapping or a result with ``as_dict`` (as :func:`flatten`)."""
    flat = flatten(obj)
    interrupt.check()
    sys.stdout.write(csv_text([flat], list(flat)))


def key_values(pairs: Sequence[tuple[str, Any]], fmt: str = "table", title: str | None = None) -> None:
    """A two-column quantity/value table (table or Markdown; CSV callers use :func:`record`)."""
    rows = [{"key": k, "value": v} for k, v in pairs]
    emit(rows, [Column("key", "quantity", justify="left"), Column("value", "value", justify="left")], fmt, title)


def note(text: str, fmt: str) -> None:
    """A line of prose after a table: wrapped at words beside a terminal table, as is beside
    Markdown, and on stderr beside CSV (so a CSV stream holds nothing but its one table)."""
    if fmt == "table":
        console_for_tables().print(table_cell(text, one_line=True))
    else:
        print(escape.terminal(text, one_line=True), file=sys.stderr if fmt == "csv" else sys.stdout)
