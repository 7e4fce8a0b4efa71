"""Where :class:`InjectionGuard` used to live:
the code is now in :mod:`agent_executor.guards.injection`.

This path keeps working for the names that module exports (its ``__all__``, taken whole, so
the two cannot drift apart).
"""

from .guards.injection import *  # noqa: F403
from .guards.injection import __all__ as __all__
