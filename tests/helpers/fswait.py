"""Wait for a condition on files or for processes without sleeping or polling on a clock.

:class:`TreeWatch` watches a folder and every folder created under it (Linux inotify, through
ctypes) and rechecks a condition after each change, so a test wakes on the write it waits for;
the watched process's exit (a pidfd) wakes it too. :func:`wait_for_lock` blocks on a folder's
``flock`` (:mod:`ffnlab.training.locking`), which is released when the process holding it exits.
The timeouts are hang guards that fail the test, never a wait that lets it pass.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import select
import signal
import struct
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

IN_MODIFY, IN_CLOSE_WRITE, IN_MOVED_TO, IN_CREATE, IN_ISDIR = 0x2, 0x8, 0x80, 0x100, 0x40000000
IN_NONBLOCK, IN_CLOEXEC = os.O_NONBLOCK, os.O_CLOEXEC
MASK = IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE
EVENT = struct.Struct("iIII")  # wd, mask, cookie, len (then len bytes of name)
HANG_GUARD_S = 300


class TreeWatch:
    """Changes under ``root`` (which may not exist yet: its nearest existing ancestor is watched)."""

    def __init__(self, root: Path):
        self._libc = ctypes.CDLL(None, use_errno=True)
        self.fd = self._libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1 failed")
        self.dirs: dict[int, Path] = {}
        base = root
        while not base.exists():
            base = base.parent
        self._add_tree(base)

    def _add_tree(self, folder: Path) -> None:
        # watch first, then list: a subfolder created in between shows up as an event or in the listing
        wd = self._libc.inotify_add_watch(self.fd, os.fsencode(folder), MASK)
        if wd < 0:
            return  # removed meanwhile
        self.dirs[wd] = folder
        with contextlib.suppress(FileNotFoundError, NotADirectoryError):
            for child in folder.iterdir():
                if child.is_dir() and not child.is_symlink():
                    self._add_tree(child)

    def _drain(self) -> None:
        with contextlib.suppress(BlockingIOError):
            while data := os.read(self.fd, 1 << 16):
                at = 0
                while at < len(data):
                    wd, mask, _, length = EVENT.unpack_from(data, at)
                    name = data[at + EVENT.size:at + EVENT.size + length].rstrip(b"\0")
                    at += EVENT.size + length
                    if mask & IN_ISDIR and mask & (IN_CREATE | IN_MOVED_TO) and wd in self.dirs:
                        self._add_tree(self.dirs[wd] / os.fsdecode(name))

    def wait(self, condition: Callable[[], bool], proc: subprocess.Popen | None = None,
             hang_guard_s: float = HANG_GUARD_S) -> None:
        """Return once ``condition()`` holds; fail if ``proc`` exits first or nothing comes at all."""
        pidfd = os.pidfd_open(proc.pid) if proc is not None else None
        try:
            limit = time.monotonic() + hang_guard_s
            while not condition():
                if proc is not None and proc.poll() is not None:
                    raise AssertionError(f"the process exited ({proc.returncode}) before the condition held")
                ready, _, _ = select.select([self.fd] + ([pidfd] if pidfd is not None else []), [], [],
                                            max(0.0, limit - time.monotonic()))
                if not ready:
                    raise AssertionError(f"nothing under the watched folder changed in {hang_guard_s} s")
                self._drain()
        finally:
            if pidfd is not None:
                os.close(pidfd)

    def close(self) -> None:
        os.close(self.fd)


@contextlib.contextmanager
def watching(root: Path) -> Iterator[TreeWatch]:
    w = TreeWatch(root)
    try:
        yield w
    finally:
        w.close()


def wait_for_lock(folder: Path, hang_guard_s: int = HANG_GUARD_S) -> None:
    """Block until no process holds ``folder/.lock`` (ffnlab's flock), i.e. its holder has exited."""
    lock = folder / ".lock"
    if not lock.exists():
        return
    fd = os.open(lock, os.O_RDWR)

    def hung(signum: int, frame: object) -> None:
        raise AssertionError(f"{folder} is still locked after {hang_guard_s} s: its process did not exit")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(hang_guard_s)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # blocks until the holder exits
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
        os.close(fd)
