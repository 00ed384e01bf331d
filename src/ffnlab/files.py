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
* :func:`make_dir` creates a folder after the same check, where the system reads its name
  (:func:`system_path`: a link followed before the ``..`` after it, as the kernel does; the one
  reading of a folder's name by everything that makes, notes or removes one), and removes again
  the folders it made if a later one fails; :func:`staged_dir` builds a folder under a temporary
  name and renames it into place; :func:`publish_dir` moves a finished folder into place,
  replacing an older one.

Deleting touches only what ffnlab created: every temporary and checkpoint folder holds a marker
file (:data:`MARK`) written when it was made; :func:`remove_marked` and :func:`remove_stale`
refuse or skip anything without one, whatever its name. Temporary names carry the process id and
a random part, so concurrent writers never share one. Every new temporary first clears the
temporaries that killed writers left in its folder (:func:`clear_stale_temporaries`), so no
writer leaves a kill's leftovers to its caller. :func:`remove_stale` removes a marked
temporary only once its owner is provably gone (the marker records process id, host and the
process's start time: the process is not running, or its id now belongs to a later process), and
an empty unmarked one (a kill between making the folder and writing its marker) only when the
process id in its name is not running; a live writer's folder is never touched. On another host
the process cannot be asked, so there a marked temporary goes only after :data:`STALE_AFTER_S`.

A refused command removes the output folder it made through :func:`provisional_dir` only if
everything in it was made by this process (:func:`make_dir`, :func:`write_atomic`,
:func:`staged_dir`, :func:`publish_dir` note each folder and file they create, with its inode),
and only with non-recursive calls (``unlink``, ``rmdir``): a file another process put there (a
second run's lock, its half-written temporary), even one that appears during the removal, keeps
the folder in place.

Reading is one reader for every user file a command opens (run configs, sweep specs, config.json,
claims evidence, sweep records): :func:`read_text` (existence, size limit, UTF-8, BOM) and
:func:`read_data` / :func:`read_mapping` (JSON, YAML or TOML), each failing with one
:class:`~ffnlab.errors.FfnlabError` line that names the file. A key given twice in one mapping
is refused, naming the key (no format silently keeps the last; a model's config.json, read as
transformers reads it, keeps the last and says so), and a YAML document whose aliases
expand to more than :data:`MAX_YAML_VALUES` values (an "alias bomb": a few lines of nested
anchors standing for billions of values) is refused before it is built (:func:`load_yaml`).

Used by run folders (metrics, summaries), checkpoints, prepared corpora, sweeps and reports.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import shutil
import socket
import stat
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from ffnlab import interrupt
from ffnlab.errors import FfnlabError
from ffnlab.validation import clip, show

MARK = ".ffnlab-owned"  # the marker file in every folder ffnlab made and may remove
TEMP_PREFIX = ".ffnlab-tmp-"
OLD_PREFIX = ".ffnlab-old-"
_MARK_PID = re.compile(r"^created by ffnlab, process (\d+);")
_MARK_FIELD = re.compile(r"^(host|started) (\S+)$", re.M)
_NAME_PID = re.compile(r"-(\d+)-[0-9a-f]+$")  # the process id in a temporary folder's name
STALE_AFTER_S = 7 * 24 * 3600  # a marked temporary of another host is stale after a week

# What this process made, path -> (device, inode, sequence number): only these does
# provisional_dir delete, and only if the path still names the same inode.
_MADE: dict[str, tuple[int, int, int]] = {}
_SEQ = [0]
_SETTLED: set[str] = set()  # provisional output folders a block has made lasting (:func:`settle`)
_OPEN: dict[str, int] = {}  # provisional_dir blocks open per folder


def _note_made(path: str | Path) -> None:
    """Remember that this process made ``path`` (a file or folder it has just created)."""
    try:
        st = os.lstat(path)
    except OSError:
        return
    _SEQ[0] += 1
    _MADE[system_path(path)] = (st.st_dev, st.st_ino, _SEQ[0])


def made_here(path: str | Path, since: int = 0) -> bool:
    """Whether ``path`` is a file or folder this process made (after sequence number ``since``)
    and still the same one (not replaced by another process's since)."""
    made = _MADE.get(system_path(path))
    if made is None or made[2] <= since:
        return False
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return (st.st_dev, st.st_ino) == made[:2]


def check_inside(path: str | Path, root: str | Path, what: str = "") -> Path:
    """``path``, refused with one error line unless it stays inside ``root`` with every symlink on
    it followed (``root`` itself may be a link: the user named it)."""
    real, top = os.path.realpath(path), os.path.realpath(root)
    if real != top and not real.startswith(top.rstrip(os.sep) + os.sep):
        raise FfnlabError(f"{what + ' ' if what else ''}{path} leads outside {root} (to {real}) through a "
                          "symlink; ffnlab writes and deletes only inside the folder you named")
    return Path(path)


def _walk(path: str | Path) -> tuple[str, list[str]]:
    """``path`` read as the system reads it, and the folders on the way that do not exist yet, in
    the order it reaches them: each component taken in turn, a link followed to where it leads and
    a ``..`` taken after that (``lnk/../x`` is beside lnk's target, where the kernel puts it; never
    the ``x`` beside ``lnk`` of ``os.path.abspath``), a missing folder counted as made there
    (``new/../x`` needs ``new`` and ``x``). Where the way stops (a file, a link to nothing, a loop)
    the rest is kept as written: nothing past it can be made."""
    given = Path(path)
    cur = given.anchor if given.is_absolute() else os.getcwd()  # getcwd: already as the system reads it
    parts = given.parts[1:] if given.is_absolute() else given.parts
    missing: list[str] = []
    for i, name in enumerate(parts):
        if name == os.pardir:
            cur = os.path.dirname(cur)  # cur holds no link: its parent is its folder's parent
            continue
        nxt = os.path.join(cur, name)
        if not os.path.lexists(nxt):
            missing.append(nxt)
            cur = nxt
        elif os.path.islink(nxt) and os.path.isdir(nxt):
            cur = os.path.realpath(nxt)
        elif os.path.isdir(nxt):
            cur = nxt
        else:  # the system goes no further: a file, a link to nothing or to a file, a loop
            return os.path.join(nxt, *parts[i + 1:]), missing
    return cur, missing


def system_path(path: str | Path) -> str:
    """The absolute path the system reads for ``path`` (:func:`_walk`): the one reading of a name
    by every function that makes, notes or removes a folder (:func:`make_dir`,
    :func:`provisional_dir`, :func:`made_here`) and by the home check (:func:`user_home`)."""
    return _walk(path)[0]


def _unmake(folders: list[str], since: int = 0) -> None:
    """Remove ``folders`` (made by this process after sequence number ``since``), last made first,
    each only if it is still the one made (:func:`made_here`) and empty (``rmdir``): a folder another
    process has written in, or made anew, stays."""
    for d in reversed(folders):
        if made_here(d, since):
            with contextlib.suppress(OSError):
                os.rmdir(d)


def make_dir(path: str | Path, root: str | Path | None = None) -> Path:
    """Create folder ``path`` (and the folders on its way) after checking it stays inside ``root``.

    The folders are made where the system reads ``path`` (:func:`_walk`). If making one fails (a
    name too long, a file in the way), those this call made are removed again (:func:`_unmake`)."""
    interrupt.check()  # a Ctrl-C a finalizer dropped: nothing more is written
    path = Path(path)
    if root is not None:
        check_inside(path, root)
    made: list[str] = []
    try:
        for _ in range(100):  # a parent removed meanwhile by another process's cleanup: make it again
            try:
                for d in _walk(path)[1]:
                    try:
                        os.mkdir(d)
                    except FileExistsError:
                        continue  # made by another process: not this one's to remove
                    _note_made(d)
                    made.append(d)
                break
            except FileNotFoundError:
                continue
        path.mkdir(parents=True, exist_ok=True)  # the usual errors for a file in the way (makes nothing more)
        if root is not None:
            check_inside(path, root)  # a link swapped in while the folder was made
    except BaseException:
        _unmake(made)
        raise
    return path


def writable_folder(path: str | Path, root: str | Path, what: str) -> Path:
    """Folder ``path`` inside ``root`` (ffnlab's cache and each folder it keeps there), made with its
    parents if absent, before anything is computed for it: one error line naming ``what`` if it, or
    a folder on its way from ``root``, is a file or a symbolic link to nothing, or if it leads
    outside ``root`` through a symlink (:func:`check_inside`); never the bare "File exists" of the
    first write, after the work."""
    path = Path(path)
    top, p = Path(system_path(root)), Path(system_path(path))
    while True:
        if os.path.lexists(p) and not os.path.isdir(p):
            kind = (f"a symbolic link to {os.path.realpath(p)}, which does not exist"
                    if not os.path.exists(p) else "not a folder")
            where = f"{path}: {p}" if p != Path(system_path(path)) else str(path)
            raise FfnlabError(f"{what} {where} is {kind}; move it away, or choose another cache folder")
        if p == top or p == p.parent:
            break
        p = p.parent
    check_inside(path, root, what)
    return make_dir(path, root)


def _started(pid: int) -> str | None:
    """When process ``pid`` started (clock ticks since boot, Linux), to tell it from a later
    process given the same id; None where unknown."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError, ValueError):
        return None


def mark_text() -> str:
    started = _started(os.getpid())
    return (f"created by ffnlab, process {os.getpid()}; ffnlab may remove this folder\n"
            f"host {socket.gethostname() or '-'}\n" + (f"started {started}\n" if started else ""))


def new_temp_dir(parent: str | Path, hint: str = "") -> Path:
    """A new, empty (but for its marker) temporary folder in ``parent``, readable by its owner only;
    ``hint`` (what it is for) goes into its name."""
    interrupt.check()  # a Ctrl-C a finalizer dropped: no new write begins
    clear_stale_temporaries(parent)  # what killed writes left here: each writer clears it, none leaves it
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


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except PermissionError:  # it exists, run by another user
        return True
    except (ProcessLookupError, OverflowError, ValueError):
        return False
    return True


def _pid_gone(pid: int, started: str | None = None) -> bool:
    """Whether process ``pid`` (of this host), which started at ``started`` if known, has ended."""
    if pid == os.getpid():  # this process, unless the id was an earlier process's
        return started is not None and started != _started(pid)
    if pid <= 0 or not _alive(pid):
        return True
    now = _started(pid)
    return started is not None and now is not None and now != started  # the id was reused


def _owner_gone(folder: Path) -> bool:
    """Whether the process that made marked folder ``folder`` has provably ended."""
    try:
        text = (folder / MARK).read_text(encoding="utf-8", errors="replace")
        age = time.time() - os.lstat(folder / MARK).st_mtime
    except OSError:
        return False
    m = _MARK_PID.match(text)
    if m is None:
        return False
    fields = dict(_MARK_FIELD.findall(text))
    if fields.get("host", socket.gethostname() or "-") != (socket.gethostname() or "-"):
        return age > STALE_AFTER_S  # another host's process cannot be asked
    return _pid_gone(int(m.group(1)), fields.get("started"))


def remove_marked(folder: str | Path, root: str | Path) -> None:
    """Delete folder ``folder`` (inside ``root``), which must carry ffnlab's marker; never follows links."""
    folder = Path(folder)
    check_inside(folder.parent, root)
    if not marked(folder):
        raise FfnlabError(f"{folder} was not created by ffnlab (no {MARK} marker); it is left alone")
    shutil.rmtree(folder)


def clear_stale_temporaries(folder: str | Path) -> list[Path]:
    """Remove the temporary folders (:func:`new_temp_dir`'s) that killed writes left in ``folder``,
    those of a process no longer running only (:func:`remove_stale`); renamed-aside folders stay.

    Every writer's own cleanup: :func:`new_temp_dir` calls it on the folder it is about to write in
    (so :func:`write_atomic`, :func:`staged_dir` and every other temporary do), and a command that
    looks at a folder's contents before writing there (``probe --overwrite``) calls it first. A
    folder that cannot be listed is left as it is: the write itself then says what is wrong."""
    try:
        return remove_stale(folder, aside=False)
    except OSError:
        return []


def _temporaries(folder: Path, prefixes: tuple[str, ...]) -> list[tuple[Path, bool, int | None, bool]]:
    """The folders in ``folder`` whose names take one of ``prefixes`` (links and files left out),
    sorted, each with whether it carries ffnlab's marker, its writer's process id (from the marker,
    else from the name; None when neither says) and whether that writer has provably ended
    (:func:`_owner_gone` for a marked folder, :func:`_pid_gone` for one made a moment ago). The one
    reading of a folder's temporaries: :func:`remove_stale` removes the ended writers',
    :func:`live_temporaries` names the running ones. Names are listed first: every write lists its
    folder, which may be large."""
    with os.scandir(folder) as entries:
        candidates = sorted(folder / e.name for e in entries if e.name.startswith(prefixes))
    out: list[tuple[Path, bool, int | None, bool]] = []
    for p in candidates:
        if p.is_symlink() or not p.is_dir():
            continue
        if marked(p):
            try:
                m = _MARK_PID.match((p / MARK).read_text(encoding="utf-8", errors="replace"))
            except OSError:
                m = None
            out.append((p, True, int(m.group(1)) if m else None, _owner_gone(p)))
            continue
        named = _NAME_PID.search(p.name)
        pid = int(named.group(1)) if named else None
        out.append((p, False, pid, pid is not None and _pid_gone(pid)))
    return out


def live_temporaries(folder: str | Path) -> dict[Path, int]:
    """The temporary folders in ``folder`` (:func:`new_temp_dir`'s) whose writer is still running,
    each with that process's id (0 where its marker names none): another ffnlab process writing
    there now. Told from a killed writer's leftovers as :func:`clear_stale_temporaries` tells them
    (:func:`_temporaries`), so what that would remove is never reported, and what it keeps always is."""
    try:
        found = _temporaries(Path(folder), (TEMP_PREFIX,))
    except OSError:
        return {}
    return {p: pid or 0 for p, is_marked, pid, gone in found if not gone and (is_marked or pid is not None)}


def remove_stale(folder: str | Path, root: str | Path | None = None, *, hint: str | None = None,
                 aside: bool = True) -> list[Path]:
    """Remove what a killed write left in ``folder``: temporary and (unless not ``aside``)
    renamed-aside folders that carry ffnlab's marker (of a process no longer running), and
    temporary folders empty but for an empty marker file (killed before or while the marker was
    written); with ``hint``, only temporary folders made for that name. Anything else, whatever its
    name, is left alone."""
    folder = Path(folder)
    prefixes = (f"{TEMP_PREFIX}{hint[:80]}-",) if hint else (TEMP_PREFIX, OLD_PREFIX) if aside else (TEMP_PREFIX,)
    if not folder.is_dir():
        return []
    if root is not None:
        check_inside(folder, root)
    found = []
    for p, is_marked, _, gone in _temporaries(folder, prefixes):
        if not gone:
            continue
        if is_marked:
            shutil.rmtree(p, ignore_errors=True)
            found.append(p)
        elif p.name.startswith(TEMP_PREFIX):
            with contextlib.suppress(OSError):
                if _empty_marker_only(p):  # killed between opening the marker and writing it
                    (p / MARK).unlink()
                p.rmdir()  # empty (rmdir refuses otherwise): killed between the folder and its marker
                found.append(p)
    return found


def _empty_marker_only(folder: Path) -> bool:
    """Whether ``folder`` holds nothing but an empty regular marker file (what :func:`new_temp_dir`
    leaves when killed between creating its marker and writing it)."""
    entries = list(folder.iterdir())
    if [e.name for e in entries] != [MARK]:
        return False
    st = os.lstat(folder / MARK)
    return stat.S_ISREG(st.st_mode) and st.st_size == 0


class WriteFailed(FfnlabError, OSError):
    """A write the system refused (a full disk, a quota, a folder that is read-only or gone), as
    one error line that names what was being written and where (:func:`cannot_write`); still an
    OSError with the system's ``errno``, so a caller that cleans up after one does so."""

    def __str__(self) -> str:  # the line, never OSError's "[Errno N] ..." form
        return str(self.args[0]) if self.args else "cannot write"


def cannot_write(path: str | Path, error: BaseException, what: str = "",
                 then: str = "nothing was written") -> WriteFailed:
    """The one line for a write that failed with ``error``: ``cannot write WHAT PATH (REASON); THEN``.

    The system's error for a full disk has no file name ("[Errno 28] No space left on device"),
    and one raised inside a temporary names the temporary; this line names the file or folder the
    user will look for. The one wording of every write ffnlab makes (:func:`write_atomic`,
    :func:`append_text`, checkpoints, exports, the prepared-corpus cache)."""
    if isinstance(error, WriteFailed):  # already one line: its reason, named again for ``path``
        reason = getattr(error, "reason", None) or str(error)
    else:
        reason = getattr(error, "strerror", None) or (str(error).strip().splitlines() or [type(error).__name__])[0]
    reason = reason[:200]
    failed = WriteFailed(f"cannot write {what + ' ' if what else ''}{path} ({reason}); {then}")
    failed.errno = getattr(error, "errno", None)
    failed.reason = reason  # type: ignore[attr-defined]
    return failed


def write_atomic(path: str | Path, data: str | bytes, *, root: str | Path | None = None,
                 durable: bool = False, exists: str | None = None) -> None:
    """Write ``data`` to ``path`` so that readers see the old file or the new one, never half.

    The file is written in a marked temporary folder inside ``path``'s folder and renamed over
    ``path``: a symlink at ``path`` is replaced, never followed. With ``root``, ``path``'s folder
    must not lead outside ``root`` through a symlink (one error line otherwise, nothing written).
    With ``exists`` (the error line to give), nothing at ``path`` is replaced: the file is linked
    into place only where no file, folder or link is there by then (a hard link fails if one is,
    with no moment when the name can be taken twice), else that one line.
    """
    path = Path(path)
    if root is not None:
        check_inside(path.parent, root)
    if exists is not None and os.path.lexists(path):
        raise FfnlabError(exists)
    try:
        tmp = new_temp_dir(path.parent, path.name)
    except FileNotFoundError as e:  # the folder is not there: said of it, not of the temporary
        raise cannot_write(path, e, then=f"the folder {path.parent} does not exist") from None
    except OSError as e:
        raise cannot_write(path, e) from None
    try:
        with open(tmp / "data", "xb") as fh:
            fh.write(data.encode("utf-8") if isinstance(data, str) else data)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        interrupt.check()  # a Ctrl-C a finalizer dropped while the data was made or written: not committed
        if exists is None:
            os.replace(tmp / "data", path)
        else:
            _link_new(tmp / "data", path, exists)
        _note_made(path)
    except FfnlabError:
        raise
    except OSError as e:  # a full disk names no file; a failed rename names the temporary
        raise cannot_write(path, e) from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _link_new(source: Path, path: Path, exists: str) -> None:
    """``source`` given the new name ``path``, never replacing anything there (``exists``, one
    error line, if something is); where the file system has no hard links, a rename after a last
    look."""
    try:
        os.link(source, path, follow_symlinks=False)
    except FileExistsError:
        raise FfnlabError(exists) from None
    except OSError as e:
        if e.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK, errno.ENOSYS):
            raise
        if os.path.lexists(path):
            raise FfnlabError(exists) from None
        os.replace(source, path)


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
    return os.fdopen(fd, "a", encoding="utf-8", errors="surrogateescape")


def append_text(path: str | Path, text: str, root: str | Path | None = None) -> None:
    """Append ``text`` to ``path`` through :func:`open_append`."""
    fh = open_append(path, root)
    try:
        with fh:
            fh.write(text)
    except OSError as e:  # a full disk names no file
        raise cannot_write(path, e, then="the text was not added") from None


def fsync_files(folder: Path) -> None:
    """Make every file directly in ``folder`` durable (before a rename publishes the folder)."""
    for f in Path(folder).iterdir():
        if f.is_file() and not f.is_symlink():
            with open(f, "rb") as fh:
                os.fsync(fh.fileno())


_AT_FDCWD, _RENAME_EXCHANGE = -100, 2  # <fcntl.h>, <linux/fs.h>


def exchange(a: str | Path, b: str | Path) -> bool:
    """Swap the files or folders at ``a`` and ``b`` in one atomic step (Linux ``renameat2`` with
    ``RENAME_EXCHANGE``): at every moment each name holds one of the two, never neither, so a kill
    cannot leave ``b`` missing. False where the system cannot (another OS, a C library or file
    system without it): the caller then renames in two steps."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.EXDEV):
        return False
    raise OSError(err, os.strerror(err), str(b))


def publish_dir(tmp: Path, final: Path) -> None:
    """Move the finished folder ``tmp`` to ``final``; an existing ``final`` is replaced.

    An existing folder is swapped with ``tmp`` in one step (:func:`exchange`), so at every moment
    ``final`` is old or new; where the system cannot, the old folder is first renamed aside (then
    ``final`` is absent for a moment), never a mixture; the old copy is removed afterwards.
    """
    interrupt.check()  # a Ctrl-C a finalizer dropped while the folder was filled: not published
    if os.path.isdir(final) and not os.path.islink(final) and exchange(tmp, final):
        _note_made(final)
        shutil.rmtree(tmp, ignore_errors=True)  # the old folder, now at the temporary name
        return
    stale = Path(final).with_name(f"{OLD_PREFIX}{os.getpid()}-{uuid.uuid4().hex[:12]}") \
        if os.path.lexists(final) else None
    if stale is not None:
        os.replace(final, stale)
    try:
        os.replace(tmp, final)
        _note_made(final)
    finally:
        if stale is not None:
            if stale.is_symlink():
                stale.unlink()
            else:
                shutil.rmtree(stale, ignore_errors=True)


def refuse_link(folder: str | Path, what: str) -> Path:
    """``folder``, refused with one line if it is a symbolic link: a run, sweep or report folder is
    written where the user named it, never through a link to somewhere else (as export and report
    refuse one); a link higher up the path is the user's own layout and is followed."""
    folder = Path(folder)
    if folder.is_symlink():
        raise FfnlabError(f"{what} {folder} is a symbolic link; ffnlab writes it only where it is named, not "
                          f"through a link: name its target ({os.path.realpath(folder)}) or a new folder")
    return folder


@contextlib.contextmanager
def staged_dir(final: str | Path, *, keep_mark: bool = False) -> Iterator[Path]:
    """A new marked temporary folder beside ``final`` to fill; when the block succeeds it is renamed
    to ``final`` (which must be absent or an empty folder), when it fails it is removed. So a kill
    leaves ``final`` absent or complete, never half-written (the marker goes unless ``keep_mark``)."""
    final = refuse_link(final, "the folder")  # the rename below would fail with a bare "Not a directory"
    tmp = new_temp_dir(final.parent, final.name)
    try:
        yield tmp
        interrupt.check()  # a Ctrl-C a finalizer dropped while the folder was filled: not committed
        if not keep_mark:
            (tmp / MARK).unlink()
        os.rename(tmp, final)
        _note_made(final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def write_all_atomic(files: dict[Path, str | bytes]) -> None:
    """Write several files (all in existing folders) so that a refusal changes none of them.

    Every name is checked first (a folder there refuses the whole write, "nothing was written"),
    then every file is written to a marked temporary beside its name; only when all are written
    are they renamed into place, in order. A rename that still fails says which files were
    replaced before it: the "nothing was written" of one line is said only when it is true."""
    items = [(Path(p), d) for p, d in files.items()]
    for path, _ in items:
        if os.path.isdir(path) and not os.path.islink(path):  # a rename over it would fail: before any
            raise cannot_write(path, IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR)))
    staged: list[tuple[Path, Path]] = []
    try:
        for path, data in items:
            try:
                tmp = new_temp_dir(path.parent, path.name)
                staged.append((tmp, path))
                with open(tmp / "data", "xb") as fh:
                    fh.write(data.encode("utf-8") if isinstance(data, str) else data)
            except OSError as e:
                raise cannot_write(path, e) from None
        interrupt.check()  # a Ctrl-C a finalizer dropped while the files were written: none committed
        for i, (tmp, path) in enumerate(staged):
            try:
                os.replace(tmp / "data", path)
            except OSError as e:
                done = ", ".join(p.name for _, p in staged[:i])
                raise cannot_write(path, e, then=f"{done} already replaced" if done else "nothing was written") \
                    from None
            _note_made(path)
    finally:
        for tmp, _ in staged:
            shutil.rmtree(tmp, ignore_errors=True)


# -- reading: the one reader of user text files --------------------------------------------------

MAX_TEXT_BYTES = 16 * 2**20  # configs, specs, sweep records and claims files are small; 16 MiB is generous
FORMATS = {".json": "JSON", ".yaml": "YAML", ".yml": "YAML", ".toml": "TOML"}


def _fail(message: str) -> FfnlabError:
    return FfnlabError(message)


# The variables that name a folder ffnlab or a library it imports derives its caches from. Set but
# empty, each reads as unset (the XDG base-directory rule): Python's expanduser takes an empty HOME
# as the file system's root ("~/.cache" -> "/.cache"), and huggingface_hub an empty HF_HOME or
# XDG_CACHE_HOME as the working folder.
LOCATION_ENV = ("HOME", "XDG_CACHE_HOME", "FFNLAB_CACHE", "HF_HOME", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE",
                "HF_DATASETS_CACHE")


def drop_empty_locations() -> None:
    """Remove the :data:`LOCATION_ENV` variables set to an empty string, and an ``XDG_CACHE_HOME``
    that is not absolute (the XDG rule: ignored), from this process's environment, before any
    library reads them (huggingface_hub and datasets read theirs at import)."""
    for name in LOCATION_ENV:
        if os.environ.get(name) == "":
            del os.environ[name]
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg is not None and not os.path.isabs(xdg):
        del os.environ["XDG_CACHE_HOME"]


def user_home(remedy: str) -> Path:
    """The user's home folder: ``$HOME`` when set and not empty, else the password database's
    entry for this user. Refused in one line naming HOME and ``remedy`` (what to set instead)
    when neither gives an absolute folder other than the file system's root, read where it leads
    (:func:`system_path`: a link to ``/``, ``lnk/..``, ``/tmp/..``): a cache derived from it would
    land in a folder nobody named (``/.cache``)."""
    home = os.environ.get("HOME") or ""
    came = "HOME"
    if not home:
        came = "HOME is unset or empty and the password database"
        try:
            import pwd

            home = pwd.getpwuid(os.getuid()).pw_dir
        except (ImportError, KeyError):
            home = ""
    real = system_path(home) if home and os.path.isabs(home) else ""
    if not real or os.path.dirname(real) == real:
        shown = repr(home) if home else "no folder"
        if real and os.path.normpath(home) != real:
            shown += f", which leads to {real}"
        raise _fail(f"no usable home folder ({came} gives {shown}); {remedy}")
    return Path(home)


def check_hf_home() -> None:
    """Before huggingface_hub or datasets is imported (they read their cache folders then): the
    empty location variables dropped (:func:`drop_empty_locations`), and refused in one line when
    their cache would be derived from no usable home (no HF_HOME, no XDG_CACHE_HOME)."""
    drop_empty_locations()
    hf_home = os.environ.get("HF_HOME")
    if hf_home:
        expand_user(hf_home)  # "~/hf" with no usable home: refused as any ~ path is
    elif not os.environ.get("XDG_CACHE_HOME"):
        user_home("set HF_HOME to the folder for the Hugging Face cache")


def expand_user(path: str | Path) -> Path:
    """``path`` with a leading ``~`` or ``~user`` expanded, as a shell would; ``~`` is
    :func:`user_home` (an empty HOME reads as unset, never as the root). An unknown user (or no
    home folder) is one :class:`ffnlab.errors.FfnlabError` line, not pathlib's RuntimeError."""
    text = str(path)
    if text == "~" or text.startswith("~" + os.sep):
        return user_home(f"give a path without ~ instead of {text[:200]!r}") / text[1:].lstrip(os.sep)
    try:
        return Path(path).expanduser()
    except RuntimeError:
        head = str(path).split(os.sep, 1)[0]
        raise _fail(f"cannot expand {show(head)} in {show(str(path), 200)}: no such user or home folder") from None


def read_text(path: str | Path, what: str = "file", *, max_bytes: int = MAX_TEXT_BYTES) -> str:
    """The UTF-8 text of a user's file (a leading BOM dropped), or one :class:`ffnlab.errors.FfnlabError` line.

    Refuses a missing path, a folder, a file over ``max_bytes``, a binary file and invalid UTF-8,
    naming the file and ``what`` it was meant to be.
    """
    p = Path(path)
    if not p.exists():
        raise _fail(f"{what} not found: no such file {clip(p)}")
    if not p.is_file():
        raise _fail(f"{what} {clip(p)} is not a file")
    size = p.stat().st_size
    if size > max_bytes:
        raise _fail(f"{what} {clip(p)} is {size:,} bytes, over the {max_bytes:,}-byte limit for such files")
    try:  # never more than the limit and one byte (a /proc file says size 0 and may hold more)
        with p.open("rb") as f:
            raw = f.read(max_bytes + 1)
    except OSError as e:  # /proc/self/mem: EIO; a FIFO's peer gone; permission
        raise _fail(f"cannot read {what} {clip(p)}: {e.strerror or type(e).__name__}") from None
    if len(raw) > max_bytes:
        raise _fail(f"{what} {clip(p)} is over the {max_bytes:,}-byte limit for such files")
    if b"\x00" in raw:
        raise _fail(f"{what} {clip(p)} is a binary file, not text")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _fail(f"{what} {clip(p)} is not UTF-8 text (bad byte at offset {e.start})") from None
    return text.removeprefix("\ufeff")


MAX_YAML_VALUES = 1_000_000  # values of a YAML document once its aliases are expanded (configs: < 10,000)


class YamlRefused(FfnlabError):
    """A YAML document refused for its shape (aliases expanding too far), not its syntax."""


def _expanded_values(root: Any, limit: int) -> None:
    """Refuse a YAML node graph whose aliases expand it past ``limit`` nodes, or that contains
    itself; sizes are counted once per node (aliases share nodes), so a bomb is measured in the
    time its few lines take, not the billions of values they stand for."""
    import yaml

    size: dict[int, int] = {}
    open_: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        kids = ([x for pair in node.value for x in pair] if isinstance(node, yaml.MappingNode)
                else node.value if isinstance(node, yaml.SequenceNode) else [])
        if done:
            open_.discard(id(node))
            size[id(node)] = n = 1 + sum(size[id(k)] for k in kids)
            if n > limit and n > len(size):  # more values than nodes written: aliases expanded
                raise YamlRefused(f"its aliases (*name) expand it to more than {limit:,} values; "
                                  "ffnlab refuses such documents (an alias bomb?)")
        elif id(node) in open_:
            raise YamlRefused(f"an alias at line {node.start_mark.line + 1} refers to a value that contains it")
        elif id(node) not in size:
            open_.add(id(node))
            stack.append((node, True))
            stack.extend((k, False) for k in kids if id(k) not in size)


def load_yaml(text: str, *, limit: int = MAX_YAML_VALUES) -> Any:
    """``yaml.safe_load`` of ``text``, refusing a key given twice in one mapping (a yaml error
    naming the key and its line) and a document whose aliases expand past ``limit`` values
    (:class:`YamlRefused`)."""

    loader = _strict_loader()(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _expanded_values(node, limit)
        return loader.construct_document(node)
    finally:
        loader.dispose()


_LOADER: list[type] = []


def _strict_loader() -> type:
    """SafeLoader that refuses duplicate keys (merge keys ``<<`` may still be overridden)."""
    if _LOADER:
        return _LOADER[0]
    import yaml

    class StrictLoader(yaml.SafeLoader):  # type: ignore[misc,unused-ignore]  # untyped under --strict
        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            if isinstance(node, yaml.MappingNode):
                seen: set[Any] = set()
                for key_node, _ in node.value:
                    if key_node.tag == "tag:yaml.org,2002:merge" or not isinstance(key_node, yaml.ScalarNode):
                        continue
                    key = self.construct_object(key_node)
                    try:
                        twice = key in seen
                        seen.add(key)
                    except TypeError:  # an unhashable key: the constructor reports it
                        continue
                    if twice:
                        raise yaml.constructor.ConstructorError(
                            None, None, f"duplicate key {_show_key(key)} at line {key_node.start_mark.line + 1}")
            return super().construct_mapping(node, deep)

    _LOADER.append(StrictLoader)
    return StrictLoader


def _show_key(key: Any) -> str:
    """A mapping key for a message: quoted, at most 80 characters."""
    text = repr(key) if not isinstance(key, int) or abs(key) < 10**80 else "a very long integer"
    return text if len(text) <= 80 else text[:77] + "..."


class DuplicateKey(ValueError):
    """A JSON object gave a key twice (:func:`unique_pairs`)."""


def unique_pairs(pairs: list[tuple[Any, Any]]) -> dict[Any, Any]:
    """A JSON object's members, refusing a key given twice (json keeps the last silently): the
    ``object_pairs_hook`` of every file ffnlab reads back (configs, model.json, a checkpoint's
    state.json, metrics.jsonl's records)."""
    out: dict[Any, Any] = {}
    for k, v in pairs:
        if k in out:
            raise DuplicateKey(f"duplicate key {_show_key(k)}")
        out[k] = v
    return out


def _last_pairs(duplicates: list[str]) -> Callable[[list[tuple[Any, Any]]], dict[Any, Any]]:
    """A JSON object hook that keeps the last value of a key given twice, as ``json.loads`` does,
    and notes the key in ``duplicates`` (once, in the order met)."""

    def pairs_hook(pairs: list[tuple[Any, Any]]) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        for k, v in pairs:
            if k in out and k not in duplicates:
                duplicates.append(k)
            out[k] = v
        return out

    return pairs_hook


_TOML_AT = re.compile(r"\(at line (\d+), column (\d+)\)")


def _toml_duplicate(e: Exception, text: str) -> str | None:
    """For tomllib's 'Cannot overwrite a value' / 'Cannot declare ... twice', the message naming the key."""
    msg = str(e)
    at = _TOML_AT.search(msg)
    if at is None or not ("overwrite" in msg or "twice" in msg):
        return None
    line_no = int(at.group(1))
    lines = text.splitlines()
    line = lines[line_no - 1].strip() if 0 < line_no <= len(lines) else ""
    key = line.strip("[] ") if line.startswith("[") else line.split("=", 1)[0].strip()
    return f"duplicate key {_show_key(key)} at line {line_no}" if key else None


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return (text.splitlines()[0] if text else type(e).__name__)[:200]


def parse_text(text: str, fmt: str, where: str, *, json_constants: bool = False,
               duplicates: list[str] | None = None) -> Any:
    """Parse ``text`` as ``fmt`` (JSON, YAML or TOML); one :class:`ffnlab.errors.FfnlabError` line on failure.

    JSON's NaN/Infinity are refused unless ``json_constants`` (config.json files written by
    Python's json, e.g. ``"time_step_limit": [0.0, Infinity]``, which transformers reads; values
    still go through the number checks where they are used); nesting deeper than the parser can
    follow and integers longer than Python converts are reported as errors, not tracebacks. A
    key given twice in one JSON object is refused, unless ``duplicates`` is a list: then the last
    value is kept, as ``json.loads`` keeps it (how transformers reads a config.json), and the key
    is added to the list for the caller to report.
    """
    try:
        if fmt == "JSON":
            hook = unique_pairs if duplicates is None else _last_pairs(duplicates)
            if json_constants:
                return json.loads(text, object_pairs_hook=hook)
            return json.loads(text, parse_constant=_no_constant, object_pairs_hook=hook)
        if fmt == "YAML":
            return load_yaml(text)
        if fmt == "TOML":
            try:
                import tomllib
            except ImportError:  # pragma: no cover - Python 3.10
                import tomli as tomllib
            try:
                return tomllib.loads(text)
            except tomllib.TOMLDecodeError as e:
                duplicate = _toml_duplicate(e, text)
                if duplicate is None:
                    raise
                raise ValueError(duplicate) from None
    except YamlRefused as e:
        raise _fail(f"{clip(where)}: {e}") from None
    except RecursionError:
        raise _fail(f"{clip(where)}: cannot parse: not valid {fmt} (nested too deeply)") from None
    except Exception as e:  # every parser has its own error types; all are the user's file
        if isinstance(e, ValueError) and "Exceeds the limit" in str(e):  # valid, but too long for Python to read
            raise _fail(f"{clip(where)}: holds an integer of more than {sys.get_int_max_str_digits():,} digits, longer "
                        "than ffnlab reads (no setting needs more than 30)") from None
        raise _fail(f"{clip(where)}: cannot parse: not valid {fmt} ({_first_line(e)})") from None
    raise ValueError(f"unknown format {fmt!r}")  # a programming error, not the user's


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def read_data(path: str | Path, what: str = "file", *, fmt: str | None = None,
              max_bytes: int = MAX_TEXT_BYTES, json_constants: bool = False,
              duplicates: list[str] | None = None) -> Any:
    """Read and parse a JSON, YAML or TOML file (format from ``fmt`` or the suffix); ``json_constants``
    and ``duplicates`` as :func:`parse_text` takes them."""
    p = Path(path)
    fmt = fmt or FORMATS.get(p.suffix.lower())
    if fmt is None:
        raise _fail(f"{clip(p)}: {what} files must end in {', '.join(FORMATS)}")
    return parse_text(read_text(p, what, max_bytes=max_bytes), fmt, str(p), json_constants=json_constants,
                      duplicates=duplicates)


def read_mapping(path: str | Path, what: str = "file", *, fmt: str | None = None,
                 empty_ok: bool = False) -> dict[str, Any]:
    """:func:`read_data` for files whose top level must be a mapping (``empty_ok``: empty file = {})."""
    data = read_data(path, what, fmt=fmt)
    if data is None and empty_ok:
        return {}
    if not isinstance(data, dict):
        raise _fail(f"{clip(path)}: the top level of a {what} must be a mapping, got {type(data).__name__}")
    return data


def remove_made(folder: str | Path, since: int = 0) -> bool:
    """Delete ``folder`` if it and everything under it are what this process made after sequence
    number ``since`` (:func:`made_here`); return whether it is gone. Anything else in it (another
    process's file, however recent) keeps it whole. Deletion is ``unlink`` and ``rmdir``, deepest
    first, never a recursive delete: whatever another process puts there meanwhile stays, with the
    folders holding it."""
    folder = Path(folder)
    if not made_here(folder, since) or not stat.S_ISDIR(os.lstat(folder).st_mode):
        return False
    walked = list(os.walk(folder, topdown=False))  # never into a link
    if not all(made_here(os.path.join(where, n), since) for where, dirs, names in walked for n in dirs + names):
        return False
    with contextlib.suppress(OSError):
        for where, dirs, names in walked:
            for n in names:
                os.unlink(os.path.join(where, n))
            for n in dirs:
                os.rmdir(os.path.join(where, n))  # only if empty
        os.rmdir(folder)
    return not os.path.lexists(folder)


@contextlib.contextmanager
def provisional_dir(folder: Path) -> Iterator[Path]:
    """Yield ``folder``; if the block fails and ``folder`` did not exist before, remove it if it
    holds only what this process made during the block (:func:`remove_made`), so a refused
    command leaves no output folder behind and a folder another process also writes in stays.
    Once the block has called :func:`settle` on ``folder`` (a run that has written its files), a
    failure keeps it whatever it holds: only a refusal before that removes it.

    The folders on its way that did not exist either (``--out new/deeper/run``: :func:`make_dir`
    makes them too) go the same way, whether ``folder`` went or was never made: innermost first,
    each only if this process made it during the block and it is empty by then
    (:func:`_unmake`): a folder holding anything else stays."""
    folder = Path(folder)
    existed = os.path.lexists(folder)
    resolved, missing = _walk(folder)
    above = [] if existed else [d for d in missing if d != resolved]  # as make_dir will make them
    since = _SEQ[0]
    _OPEN[resolved] = _OPEN.get(resolved, 0) + 1
    try:
        yield folder
    except BaseException:
        if not existed and resolved not in _SETTLED:
            remove_made(folder, since)
            _unmake(above, since)
        raise
    finally:  # settled while any block for the folder (an API's inside a command's) is open
        _OPEN[resolved] -= 1
        if not _OPEN[resolved]:
            del _OPEN[resolved]
            _SETTLED.discard(resolved)


def settle(folder: str | Path) -> None:
    """Make ``folder``, the output of the :func:`provisional_dir` block running now, the command's
    lasting output: from here on a failure of the block (a Ctrl-C, a loss that diverges, a full
    disk) keeps it and everything in it, as a run stopped after it began keeps its files and
    checkpoints to be resumed. Said by the block, not inferred from what the folder holds."""
    _SETTLED.add(system_path(folder))
