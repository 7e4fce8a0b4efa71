"""``create_app``: the executor over HTTP as an aiohttp application.

The application holds its state under typed ``web.AppKey``s (no globals), so several can live in
one process and users can mount one inside their own aiohttp app (``app.add_subapp``).
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping

import anyio
from aiohttp import web

from agent_executor import AgentExecutor, AgentRouter

from . import routes
from .errors import error_for
from .openai_api import add_openai_routes
from .settings import Settings
from .sse import StreamMonitor
from .state import (
    AGENTS,
    AUTH_USER,
    REQUEST_ID,
    SETTINGS,
    STATE,
    TRUSTED_PROXIES,
    ServiceState,
)

__all__ = ["create_app"]

logger = logging.getLogger("server")


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
Middleware = Callable[..., Awaitable[web.StreamResponse]]


def create_app(
    agents: AgentExecutor | Mapping[str, AgentExecutor] | AgentRouter,
    settings: Settings | None = None,
) -> web.Application:
    """An aiohttp application serving one agent, or several by name (SPEC section 4).

    Give an :class:`AgentRouter` for a router picking the agent of requests that name none;
    a mapping's default agent is ``settings.default_agent`` if it names one, else the first.
    """
    settings = settings or Settings()
    if isinstance(agents, AgentExecutor):
        agents = AgentRouter({agents.name: agents})
    elif not isinstance(agents, AgentRouter):
        if not agents:
            raise ValueError("create_app needs at least one agent")
        default = settings.default_agent if settings.default_agent in agents else None
        agents = AgentRouter(agents, default=default)
    # Only the layers in use: each one stays in memory for as long as a stream is open.
    middlewares: list[Middleware] = [_request_middleware]
    if settings.cors_origins:
        middlewares.append(_cors_middleware(settings))
    if settings.api_keys:
        middlewares.append(_auth_middleware(settings))
    app = web.Application(
        client_max_size=settings.max_body_bytes,
        middlewares=middlewares,
    )
    app[AGENTS] = agents
    app[SETTINGS] = settings
    app[TRUSTED_PROXIES] = tuple(
        ipaddress.ip_network(item, strict=False) for item in settings.trusted_proxies
    )
    interval = min(settings.heartbeat_seconds, settings.write_timeout_seconds / 2, 1.0)
    state = ServiceState(
        metrics=agents.agents[agents.default].metrics, monitor=StreamMonitor(interval)
    )
    state.streams_idle.set()
    app[STATE] = state
    app.on_startup.append(_start_monitor)
    routes.add_routes(app)
    add_openai_routes(app)
    app.on_shutdown.append(_drain_streams)
    app.on_cleanup.append(_close_agents)
    return app


@web.middleware
async def _request_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Give the request its id (``X-Request-Id``: the caller's if sane, else a new one, echoed
    back), and answer every error as JSON ``{"error": ...}``: no input ever yields a traceback."""
    incoming = request.headers.get("X-Request-Id", "")
    request_id = (
        incoming if 0 < len(incoming) <= 128 and incoming.isprintable() else (uuid.uuid4().hex)
    )
    request[REQUEST_ID] = request_id
    try:
        response = await handler(request)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        if exc.content_type == "application/json":
            response = exc
        else:
            message = (
                exc.reason
                if exc.text is None or exc.text.startswith(f"{exc.status}:")
                else exc.text
            )
            response = error_for(request, exc.status, message, **_kept_headers(exc))
    except asyncio.CancelledError:
        raise
    except Exception:
        logger.exception("unhandled error (request id %s)", request_id)
        response = error_for(request, 500, f"internal error (request id {request_id})")
    if not response.prepared:
        response.headers["X-Request-Id"] = request_id
    return response


def _kept_headers(exc: web.HTTPException) -> dict[str, str]:
    keep = ("Allow", "Retry-After", "WWW-Authenticate")
    return {name: exc.headers[name] for name in keep if name in exc.headers}


def _cors_middleware(settings: Settings) -> Callable[..., Awaitable[web.StreamResponse]]:
    origins = set(settings.cors_origins)

    @web.middleware
    async def cors(request: web.Request, handler: Handler) -> web.StreamResponse:
        origin = request.headers.get("Origin")
        allowed = origin is not None and ("*" in origins or origin in origins)
        if (
            allowed
            and request.method == "OPTIONS"
            and "Access-Control-Request-Method" in (request.headers)
        ):
            response: web.StreamResponse = web.Response(status=204)
        else:
            response = await handler(request)
        if allowed and not response.prepared:
            response.headers["Access-Control-Allow-Origin"] = (
                "*" if "*" in origins else (origin or "")
            )
            response.headers["Vary"] = "Origin"
            response.headers["Access-Control-Allow-Headers"] = (
                "Authorization, Content-Type, X-User-Id, X-Request-Id, Last-Event-ID"
            )
            response.headers["Access-Control-Allow-Methods"] = "GET, POST, OPTIONS"
            response.headers["Access-Control-Expose-Headers"] = "X-Request-Id, Retry-After"
        return response

    return cors


def _auth_middleware(settings: Settings) -> Callable[..., Awaitable[web.StreamResponse]]:
    """With API keys configured, ``/api/*`` and ``/v1/*`` need ``Authorization: Bearer``.

    ``/api/health`` stays open so load balancers and orchestrators can probe it (as do
    ``/metrics``, ``/openapi.json`` and the chat page, which is useless without a key anyway).
    """
    keys = dict(settings.api_keys)

    @web.middleware
    async def auth(request: web.Request, handler: Handler) -> web.StreamResponse:
        if keys and request.method != "OPTIONS" and _protected(request):
            scheme, _, key = request.headers.get("Authorization", "").partition(" ")
            user = keys.get(key.strip()) if scheme.lower() == "bearer" else None
            if user is None:
                return error_for(
                    request, 401, "missing or invalid API key", **{"WWW-Authenticate": "Bearer"}
                )
            request[AUTH_USER] = user
        return await handler(request)

    return auth


def _protected(request: web.Request) -> bool:
    """Every matched route but the public ones (health, metrics, OpenAPI, the chat page).

    Decided by the route's handler, not by path, so it holds when the app is mounted under a
    prefix; unmatched paths answer 404/405 without a key.
    """
    match = request.match_info
    return match.http_exception is None and match.handler not in routes.PUBLIC_HANDLERS


async def _drain_streams(app: web.Application) -> None:
    """On shutdown: let open streams finish for the grace period, then end them."""
    state, settings = app[STATE], app[SETTINGS]
    state.shutting_down = True
    if state.streams:
        logger.info(
            "shutting down: waiting up to %.0f s for %d open streams",
            settings.shutdown_grace_seconds,
            len(state.streams),
        )
        with anyio.move_on_after(settings.shutdown_grace_seconds):
            await state.streams_idle.wait()
        for writer in list(state.streams):
            writer.stop()
        with anyio.move_on_after(5):
            await state.streams_idle.wait()
        if state.streams:
            logger.warning("%d streams did not end at shutdown", len(state.streams))


async def _start_monitor(app: web.Application) -> None:
    app[STATE].monitor.start()


async def _close_agents(app: web.Application) -> None:
    await app[STATE].monitor.stop()
    await app[AGENTS].aclose()
