"""The ``ffnlab`` command line: one module per command group, all registered on one Typer app.

``sizing`` (size, plan, explain, audit, zoo, claims) never imports torch; ``training`` (train,
export) and ``experiments`` (sweep, report, verify) import it only when their command runs.
A command line that names a command imports only that command's group (COMMAND_GROUPS), so
``ffnlab size`` does not pay for the other groups; anything else (``--help``, a misspelt
command, completion) imports them all.
"""

from __future__ import annotations

import sys


def _interrupted_while_importing() -> None:
    """A Ctrl-C before the command line is even imported (typer, the command groups: about a tenth
    of a second) ends it as one inside a command does: ``interrupted``, exit 130, no traceback."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)  # a second Ctrl-C while the line is written ends the process
    import contextlib

    if sys.stderr is not None:  # a stderr that cannot be written loses the line, not the status
        with contextlib.suppress(OSError, ValueError):
            print("interrupted", file=sys.stderr, flush=True)
    raise SystemExit(130)


try:
    import contextlib
    import io
    import os
    import signal
    from collections.abc import Sequence
    from importlib import import_module
    from typing import Any

    import typer

    from ffnlab import interrupt
    from ffnlab.cli import notes
    from ffnlab.cli.app import app, tidy_help, version_line
    from ffnlab.errors import EXIT_USAGE, FfnlabError
    from ffnlab.escape import terminal
    from ffnlab.files import drop_empty_locations
    from ffnlab.validation import clip, clip_values
except KeyboardInterrupt:
    _interrupted_while_importing()

# command modules, in the order of --help
GROUPS = ("sizing", "fit", "training", "evaluate", "experiments", "probe", "capacity")
COMMAND_GROUPS = {  # command -> the group module that registers it (tests/cli/test_cli_conventions.py checks it)
    "size": "sizing", "plan": "sizing", "explain": "sizing", "audit": "sizing", "zoo": "sizing", "claims": "sizing",
    "fit": "fit", "train": "training", "export": "training", "generate": "training",
    "sweep": "experiments", "report": "experiments", "verify": "experiments", "probe": "probe", "capacity": "capacity",
    "perplexity": "evaluate", "table": "evaluate",
}


def version() -> None:
    """Print ffnlab's version (the same as ffnlab --version)."""
    print(version_line())


app.command("version", hidden=True)(version)  # 'ffnlab version' answers too, not "did you mean 'verify'"
COMMAND_GROUPS["version"] = "app"


def register(argv: Sequence[str]) -> None:
    """Import the command group(s) this command line needs; importing a group registers its commands."""
    first = next((a for a in argv if not a.startswith("-")), None)
    completing = "_FFNLAB_COMPLETE" in os.environ  # shell completion walks every command
    needed = [COMMAND_GROUPS[first]] if first in COMMAND_GROUPS and not completing else GROUPS
    for group in needed:
        import_module(f"ffnlab.cli.{group}")  # "app" for the commands registered here


def _click_errors() -> tuple[type[BaseException], ...]:
    """The ClickException classes in play: typer's (it may vendor its own copy of click) and, if
    something imported it, click's own."""
    found = {c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException"}
    click = sys.modules.get("click")
    if click is not None:
        found.add(click.ClickException)
    return tuple(found)


def _invoke(command: Any, argv: list[str] | None) -> Any:
    """Run ``command`` on ``argv`` (None: the real command line) as click's ``main`` does with
    ``standalone_mode=False``, letting every exception out as it was raised.

    Typer's ``main`` (``typer.core._main``) translates two of them before this module's handlers
    can see them, even with ``standalone_mode=False``: a broken pipe becomes ``sys.exit(1)``, the
    status of a "nothing fits" answer, and a Ctrl-C a returned 130 with no ``interrupted`` line.
    Returns the command's status: its return value, or the code of a ``typer.Exit`` it raised."""
    args = sys.argv[1:] if argv is None else list(argv)
    command._main_shell_completion({}, "ffnlab")  # _FFNLAB_COMPLETE set: answer the shell and exit
    try:
        with command.make_context("ffnlab", args) as ctx:
            return command.invoke(ctx)
    except typer.Exit as e:  # a command's own status ("nothing fits": 1), --version's 0
        return e.exit_code


class _ClosedStdout(io.TextIOBase):
    """``sys.stdout`` of a process started without one (``ffnlab ... >&-``, where Python sets it
    to None): the first write is refused as one ``error:`` line, exit 2, as a full disk is."""

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def write(self, s: str) -> int:
        raise FfnlabError("standard output is closed, so the answer cannot be printed; "
                          "send it somewhere (> FILE, or > /dev/null to discard it)")


def _standard_streams() -> None:
    """Standard streams that exist: a closed stdout refuses to be written (:class:`_ClosedStdout`);
    a closed stderr is /dev/null, so that no line meant for it (``print(file=None)``) lands on
    stdout, where a ``--json`` reader expects JSON or nothing."""
    if sys.stdout is None:
        sys.stdout = _ClosedStdout()
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - the process's stderr until it exits


def _say(line: str) -> None:
    """``line`` on stderr. A stderr that cannot be written (``2>/dev/full``) loses the line, not
    the status that goes with it: the descriptor is pointed at /dev/null, so the exit's own flush
    of what is still buffered cannot fail again."""
    try:
        print(line, file=sys.stderr, flush=True)
    except (OSError, ValueError):  # ValueError: a stream closed in this process
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stderr.fileno())


def _error(message: str, code: int = EXIT_USAGE, *, quoted: bool = False) -> None:
    """Print ``message`` as the one ``error:`` line (newlines folded, a long value cut to a prefix
    and its length wherever a check did not cut it itself, control characters from file or folder
    names made visible) and exit with ``code``. ``quoted``: the message quotes only values (click's
    usage errors), so a long quoted span is cut too (:func:`ffnlab.validation.clip_values`)."""
    line = terminal(" ".join(clip_values(str(message), quoted).split()), one_line=True) or "failed"
    _say(f"error: {line}")
    sys.exit(code)


def _interrupted(console: bool) -> None:
    if console:  # a second Ctrl-C while this line is written ends the process, no "Exception ignored"
        signal.signal(signal.SIGINT, signal.SIG_DFL)
    _say("interrupted")
    sys.exit(130)


def _stdout_closed() -> None:
    """The reader of stdout went away (``ffnlab zoo | head``): stop quietly, as a shell tool does."""
    with contextlib.suppress(OSError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # the exit flush cannot fail again
    sys.exit(141)


def main(argv: list[str] | None = None) -> None:
    """Console entry point: user errors print one line and exit 2 (the notes said before it dropped:
    :func:`ffnlab.cli.notes.held`); Ctrl-C prints ``interrupted``, exit 130."""
    console = argv is None  # the real command line (not a caller in this process)
    _standard_streams()
    drop_empty_locations()  # HOME= and the like read as unset, before any library reads them
    try:  # the command's group and the libraries it imports, before the command runs
        register(sys.argv[1:] if argv is None else argv)
        command = tidy_help(typer.main.get_command(app))
        click_errors = _click_errors()
    except KeyboardInterrupt:
        _interrupted(console)
    try:
        # a Ctrl-C that lands in a finalizer stops the command all the same; the notes said on the
        # way (a count read with a suffix, a launch config's report) wait for the command to get past
        # its checks: a refusal, raised to the handlers below, drops them and is the one line
        with interrupt.kept_from_finalizers(), notes.held():
            rc = _invoke(command, argv)
            notes.release()
            interrupt.check()
            sys.stdout.flush()  # drained here, so a Ctrl-C or a closed pipe meets the handlers below
            sys.stderr.flush()
            interrupt.check()
    except BrokenPipeError:
        _stdout_closed()
    except SystemExit as e:  # a library's own broken-pipe exit (rich's help console: SystemExit(1))
        if isinstance(e.__context__, BrokenPipeError):
            _stdout_closed()
        raise
    except FfnlabError as e:
        _error(str(e))
    except click_errors as e:
        if type(e).__name__ == "NoArgsIsHelpError":  # bare 'ffnlab' printed the help
            sys.exit(0)
        code = getattr(e, "exit_code", EXIT_USAGE)
        _error(e.format_message(), EXIT_USAGE if code == EXIT_USAGE else code,  # type: ignore[attr-defined]
               quoted=True)  # click quotes the value whole ("Invalid value for '--lora-alpha': 'aaa...'")
    except OSError as e:  # a path that is a file, a full disk, a permission: the user's environment
        _error(f"{e.strerror or e}: {clip(e.filename)}" if e.filename else str(e))  # a 100,000-character name: cut
    except MemoryError:  # the pre-checks estimate; an allocation can still fail
        _error("out of memory; choose a smaller model, batch or input")
    except RecursionError:
        _error("input nested too deeply")
    except (typer.Abort, KeyboardInterrupt):
        _interrupted(console)
    if console:  # a Ctrl-C while the interpreter exits ends it as interrupted (not status 0)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
    sys.exit(rc if isinstance(rc, int) else 0)


if __name__ == "__main__":  # pragma: no cover
    main()
