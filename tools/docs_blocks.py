"""Keep the command outputs shown in README.md and docs/ equal to what the commands print.

A generated block in a Markdown file looks like this (the markers are HTML comments, invisible on
GitHub)::

    <!-- out: ffnlab size --d-model 768 --format markdown -->
    ...whatever the generator wrote...
    <!-- /out -->

Between the markers the generator writes the command as a ``$ ffnlab ...`` code block and then its
output: raw when the command asks for ``--format markdown`` (a table GitHub renders), otherwise in
a ``text`` code block (stderr after stdout, as a terminal shows them). Commands run in a
subprocess with an 80-column terminal and no colour, from the repository root, and never reach the
network (the Hub is set offline).

    python tools/docs_blocks.py           # rewrite every generated block in place
    python tools/docs_blocks.py --check   # exit 1 and name each block that differs (the test)

A block may show an excerpt of the output, still generated and checked: ``<!-- out: CMD from "TEXT"
until "TEXT" -->`` (either part alone) keeps the lines from the first one starting with the
``from`` text up to (not including) the next one starting with the ``until`` text, and says so
where lines were left out. A selector that matches nothing is an error, so an excerpt cannot
silently go empty.

A ``$ ffnlab`` line outside a generated block must be marked ``<!-- sample: REASON -->`` on the
line before its code block (output with timings or from a long run, shown as an example);
``--check`` fails on an unmarked one, so no hand-copied output can drift unnoticed.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

from ffnlab.files import write_atomic

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"<!-- out: (?P<cmd>.+?) -->\n(?P<body>.*?)<!-- /out -->", re.S)
SAMPLE = re.compile(r"<!-- sample: .+? -->\n```[a-z]*\n", re.S)


def doc_files(root: Path = ROOT) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").rglob("*.md"))]


def run_command(cmd: str, root: Path = ROOT) -> str:
    """What ``cmd`` (starting ``ffnlab``) prints on an 80-column terminal, stdout then stderr."""
    args = shlex.split(cmd)
    if not args or args[0] != "ffnlab":
        raise SystemExit(f"error: a generated block must run ffnlab, got {cmd!r}")
    env = {**os.environ, "COLUMNS": "80", "LINES": "50", "NO_COLOR": "1", "TERM": "dumb",
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    p = subprocess.run([sys.executable, "-m", "ffnlab", *args[1:]], capture_output=True, text=True,
                       cwd=root, env=env, timeout=300)
    out = p.stdout + p.stderr
    return "\n".join(line.rstrip() for line in out.rstrip("\n").splitlines()) + "\n"


EXCERPT = re.compile(r'^(?P<cmd>.*?)(?: from "(?P<start>[^"]+)")?(?: until "(?P<stop>[^"]+)")?$')


def excerpt(out: str, start: str | None, stop: str | None) -> tuple[str, bool, bool]:
    """The lines of ``out`` from the first starting with ``start`` up to the next starting with
    ``stop``; and whether lines were left out before and after."""
    lines = out.splitlines(keepends=True)
    first = 0 if start is None else next((i for i, line in enumerate(lines) if line.startswith(start)), None)
    if first is None:
        raise SystemExit(f"error: no output line starts with {start!r}")
    last = len(lines)
    if stop is not None:
        last = next((i for i in range(first + 1, len(lines)) if lines[i].startswith(stop)), -1)
        if last < 0:
            raise SystemExit(f"error: no output line after {start!r} starts with {stop!r}")
    return "".join(lines[first:last]), first > 0, last < len(lines)


def render(spec: str, root: Path = ROOT) -> str:
    m = EXCERPT.match(spec)
    assert m is not None  # the pattern matches any text
    cmd = m["cmd"]
    out, cut_before, cut_after = excerpt(run_command(cmd, root), m["start"], m["stop"])
    shown = f"```\n$ {cmd}\n```\n\n"
    if "--format markdown" in cmd and not out.startswith("error:"):
        note = "*(an excerpt of the output: lines were left out " + \
            {(True, True): "before and after it", (True, False): "before it", (False, True): "after it"}.get(
                (cut_before, cut_after), "") + ")*\n\n" if cut_before or cut_after else ""
        return shown + note + out
    return (f"```text\n$ {cmd}\n{'[...]' + chr(10) if cut_before else ''}"
            f"{out}{'[...]' + chr(10) if cut_after else ''}```\n")


def update_text(text: str, root: Path = ROOT) -> str:
    return BLOCK.sub(lambda m: f"<!-- out: {m['cmd']} -->\n{render(m['cmd'], root)}<!-- /out -->", text)


def unmarked_commands(text: str) -> list[str]:
    """``$ ffnlab`` lines that are neither inside a generated block nor in a block marked sample."""
    spans = [m.span() for m in BLOCK.finditer(text)] + [(m.start(), _fence_end(text, m.end()))
                                                        for m in SAMPLE.finditer(text)]
    found = []
    for m in re.finditer(r"^\$ ffnlab.*$", text, re.M):
        if not any(a <= m.start() < b for a, b in spans):
            found.append(m.group(0))
    return found


def _fence_end(text: str, start: int) -> int:
    end = text.find("\n```", start)
    return len(text) if end < 0 else end


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="report differences instead of rewriting")
    ap.add_argument("files", nargs="*", type=Path, help="Markdown files (default README.md and docs/)")
    a = ap.parse_args(argv)
    bad = 0
    for path in [p.resolve() for p in a.files] or doc_files():
        text = path.read_text()
        new = update_text(text)
        for line in unmarked_commands(text):
            print(f"{_shown(path)}: command output not generated nor marked sample: {line}")
            bad += 1
        if new == text:
            continue
        if a.check:
            for old_m, new_m in zip(BLOCK.finditer(text), BLOCK.finditer(new), strict=False):
                if old_m.group(0) != new_m.group(0):
                    print(f"{_shown(path)}: out of date: {old_m['cmd']}")
                    bad += 1
        else:
            write_atomic(path, new)
            print(f"updated {_shown(path)}")
    if bad and a.check:
        print("run `python tools/docs_blocks.py` (or `make docs`) to regenerate the blocks")
    return 1 if bad and a.check else 0


if __name__ == "__main__":
    raise SystemExit(main())
