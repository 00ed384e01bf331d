"""Advisory folder locks: one writer per run or sweep folder at a time.

``flock`` locks vanish with the process that held them, so a killed run never leaves a stale
lock behind. The lock file is opened with ``O_NOFOLLOW``: a symlink planted at ``.lock``
(dangling or not) is refused, never followed to create or open a file elsewhere. A lock file this
process created is removed again when the block fails (while still held: a process that opened it
meanwhile finds it unlinked after locking and starts over on the new name), so a refused command's
provisional folder (:func:`ffnlab.files.provisional_dir`) can go, and when a block that only read
the folder ends; a lock file that was already there is left as it was. Also: children started by a
sweep die with it (Linux ``PR_SET_PDEATHSIG``).
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

from ffnlab.errors import FfnlabError
from ffnlab.files import make_dir

ATTEMPTS = 100  # opening a lock file another process removes at that very moment: try again


def _open_lock(lock: Path) -> tuple[int, bool]:
    """``lock`` opened (created if absent, its folder made again if a cleanup removed it
    meanwhile), and whether this call created it."""
    flags = os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    for _ in range(ATTEMPTS):
        try:
            try:
                return os.open(lock, flags | os.O_CREAT | os.O_EXCL, 0o644), True
            except FileExistsError:
                return os.open(lock, flags), False
        except FileNotFoundError:  # removed between the two opens, or its folder was
            make_dir(lock.parent)
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise FfnlabError(f"{lock} is a symlink; remove it "
                                  "(ffnlab does not follow links in its folders)") from None
            raise
    raise FfnlabError(f"cannot open {lock}: another process keeps removing it")


def _same_file(fd: int, lock: Path) -> bool:
    try:
        st, now = os.fstat(fd), os.lstat(lock)
    except OSError:
        return False
    return (st.st_dev, st.st_ino) == (now.st_dev, now.st_ino)


@contextlib.contextmanager
def folder_lock(folder: Path, what: str, *, reading: bool = False) -> Iterator[None]:
    """Hold ``folder/.lock`` exclusively, or fail at once naming ``what`` is already running.
    ``reading``: the block only reads the folder, so a lock file this call created is removed when
    it ends, whichever way (a finished run looked at by ``--resume`` is left as it was)."""
    make_dir(folder)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: no locking
        yield
        return
    lock = folder / ".lock"
    for _ in range(ATTEMPTS):
        fd, created = _open_lock(lock)
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise FfnlabError(f"{lock} is not a regular file; remove it")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise FfnlabError(f"another {what} is running in {folder}; wait for it or stop it first") from None
        if _same_file(fd, lock):
            break
        os.close(fd)  # locked a file its creator removed meanwhile: lock the one now at the name
    else:
        raise FfnlabError(f"cannot lock {lock}: another process keeps replacing it")
    failed = True
    try:
        yield
        failed = False
    finally:
        if (failed or reading) and created and _same_file(fd, lock):
            os.unlink(lock)  # while held: whoever opened it meanwhile sees, once locked, that it is gone
        os.close(fd)


def die_with_parent() -> None:
    """preexec_fn for child processes: receive SIGTERM when the parent dies (Linux only)."""
    if sys.platform.startswith("linux"):
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
