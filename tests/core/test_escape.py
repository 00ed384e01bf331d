"""ffnlab.escape, checked by the renderers themselves: markdown-it (CommonMark + GFM tables) for
Markdown, Python's HTML parser for HTML, Python's csv reader for CSV and rich's own console for
the terminal. Each input is hostile text as it could come from a file or folder name."""

from __future__ import annotations

import csv
import html
import io
from html.parser import HTMLParser

import pytest

from ffnlab import escape

HOSTILE = [
    "plain-name_1.0",
    "a|b|c",
    "line one\nline two\r\nthree",
    "<img src=x onerror=alert(1)>",
    "<script>alert(1)</script>",
    "[click](javascript:alert(1))",
    "![tracker](http://127.0.0.1/pixel.png)",
    "[ref]: http://127.0.0.1/",
    "`code` and \\ backslash \\| \\\\",
    "\x1b[31mred\x1b[0m \x1b]8;;http://127.0.0.1/\x07link\x1b]8;;\x07",
    "bell\x07 backspace\x08 nul\x00 c1\x9b",
    "rtl \u202eexe.txt",
    "wiki\u200btext \ufeffbom \u2060joined",
    "[link=mailto:a@b]mail[/link] [/nope] [bold]x",
    "=HYPERLINK(\"http://127.0.0.1\",\"x\")",
    "&lt;b&gt; &amp; entity",
]
CONTROLS = [chr(c) for c in [*range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0)]] + ["\u202e", "\u2066",
                                                                                           "\u200b", "\u2060", "\ufeff"]


def _visible(text: str) -> str:
    """What escape makes of control characters, written out by hand: \\xNN or \\uNNNN."""
    return "".join(f"\\x{ord(c):02x}" if c in CONTROLS and ord(c) < 0x100 else
                   f"\\u{ord(c):04x}" if c in CONTROLS else c for c in text)


# ---------------------------------------------------------------- Markdown


def _md_table(cells: list[str]) -> str:
    from markdown_it import MarkdownIt

    row = "| " + " | ".join(escape.markdown(c) for c in cells) + " |"
    head = "| " + " | ".join(f"h{i}" for i in range(len(cells))) + " |"
    return MarkdownIt("commonmark").enable("table").render(f"{head}\n|{'---|' * len(cells)}\n{row}\n")


class _Collect(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.cells: list[str] = []
        self._in_td = False

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.tags.append(tag)
        if tag == "td":
            self._in_td = True
            self.cells.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "td":
            self._in_td = False

    def handle_data(self, data: str) -> None:
        if self._in_td:
            self.cells[-1] += data


@pytest.mark.parametrize("text", HOSTILE)
def test_markdown_cell_renders_as_exactly_its_text(text):
    rendered = _md_table([text, "next"])
    p = _Collect()
    p.feed(rendered)
    assert set(p.tags) <= {"table", "thead", "tbody", "tr", "th", "td"}, rendered  # no a, img, script, code
    assert len(p.cells) == 2 and p.cells[1] == "next", rendered  # pipes and newlines did not split the row
    one_line = " ".join(text.replace("\r\n", "\n").replace("\r", "\n").split("\n"))
    assert p.cells[0] == _visible(one_line).strip(), rendered


def test_markdown_line_outside_a_table_makes_no_link_or_html():
    from markdown_it import MarkdownIt

    text = "# title [x](http://127.0.0.1) <b>bold</b>\n- item"
    rendered = MarkdownIt("commonmark").render("# " + escape.markdown(text) + "\n")
    assert rendered.count("<h1>") == 1 and "<a " not in rendered and "<b>" not in rendered and "<li>" not in rendered


# ---------------------------------------------------------------- HTML


@pytest.mark.parametrize("text", HOSTILE)
def test_html_text_and_attributes_hold_exactly_the_text(text):
    p = _Collect()
    p.feed(f"<table><tr><td title=\"{escape.html(text)}\">{escape.html(text)}</td></tr></table>")
    assert p.tags == ["table", "tr", "td"]
    assert p.cells == [_visible(text)]
    assert html.unescape(escape.html(text)) == _visible(text)


# ---------------------------------------------------------------- CSV


@pytest.mark.parametrize("value, shown", [
    ("=1+1", "'=1+1"), ("+SUM(A1)", "'+SUM(A1)"), ("-2+3", "'-2+3"), ("@cmd", "'@cmd"), ("\tx", "'\tx"),
    ("\r=1", "\\x0d=1"), ("-0.5", "-0.5"), ("+3e-4", "+3e-4"), ("name=1", "name=1"), ("gelu-r4", "gelu-r4"),
    (-3, "-3"), (0.25, "0.25"), (None, ""), (True, "True"),
])
def test_csv_cells_never_start_a_formula(value, shown):
    # a carriage return is shown as an escape (the nineteenth CLI pass's K1), so "\r=1" starts with "\"
    buf = io.StringIO(newline="")
    csv.writer(buf).writerow([escape.csv_cell(value), "next"])
    assert next(csv.reader(io.StringIO(buf.getvalue(), newline=""))) == [shown, "next"]


# ---------------------------------------------------------------- terminal


def _table_output(cell: str, title: str = "t") -> str:
    from rich.console import Console
    from rich.table import Table

    t = Table(title=escape.terminal_text(title))
    t.add_column("x")
    t.add_row(escape.terminal_text(cell))
    buf = io.StringIO()
    Console(file=buf, width=400, color_system=None, force_terminal=False).print(t)
    return buf.getvalue()


@pytest.mark.parametrize("text", HOSTILE)
def test_terminal_table_shows_markup_and_escapes_as_text(text):
    out = _table_output(text, title=text)
    assert not any(c in out for c in CONTROLS)  # nothing the terminal would act on (color off: rich adds none)
    for piece in ("[/nope]", "[link=mailto:a@b]", "\\x1b[31m"):
        if piece.replace("\\x1b", "\x1b") in text:
            assert piece in out, out  # the markup shows as the characters typed


def test_every_format_character_but_the_joiners_is_shown_as_an_escape():
    """Oracle: Python's unicodedata (category Cf), not escape's own table; the joiners U+200C and
    U+200D, which shape Persian and Indic words and join emoji, are kept as they are."""
    import sys
    import unicodedata

    joiners = {"\u200c", "\u200d"}
    formats = [chr(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) == "Cf"]
    assert len(formats) > 150, len(formats)
    shown = {ch: escape.terminal(f"a{ch}b") for ch in formats}
    assert [ch for ch, text in shown.items() if (ch in text) != (ch in joiners)] == []
    assert escape.terminal("\U000e0041") == "\\U000e0041"  # a tag: Python's 8-digit form
    assert escape.terminal("\u2062") == "\\u2062"


def test_terminal_keeps_newlines_unless_one_line():
    assert escape.terminal("a\nb\tc\x1b") == "a\nb\tc\\x1b"
    assert escape.terminal("a\nb\tc", one_line=True) == "a\\x0ab\\x09c"


# ---------------------------------------------------------------- shell

SHELL_WORDS = ["r\x85x", "run\x9b2J", "nb\xa0sp", "r\udcfdx", "r\udc85\x85x", "a\nb", "t\tab", "ls\u2028p",
               "it's \\x41 \x1b[31m", "\u061c\u200e-x", "wiki\u200btext", "\ufeffx\u2060", "\u00e9t\u00e9", "$HOME`id`",
               "-", "--help", "~/x"]


@pytest.mark.parametrize("locale", ["C.UTF-8", "C"])
def test_shell_words_read_back_by_bash_as_the_same_bytes(locale):
    """Oracle: bash itself, in a UTF-8 locale and in C (a name's bytes, not its characters, are
    what a shell must reproduce: U+0085 is C2 85, the byte 0x85 a different name)."""
    import os
    import shutil
    import subprocess

    if shutil.which("bash") is None:
        pytest.skip("no bash")
    line = escape.shell_command(*SHELL_WORDS)
    assert not escape._CONTROL_OR_BREAK.search(line), line  # nothing a terminal would act on
    p = subprocess.run(["bash", "-c", f'set -- {line}; printf "%s\\0" "$@"'], capture_output=True, check=True,
                       env={**os.environ, "LC_ALL": locale})
    got = p.stdout.split(b"\0")[:-1]
    assert got == [w.encode("utf-8", "surrogateescape") for w in SHELL_WORDS], (line, got)


@pytest.mark.parametrize("name", ["~", "~/run", "~root/run", "~nosuchuser/x", "-x", "--help", "-", "a/~b", "/abs/~x"])
def test_path_args_read_back_by_ffnlabs_path_parser_as_the_same_path(name, tmp_path, monkeypatch):
    """Oracle: the CLI's own --out parser (cli.app.user_path), after bash: the folder named, never
    a home folder or an option."""
    import os
    import subprocess
    from pathlib import Path

    from ffnlab.cli.app import user_path

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    arg = escape.path_arg(Path(name))
    assert not arg.startswith("-"), arg
    p = subprocess.run(["bash", "-c", f"printf %s {escape.shell_word(arg)}"], capture_output=True, check=True)
    word = p.stdout.decode()
    assert os.path.abspath(user_path(word)) == os.path.abspath(name), (arg, word)


PYTHON_NAMES = [*SHELL_WORDS, "it's", 'say "x"', "q'\"\\'", "a\\nb", "back\\", "\\x41\\u0041", "nul\x00", "\x7f\x9b",
                "rtl \u202eexe.txt", "\u2066iso\u2069", "\U0001f600", "\udcff\udc80", "cr\rlf"]


def test_python_str_is_a_literal_a_fresh_python_reads_as_the_same_name(tmp_path):
    """Oracle: another Python process, parsing the literals from a UTF-8 source file as pasted code
    is, finds each folder made here by its bytes (os.fsencode) and writes back those bytes."""
    import os
    import subprocess
    import sys

    names = [n for n in PYTHON_NAMES if "\x00" not in n and "/" not in n]
    for name in names:
        os.mkdir(os.path.join(os.fsencode(tmp_path), os.fsencode(name)))
    literals = [escape.python_str(n) for n in PYTHON_NAMES]
    for lit in literals:  # one printable line each: nothing a terminal acts on, no line a paste splits
        assert lit.isprintable() and not escape._CONTROL_OR_BREAK.search(lit), lit
    script = tmp_path / "paste.py"
    script.write_text("import os, sys\n"
                      f"names = [{', '.join(literals)}]\n"
                      "print(' '.join(os.fsencode(n).hex() for n in names))\n"
                      f"sys.stderr.write(str(sum(os.path.isdir(n) for n in names)))\n", encoding="utf-8")
    p = subprocess.run([sys.executable, str(script)], capture_output=True, check=True, cwd=tmp_path)
    assert [bytes.fromhex(h) for h in p.stdout.decode().split()] == [os.fsencode(n) for n in PYTHON_NAMES]
    assert int(p.stderr) == len(names)


def test_render_tables_escape_every_format(capsys):
    """The CLI's table printer (render.emit) sends each cell through escape for its format."""
    from ffnlab import render

    rows = [{"name": "[link=mailto:x]m[/link] [/nope]\x1b[2J", "v": "=1+1"}]
    cols = [render.Column("name", "name", justify="left"), render.Column("v", "v")]
    render.emit(rows, cols, "table", title="[/bad]")
    out = capsys.readouterr().out
    assert "[/nope]" in out and "\\x1b[2J" in out and "\x1b[2J" not in out and "[/bad]" in out
    render.emit(rows, cols, "csv")
    assert next(csv.DictReader(io.StringIO(capsys.readouterr().out)))["v"] == "'=1+1"
    render.emit([{"name": "a|b\n<i>", "v": 1}], cols, "markdown")
    assert "a\\|b &lt;i&gt;" in capsys.readouterr().out


def test_probe_page_text_from_the_corpus_carries_no_control_characters():
    from ffnlab.experiments.reporting.probe import _show

    shown = _show("a\x1b[31m<b>\nz\t")
    assert "\x1b" not in shown and shown.endswith("z\u21e5") and "\u21b5" in shown
    # the HTML is the autoescaping template's to escape (tests/cli/test_links.py: hostile text on every page)


def test_figure_text_from_data_is_drawn_as_text_with_escapes_and_no_raw_warning():
    """A folder or budget name with control characters or '$': matplotlib would warn about the
    missing glyphs, echoing them raw to the terminal, or parse TeX; plain_text shows them as escapes."""
    import warnings

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ffnlab.experiments.reporting.plots import _png

    fig, ax = plt.subplots()
    ax.plot([1, 10], [1, 2], label="b\x1b[31m\x07 $\\undefined$")
    ax.set_xscale("log")
    ax.legend()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a missing-glyph or TeX-parse problem fails the test
        png = _png(fig)
    assert png.startswith(b"\x89PNG")
    assert fig.axes[0].get_legend().get_texts()[0].get_text() == "b\\x1b[31m\\x07 $\\undefined$"
