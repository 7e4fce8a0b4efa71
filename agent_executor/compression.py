"""Where :class:`HistoryCompressor` used to live:
the code is now in :mod:`agent_executor.memory.compression`.

This path keeps working for the names that module exports (its ``__all__``, taken whole, so
the two cannot drift apart).
"""

from .memory.compression import *  # noqa: F403
from .memory.compression import __all__ as __all__
