"""The ``ffnlab`` command line: one module per command group, all registered on one Typer app.

``sizing`` (size, plan, explain, audit, zoo, claims) never imports torch; ``training`` (train,
export) and ``experiments`` (sweep, report, verify) import it only when their command runs.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from importlib import import_module

import typer

from ffnlab.cli.app import app
from ffnlab.errors import EXIT_USAGE, FfnlabError
from ffnlab.escape import terminal

GROUPS = ("sizing", "fit", "training", "experiments", "probe", "capacity")  # command modules, in the order of --help
for _group in GROUPS:
    import_module(f"ffnlab.cli.{_group}")  # importing a group registers its commands on ``app``


def _click_errors() -> tuple[type[BaseException], ...]:
    """The ClickException classes in play (typer may vendor its own copy of click)."""
    found = {c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException"}
    try:
        import click

        found.add(click.ClickException)
    except ImportError:  # pragma: no cover
        pass
    return tuple(found)


def _error(message: str, code: int = EXIT_USAGE) -> None:
    """Print ``message`` as the one ``error:`` line (newlines folded, control characters from
    file or folder names made visible) and exit with ``code``."""
    line = terminal(" ".join(str(message).split()), one_line=True) or "failed"
    print(f"error: {line}", file=sys.stderr, flush=True)
    sys.exit(code)


def _interrupted(console: bool) -> None:
    if console:  # a second Ctrl-C while this line is written ends the process, no "Exception ignored"
        signal.signal(signal.SIGINT, signal.SIG_DFL)
    print("interrupted", file=sys.stderr, flush=True)
    sys.exit(130)


def _stdout_closed() -> None:
    """The reader of stdout went away (``ffnlab zoo | head``): stop quietly, as a shell tool does."""
    with contextlib.suppress(OSError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # the exit flush cannot fail again
    sys.exit(141)


def main(argv: list[str] | None = None) -> None:
    """Console entry point: user errors print one line and exit 2; Ctrl-C prints ``interrupted``, exit 130."""
    console = argv is None  # the real command line (not a caller in this process)
    command = typer.main.get_command(app)
    click_errors = _click_errors()
    try:
        rc = command.main(args=argv, prog_name="ffnlab", standalone_mode=False)
        sys.stdout.flush()  # drained here, so a Ctrl-C or a closed pipe meets the handlers below
        sys.stderr.flush()
    except BrokenPipeError:
        _stdout_closed()
    except FfnlabError as e:
        _error(str(e))
    except click_errors as e:
        if type(e).__name__ == "NoArgsIsHelpError":  # bare 'ffnlab' printed the help
            sys.exit(0)
        code = getattr(e, "exit_code", EXIT_USAGE)
        _error(e.format_message(), EXIT_USAGE if code == EXIT_USAGE else code)  # type: ignore[attr-defined]
    except OSError as e:  # a path that is a file, a full disk, a permission: the user's environment
        _error(f"{e.strerror or e}: {e.filename}" if e.filename else str(e))
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
