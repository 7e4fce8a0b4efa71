"""The service's agents as MCP tools: every agent, group and flow is one tool that MCP clients
(desktop assistants, IDEs, other agents) can call (docs/mcp-server.md).

:mod:`.endpoint` serves them at ``POST /mcp`` (streamable HTTP, stateless); ``agent-executor
mcp`` serves them over stdio. :mod:`.tools` is the part both share (the tool list, a call that
streams the run with progress notifications, errors as tool errors), :mod:`.service` runs the
MCP SDK's HTTP transport for one app and :mod:`.asgi` bridges it into aiohttp. Only
:mod:`.endpoint` loads without the ``[mcp]`` extra.
"""

from .endpoint import MCP_PATH, add_mcp_routes

__all__ = ["MCP_PATH", "add_mcp_routes"]
