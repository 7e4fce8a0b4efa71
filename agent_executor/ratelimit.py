"""Where :class:`RateLimitGuard` used to live: the code is now in
:mod:`agent_executor.guards.ratelimit`.

This face keeps ``from agent_executor.ratelimit import RateLimitGuard`` working.
"""

from __future__ import annotations

from .guards.ratelimit import (
    InMemoryRateLimitStorage,
    RateLimitGuard,
    RateLimitStorage,
    parse_rate,
)

__all__ = ["InMemoryRateLimitStorage", "RateLimitGuard", "RateLimitStorage", "parse_rate"]
