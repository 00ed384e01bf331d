"""Ctrl-C in training is honoured between steps (ffnlab/interrupt.py), even where Python itself
would drop it: a KeyboardInterrupt raised inside a finalizer is printed and ignored."""

from __future__ import annotations

import gc
import os
import signal
import sys

import pytest

from ffnlab.interrupt import check, kept_from_finalizers, stop_between_steps


class SignalsWhileFinalized:
    """An object whose finalizer receives SIGINT and then runs Python code, so the interpreter's
    handler for it runs inside ``__del__``."""

    ran = False

    def __del__(self) -> None:
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(1000):  # bytecode after the signal: the handler runs here
            pass
        SignalsWhileFinalized.ran = True


@pytest.fixture(autouse=True)
def python_default_sigint():
    """Python's own Ctrl-C handler, as a terminal gives it: a suite started in the background (CI)
    runs with SIGINT ignored, inherited from its shell."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def finalize_one() -> None:
    SignalsWhileFinalized.ran = False
    obj = SignalsWhileFinalized()
    del obj
    gc.collect()


def test_python_alone_drops_a_ctrl_c_that_arrives_in_a_finalizer(monkeypatch):
    """The failure the module exists for: without it, the interrupt is lost."""
    dropped: list[type[BaseException] | None] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: dropped.append(u.exc_type))
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finalize_one()  # no KeyboardInterrupt reaches this frame
    assert dropped == [KeyboardInterrupt] and not SignalsWhileFinalized.ran


def test_a_ctrl_c_in_a_finalizer_is_raised_at_the_next_check():
    with stop_between_steps() as check:
        finalize_one()
        assert SignalsWhileFinalized.ran  # the finalizer ran to its end: nothing was raised in it
        with pytest.raises(KeyboardInterrupt):
            check()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_no_ctrl_c_no_stop_and_the_second_ctrl_c_acts_at_once():
    with stop_between_steps() as check:
        check()  # nothing came: no stop
        assert signal.getsignal(signal.SIGINT) is not signal.default_int_handler
        os.kill(os.getpid(), signal.SIGINT)
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # recorded, handler put back
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)  # a second one raises where it lands
            for _ in range(1000):
                pass
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_an_ignored_sigint_stays_ignored():
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with stop_between_steps() as check:
            os.kill(os.getpid(), signal.SIGINT)
            check()  # ignored: no stop
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)


def test_outside_training_a_dropped_ctrl_c_is_kept_for_the_next_check():
    """Every command (ffnlab.cli.main): the finalizer runs on, the next check raises, once."""
    with kept_from_finalizers():
        finalize_one()
        assert SignalsWhileFinalized.ran is False  # interrupted inside the finalizer, as without the guard
        with pytest.raises(KeyboardInterrupt):
            check()
        check()  # raised once: a handler that caught it and goes on is not interrupted again


class RaisesWhileFinalized:
    def __del__(self) -> None:
        raise ValueError("a finalizer's own error")


def test_other_errors_in_finalizers_are_reported_as_before(monkeypatch):
    seen: list[type[BaseException] | None] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: seen.append(u.exc_type))
    with kept_from_finalizers():
        obj = RaisesWhileFinalized()
        del obj
        gc.collect()
        check()  # nothing kept: no KeyboardInterrupt
    assert seen == [ValueError]
