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


def main(argv: list[str] | None = None) -> None:
    """Console entry point: user errors print one line and exit 2."""
    command = typer.main.get_command(app)
    click_errors = _click_errors()
    try:
        rc = command.main(args=argv, prog_name="ffnlab", standalone_mode=False)
    except FfnlabError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(EXIT_USAGE)
    except click_errors as e:
        if type(e).__name__ == "NoArgsIsHelpError":  # bare 'ffnlab' printed the help
            sys.exit(0)
        print(f"error: {e.format_message()}", file=sys.stderr)  # type: ignore[attr-defined]
        sys.exit(EXIT_USAGE if getattr(e, "exit_code", 2) == 2 else e.exit_code)  # type: ignore[attr-defined]
    except OSError as e:  # a path that is a file, a full disk, a permission: the user's environment
        print(f"error: {e.strerror or e}: {e.filename}" if e.filename else f"error: {e}", file=sys.stderr)
        sys.exit(EXIT_USAGE)
    except (typer.Abort, KeyboardInterrupt):
        print("interrupted", file=sys.stderr)
        sys.exit(130)
    sys.exit(rc if isinstance(rc, int) else 0)


if __name__ == "__main__":  # pragma: no cover
    main()
