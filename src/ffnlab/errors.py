"""User-facing errors.

Every mistake a user can make (bad width, malformed config.json, unknown model name,
corrupt checkpoint, missing corpus) raises :class:`ffnlab.errors.FfnlabError`. The CLI turns it into a
single ``error: ...`` line and exit status 2; library callers catch it like any exception.
"""

from __future__ import annotations

EXIT_USAGE = 2


class FfnlabError(ValueError):
    """A problem with the user's input, reported as one line and exit status 2."""


def require(condition: object, message: str) -> None:
    """Raise :class:`ffnlab.errors.FfnlabError` with ``message`` unless ``condition`` holds."""
    if not condition:
        raise FfnlabError(message)
