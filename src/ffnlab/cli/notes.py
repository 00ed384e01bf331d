"""What a command says on stderr besides its answer: notes held until the command is past its
checks, and a one-line note on an interactive terminal while a slow step runs.

Held notes (:func:`say`): a note about the input (``note: --seq-len 8k read as 8,000``, a launch
config's report of the keys it used, a flag that had no effect) is written when the command
first writes anything else, on stdout or stderr (its answer, a progress line), or when it
returns; a command refused before that (``error: ...``, exit 2) drops them, so a refusal is the
one line on stderr whatever was read or noted on the way to it. ``ffnlab.cli.main`` holds them
(:func:`held`) for every command; outside it (a caller of a parser or a command function in its
own process) :func:`say` writes at once.

Transient notes (:func:`transient_note`): only on a terminal; piped or captured stderr
(scripts, tests) gets nothing, so a refused command still writes exactly one ``error:`` line there.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Iterator
from typing import Any, TextIO

from ffnlab.escape import one_line

_lock = threading.RLock()
_pending: list[list[str]] = []  # one list of held lines per held() in force, innermost last
_out: list[TextIO] = []  # the stderr each held() found, where its lines go


def say(line: str) -> None:
    """``line`` on stderr once the command is past its checks (:func:`held`); at once outside it.
    Every note passes here: its control characters (an escape sequence, a NUL, a bidi override
    from a flag's value, a file or its name) are shown as escapes, as an error line's are
    (:func:`ffnlab.escape.one_line`), so a note can neither act on the terminal nor fake a line."""
    line = one_line(line)
    with _lock:
        if _pending:
            _pending[-1].append(line)
            return
    print(line, file=sys.stderr)


def release() -> None:
    """Write the held lines now (in the order said), before whatever the command writes next."""
    with _lock:
        if not _pending or not _pending[-1]:
            return
        lines, _pending[-1][:] = list(_pending[-1]), []
        stream = _out[-1]
        for line in lines:
            stream.write(line + "\n")
        stream.flush()


class _Releasing:
    """A standard stream that first writes the held notes (:func:`release`): so the notes keep
    their place before the answer and any later stderr line, and come out only once the command
    writes something that is not a refusal. Everything else is the stream's own."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, s: Any) -> Any:
        if s:  # click probes a stream with write(b""): no output, no release
            release()
        return self._stream.write(s)

    def writelines(self, lines: Any) -> Any:
        release()
        return self._stream.writelines(lines)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._stream)


@contextlib.contextmanager
def held() -> Iterator[None]:
    """Hold :func:`say`'s lines while the block runs: written before the block's first write to
    stdout or stderr, or when it ends normally; dropped when it raises (a refusal, a Ctrl-C), so
    that the refusal's ``error:`` line is the only line. The streams are put back when it ends."""
    stdout, stderr = sys.stdout, sys.stderr
    with _lock:
        _pending.append([])
        _out.append(stderr)
    sys.stdout, sys.stderr = _Releasing(stdout), _Releasing(stderr)
    ok = False
    try:
        yield
        ok = True
    finally:
        sys.stdout, sys.stderr = stdout, stderr
        try:
            if ok:
                release()
        finally:
            with _lock:
                _pending.pop()
                _out.pop()


def transient_note(text: str) -> None:
    """Show ``text`` on the terminal's current line (an empty text erases it)."""
    stream = sys.stderr
    if not stream.isatty():
        return
    stream.write("\r" + text[:200] + "\033[K")
    stream.flush()
