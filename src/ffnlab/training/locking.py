"""Advisory folder locks: one writer per run or sweep folder at a time.

``flock`` locks vanish with the process that held them, so a killed run never leaves a stale
lock behind. The lock file is opened with ``O_NOFOLLOW``: a symlink planted at ``.lock``
(dangling or not) is refused, never followed to create or open a file elsewhere. Also: children started by a sweep die with it (Linux ``PR_SET_PDEATHSIG``).
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


@contextlib.contextmanager
def folder_lock(folder: Path, what: str) -> Iterator[None]:
    """Hold ``folder/.lock`` exclusively, or fail at once naming ``what`` is already running."""
    folder.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: no locking
        yield
        return
    lock = folder / ".lock"
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(lock, flags, 0o644)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise FfnlabError(f"{lock} is a symlink; remove it (ffnlab does not follow links in its folders)") from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise FfnlabError(f"{lock} is not a regular file; remove it")
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise FfnlabError(f"another {what} is running in {folder}; wait for it or stop it first") from None
        yield
    finally:
        os.close(fd)


def die_with_parent() -> None:
    """preexec_fn for child processes: receive SIGTERM when the parent dies (Linux only)."""
    if sys.platform.startswith("linux"):
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
