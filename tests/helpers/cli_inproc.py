"""Run the ffnlab CLI inside the test process (no interpreter start, no second torch import).

``ffnlab.cli.main`` is the console entry point itself, so exit codes and the one-line errors
are the user's; only the process boundary is skipped. Torch's thread count is restored after.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


def run_cli(capsys, *args: str) -> Result:  # noqa: ANN001 - pytest's capsys fixture
    from ffnlab.cli import main

    torch = sys.modules.get("torch")
    threads = torch.get_num_threads() if torch else None
    capsys.readouterr()  # drop anything printed before
    try:
        main(list(args))
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    finally:
        torch = sys.modules.get("torch")
        if torch and threads:
            torch.set_num_threads(threads)
    out = capsys.readouterr()
    return Result(code, out.out, out.err)
