"""Where :class:`Metrics` used to live:
the code is now in :mod:`agent_executor.observability.metrics`.

This path keeps working for the names that module exports (its ``__all__``, taken whole, so
the two cannot drift apart).
"""

from .observability.metrics import *  # noqa: F403
from .observability.metrics import __all__ as __all__
