"""Where :class:`OutputGuard` used to live: the code is now in :mod:`agent_executor.guards.output`.

This face keeps ``from agent_executor.output_guard import OutputGuard`` working.
"""

from __future__ import annotations

from .guards.output import SECRET_PATTERNS, OutputBlocked, OutputFilter, OutputGuard

__all__ = ["SECRET_PATTERNS", "OutputBlocked", "OutputFilter", "OutputGuard"]
