"""Where the MCP tools used to live (it needs the ``[mcp]`` extra, as before):
the code is now in :mod:`agent_executor.tools.mcp`.

This path keeps working for the names that module exports (its ``__all__``, taken whole, so
the two cannot drift apart).
"""

from .tools.mcp import *  # noqa: F403
from .tools.mcp import __all__ as __all__
