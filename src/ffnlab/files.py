"""Files every layer writes and reads the same way.

Writing is atomic, so a kill leaves the old version or the new:

* :func:`write_atomic` writes a file through a uniquely named temporary beside it and renames it
  into place (one ``os.replace``), optionally after an fsync;
* :func:`publish_dir` moves a finished folder into place, replacing an older one.

Reading is one reader for every user file a command opens (run configs, sweep specs, config.json,
claims evidence, sweep records): :func:`read_text` (existence, size limit, UTF-8, BOM) and
:func:`read_data` / :func:`read_mapping` (JSON, YAML or TOML), each failing with one
:class:`~ffnlab.errors.FfnlabError` line that names the file.

Used by run folders (metrics, summaries), checkpoints, prepared corpora and sweeps.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ffnlab.errors import FfnlabError


def _sibling(path: Path, tag: str) -> Path:
    return path.with_name(f".{tag}-{path.name}-{os.getpid()}-{uuid.uuid4().hex[:8]}")


def write_atomic(path: Path, data: str | bytes, *, durable: bool = False) -> None:
    """Write ``data`` to ``path`` so that readers see the old file or the new one, never half."""
    tmp = _sibling(Path(path), "tmp")
    try:
        with open(tmp, "wb") as fh:
            fh.write(data.encode("utf-8") if isinstance(data, str) else data)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def fsync_files(folder: Path) -> None:
    """Make every file directly in ``folder`` durable (before a rename publishes the folder)."""
    for f in Path(folder).iterdir():
        if f.is_file():
            with open(f, "rb") as fh:
                os.fsync(fh.fileno())


def publish_dir(tmp: Path, final: Path) -> None:
    """Move the finished folder ``tmp`` to ``final``; an existing ``final`` is replaced.

    The old folder is first renamed aside, so at every moment ``final`` is absent, old or new,
    never a mixture; the renamed-aside copy is removed afterwards.
    """
    stale = _sibling(Path(final), "old") if final.exists() else None
    if stale is not None:
        os.replace(final, stale)
    try:
        os.replace(tmp, final)
    finally:
        if stale is not None:
            shutil.rmtree(stale, ignore_errors=True)


# -- reading: the one reader of user text files --------------------------------------------------

MAX_TEXT_BYTES = 16 * 2**20  # configs, specs, sweep records and claims files are small; 16 MiB is generous
FORMATS = {".json": "JSON", ".yaml": "YAML", ".yml": "YAML", ".toml": "TOML"}


def _fail(message: str) -> FfnlabError:
    return FfnlabError(message)


def read_text(path: str | Path, what: str = "file", *, max_bytes: int = MAX_TEXT_BYTES) -> str:
    """The UTF-8 text of a user's file (a leading BOM dropped), or one :class:`FfnlabError` line.

    Refuses a missing path, a folder, a file over ``max_bytes``, a binary file and invalid UTF-8,
    naming the file and ``what`` it was meant to be.
    """
    p = Path(path)
    if not p.exists():
        raise _fail(f"{what} not found: no such file {p}")
    if not p.is_file():
        raise _fail(f"{what} {p} is not a file")
    size = p.stat().st_size
    if size > max_bytes:
        raise _fail(f"{what} {p} is {size:,} bytes, over the {max_bytes:,}-byte limit for such files")
    raw = p.read_bytes()[: max_bytes + 1]
    if b"\x00" in raw:
        raise _fail(f"{what} {p} is a binary file, not text")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _fail(f"{what} {p} is not UTF-8 text (bad byte at offset {e.start})") from None
    return text.removeprefix("\ufeff")


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return (text.splitlines()[0] if text else type(e).__name__)[:200]


def parse_text(text: str, fmt: str, where: str, *, json_constants: bool = False) -> Any:
    """Parse ``text`` as ``fmt`` (JSON, YAML or TOML); one :class:`FfnlabError` line on failure.

    JSON's NaN/Infinity are refused unless ``json_constants`` (config.json files written by
    Python's json, e.g. ``"time_step_limit": [0.0, Infinity]``, which transformers reads; values
    still go through the number checks where they are used); nesting deeper than the parser can
    follow and integers longer than Python converts are reported as errors, not tracebacks.
    """
    try:
        if fmt == "JSON":
            return json.loads(text) if json_constants else json.loads(text, parse_constant=_no_constant)
        if fmt == "YAML":
            import yaml

            return yaml.safe_load(text)
        if fmt == "TOML":
            try:
                import tomllib
            except ImportError:  # pragma: no cover - Python 3.10
                import tomli as tomllib  # type: ignore[no-redef]
            return tomllib.loads(text)
    except RecursionError:
        raise _fail(f"{where}: cannot parse: not valid {fmt} (nested too deeply)") from None
    except Exception as e:  # every parser has its own error types; all are the user's file
        raise _fail(f"{where}: cannot parse: not valid {fmt} ({_first_line(e)})") from None
    raise ValueError(f"unknown format {fmt!r}")  # a programming error, not the user's


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def read_data(path: str | Path, what: str = "file", *, fmt: str | None = None,
              max_bytes: int = MAX_TEXT_BYTES, json_constants: bool = False) -> Any:
    """Read and parse a JSON, YAML or TOML file (format from ``fmt`` or the suffix)."""
    p = Path(path)
    fmt = fmt or FORMATS.get(p.suffix.lower())
    if fmt is None:
        raise _fail(f"{p}: {what} files must end in {', '.join(FORMATS)}")
    return parse_text(read_text(p, what, max_bytes=max_bytes), fmt, str(p), json_constants=json_constants)


def read_mapping(path: str | Path, what: str = "file", *, fmt: str | None = None,
                 empty_ok: bool = False) -> dict[str, Any]:
    """:func:`read_data` for files whose top level must be a mapping (``empty_ok``: empty file = {})."""
    data = read_data(path, what, fmt=fmt)
    if data is None and empty_ok:
        return {}
    if not isinstance(data, dict):
        raise _fail(f"{path}: the top level of a {what} must be a mapping, got {type(data).__name__}")
    return data


def _holds_nothing(folder: Path, own: tuple[str, ...]) -> bool:
    """Whether ``folder`` holds only files named in ``own`` (locks, markers) and empty folders."""
    return not any(p.is_symlink() or (p.is_file() and p.name not in own) for p in folder.rglob("*"))


@contextlib.contextmanager
def provisional_dir(folder: Path, own: tuple[str, ...] = (".lock",)) -> Iterator[Path]:
    """Yield ``folder``; if the block fails and ``folder`` did not exist before and still holds
    nothing but files named in ``own`` (a lock, a marker), remove it, so a refused command leaves
    no output folder behind."""
    folder = Path(folder)
    existed = folder.exists()
    try:
        yield folder
    except BaseException:
        if not existed and folder.is_dir() and _holds_nothing(folder, own):
            shutil.rmtree(folder, ignore_errors=True)
        raise
