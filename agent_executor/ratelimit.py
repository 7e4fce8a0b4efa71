"""Where :class:`RateLimitGuard` used to live:
the code is now in :mod:`agent_executor.guards.ratelimit`.

This path still hands on the names that module exports (its ``__all__``, taken whole, so the
two cannot drift apart), but it is deprecated: importing it warns, and the release named in
:mod:`agent_executor._deprecations` removes it.
"""

from ._deprecations import warn_moved
from .guards.ratelimit import *  # noqa: F403
from .guards.ratelimit import __all__ as __all__

warn_moved(__name__)
