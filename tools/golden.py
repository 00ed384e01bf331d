"""Keep one golden JSON file per command: what ``ffnlab COMMAND ... --json`` prints for fixed inputs.

Each file ``tests/golden/COMMAND.json`` lists invocations (``args``, without the ``ffnlab``) with
the exit status and the parsed JSON they printed. ``tests/project/test_golden.py`` runs every
invocation again and compares, so any change to what a command answers shows up as a diff of
that command's file, to be read and committed on purpose.

    python tools/golden.py            # rewrite every golden file in place (make golden)
    python tools/golden.py fit size   # only these commands
    python tools/golden.py --check    # exit 1 and name each invocation whose answer differs

To add an invocation, append ``{"args": [...]}`` to a file's ``cases`` and run the writer. The
commands run inside this process (``ffnlab.cli.main``, the console entry point itself), from the
repository root, offline; the sizing commands need no torch (a case with ``"needs": "transformers"``
counts a config.json through transformers, and is skipped by the test where it is not installed).

A result no flag can express is kept the same way in ``tests/golden/api_FUNCTION.json``: its cases
are ``{"name": ..., "call": {...}}``, the inputs of the Python function ``FUNCTION`` as JSON, and
the JSON its result writes (tools/golden_api.py reads the inputs and calls the function).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
from pathlib import Path
from typing import Any

from ffnlab.files import write_atomic

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden"


def run(args: list[str]) -> tuple[int, Any]:
    """The exit status and the parsed JSON of ``ffnlab ARGS`` (None where stdout is empty)."""
    from ffnlab.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(list(args))
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    text = out.getvalue()
    if code not in (0, 1):
        raise SystemExit(f"ffnlab {' '.join(args)}: exit {code}: {err.getvalue().strip()}")
    return code, json.loads(text) if text.strip() else None


def answer(path: Path, case: dict[str, Any]) -> tuple[int | None, Any]:
    """What the case of the golden file ``path`` answers now: the command's exit status and JSON,
    or (for an ``api_`` file) None and the function's JSON."""
    if path.stem.startswith("api_"):
        if str(ROOT / "tools") not in sys.path:
            sys.path.insert(0, str(ROOT / "tools"))
        from golden_api import answer as api_answer

        return None, api_answer(path.stem[4:], case["call"])
    return run(case["args"])


def files(commands: list[str]) -> list[Path]:
    found = sorted(GOLDEN.glob("*.json"))
    if commands:
        found = [p for p in found if p.stem in commands]
        missing = set(commands) - {p.stem for p in found}
        if missing:
            raise SystemExit(f"no golden file for: {', '.join(sorted(missing))}")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("commands", nargs="*", help="the commands to rewrite or check (default: all)")
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    a = parser.parse_args(argv)
    os.chdir(ROOT)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    differ = 0
    for path in files(a.commands):
        doc = json.loads(path.read_text(encoding="utf-8"))
        for case in doc["cases"]:
            code, got = answer(path, case)
            if a.check:
                if (code, got) != (case.get("exit"), case.get("json")):
                    differ += 1
                    what = case["name"] if "call" in case else f"ffnlab {' '.join(case['args'])}"
                    print(f"{path.name}: {what} answers differently", file=sys.stderr)
            elif "call" in case:
                case["json"] = got
            else:
                case["exit"], case["json"] = code, got
        if not a.check:
            write_atomic(path, json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
            print(f"wrote {path.relative_to(ROOT)} ({len(doc['cases'])} invocations)")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
