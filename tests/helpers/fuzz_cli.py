"""Calling the CLI in-process, as a user would from a shell, and checking what a refusal leaves behind."""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ffnlab.cli import main


@dataclass
class Result:
    code: int
    stdout: str
    stderr: str


@contextlib.contextmanager
def cwd(path: Path) -> Iterator[None]:
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


def cli(*argv: str, where: Path | None = None) -> Result:
    """Run ``ffnlab ARGV`` in this process (in folder ``where``); exceptions other than SystemExit escape."""
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
            cwd(where) if where else contextlib.nullcontext():
        try:
            main(list(argv))
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
    return Result(code, out.getvalue(), err.getvalue())


def snapshot(root: Path) -> dict[str, tuple[str, bytes | None]]:
    """Every path under ``root`` with its kind and (for files) bytes: what a refusal must not change
    (a FIFO is named, never read)."""
    out: dict[str, tuple[str, bytes | None]] = {}
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        if p.is_symlink():
            out[rel] = ("link", os.readlink(p).encode())
        elif p.is_dir():
            out[rel] = ("dir", None)
        elif p.is_fifo():
            out[rel] = ("fifo", None)
        else:
            out[rel] = ("file", p.read_bytes())
    return out


def assert_refused(r: Result, fragment: str = "") -> str:
    """Exit 2, exactly one stderr line starting with ``error:``, no traceback; returns the line."""
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert r.code == 2, (r.code, r.stdout[-500:], r.stderr[-2000:])
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr[-2000:]
    assert "Traceback" not in r.stderr + r.stdout
    assert fragment.lower() in lines[0].lower(), (fragment, lines[0])
    return lines[0]


def refused_untouched(root: Path, *argv: str, fragment: str = "") -> str:
    """Run ``argv`` in ``root``; it must be refused and leave every file and folder under ``root`` as it was."""
    before = snapshot(root)
    line = assert_refused(cli(*argv, where=root), fragment)
    after = snapshot(root)
    assert after == before, (argv, sorted(set(after) ^ set(before))[:5] or "contents changed")
    return line
