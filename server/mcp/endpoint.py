"""``POST /mcp``: the service's agents as MCP tools over streamable HTTP (docs/mcp-server.md).

The route is registered with the others, so the API-key middleware guards it as it guards
``/api`` and ``/v1``: with keys configured a request needs ``Authorization: Bearer <key>``, and
the calls act as the key's user. ``GET`` and ``DELETE`` answer 405: the endpoint is stateless,
with no server-to-client stream and no session to end.

The MCP SDK is loaded on the endpoint's first request, not with the app: a service whose
clients never speak MCP never pays for it, and one installed without the ``[mcp]`` extra
answers 404 naming what to install. At shutdown running calls get the grace period, as streams
do, and new ones are refused.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from aiohttp import web

from agent_executor.errors import MissingExtraError

from ..errors import json_error
from ..state import SETTINGS

if TYPE_CHECKING:
    from .service import MCPService

__all__ = ["MCP_PATH", "MCPEndpoint", "add_mcp_routes"]

MCP_PATH = "/mcp"


class MCPEndpoint:
    """The MCP endpoint of one app: started by its first request, drained at shutdown,
    stopped at cleanup."""

    def __init__(self) -> None:
        self._service: MCPService | None = None
        self._missing: str | None = None
        self._starting = asyncio.Lock()
        self._draining: asyncio.Task[None] | None = None

    async def handle(self, request: web.Request) -> web.StreamResponse:
        """Answer one request to ``/mcp``."""
        service = await self._started(request.app)
        if service is None:
            return json_error(404, f"there is no MCP endpoint here: {self._missing}")
        return await service.handle(request)

    async def shutdown(self, app: web.Application) -> None:
        """On the app's shutdown: refuse new calls, give running ones the grace period (in
        the background, alongside the streams' drain)."""
        if self._service is not None and self._draining is None:
            grace = app[SETTINGS].shutdown_grace_seconds
            self._draining = asyncio.ensure_future(self._service.drain(grace))

    async def cleanup(self, app: web.Application) -> None:
        """On the app's cleanup: stop the SDK's session manager."""
        if self._draining is not None:
            await self._draining
        if self._service is not None:
            await self._service.aclose()

    async def _started(self, app: web.Application) -> MCPService | None:
        if self._service is not None:
            return self._service
        async with self._starting:
            if self._service is None and self._missing is None:
                try:
                    from .service import MCPService
                except MissingExtraError as exc:
                    self._missing = str(exc)
                    return None
                self._service = await MCPService.start(app)
        return self._service


_ENDPOINT = web.AppKey("mcp_endpoint", MCPEndpoint)


def add_mcp_routes(app: web.Application) -> None:
    """Serve ``app``'s agents as MCP tools at ``POST /mcp``."""
    endpoint = MCPEndpoint()
    app[_ENDPOINT] = endpoint
    app.router.add_post(MCP_PATH, _mcp)
    app.on_shutdown.append(endpoint.shutdown)
    app.on_cleanup.append(endpoint.cleanup)


async def _mcp(request: web.Request) -> web.StreamResponse:
    return await request.app[_ENDPOINT].handle(request)
