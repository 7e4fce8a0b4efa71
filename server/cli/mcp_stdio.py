"""``agent-executor mcp``: the agents of ``serve``'s flags as MCP tools over stdio, for the
desktop clients that start their MCP servers as processes (docs/mcp-server.md).

The service is built exactly as ``serve`` builds it (model, tools, agents, flows, guards,
memory), and its tools are those of ``POST /mcp`` (:mod:`server.mcp.tools`); only the
transport differs. stdout carries the protocol, so nothing else may write there: the logs go to
stderr, and while serving the SDK points file descriptor 1 at stderr for stray output too.
Calls have no user id (the one local user; like HTTP without API keys) and each gets a request
id of its own. The client ends the process by closing its stdin: running calls are cancelled
and the agents (and any ``--mcp`` servers) are closed.

Needs the ``[mcp]`` extra.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable
from typing import Any

from agent_executor._extras import requires_extra

from ..mcp.tools import AgentTools
from ..request import Caller
from ..state import AGENTS, STATE
from .build import Service
from .config import ServeConfig

with requires_extra("mcp", "agent-executor mcp"):
    from mcp.server import ServerRequestContext
    from mcp.server.stdio import stdio_server

__all__ = ["serve_stdio"]

logger = logging.getLogger("server")


async def serve_stdio(service: Service | Awaitable[Service], config: ServeConfig) -> None:
    """Serve ``service``'s agents over stdin and stdout until the client closes stdin."""
    if not isinstance(service, Service):
        service = await service
    app = service.app
    app.freeze()  # its cleanup closes the agents, as when the HTTP service stops
    try:
        streams = app[STATE].streams
        tools = AgentTools(
            app[AGENTS], caller=_local_caller, refusing=lambda: streams.shutting_down
        )
        logger.info(
            "agent-executor mcp serving the tools %s over stdio (default model: %s)",
            ", ".join(tools.names),
            config.model,
        )
        async with stdio_server() as (read_stream, write_stream):
            options = tools.server.create_initialization_options()
            await tools.server.run(read_stream, write_stream, options)
    finally:
        await app.cleanup()


def _local_caller(ctx: ServerRequestContext[Any, Any]) -> Caller:
    """The caller of a call over stdio: the local user, no address, a request id of its own."""
    return Caller(request_id=uuid.uuid4().hex, address=None, headers={}, user=None)
