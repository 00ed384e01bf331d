"""Every path option and argument given ``~USER/...`` for a user this machine lacks: one error line
naming the option and saying that there is no such user, exit 2.

Each path parameter of every command (those whose parser is ``cli.app.user_path`` or
``user_path_text``, found by walking the click command tree, so a new one is covered) is given
``~USER/x`` first on its command line. Oracle: ``pwd`` says the user does not exist; the CLI's exit
status and its one stderr line (in-process runner, the console entry point itself).
"""

from __future__ import annotations

import pwd

import pytest
from fuzz_cli import assert_refused, cli

NOBODY = "ffnlab-no-such-user-3rd"


def _path_params() -> list[tuple[tuple[str, ...], str, bool, int]]:
    """(command path, the parameter's option or its name, whether it is an option, the positional
    arguments before it) for every path parameter of every command."""
    import typer

    from ffnlab.cli import GROUPS, app
    from ffnlab.cli.app import user_path, user_path_text

    for group in GROUPS:
        __import__(f"ffnlab.cli.{group}")
    found = []

    def walk(cmd: object, names: tuple[str, ...]) -> None:  # typer's own copy of click: its classes by duck type
        if hasattr(cmd, "commands"):
            for name, sub in cmd.commands.items():
                walk(sub, (*names, name))
            return
        before = 0
        for p in cmd.params:  # type: ignore[attr-defined]
            is_option = p.param_type_name == "option"
            if getattr(p.type, "func", None) in (user_path, user_path_text):
                found.append((names, p.opts[0] if is_option else p.name, is_option, before))
            if p.param_type_name == "argument":
                before += 1

    walk(typer.main.get_command(app), ())
    return found


PARAMS = _path_params()


def test_the_user_does_not_exist():
    with pytest.raises(KeyError):
        pwd.getpwnam(NOBODY)


def test_path_parameters_were_found():
    assert len(PARAMS) >= 20 and any(p[1] == "--out" for p in PARAMS) and any(not p[2] for p in PARAMS)


@pytest.mark.parametrize(("command", "param", "is_option", "before"), PARAMS,
                         ids=[" ".join((*c, p)) for c, p, _, _ in PARAMS])
def test_an_unknown_user_is_said_in_one_line(tmp_path, command, param, is_option, before):
    given = f"~{NOBODY}/x.svg" if param == "--plot" else f"~{NOBODY}/x"
    argv = [*command, param, given] if is_option else [*command, *["y"] * before, given]
    line = assert_refused(cli(*argv, where=tmp_path), "no such user")
    assert f"~{NOBODY}" in line, line
    shown = param if is_option else f"'{param}'"
    assert shown in line, line  # which parameter
