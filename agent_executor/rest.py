"""Where :class:`RestTool` used to live:
the code is now in :mod:`agent_executor.tools.rest`.

This path keeps working for the names that module exports (its ``__all__``, taken whole, so
the two cannot drift apart).
"""

from .tools.rest import *  # noqa: F403
from .tools.rest import __all__ as __all__
