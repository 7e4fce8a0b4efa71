"""``create_app``: the executor over HTTP as an aiohttp application.

The application holds its state under typed ``web.AppKey``s (no globals), so several can live in
one process and users can mount one inside their own aiohttp app (``app.add_subapp``).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping

from aiohttp import web

from agent_executor import AgentRouter, ServedAgent
from agent_executor.memory import MemoryStore
from agent_executor.spend import UserBudget

from . import routes, static_files, usage
from .ag_ui_route import add_ag_ui_routes
from .compat import add_bot_server_routes, bot_server_health
from .health import HealthChecks
from .long_term_memory import FACTS, add_memory_routes
from .mcp import add_mcp_routes
from .middleware import Middleware, auth_middleware, cors_middleware, request_middleware
from .runs import RunHub, RunRelay
from .settings import Settings
from .sse import Streams
from .state import AGENTS, SETTINGS, STATE, TRUSTED_PROXIES, ServiceState
from .ui_chat import add_ui_routes
from .v1 import add_v1_routes

__all__ = ["begin_shutdown", "create_app"]


def create_app(
    agents: ServedAgent | Mapping[str, ServedAgent] | AgentRouter,
    settings: Settings | None = None,
    *,
    budget: UserBudget | None = None,
    relay: RunRelay | None = None,
    facts: MemoryStore | None = None,
) -> web.Application:
    """An aiohttp application serving one agent, or several by name (see docs/sse-protocol.md).

    Give an :class:`AgentRouter` for a router picking the agent of requests that name none;
    a mapping's default agent is ``settings.default_agent`` if it names one, else the first.
    ``budget`` is the :class:`UserBudget` the agents were given (as guard and hook), whose
    spend ``GET /api/usage`` reports. ``relay`` shares the runs clients may re-attach to with
    the other replicas (``RedisRunRelay`` with ``--redis-url``). ``facts`` is the long-term
    memory the agents were given (their remember/recall tools), which ``/api/memory`` lists
    and forgets for the caller.
    """
    settings = settings or Settings()
    router = _router(agents, settings)
    middlewares: list[Middleware] = [request_middleware]
    if settings.cors_origins:
        middlewares.append(cors_middleware(settings))
    if settings.api_keys:
        public = routes.PUBLIC_HANDLERS | static_files.PUBLIC_HANDLERS | {bot_server_health}
        middlewares.append(auth_middleware(settings, public))
    app = web.Application(client_max_size=settings.max_body_bytes, middlewares=middlewares)
    app[AGENTS] = router
    app[SETTINGS] = settings
    if budget is not None:
        app[usage.BUDGET] = budget
    if facts is not None:
        app[FACTS] = facts
    app[TRUSTED_PROXIES] = tuple(
        ipaddress.ip_network(item, strict=False) for item in settings.trusted_proxies
    )
    metrics = router.agents[router.default].metrics
    runs = RunHub(
        grace_seconds=settings.reattach_grace_seconds,
        window_seconds=settings.replay_window_seconds,
        relay=relay,
    )
    streams = Streams(
        metrics,
        heartbeat_seconds=settings.heartbeat_seconds,
        write_timeout_seconds=settings.write_timeout_seconds,
        runs=runs,
    )
    app[STATE] = ServiceState(metrics=metrics, streams=streams, health=HealthChecks(router))
    app.on_startup.append(_start_streams)
    _add_routes(app)
    app.on_shutdown.append(_drain_streams)
    app.on_cleanup.append(_close)
    return app


def _add_routes(app: web.Application) -> None:
    """Every endpoint: the native ones, the chat page, and each client family's."""
    routes.add_routes(app)
    app.router.add_get("/api/usage", usage.usage)
    static_files.add_static_routes(app)
    add_v1_routes(app)
    add_mcp_routes(app)
    add_ag_ui_routes(app)
    add_ui_routes(app)
    add_bot_server_routes(app)
    add_memory_routes(app)


def _router(
    agents: ServedAgent | Mapping[str, ServedAgent] | AgentRouter, settings: Settings
) -> AgentRouter:
    if isinstance(agents, AgentRouter):
        return agents
    if isinstance(agents, ServedAgent):
        return AgentRouter({agents.name: agents})
    if not agents:
        raise ValueError("create_app needs at least one agent")
    default = settings.default_agent if settings.default_agent in agents else None
    return AgentRouter(agents, default=default)


async def _start_streams(app: web.Application) -> None:
    app[STATE].streams.start()


def begin_shutdown(app: web.Application) -> None:
    """The first step of a shutdown, taken at once while the listener is still open (the CLI
    takes it on SIGTERM or SIGINT): readiness answers 503 and every request that would start a
    run is refused with 503 and ``Retry-After``. The app's shutdown (``on_shutdown``) then
    gives what is running ``shutdown_grace_seconds`` to finish."""
    app[STATE].streams.shutting_down = True


async def _drain_streams(app: web.Application) -> None:
    """On shutdown: let open streams finish for the grace period, then end them; then cancel
    the runs nobody reads."""
    await app[STATE].streams.drain(app[SETTINGS].shutdown_grace_seconds)


async def _close(app: web.Application) -> None:
    await app[STATE].streams.close()
    await app[AGENTS].aclose()
