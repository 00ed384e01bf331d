"""Text from files and folders made safe for each output format, in one place.

Names, descriptions and evidence strings come from files a user (or anyone who wrote a folder
ffnlab reads) controls. Before such text reaches an output it goes through the function for that
output's format, so it shows as the characters it is, never as formatting or commands:

* :func:`terminal` - control characters (ANSI/OSC escape sequences, C1 codes, backspace, bidi
  overrides) made visible as ``\\x1b``-style escapes, and the bytes that are not UTF-8 in a file
  or folder name (lone surrogates, which no UTF-8 stream can print) as ``\\xfd``; tabs and
  newlines kept unless ``one_line`` (:func:`one_line`). Rich tables receive the result as :func:`terminal_text` (a
  ``rich.text.Text``), so ``[link=...]`` and ``[/x]`` are never read as markup.
* :func:`markdown` - one Markdown line or table cell: no line breaks; backslashes, pipes,
  backticks and brackets escaped with a backslash (no link, image or code span can start);
  ``& < >`` written as entities (no raw HTML in any renderer); control characters made visible.
* :func:`csv_cell` - a spreadsheet cell: text starting with ``= + - @``, a tab or a line break
  that is not a plain number gets a leading ``'`` (OWASP's formula-injection advice), so a
  spreadsheet shows it instead of evaluating it.
* :func:`shell_command` - a command line ffnlab prints for the user to run: each word quoted as a
  POSIX shell reads it back (``shlex``), or, where it holds a character :func:`terminal` escapes,
  in bash's ``$'...'`` form with that character's UTF-8 bytes as ``\\xHH`` escapes (a name's
  byte that is not UTF-8 as itself), so it pastes as the name it is, in any locale, and shows no
  control character. A file or folder in such a command goes through :func:`path_arg` first, so
  that ffnlab's own path options (``~`` expanded, ``-`` an option) read it back as that path too.
* :func:`python_str` - a name in a line of Python ffnlab prints for the user to paste: a Python
  string literal that evaluates to exactly that name (a byte that is not UTF-8 as the
  ``\\udcHH`` that ``os.fsdecode`` makes of it, so ``os.fsencode`` gives the name's own bytes),
  every character :func:`terminal` escapes written as a ``\\x``/``\\u`` escape.
* :func:`html` - HTML text and attribute values: ``& < > " '`` as entities, control characters
  made visible (templates that autoescape use :func:`visible` as their ``finalize`` hook).

Pure functions; no imports beyond the standard library (rich only in :func:`terminal_text`).
"""

from __future__ import annotations

import html as _html
import re
import shlex
from typing import Any

# Unicode's format characters (category Cf, as of Unicode 15.0): each shows nothing or reorders what a
# reader sees (the bidi marks of CVE-2021-42574 "Trojan Source"; ``wiki<U+200B>text`` reads as
# wikitext), so a name holding one is shown with it as an escape. Kept as data, checked against
# Python's unicodedata by test_escape; the zero-width non-joiner and joiner (U+200C, U+200D) are left
# out: they shape the letters of Persian and Indic words and join emoji, and show in what they join.
FORMAT_CHARACTERS = ("\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b\u200e\u200f"
                     "\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd"
                     "\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001"
                     "\U000e0020-\U000e007f")
# with the C0 controls but tab and newline, DEL, C1 controls, the line and paragraph separators
# (which break a line) and lone surrogates: a file or folder name of bytes that are not UTF-8
# (Python's surrogateescape, ``$'\xfd'``), which no UTF-8 stream can print: shown as the byte they
# stand for (``\xfd``)
_CONTROL = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029{FORMAT_CHARACTERS}\ud800-\udfff]")
_CONTROL_OR_BREAK = re.compile(f"[\x00-\x1f\x7f-\x9f\u2028\u2029{FORMAT_CHARACTERS}\ud800-\udfff]")
_LINE_BREAKS = re.compile("\r\n|[\r\n\t\u2028\u2029]")
_MARKDOWN_SYNTAX = re.compile(r"([\\`|\[\]])")
_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\n")


def _visible(ch: str) -> str:
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:  # the byte a surrogateescape'd name holds
        return f"\\x{code - 0xDC00:02x}"
    if code > 0xFFFF:  # a tag or other astral format character: Python's 8-digit form, never ambiguous
        return f"\\U{code:08x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(value: Any) -> Any:
    """Strings with their control characters shown as escapes (tabs, newlines kept); other values,
    and markup a template already escaped (``__html__``), as they are. The step every format
    shares; a template engine's ``finalize`` hook."""
    if not isinstance(value, str) or hasattr(value, "__html__"):
        return value
    return _CONTROL.sub(lambda m: _visible(m.group()), value)


def terminal(text: Any, *, one_line: bool = False) -> str:
    """``text`` for a terminal: control characters shown as escapes (``one_line``: newlines and
    tabs too)."""
    pattern = _CONTROL_OR_BREAK if one_line else _CONTROL
    return pattern.sub(lambda m: _visible(m.group()), str(text))


def one_line(text: Any) -> str:
    """:func:`terminal` for a single line: line breaks shown as spaces, so no line can be faked."""
    return terminal(_LINE_BREAKS.sub(" ", str(text)), one_line=True)


def _bytes(ch: str) -> str:
    """``ch`` inside bash's ``$'...'``: its bytes in a file name as ``\\xHH`` each (bash writes
    ``\\xHH`` as that one byte, whatever the locale: U+0085 is C2 85, not the byte 85), a name's byte
    that is not UTF-8 (a surrogateescape'd ``\\udcHH``) as itself; a lone surrogate no name can hold
    as :func:`_visible` shows it."""
    try:
        return "".join(f"\\x{b:02x}" for b in ch.encode("utf-8", "surrogateescape"))
    except UnicodeEncodeError:
        return _visible(ch)


def shell_word(text: Any) -> str:
    """``text`` as one shell word (see :func:`shell_command`)."""
    word = str(text)
    if not _CONTROL_OR_BREAK.search(word):
        return shlex.quote(word)
    body = word.replace("\\", "\\\\").replace("'", "\\'")  # bash's $'...': backslash and quote escaped
    return "$'" + _CONTROL_OR_BREAK.sub(lambda m: _bytes(m.group()), body) + "'"


def path_arg(path: Any) -> str:
    """``path`` (a file or folder) as a command-line argument that ffnlab's path options and
    arguments (``cli.app.user_path``) read back as the same path: a relative one opening with ``~``
    (a folder named ``~``, or ``~x``, which ``user_path`` would expand to a home folder) or with
    ``-`` (which would be read as an option) written ``./~/run``, ``./-x``. ``pathlib`` drops the
    ``./`` a user typed (``Path("./~/run") == Path("~/run")``), so every command ffnlab prints or
    starts names its paths through this. Quote it for a shell with :func:`shell_word`."""
    text = str(path)
    return "./" + text if text.startswith(("~", "-")) else text


def shell_command(*words: Any) -> str:
    """A command line of ``words`` that a shell splits back into them (:func:`shell_word`)."""
    return " ".join(shell_word(w) for w in words)


def python_str(text: Any) -> str:
    """``text`` (a file or folder name) as a Python string literal that evaluates to exactly it
    (:func:`shell_word`'s counterpart for a line of Python): quotes and backslashes escaped; tabs,
    newlines, control characters, bidi marks and line separators (every character that is not
    printable, a superset of what :func:`terminal` escapes) as ``\\t``, ``\\n``, ``\\xHH``,
    ``\\uHHHH`` escapes, which Python reads back as the same character; a name's byte that is not
    UTF-8 (a surrogateescape'd ``\\udcHH``) as ``\\udcHH``, the string ``os.fsdecode`` makes of the
    name's bytes, which every file function of Python's encodes back to that byte. This is Python's
    own ``repr`` of the string: the literal its parser reads as that string, on one line."""
    return repr(str(text))


def terminal_text(text: Any, **style: Any) -> Any:
    """:func:`terminal` as a ``rich.text.Text``, which rich prints as it is (no markup)."""
    from rich.text import Text

    return Text(terminal(text), **style)


def markdown(text: Any) -> str:
    """``text`` as one Markdown line or table cell that renders as exactly these characters."""
    s = _LINE_BREAKS.sub(" ", str(text))
    s = _CONTROL.sub(lambda m: _visible(m.group()), s)
    s = _MARKDOWN_SYNTAX.sub(r"\\\1", s)
    return re.sub("[&<>]", lambda m: _ENTITIES[m.group()], s)


def csv_cell(value: Any) -> Any:
    """``value`` for a CSV cell: numbers as they are; text that a spreadsheet would run as a
    formula gets a leading ``'``; control characters shown as escapes, a carriage return too (ffnlab's
    tables end rows in a line feed, which the writer quotes; a bare CR split the row for a reader and
    overwrote it on a terminal); ``None`` empty."""
    if value is None:
        return ""
    if isinstance(value, (bool, int, float)):
        return value
    s = _CONTROL.sub(lambda m: _visible(m.group()), str(value))
    if s.startswith(FORMULA_START) and not _NUMBER.fullmatch(s):
        return "'" + s
    return s


def html(text: Any) -> str:
    """``text`` for HTML (element text or a quoted attribute value)."""
    return _html.escape(_CONTROL.sub(lambda m: _visible(m.group()), str(text)), quote=True)


__all__ = ["csv_cell", "html", "markdown", "one_line", "path_arg", "python_str", "shell_command", "shell_word",
           "terminal", "terminal_text", "visible"]
