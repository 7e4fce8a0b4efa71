"""Where :class:`OutputGuard` used to live:
the code is now in :mod:`agent_executor.guards.output`.

This path still hands on the names that module exports (its ``__all__``, taken whole, so the
two cannot drift apart), but it is deprecated: importing it warns, and the release named in
:mod:`agent_executor._deprecations` removes it.
"""

from ._deprecations import warn_moved
from .guards.output import *  # noqa: F403
from .guards.output import __all__ as __all__

warn_moved(__name__)
