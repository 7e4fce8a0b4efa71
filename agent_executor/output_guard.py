"""Where :class:`OutputGuard` used to live:
the code is now in :mod:`agent_executor.guards.output`.

This path keeps working for the names that module exports (its ``__all__``, taken whole, so
the two cannot drift apart).
"""

from .guards.output import *  # noqa: F403
from .guards.output import __all__ as __all__
