"""Ctrl-C, never dropped: every command's Ctrl-C and training's, honoured between steps.

Python raises ``KeyboardInterrupt`` wherever the interpreter happens to be when SIGINT arrives,
and an exception raised inside a finalizer (a ``__del__``, a weakref callback) is printed as
"Exception ignored" and dropped: the command then goes on as if no Ctrl-C had come (a ``report``
finished its files and exited 0). Two guards, one for each kind of code:

* :func:`kept_from_finalizers` (every command, set by ``ffnlab.cli.main``): a
  ``KeyboardInterrupt`` that a finalizer would drop is kept, and :func:`check` raises it where
  the command next writes a file (:mod:`ffnlab.files`) or its answer (:mod:`ffnlab.render`), or
  returns; the command stops there, its temporaries are removed on the way out as for any
  Ctrl-C, nothing is committed after it, and ``main`` says ``interrupted`` (exit 130).
* :func:`stop_between_steps` (the training loop): a first SIGINT is only recorded, and the loop
  raises ``KeyboardInterrupt`` itself at its next check, between two steps, where nothing can
  swallow it. A second SIGINT acts at once (the handler in force before is back), so a step that
  hangs can still be stopped.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType


@contextlib.contextmanager
def stop_between_steps() -> Iterator[Callable[[], None]]:
    """Yield ``check()``, which raises ``KeyboardInterrupt`` once a SIGINT has come in the block.

    Outside the main thread (where no signal handler can be set), where SIGINT is ignored (a job
    started in the background by a non-interactive shell), or where its handler was not set from
    Python (so could not be put back), SIGINT keeps its handler and ``check()`` never raises."""
    previous = signal.getsignal(signal.SIGINT)
    if previous is None or previous is signal.SIG_IGN or threading.current_thread() is not threading.main_thread():
        yield lambda: None
        return
    requested: list[int] = []

    def record(signum: int, frame: FrameType | None) -> None:
        requested.append(signum)
        signal.signal(signal.SIGINT, previous)  # a second Ctrl-C acts at once

    def check_step() -> None:
        if requested:
            raise KeyboardInterrupt
        check()

    signal.signal(signal.SIGINT, record)
    try:
        yield check_step
    finally:
        signal.signal(signal.SIGINT, previous)


_dropped: list[type[BaseException]] = []  # Ctrl-Cs a finalizer raised and Python dropped, not raised again yet


def check() -> None:
    """Raise ``KeyboardInterrupt`` if, within :func:`kept_from_finalizers`, a finalizer dropped
    one since the last check. Called where a command writes (:mod:`ffnlab.files`) or prints
    (:mod:`ffnlab.render`), and by ``ffnlab.cli.main`` when the command returns."""
    if _dropped:
        _dropped.clear()
        raise KeyboardInterrupt


@contextlib.contextmanager
def kept_from_finalizers() -> Iterator[None]:
    """Within the block, a ``KeyboardInterrupt`` raised inside a finalizer (which Python reports
    as "Exception ignored" and drops) is kept, silently, for the next :func:`check` to raise;
    other exceptions a finalizer raises are reported as before."""
    previous = sys.unraisablehook

    def hook(unraisable: sys.UnraisableHookArgs) -> None:
        if unraisable.exc_type is not None and issubclass(unraisable.exc_type, KeyboardInterrupt):
            _dropped.append(unraisable.exc_type)
        else:
            previous(unraisable)

    sys.unraisablehook = hook
    try:
        yield
    finally:
        sys.unraisablehook = previous
        _dropped.clear()
