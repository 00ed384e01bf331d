"""Make text from files and folders safe for each output format (one function per format).

Names, descriptions and evidence strings come from config.json files, sweep specs and folder
names, so they may hold anything. Each function here returns text that shows the same words in
its format without being able to act on it:

* :func:`terminal`: control characters (ANSI/OSC escapes, carriage returns, bidi overrides)
  are shown as ``\\x1b``-style escapes; the result is plain text (callers hand it to rich as
  ``rich.text.Text``, so ``[link=...]`` is never read as markup).
* :func:`markdown`: one table cell or line: newlines become spaces, ``& < >`` become entities
  and ``\\ | [ ] ` `` get a backslash, so a cell can neither end the row, open raw HTML (in
  any renderer) nor make a link.
* :func:`csv_cell`: a spreadsheet does not run it as a formula (OWASP's leading-quote rule).
* :func:`html`: entities for ``& < > " '``.

Pure functions on ``str``; no imports beyond the standard library.
"""

from __future__ import annotations

import html as _html
import re

# C0 and C1 controls, DEL, and the bidirectional overrides/isolates that reorder what a reader sees
_BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f" + _BIDI + "\u2028\u2029]")
_LINE_BREAKS = re.compile("\r\n|[\r\n\u2028\u2029]")
_MARKDOWN_SPECIAL = re.compile(r"([\\|\[\]`])")
_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\n")
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def _visible(ch: str) -> str:
    """A control character as a visible escape: ``\\x1b``, ``\\u202e``."""
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _escape_controls(text: str, keep: str = "") -> str:
    return _CONTROLS.sub(lambda m: m.group() if m.group() in keep else _visible(m.group()), text)


def terminal(text: str) -> str:
    """``text`` with every control character shown as an escape, except newlines and tabs.

    The result still has to be printed as plain text (``rich.text.Text`` or ``print``), never as
    rich markup.
    """
    return _escape_controls(str(text).replace("\r\n", "\n"), keep="\n\t")


def one_line(text: str) -> str:
    """:func:`terminal` for a single line: line breaks shown as spaces, so no line can be faked."""
    return terminal(_LINE_BREAKS.sub(" ", str(text)))


def markdown(text: str) -> str:
    """``text`` as one Markdown table cell (or inline text): one line, no HTML, no links."""
    flat = _LINE_BREAKS.sub(" ", str(text)).replace("\t", " ")
    escaped = _MARKDOWN_SPECIAL.sub(r"\\\1", _escape_controls(flat))
    return re.sub("[&<>]", lambda m: _ENTITIES[m.group()], escaped)


def csv_cell(text: str) -> str:
    """``text`` for a CSV cell that a spreadsheet shows as text, not as a formula.

    A cell starting with ``= + - @``, a tab or a line break gets a leading ``'`` unless it is a
    plain number (``-0.5`` stays a number). Other control characters are shown as escapes.
    """
    text = _escape_controls(str(text), keep="\n\t\r")
    if text.startswith(_FORMULA_START) and not _NUMBER.fullmatch(text):
        return "'" + text
    return text


def html(text: str) -> str:
    """``text`` for HTML element content or a quoted attribute value."""
    return _html.escape(_escape_controls(str(text), keep="\n\t"), quote=True)
