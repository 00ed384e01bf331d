"""Where things are, for the tests and the helper scripts: the checkout's root, src/, tests/data.

Test modules live one or two folders below tests/ (mirroring the package), helpers in
tests/helpers/; each names these instead of counting parent folders from its own place."""

from __future__ import annotations

from pathlib import Path

HELPERS = Path(__file__).resolve().parent
TESTS = HELPERS.parent
ROOT = TESTS.parent
SRC = ROOT / "src"
DATA = TESTS / "data"
