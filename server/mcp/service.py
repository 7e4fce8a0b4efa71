"""The running MCP endpoint of one app: the agents as tools (:mod:`.tools`) behind the SDK's
streamable HTTP session manager, bridged into aiohttp (:mod:`.asgi`).

The manager is **stateless**: every POST carries a whole exchange and no ``Mcp-Session-Id`` is
handed out, so any replica behind a load balancer answers any request (a session's memory is
the ``session_id`` argument, kept in the service's conversation store, Redis included). The
manager's task group lives in a task of its own, started with the endpoint and stopped at the
app's cleanup, so the request that happens to start it does not own it.

Needs the ``[mcp]`` extra; :mod:`.endpoint` imports this module on the first request.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from typing import Any

from aiohttp import web

from agent_executor._extras import requires_extra

from ..request import Caller
from ..state import AGENTS, SETTINGS, STATE
from .asgi import respond
from .tools import AgentTools

with requires_extra("mcp", "the MCP endpoint"):
    from mcp.server import ServerRequestContext
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from starlette.requests import HTTPConnection

__all__ = ["MCPService"]

logger = logging.getLogger("server.mcp")

_CALLER = "agent_executor.caller"
"""The scope key of the request's :class:`Caller`, which the tool calls read back."""
_CHATTY_SDK_LOGGERS = ("mcp.server.streamable_http", "mcp.server.streamable_http_manager")
"""They log every stateless request at INFO; the access log has the requests already."""


class MCPService:
    """The agents of ``app`` as MCP tools over streamable HTTP (:meth:`start` it first)."""

    def __init__(self, app: web.Application) -> None:
        streams = app[STATE].streams
        self.tools = AgentTools(
            app[AGENTS], caller=_caller_of, refusing=lambda: streams.shutting_down
        )
        self._manager = StreamableHTTPSessionManager(
            self.tools.server,
            stateless=True,
            max_request_body_size=app[SETTINGS].max_body_bytes,
        )
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @classmethod
    async def start(cls, app: web.Application) -> MCPService:
        """The service of ``app``, its session manager running."""
        for name in _CHATTY_SDK_LOGGERS:
            if logging.getLogger(name).level == logging.NOTSET:  # unless configured
                logging.getLogger(name).setLevel(logging.WARNING)
        service = cls(app)
        # An empty context: the task outlives the request that starts it.
        service._task = contextvars.Context().run(asyncio.ensure_future, service._run())
        try:
            await service._ready.wait()
            if service._task.done():
                service._task.result()  # it failed to start: say why
        except BaseException:
            await service.aclose()
            raise
        logger.info("MCP endpoint serving the tools %s", ", ".join(service.tools.names))
        return service

    async def handle(self, request: web.Request) -> web.StreamResponse:
        """Answer one request to the endpoint, on behalf of its caller."""
        caller = Caller.of(request)
        return await respond(
            self._manager.handle_request,
            request,
            {_CALLER: caller},
            {"X-Request-Id": caller.request_id},
        )

    async def drain(self, grace_seconds: float) -> None:
        """At shutdown: let running calls finish for ``grace_seconds``, then end them."""
        await self.tools.drain(grace_seconds)

    async def aclose(self) -> None:
        """Stop the session manager (at the app's cleanup, once the requests are done)."""
        self._stop.set()
        task, self._task = self._task, None
        if task is None:
            return
        await asyncio.wait([task])
        if not task.cancelled() and task.exception() is not None:
            logger.error("the MCP session manager failed", exc_info=task.exception())

    async def _run(self) -> None:
        try:
            async with self._manager.run():
                self._ready.set()
                await self._stop.wait()
        finally:
            self._ready.set()


def _caller_of(ctx: ServerRequestContext[Any, Any]) -> Caller | None:
    """The :class:`Caller` :meth:`MCPService.handle` put in the request's scope."""
    request = ctx.request
    if not isinstance(request, HTTPConnection):
        return None
    caller = request.scope.get(_CALLER)
    return caller if isinstance(caller, Caller) else None
