"""A one-line note on an interactive terminal while a slow step runs, erased when it ends.

Only on a terminal: piped or captured stderr (scripts, tests) gets nothing, so a refused command
still writes exactly one ``error:`` line there.
"""

from __future__ import annotations

import sys


def transient_note(text: str) -> None:
    """Show ``text`` on the terminal's current line (an empty text erases it)."""
    stream = sys.stderr
    if not stream.isatty():
        return
    stream.write("\r" + text[:200] + "\033[K")
    stream.flush()
