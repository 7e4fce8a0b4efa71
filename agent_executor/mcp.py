"""Where the MCP tools used to live (it needs the ``[mcp]`` extra, as before):
the code is now in :mod:`agent_executor.tools.mcp`.

This path still hands on the names that module exports (its ``__all__``, taken whole, so the
two cannot drift apart), but it is deprecated: importing it warns, and the release named in
:mod:`agent_executor._deprecations` removes it.
"""

from ._deprecations import warn_moved
from .tools.mcp import *  # noqa: F403
from .tools.mcp import __all__ as __all__

warn_moved(__name__)
