"""The ``ffnlab`` command line: one module per command group, all registered on one Typer app.

``sizing`` (size, plan, explain, audit, zoo, claims) never imports torch; ``training`` (train,
export) and ``experiments`` (sweep, report, verify) import it only when their command runs.
"""

from __future__ import annotations

import sys
from importlib import import_module

import typer

from ffnlab.cli.app import app
from ffnlab.errors import EXIT_USAGE, FfnlabError

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
    """Print ``message`` as the one ``error:`` line (newlines folded) and exit with ``code``."""
    line = " ".join(str(message).split()) or "failed"
    print(f"error: {line}", file=sys.stderr, flush=True)
    sys.exit(code)


def main(argv: list[str] | None = None) -> None:
    """Console entry point: user errors print one line and exit 2."""
    command = typer.main.get_command(app)
    click_errors = _click_errors()
    try:
        rc = command.main(args=argv, prog_name="ffnlab", standalone_mode=False)
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
        print("interrupted", file=sys.stderr)
        sys.exit(130)
    sys.exit(rc if isinstance(rc, int) else 0)


if __name__ == "__main__":  # pragma: no cover
    main()
