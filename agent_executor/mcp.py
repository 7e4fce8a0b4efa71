"""Moved to :mod:`agent_executor.tools.mcp`; this path keeps working (it needs the ``[mcp]``
extra, as before)."""

from .tools.mcp import (
    MCPConfig,
    MCPConnectionError,
    MCPServerConfig,
    MCPTool,
    MCPToolError,
    MCPToolset,
    load_config,
)

__all__ = [
    "MCPConfig",
    "MCPConnectionError",
    "MCPServerConfig",
    "MCPTool",
    "MCPToolError",
    "MCPToolset",
    "load_config",
]
