"""Files every layer writes and reads the same way.

Writing stays inside the folder the user named, and is atomic, so a kill leaves the old version
or the new:

* :func:`write_atomic` is the one writer of a whole file: it writes into a new temporary folder
  (marked as ffnlab's) inside the destination folder and renames the file over the name. The
  rename replaces a symlink planted at that name instead of following it, and with ``root`` the
  destination folder is first checked (:func:`check_inside`) not to lead outside ``root``
  through a symlink on its path;
* :func:`open_append` appends to a log (``O_NOFOLLOW``: a symlink, a hard link or a FIFO at the
  name is refused, not written through);
* :func:`make_dir` creates a folder after the same check; :func:`staged_dir` builds a folder
  under a temporary name and renames it into place; :func:`publish_dir` moves a finished folder
  into place, replacing an older one.

Deleting touches only what ffnlab created: every temporary and checkpoint folder holds a marker
file (:data:`MARK`) written when it was made; :func:`remove_marked` and :func:`remove_stale`
refuse or skip anything without one, whatever its name.

Reading is one reader for every user file a command opens (run configs, sweep specs, config.json,
claims evidence, sweep records): :func:`read_text` (existence, size limit, UTF-8, BOM) and
:func:`read_data` / :func:`read_mapping` (JSON, YAML or TOML), each failing with one
:class:`~ffnlab.errors.FfnlabError` line that names the file.

Used by run folders (metrics, summaries), checkpoints, prepared corpora, sweeps and reports.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import shutil
import stat
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from ffnlab.errors import FfnlabError

MARK = ".ffnlab-owned"  # the marker file in every folder ffnlab made and may remove
TEMP_PREFIX = ".ffnlab-tmp-"
OLD_PREFIX = ".ffnlab-old-"
_MARK_PID = re.compile(r"^created by ffnlab, process (\d+);")


def check_inside(path: str | Path, root: str | Path, what: str = "") -> Path:
    """``path``, refused with one error line unless it stays inside ``root`` with every symlink on
    it followed (``root`` itself may be a link: the user named it)."""
    real, top = os.path.realpath(path), os.path.realpath(root)
    if real != top and not real.startswith(top.rstrip(os.sep) + os.sep):
        raise FfnlabError(f"{what + ' ' if what else ''}{path} leads outside {root} (to {real}) through a "
                          "symlink; ffnlab writes and deletes only inside the folder you named")
    return Path(path)


def make_dir(path: str | Path, root: str | Path | None = None) -> Path:
    """Create folder ``path`` (and its parents) after checking it stays inside ``root``."""
    path = Path(path)
    if root is not None:
        check_inside(path, root)
    path.mkdir(parents=True, exist_ok=True)
    if root is not None:
        check_inside(path, root)  # a link swapped in while the folder was made
    return path


def mark_text() -> str:
    return f"created by ffnlab, process {os.getpid()}; ffnlab may remove this folder\n"


def new_temp_dir(parent: str | Path, hint: str = "") -> Path:
    """A new, empty (but for its marker) temporary folder in ``parent``, readable by its owner only;
    ``hint`` (what it is for) goes into its name."""
    tmp = Path(parent) / f"{TEMP_PREFIX}{hint[:80] + '-' if hint else ''}{os.getpid()}-{uuid.uuid4().hex[:12]}"
    os.mkdir(tmp, 0o700)  # never an existing folder or link: the name is new
    try:
        with open(tmp / MARK, "x") as fh:
            fh.write(mark_text())
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return tmp


def marked(folder: str | Path) -> bool:
    """Whether ``folder`` is a real folder (not a link) holding ffnlab's marker file."""
    folder = Path(folder)
    try:
        if not stat.S_ISDIR(os.lstat(folder).st_mode) or not stat.S_ISREG(os.lstat(folder / MARK).st_mode):
            return False
        return _MARK_PID.match((folder / MARK).read_text(encoding="utf-8", errors="replace")) is not None
    except OSError:
        return False


def _marker_pid(folder: Path) -> int | None:
    try:
        m = _MARK_PID.match((folder / MARK).read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return None
    return int(m.group(1)) if m else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except PermissionError:  # it exists, run by another user
        return True
    except (ProcessLookupError, OverflowError, ValueError):
        return False
    return True


def remove_marked(folder: str | Path, root: str | Path) -> None:
    """Delete folder ``folder`` (inside ``root``), which must carry ffnlab's marker; never follows links."""
    folder = Path(folder)
    check_inside(folder.parent, root)
    if not marked(folder):
        raise FfnlabError(f"{folder} was not created by ffnlab (no {MARK} marker); it is left alone")
    shutil.rmtree(folder)


def remove_stale(folder: str | Path, root: str | Path | None = None, *, hint: str | None = None) -> list[Path]:
    """Remove what a killed write left in ``folder``: temporary and renamed-aside folders that carry
    ffnlab's marker (of a process no longer running), and empty temporary folders (killed before
    the marker was written); with ``hint``, only temporary folders made for that name. Anything
    else, whatever its name, is left alone."""
    folder = Path(folder)
    prefixes = (f"{TEMP_PREFIX}{hint[:80]}-",) if hint else (TEMP_PREFIX, OLD_PREFIX)
    if not folder.is_dir():
        return []
    if root is not None:
        check_inside(folder, root)
    found = []
    for p in sorted(folder.iterdir()):
        if not p.name.startswith(prefixes) or p.is_symlink() or not p.is_dir():
            continue
        pid = _marker_pid(p)
        if marked(p) and (pid is None or pid == os.getpid() or not _alive(pid)):
            shutil.rmtree(p, ignore_errors=True)
            found.append(p)
        elif p.name.startswith(TEMP_PREFIX) and not any(p.iterdir()):
            with contextlib.suppress(OSError):
                p.rmdir()  # an empty folder: nothing in it to lose
                found.append(p)
    return found


def write_atomic(path: str | Path, data: str | bytes, *, root: str | Path | None = None,
                 durable: bool = False) -> None:
    """Write ``data`` to ``path`` so that readers see the old file or the new one, never half.

    The file is written in a marked temporary folder inside ``path``'s folder and renamed over
    ``path``: a symlink at ``path`` is replaced, never followed. With ``root``, ``path``'s folder
    must not lead outside ``root`` through a symlink (one error line otherwise, nothing written).
    """
    path = Path(path)
    if root is not None:
        check_inside(path.parent, root)
    tmp = new_temp_dir(path.parent, path.name)
    try:
        with open(tmp / "data", "xb") as fh:
            fh.write(data.encode("utf-8") if isinstance(data, str) else data)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp / "data", path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def open_append(path: str | Path, root: str | Path | None = None) -> IO[str]:
    """``path`` opened for appending text, created if absent; refused with one error line if it is a
    symlink, a hard link, or not a regular file (a FIFO, a device), or (with ``root``) if its folder
    leads outside ``root``."""
    path = Path(path)
    if root is not None:
        check_inside(path.parent, root)
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.EMLINK):
            raise FfnlabError(f"{path} is a symlink; ffnlab does not write through links") from None
        if e.errno == errno.ENXIO:
            raise FfnlabError(f"{path} is not a regular file; ffnlab writes its logs only to files") from None
        raise
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_nlink > 1:
        os.close(fd)
        why = "not a regular file" if not stat.S_ISREG(info.st_mode) else "a hard link to another file"
        raise FfnlabError(f"{path} is {why}; ffnlab does not write through it")
    return os.fdopen(fd, "a", encoding="utf-8")


def append_text(path: str | Path, text: str, root: str | Path | None = None) -> None:
    """Append ``text`` to ``path`` through :func:`open_append`."""
    with open_append(path, root) as fh:
        fh.write(text)


def fsync_files(folder: Path) -> None:
    """Make every file directly in ``folder`` durable (before a rename publishes the folder)."""
    for f in Path(folder).iterdir():
        if f.is_file() and not f.is_symlink():
            with open(f, "rb") as fh:
                os.fsync(fh.fileno())


def publish_dir(tmp: Path, final: Path) -> None:
    """Move the finished folder ``tmp`` to ``final``; an existing ``final`` is replaced.

    The old folder is first renamed aside, so at every moment ``final`` is absent, old or new,
    never a mixture; the renamed-aside copy is removed afterwards.
    """
    stale = Path(final).with_name(f"{OLD_PREFIX}{os.getpid()}-{uuid.uuid4().hex[:12]}") \
        if os.path.lexists(final) else None
    if stale is not None:
        os.replace(final, stale)
    try:
        os.replace(tmp, final)
    finally:
        if stale is not None:
            if stale.is_symlink():
                stale.unlink()
            else:
                shutil.rmtree(stale, ignore_errors=True)


@contextlib.contextmanager
def staged_dir(final: str | Path, *, keep_mark: bool = False) -> Iterator[Path]:
    """A new marked temporary folder beside ``final`` to fill; when the block succeeds it is renamed
    to ``final`` (which must be absent or an empty folder), when it fails it is removed. So a kill
    leaves ``final`` absent or complete, never half-written (the marker goes unless ``keep_mark``)."""
    final = Path(final)
    tmp = new_temp_dir(final.parent, final.name)
    try:
        yield tmp
        if not keep_mark:
            (tmp / MARK).unlink()
        os.rename(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


# -- reading: the one reader of user text files --------------------------------------------------

MAX_TEXT_BYTES = 16 * 2**20  # configs, specs, sweep records and claims files are small; 16 MiB is generous
FORMATS = {".json": "JSON", ".yaml": "YAML", ".yml": "YAML", ".toml": "TOML"}


def _fail(message: str) -> FfnlabError:
    return FfnlabError(message)


def read_text(path: str | Path, what: str = "file", *, max_bytes: int = MAX_TEXT_BYTES) -> str:
    """The UTF-8 text of a user's file (a leading BOM dropped), or one :class:`ffnlab.errors.FfnlabError` line.

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
    """Parse ``text`` as ``fmt`` (JSON, YAML or TOML); one :class:`ffnlab.errors.FfnlabError` line on failure.

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
                import tomli as tomllib
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
