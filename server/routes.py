"""The HTTP endpoints of SPEC section 4 (the OpenAI-compatible ones live elsewhere)."""

from __future__ import annotations

import asyncio
import datetime as dt
import ipaddress
import json
import math
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, TypeVar

from aiohttp import web
from multidict import CIMultiDict, CIMultiDictProxy
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import ValidationError

from agent_executor import (
    AgentCommand,
    AgentEvent,
    AgentExecutor,
    AgentSelectedEvent,
    ConfigurationError,
    DoneEvent,
    ErrorEvent,
    EventStream,
    StoreUnavailable,
)
from agent_executor.tool_results import Delivery

from .errors import json_error, status_for
from .schemas import (
    ChatRequest,
    HealthData,
    HealthResponse,
    ToolResultRequest,
    describe_validation_error,
    openapi_document,
)
from .sse import SSE_HEADERS, AgentEventEncoder, EventEncoder, SSEWriter
from .state import (
    AGENTS,
    AUTH_USER,
    REQUEST_ID,
    SETTINGS,
    STATE,
    STATIC_DIR,
    TRUSTED_PROXIES,
    ServiceState,
)

__all__ = [
    "PUBLIC_HANDLERS",
    "add_routes",
    "caller_headers",
    "caller_id",
    "client_address",
    "stream_events",
]

_openapi_cache: dict[str, Any] = {}


def add_routes(app: web.Application) -> None:
    """Register the endpoints on ``app``."""
    app.router.add_post("/api/chat/stream", chat_stream)
    app.router.add_get("/api/chat/stream", chat_stream)
    app.router.add_post("/api/chat", chat)
    app.router.add_post("/api/chat/tool-result", tool_result)
    app.router.add_delete("/api/sessions/{session_id}", delete_session)
    app.router.add_get("/api/health", health)
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/openapi.json", openapi)
    app.router.add_get("/", index)


async def chat_stream(request: web.Request) -> web.StreamResponse:
    """Run an agent and stream its events as SSE (POST with a JSON body, or GET with a query)."""
    parsed = await _parse(request)
    if isinstance(parsed, web.Response):
        return parsed
    chat_request, executor, command, selection = parsed
    if request.app[STATE].shutting_down:
        return json_error(503, "the server is shutting down", **{"Retry-After": "5"})
    events = executor.execute_stream(
        command,
        request_id=request[REQUEST_ID],
        client_address=client_address(request),
        request_headers=caller_headers(request),
    )
    encoder = AgentEventEncoder(chat_request.events)
    agent = executor.name
    del parsed, chat_request, executor, command  # not held for as long as the stream is open
    return await stream_events(request, events, encoder, selection, agent=agent)


async def stream_events(
    request: web.Request,
    events: EventStream,
    encoder: EventEncoder,
    first: AgentEvent | None = None,
    *,
    agent: str | None = None,
) -> web.StreamResponse:
    """Answer ``request`` with ``events`` as SSE: heartbeats, disconnects, shutdown included.

    ``first`` is sent before ``events`` (one already taken from them to decide the HTTP status
    by it, or the router's pick); ``agent`` names the agent in an ``X-Agent`` header.
    """
    state, settings = request.app[STATE], request.app[SETTINGS]
    headers = {**SSE_HEADERS, "X-Request-Id": request[REQUEST_ID]}
    if agent is not None:
        headers["X-Agent"] = agent
    response = web.StreamResponse(headers=headers)
    try:
        # The run gets two turns of the event loop before the headers are written, so its
        # model request is normally on its way first.
        events.start()
        await asyncio.sleep(0)  # the run: guards, then its model request
        await asyncio.sleep(0)  # aiohttp before Python 3.12 writes a request body in a task
        await response.prepare(request)
    except BaseException:
        await events.aclose()
        raise
    writer = SSEWriter(
        request, response, encoder, settings.heartbeat_seconds, settings.write_timeout_seconds
    )
    started = time.perf_counter()
    _opened(state, writer)
    try:
        if first is not None:
            await writer.send(first)
        await writer.pump(events)
        if writer.stopped and not writer.done_sent and not writer.disconnected:
            await writer.send(ErrorEvent(code="overloaded", message="the server is shutting down"))
            duration_ms = round((time.perf_counter() - started) * 1000, 3)
            await writer.send(DoneEvent("error", None, [], duration_ms))
    except ConnectionResetError:
        writer.disconnected = True
    finally:
        await events.aclose()
        _closed(state, writer)
    return response


def _opened(state: ServiceState, writer: SSEWriter) -> None:
    state.streams.add(writer)
    state.streams_idle.clear()
    state.metrics.sse_streams_active.inc()


def _closed(state: ServiceState, writer: SSEWriter) -> None:
    state.metrics.sse_streams_active.dec()
    if not writer.done_sent and not writer.stopped:
        state.metrics.sse_disconnects.inc()
    state.streams.discard(writer)
    if not state.streams:
        state.streams_idle.set()


async def chat(request: web.Request) -> web.Response:
    """Run an agent and answer with its ``AgentResult`` (status from the error code)."""

    parsed = await _parse(request)
    if isinstance(parsed, web.Response):
        return parsed
    _, executor, command, _ = parsed
    result = await executor.execute(
        command,
        request_id=request[REQUEST_ID],
        client_address=client_address(request),
        request_headers=caller_headers(request),
    )
    headers = {"X-Request-Id": request[REQUEST_ID], "X-Agent": executor.name}
    if result.error is not None and result.error.retry_after is not None:
        headers["Retry-After"] = str(math.ceil(result.error.retry_after))
    return web.Response(
        body=result.model_dump_json(),
        status=status_for(result.error),
        content_type="application/json",
        headers=headers,
    )


async def tool_result(request: web.Request) -> web.Response:
    """A client's answer to a frontend tool call its stream is waiting for.

    404 for an unknown, expired or someone else's call (without saying which), 409 for a call
    already answered; either way nothing changes.
    """
    data = await _body(request)
    if isinstance(data, web.Response):
        return data
    try:
        answer = ToolResultRequest.model_validate(data)
    except ValidationError as exc:
        return json_error(400, describe_validation_error(exc))
    user_id = caller_id(request, answer.user_id)
    agents = request.app[AGENTS].agents
    names = [answer.agent] if answer.agent else list(agents)
    outcome: Delivery = "unknown"
    # Agents may share one registry (and with Redis it reaches every replica).
    for registry in _distinct(agents[n].tool_results for n in names if n in agents):
        try:
            outcome = await registry.submit(
                answer.call_id, user_id, result=answer.result, error=answer.error
            )
        except StoreUnavailable as exc:
            return json_error(503, str(exc))
        if outcome != "unknown":
            break
    if outcome == "delivered":
        return web.json_response({"status": "delivered"})
    if outcome == "answered":
        return json_error(409, f"call {answer.call_id!r} was already answered")
    return json_error(404, f"no call {answer.call_id!r} is waiting for your answer")


async def delete_session(request: web.Request) -> web.Response:
    """Forget one of the caller's conversations in every agent's store (history and any run
    paused for approval). The owner is the API key's user, else ``X-User-Id`` or ``user_id``
    in the query; another user's session of the same id is untouched (404)."""
    session_id = request.match_info["session_id"]
    user_id = caller_id(request, request.query.get("user_id") or None)
    if not 0 < len(session_id) <= 256 or (user_id is not None and len(user_id) > 256):
        return json_error(400, "session_id and user_id must be 1 to 256 characters")
    deleted = False
    for store in _distinct(e.memory for e in request.app[AGENTS].agents.values()):
        try:
            deleted = await store.delete(user_id, session_id) or deleted
        except StoreUnavailable as exc:
            return json_error(503, str(exc))
    if not deleted:
        return json_error(404, f"you have no session {session_id!r}")
    return web.json_response({"session_id": session_id, "deleted": True})


async def health(request: web.Request) -> web.Response:
    """``{"success": true, "data": {"status": "healthy", "timestamp", "uptime"}}``."""

    state = request.app[STATE]
    body = HealthResponse(
        data=HealthData(
            timestamp=dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds"),
            uptime=round(time.monotonic() - state.started_monotonic, 3),
        )
    )
    return web.Response(body=body.model_dump_json(), content_type="application/json")


async def metrics(request: web.Request) -> web.Response:
    """Prometheus text exposition of the service's registry."""

    registry = request.app[STATE].metrics.registry
    return web.Response(
        body=generate_latest(registry), headers={"Content-Type": CONTENT_TYPE_LATEST}
    )


async def openapi(request: web.Request) -> web.Response:
    """The OpenAPI document of the JSON endpoints."""
    if not _openapi_cache:
        _openapi_cache.update(openapi_document())
    return web.json_response(_openapi_cache)


async def index(request: web.Request) -> web.FileResponse:
    """The built-in chat page."""

    return web.FileResponse(STATIC_DIR / "index.html", headers={"Cache-Control": "no-cache"})


def caller_id(request: web.Request, given: str | None) -> str | None:
    """Whose request this is: the API key's user, else ``X-User-Id``, else the id the request
    itself gives (without API keys requests are not authenticated)."""
    return request.get(AUTH_USER) or request.headers.get("X-User-Id") or given


_T = TypeVar("_T")


def _distinct(parts: Iterable[_T]) -> list[_T]:
    """``parts`` without repeats of the same object (agents may share a store or registry)."""
    return list({id(part): part for part in parts}.values())


async def _parse(
    request: web.Request,
) -> tuple[ChatRequest, AgentExecutor, AgentCommand, AgentSelectedEvent | None] | web.Response:
    """Validate a chat request and pick its agent; a 400 ``{"error": ...}`` response if anything
    is wrong. The agent is the one named, the one whose run a resume continues, or the router's
    pick (then announced by the returned event)."""

    data = _query(request) if request.method == "GET" else await _body(request)
    if isinstance(data, web.Response):
        return data
    try:
        chat_request = ChatRequest.model_validate(data)
    except ValidationError as exc:
        return json_error(400, describe_validation_error(exc))
    agents = request.app[AGENTS]
    command = chat_request.to_command(caller_id(request, chat_request.user_id))
    try:
        executor, selection = await agents.resolve(command, chat_request.agent)
    except ConfigurationError as exc:
        return json_error(400, str(exc))
    return chat_request, executor, command, selection


def _query(request: web.Request) -> dict[str, Any] | web.Response:
    query = request.query
    repeated = sorted({key for key in query if len(query.getall(key)) > 1})
    if repeated:
        return json_error(400, f"query parameters given more than once: {', '.join(repeated)}")
    data: dict[str, Any] = dict(query)
    if "metadata" in data:
        try:
            data["metadata"] = json.loads(data["metadata"])
        except (ValueError, RecursionError):
            return json_error(400, "metadata: must be a JSON object")
    return data


async def _body(request: web.Request) -> dict[str, Any] | web.Response:
    raw = await request.read()
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        return json_error(400, f"the body is not valid JSON: {exc}")
    except RecursionError:
        return json_error(400, "the body is not valid JSON: it is nested too deeply")
    if not isinstance(data, dict):
        return json_error(400, "the body must be a JSON object")
    return data


def caller_headers(request: web.Request) -> Mapping[str, str]:
    """The request's headers as tools see them (:func:`current_run_context`).

    When the caller authenticated with one of this service's API keys, ``Authorization`` carries
    that key: it is dropped so no tool (a ``RestTool`` allowlisting ``Authorization``, say) can
    pass the service's own credential on to another host.
    """
    if AUTH_USER not in request:
        return request.headers
    headers = CIMultiDict(request.headers)
    headers.popall("Authorization", None)
    return CIMultiDictProxy(headers)


def client_address(request: web.Request) -> str | None:
    """The client's address: the connection's peer, or, when the peer is a trusted proxy, the
    nearest untrusted address in ``X-Forwarded-For`` (read from the right)."""
    peer = request.remote
    trusted = request.app[TRUSTED_PROXIES]
    if not trusted or peer is None or not _is_trusted(peer, trusted):
        return peer
    chain = [
        part.strip()
        for value in request.headers.getall("X-Forwarded-For", [])
        for part in value.split(",")
        if part.strip()
    ]
    for address in reversed(chain):
        if not _is_trusted(address, trusted):
            return address if _is_ip(address) else peer
    return chain[0] if chain and _is_ip(chain[0]) else peer


def _is_trusted(
    address: str, networks: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]
) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in network for network in networks)


def _is_ip(address: str) -> bool:
    try:
        ipaddress.ip_address(address)
    except ValueError:
        return False
    return True


PUBLIC_HANDLERS: frozenset[Callable[[web.Request], Awaitable[web.StreamResponse]]] = frozenset(
    {health, metrics, openapi, index}
)
"""Handlers that need no API key."""
