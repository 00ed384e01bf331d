"""One validation of user values, shared by the CLI, run configs, sweep specs and config.json.

* numbers: :func:`integer` and :func:`number` refuse booleans, non-finite values and values out
  of range; :func:`fraction` reads ``4``, ``2.5`` or ``8/3`` exactly with a bounded number of
  digits (``1e5000`` is refused before any arithmetic, never expanded);
* typed field specs: a dataclass field annotated ``Annotated[int, between(1, 2**20)]`` is checked
  by :func:`build`, which turns a parsed mapping into the dataclass (nested dataclasses, lists,
  optional values, unknown keys with a "did you mean"), every error in one wording:
  ``<context>: <key> must be <expectation>, got <value>``;
* counts on the command line: :func:`count`, the one parser of ``8k``, ``8K``, ``8Ki``, ``15T``
  (sizes by vLLM's ``--max-model-len`` convention, totals in decimal: :data:`SIZE_FORMS`,
  :data:`TOTAL_FORMS`);
* names and paths: :func:`safe_name` (one folder name, never ``.`` or ``..``),
  :func:`confined` (a path built from user data stays inside its parent) and :func:`named` (an
  empty path or model name is refused, never read as the working folder).

Every failure is one :class:`~ffnlab.errors.FfnlabError` line. Pure Python (no torch).
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import math
import re
import types
import typing
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, Union

from ffnlab.errors import FfnlabError

MAX_DIGITS = 30  # longest integer (in decimal digits) any ffnlab input needs
MAX_EXPONENT = 30  # |exponent| of a number written as text, e.g. 1e30
MAX_TEXT = 64  # longest number written as text
SEED_MAX = 2**32 - 1  # numpy's generators take seeds below 2**32
_NUMBER = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)(e[+-]?[0-9]+)?", re.IGNORECASE)  # ASCII digits only
_NAME = re.compile(r"[A-Za-z0-9_.-]+")


CLIP = 200  # characters of a user's value an error line quotes before cutting it (:func:`clip`)


def clip(text: Any, limit: int = CLIP, length: int | None = None) -> str:
    """``text`` (a value, a path) as an error line quotes it: whole up to ``limit`` characters,
    longer cut to a prefix, an ellipsis and its length (``xxxx... (100,000 characters)``), so a
    100,000-character ``--gpu`` or model name is a line, not 100 KB. ``length``: the length to
    state where ``text`` is already a cut (:func:`show`'s repr of a long string's head). The one
    place error lines cut what the user gave (:func:`show`, the CLI's line for a system error)."""
    text = str(text)
    total = len(text) if length is None else length
    if len(text) <= limit and total <= limit:
        return text
    return f"{text[: max(limit - 3, 1)]}... ({total:,} characters)"


_LONG = f"{{{CLIP + 1},}}"  # a regular expression's count: more than CLIP
_LONG_QUOTED = re.compile(f"'([^'\\n]{_LONG})'|\"([^\"\\n]{_LONG})\"")
_LONG_RUN = re.compile(f"\\S{_LONG}")
_OPENERS, _CLOSERS = "'\"([", "'\".,:;)]?!"


def clip_values(message: str, quoted: bool = False) -> str:
    """``message``, an error line written by code that does not quote through :func:`show` (click's
    usage errors: "Invalid value for '--lora-alpha': 'aaaa...' is not a valid float.", "No such
    option: --xaaaa...", "No such command 'aaaa...'."), with each long value cut by :func:`clip`,
    its length said, and the rest of the line as it was: every run of more than :data:`CLIP`
    characters without a space (its brackets, quotes and closing punctuation kept outside the cut)
    and, where ``quoted`` (a message whose quotes are all around values, as click's are, not the
    apostrophes of prose), every quoted span of more than :data:`CLIP` characters."""
    if quoted:
        message = _LONG_QUOTED.sub(lambda m: (q := m.group(0)[0]) + clip(m.group(1) or m.group(2)) + q, message)

    def cut(m: re.Match[str]) -> str:
        run = m.group(0)
        head = len(run) - len(run.lstrip(_OPENERS))
        tail = len(run) - len(run.rstrip(_CLOSERS))
        core = run[head:len(run) - tail]
        return run[:head] + clip(core) + run[len(run) - tail:] if len(core) > CLIP else run

    return _LONG_RUN.sub(cut, message)


def show(value: Any, limit: int = 60) -> str:
    """A short, always printable ``repr`` of a user value (huge integers and strings abridged:
    :func:`clip`, with the length of a long string)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**MAX_DIGITS:
        return f"an integer of about {int(math.log10(abs(value))) + 1} digits"
    try:
        text = repr(value[: limit + 1] if isinstance(value, str) else value)
    except ValueError:  # e.g. a Fraction too long to print
        return f"a {type(value).__name__} too long to print"
    if isinstance(value, str) and len(value) > limit:
        return clip(text, limit, length=len(value))
    return text if len(text) <= limit else text[: limit - 3] + "..."


def named(value: str, what: str) -> str:
    """``value``, a file, folder or model the user named, refused in one line if empty: ``Path("")``
    is the working folder, so ``ffnlab audit "$MODEL"`` with MODEL unset would read ./config.json
    and ``--out ""`` write into the working folder, a file nobody named (``mkdir ""`` refuses too)."""
    if isinstance(value, str) and value == "":
        raise FfnlabError(f"{what} is empty: an empty name names no file, folder or model (an unset shell "
                          "variable?); give one, or '.' for the working folder")
    return value


def _whole(value: Any) -> Any:
    """What list items are compared by for uniqueness: the whole value (``show`` abridges it, so
    two long names differing past its limit would look equal)."""
    try:
        return repr(value)
    except ValueError:  # an integer too long for repr
        import pickle

        return pickle.dumps(value)


def fail(where: str, expectation: str, value: Any) -> FfnlabError:
    """The one wording of a validation error: ``<where> must be <expectation>, got <value>``."""
    return FfnlabError(f"{where} must be {expectation}, got {show(value)}")


def _bounds(lo: float | Fraction | None, hi: float | Fraction | None,
            lo_open: bool = False, hi_open: bool = False) -> str:
    if lo is not None and hi is not None and not lo_open and not hi_open:
        return f" in [{_num(lo)}, {_num(hi)}]"
    parts = []
    if lo is not None:
        parts.append(f"{'>' if lo_open else '>='} {_num(lo)}")
    if hi is not None:
        parts.append(f"{'<' if hi_open else '<='} {_num(hi)}")
    return " " + " and ".join(parts) if parts else ""


def _num(x: float | Fraction) -> str:
    if isinstance(x, int) and abs(x) >= 2**20 and x == 2 ** (x.bit_length() - 1):
        return f"2**{x.bit_length() - 1}"
    if isinstance(x, int) and abs(x) >= 2**20 and x + 1 == 2 ** x.bit_length():
        return f"2**{x.bit_length()}-1"
    return f"{x:g}" if isinstance(x, float) else str(x)


def _in_range(x: float | Fraction, lo: float | Fraction | None, hi: float | Fraction | None,
              lo_open: bool, hi_open: bool) -> bool:
    if lo is not None and (x <= lo if lo_open else x < lo):
        return False
    return not (hi is not None and (x >= hi if hi_open else x > hi))


def integer(value: Any, where: str, lo: int | None = None, hi: int | None = None) -> int:
    """``value`` as an integer in [lo, hi] (booleans and floats refused)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise fail(where, "an integer" + _bounds(lo, hi), value)
    if not _in_range(value, lo, hi, False, False):
        raise fail(where, "an integer" + _bounds(lo, hi), value)
    return value


def _text_number(value: str, where: str, expectation: str) -> str:
    s = value.strip()
    m = _NUMBER.fullmatch(s)
    if len(s) > MAX_TEXT or m is None or (m.group(2) and abs(int(m.group(2)[1:])) > MAX_EXPONENT):
        raise fail(where, expectation, value)
    return s


def number(value: Any, where: str, lo: float | None = None, hi: float | None = None, *,
           lo_open: bool = False, hi_open: bool = False, text_ok: bool = True) -> float:
    """``value`` as a finite float within the bounds (numeric text such as ``3e-4`` accepted)."""
    expectation = "a finite number" + _bounds(lo, hi, lo_open, hi_open)
    if isinstance(value, bool):
        raise fail(where, expectation, value)
    if isinstance(value, str) and text_ok:
        value = float(_text_number(value, where, expectation))
    if not isinstance(value, (int, float)):
        raise fail(where, expectation, value)
    try:
        x = float(value)
    except OverflowError:
        raise fail(where, expectation, value) from None
    if not math.isfinite(x) or not _in_range(x, lo, hi, lo_open, hi_open):
        raise fail(where, expectation, value)
    return x


def fraction(value: Any, where: str, lo: Fraction | int = 0, hi: Fraction | int = 10**6, *,
             lo_open: bool = True) -> Fraction:
    """``4``, ``2.5``, ``"8/3"`` or ``"2.6875"`` as an exact fraction in (lo, hi] (bounded digits)."""
    expectation = f"a number{_bounds(lo, hi, lo_open)} (such as 4, 2.5 or 8/3)"
    if isinstance(value, Fraction):
        x = value
    elif isinstance(value, bool):
        raise fail(where, expectation, value)
    elif isinstance(value, int):
        x = Fraction(value)
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise fail(where, expectation, value)
        x = Fraction(str(value))
    elif isinstance(value, str):
        parts = value.split("/")
        if len(parts) > 2:
            raise fail(where, expectation, value)
        try:  # a part that is no number, or one with a huge exponent: the whole text is quoted
            nums = [Fraction(_text_number(p, where, expectation)) for p in parts]
        except FfnlabError:
            if len(parts) == 1:
                raise
            raise fail(where, f"{expectation[:-1]}; exponents within +-{MAX_EXPONENT})", value) from None
        if len(nums) == 2 and nums[1] == 0:
            raise fail(where, expectation, value)
        x = nums[0] / nums[1] if len(nums) == 2 else nums[0]
    else:
        raise fail(where, expectation, value)
    if not _in_range(x, lo, hi, lo_open, False):
        raise fail(where, expectation, value)
    return x


def choice(value: Any, where: str, options: tuple[str, ...]) -> str:
    """``value`` if it is one of ``options`` (with a "did you mean" for a near miss)."""
    if isinstance(value, str) and value in options:
        return value
    close = difflib.get_close_matches(str(value)[:MAX_TEXT], options, n=1) if isinstance(value, str) else []
    hint = f" (did you mean {close[0]}?)" if close else ""
    raise FfnlabError(f"{where} must be one of {', '.join(options)}, got {show(value)}{hint}")


def utf8_text(value: Any, where: str) -> str:
    """``value`` as text that is UTF-8: a command-line argument holding bytes that are not UTF-8
    arrives as a str with lone surrogates (Python's surrogateescape), which no tokenizer or file
    can take; refused naming the first bad byte."""
    if not isinstance(value, str):
        raise fail(where, "text", value)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = value[exc.start]
        byte = f"byte 0x{ord(bad) - 0xDC00:02x}" if 0xDC80 <= ord(bad) <= 0xDCFF else f"U+{ord(bad):04X}"
        raise FfnlabError(f"{where} is not UTF-8 text ({byte} at character {exc.start})") from None
    return value


# the prefix of every name ffnlab gives its own files beside the user's (``files.TEMP_PREFIX``
# ``.ffnlab-tmp-``, ``files.OLD_PREFIX``, the marker ``files.MARK``): stale-temporary cleaning
# removes such names, so no name the user chooses may take it (in any case: a case-insensitive
# file system reads ``.FFNLAB-TMP-`` as the same)
RESERVED_PREFIX = ".ffnlab-"


def safe_name(value: Any, where: str) -> str:
    """``value`` as one folder or file name: letters, digits, ``_ . -``; never ``.`` or ``..``, never
    one of ffnlab's own names (:data:`RESERVED_PREFIX`)."""
    if not isinstance(value, str) or _NAME.fullmatch(value) is None or set(value) == {"."} \
            or len(value) > 100:
        raise fail(where, "a name of letters, digits, _ . - (not . or .., at most 100 characters)", value)
    if value.casefold().startswith(RESERVED_PREFIX):
        raise FfnlabError(f"{where} must not begin with {RESERVED_PREFIX!r}, got {show(value)}: ffnlab names its own "
                          "temporary files that way (and removes stale ones); name it otherwise")
    return value


def case_twins(names: Any, what: str) -> None:
    """Refuse two of ``names`` (folder names, already checked by :func:`safe_name`) that differ only
    by case, in one line naming both: on a case-insensitive file system (macOS's and Windows'
    defaults) they are one folder, and the second would write into the first. Identical names are
    the caller's own uniqueness check."""
    seen: dict[str, str] = {}
    for name in names:
        if not isinstance(name, str):
            continue
        first = seen.setdefault(name.casefold(), name)
        if first != name:
            raise FfnlabError(f"{what} {first!r} and {name!r} differ only by case: on a case-insensitive file "
                              "system (macOS, Windows) they would share one folder; rename one")


def confined(parent: Path, relative: str | Path, where: str) -> Path:
    """``parent / relative``, refused unless it resolves (symlinks followed) inside ``parent``."""
    parent = Path(parent)
    rel = Path(relative)
    target = (parent / rel).resolve()
    root = parent.resolve()
    if rel.is_absolute() or not target.is_relative_to(root) or target == root:
        raise FfnlabError(f"{where} must name something inside {parent}, got {show(str(relative))}")
    return parent / rel


# -- typed field specs -------------------------------------------------------------------------

@dataclass(frozen=True)
class Check:
    """A constraint attached to a dataclass field with ``typing.Annotated``."""

    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    hi_open: bool = False
    choices: tuple[str, ...] = ()
    name: bool = False  # a safe folder/file name
    nonempty: bool = False
    unique: bool = False
    label: str = ""  # what the field is, added to its key in messages: "arms[0].name (the arm name)"

    def apply(self, value: Any, where: str) -> Any:
        if self.label:
            where = f"{where} ({self.label})"
        if self.choices and isinstance(value, str):
            return choice(value, where, self.choices)
        if self.name and isinstance(value, str):
            return safe_name(value, where)
        if isinstance(value, (list, dict)):
            if self.nonempty and not value:
                raise fail(where, f"a non-empty {'list' if isinstance(value, list) else 'mapping'}", value)
            if self.unique and isinstance(value, list) and len(set(map(_whole, value))) != len(value):
                raise fail(where, "a list of unique values", value)
            return value
        if isinstance(value, (int, float)) and not isinstance(value, bool) \
                and not _in_range(value, self.lo, self.hi, self.lo_open, self.hi_open):
            kind = "an integer" if isinstance(value, int) else "a finite number"
            raise fail(where, kind + _bounds(self.lo, self.hi, self.lo_open, self.hi_open), value)
        return value


def between(lo: float, hi: float) -> Check:
    return Check(lo=lo, hi=hi)


def above(lo: float, hi: float | None = None) -> Check:
    return Check(lo=lo, hi=hi, lo_open=True)


def one_of(*options: str) -> Check:
    return Check(choices=options)


NAME = Check(name=True)
NONEMPTY_UNIQUE = Check(nonempty=True, unique=True)

_NAMES = {int: "an integer", float: "a finite number", str: "a string", bool: "true or false",
          type(None): "null", dict: "a mapping", list: "a list"}


def _split(tp: Any) -> tuple[Any, list[Check]]:
    if typing.get_origin(tp) is typing.Annotated:
        base, *meta = typing.get_args(tp)
        return base, [m for m in meta if isinstance(m, Check)]
    return tp, []


def _describe(tp: Any) -> str:
    tp, _ = _split(tp)
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        return " or ".join(_describe(a) for a in typing.get_args(tp))
    if origin is list:
        return f"a list of {_describe(typing.get_args(tp)[0]).removeprefix('a ').removeprefix('an ')}s"
    if dataclasses.is_dataclass(tp):
        return "a mapping"
    return _NAMES.get(origin or tp, "a value")


def _convert(value: Any, tp: Any, where: str, ctx: str, text_ok: bool = True) -> tuple[bool, Any]:
    """(True, converted) if ``value`` has type ``tp``; checks raise at once with the field's name.
    ``text_ok``: a number may be given as text (``3e-4``, as YAML reads it)."""
    tp, checks = _split(tp)
    origin = typing.get_origin(tp)
    ok, out = False, value
    if tp is Any:
        ok = True
    elif origin in (Union, types.UnionType):
        for arg in typing.get_args(tp):
            ok, out = _convert(value, arg, where, ctx, text_ok)
            if ok:
                break
    elif dataclasses.is_dataclass(tp):
        ok, out = True, build(tp, value, where, ctx, text_ok=text_ok)  # type: ignore[arg-type]
    elif origin is list or tp is list:
        if isinstance(value, list):
            (item,) = typing.get_args(tp) or (Any,)
            out = []
            for i, v in enumerate(value):
                good, conv = _convert(v, item, f"{where}[{i}]", ctx, text_ok)
                if not good:
                    raise fail(f"{ctx}: {where}[{i}]", _describe(item), v)
                out.append(conv)
            ok = True
    elif origin is dict or tp is dict:
        ok = isinstance(value, dict)
        out = dict(value) if ok else value
    elif tp is type(None):
        ok = value is None
    elif tp is bool:
        ok = isinstance(value, bool)
    elif tp is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif tp is float:
        if isinstance(value, (int, float, str)) and not isinstance(value, bool):
            try:
                out, ok = number(value, where, text_ok=text_ok), True
            except FfnlabError:
                ok = isinstance(value, (int, float))  # a number, but not finite: refuse below
                if ok:
                    raise fail(f"{ctx}: {where}", "a finite number", value) from None
                if not text_ok and isinstance(value, str) and _NUMBER.fullmatch(value.strip()):  # a number as text
                    raise fail(f"{ctx}: {where}", "a number, not text", value) from None
    elif tp is str:
        ok = isinstance(value, str)
    if ok:
        for c in checks:
            out = c.apply(out, f"{ctx}: {where}")
    return ok, out


@functools.cache
def _hints_and_fields(cls: type) -> tuple[dict[str, Any], dict[str, dataclasses.Field[Any]]]:
    """A dataclass's resolved type hints and fields, once per class (resolving the hints evaluates
    every annotation's string: most of the time of a sweep's width search, which builds thousands
    of configs)."""
    return typing.get_type_hints(cls, include_extras=True), {f.name: f for f in dataclasses.fields(cls)}


def check_fields(cls: type, data: Any, where: str = "", ctx: str = "config", *,
                 text_ok: bool = True) -> dict[str, Any]:
    """The keys ``data`` gives, as fields of dataclass ``cls``, each converted and validated by its
    annotation (the rules :func:`build` applies); a key ``data`` lacks is the caller's to supply.

    Unknown keys, wrong types and failed checks each raise one :class:`ffnlab.errors.FfnlabError`
    line naming ``ctx`` and the dotted key. ``text_ok=False``: a number must be one, not text (a
    JSON record ffnlab wrote holds numbers as numbers).
    """
    if not isinstance(data, dict):
        raise fail(f"{ctx}: {where or 'the top level'}", "a mapping", data)
    hints, fields = _hints_and_fields(cls)
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        here = f"{where}.{key}" if where else str(key)
        if key not in fields:
            close = difflib.get_close_matches(str(key), list(fields), n=1)
            raise FfnlabError(f"{ctx}: unknown key {here[:80]}" + (f" (did you mean {close[0]}?)" if close else ""))
        ok, v = _convert(value, hints[key], here, ctx, text_ok)
        if not ok:
            raise fail(f"{ctx}: {here}", _describe(hints[key]), value)
        kwargs[key] = v
    return kwargs


def build(cls: type, data: Any, where: str = "", ctx: str = "config", *, text_ok: bool = True) -> Any:
    """Build dataclass ``cls`` from the mapping ``data``, validating every field by its annotation.

    Unknown keys, missing required keys, wrong types and failed checks each raise one
    :class:`ffnlab.errors.FfnlabError` line naming ``ctx`` and the dotted key (:func:`check_fields`).
    """
    kwargs = check_fields(cls, data, where, ctx, text_ok=text_ok)
    for name, f in _hints_and_fields(cls)[1].items():
        if name not in kwargs and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            key = f"{where}.{name}" if where else name
            raise FfnlabError(f"{ctx}: missing key {key!r}")
    return cls(**kwargs)


__all__ = ["Check", "FfnlabError", "MAX_DIGITS", "NAME", "NONEMPTY_UNIQUE", "SEED_MAX", "above", "between",
           "build", "case_twins", "check_fields", "choice", "confined", "fail", "fraction", "integer", "number",
           "one_of", "safe_name", "show"]


# Counts on the command line, one parser (:func:`count`) with two conventions. A size (a sequence
# length, a batch, a width, a layer or GPU count) reads its suffix as vLLM reads --max-model-len:
# lower case decimal (8k = 8,000), upper case binary (8K = 8Ki = 8,192). A total (tokens, parameters)
# reads its suffix in decimal whatever the case (15T = 15e12, 7B = 7e9), as the published totals
# are written; a total may be a decimal or in e-notation (1.3e9) and is rounded to a whole number.
_SIZE_SCALE = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12,
               "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40,
               "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
_TOTAL_SCALE = {"": 1, "k": 10**3, "m": 10**6, "b": 10**9, "g": 10**9, "t": 10**12}
_SIZE = re.compile(r"([0-9]+(?:\.[0-9]+)?)(Ki|Mi|Gi|Ti|[kmgtKMGT])")
_TOTAL = re.compile(r"([0-9]*\.?[0-9]+)(?:e([+-]?[0-9]+))?([kmbgt]?)")
_PLAIN_INT = re.compile(r"[+-]?[0-9]+")
SIZE_FORMS = ("an integer, or one with a suffix read as vLLM reads --max-model-len: lower case decimal "
              "(8k = 8,000), upper case binary (8K = 8Ki = 8,192); k/K, m/M, g/G, t/T, Ki, Mi, Gi, Ti")
TOTAL_FORMS = "a number, or one with a decimal suffix in any case: 125M, 7B, 15T, 1.3e9"


def count(value: Any, where: str, *, total: bool = False) -> tuple[int, bool]:
    """``value`` (an int, or text such as ``8k``, ``8K``, ``8Ki``, ``15T``) as an integer, and
    whether a suffix was used (the caller then echoes the value read). ``total``: the decimal
    convention of token and parameter totals, else vLLM's for sizes. Range checks are the
    caller's: a plain integer passes as is (``-1`` too). Errors name ``where`` and the forms."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value, False
    text = str(value).strip()
    forms = TOTAL_FORMS if total else SIZE_FORMS
    if len(text) <= MAX_TEXT and _PLAIN_INT.fullmatch(text) and len(text.lstrip("+-")) <= MAX_DIGITS:
        return int(text), False
    if total:
        m = _TOTAL.fullmatch(text.lower()) if len(text) <= MAX_TEXT else None
        if m is None or abs(int(m.group(2) or 0)) > 100:  # bounded: 1e5000 is never expanded
            raise FfnlabError(f"{where}: cannot read {show(value)}; expected {forms}")
        # exact: 1e30 is 10**30
        n = Fraction(m.group(1)) * Fraction(10) ** int(m.group(2) or 0) * _TOTAL_SCALE[m.group(3)]
        return round(n), True
    m = _SIZE.fullmatch(text) if len(text) <= MAX_TEXT else None
    if m is None:
        raise FfnlabError(f"{where}: cannot read {show(value)}; expected {forms}")
    n = Fraction(m.group(1)) * _SIZE_SCALE[m.group(2)]
    if n.denominator != 1:
        raise FfnlabError(f"{where}: {show(value)} is {float(n):,}, not a whole number; expected {forms}")
    return int(n), True

