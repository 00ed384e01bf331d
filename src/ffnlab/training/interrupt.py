"""Ctrl-C during training, honoured between steps.

Python raises ``KeyboardInterrupt`` wherever the interpreter happens to be when SIGINT arrives,
and an exception raised inside a finalizer (a ``__del__``, a weakref callback) is printed as
"Exception ignored" and dropped: the run then trains on as if no Ctrl-C had come. Within
:func:`stop_between_steps` a first SIGINT is only recorded, and the training loop raises
``KeyboardInterrupt`` itself at its next check, between two steps, where nothing can swallow it.
A second SIGINT acts at once (the handler in force before is back), so a step that hangs can
still be stopped.
"""

from __future__ import annotations

import contextlib
import signal
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

    def check() -> None:
        if requested:
            raise KeyboardInterrupt

    signal.signal(signal.SIGINT, record)
    try:
        yield check
    finally:
        signal.signal(signal.SIGINT, previous)
