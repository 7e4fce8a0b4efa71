"""The command line's one error type."""

from __future__ import annotations

__all__ = ["CliError"]


class CliError(Exception):
    """A configuration problem reported to the user with exit status 2."""
