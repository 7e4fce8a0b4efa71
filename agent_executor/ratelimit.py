"""Where :class:`RateLimitGuard` used to live:
the code is now in :mod:`agent_executor.guards.ratelimit`.

This path keeps working for the names that module exports (its ``__all__``, taken whole, so
the two cannot drift apart).
"""

from .guards.ratelimit import *  # noqa: F403
from .guards.ratelimit import __all__ as __all__
