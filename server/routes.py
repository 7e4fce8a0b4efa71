"""The HTTP endpoints of docs/sse-protocol.md (the OpenAI-compatible ones live elsewhere)."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, TypeVar

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from agent_executor import (
    AgentCommand,
    AgentSelectedEvent,
    ConfigurationError,
    DoneEvent,
    ErrorCode,
    ErrorEvent,
    ServedAgent,
    StoreUnavailable,
)
from agent_executor.memory import UserScopedStore
from agent_executor.tools import Delivery

from .dialects.typed import EventMode, TypedEncoder
from .errors import RETRY_AFTER_SECONDS, error_of, json_error, run_error
from .health import CheckState
from .openapi import openapi_document
from .request import Caller, admission_refusal, json_object, query_object, validated
from .runs import LiveRun, RemoteRun
from .schemas import (
    ChatRequest,
    ErrorDetail,
    HealthData,
    HealthResponse,
    ToolResultRequest,
)
from .sse import SSE_HEADERS
from .state import AGENTS, REQUEST_ID, STATE, STATIC_DIR

__all__ = ["PUBLIC_HANDLERS", "add_routes"]

_openapi_cache: dict[str, Any] = {}


def add_routes(app: web.Application) -> None:
    """Register the endpoints on ``app``."""
    app.router.add_post("/api/chat/stream", chat_stream)
    app.router.add_get("/api/chat/stream", chat_stream)
    app.router.add_post("/api/chat", chat)
    app.router.add_post("/api/chat/tool-result", tool_result)
    app.router.add_get("/api/runs/{run_id}/events", run_events)
    app.router.add_delete("/api/runs/{run_id}", stop_run)
    app.router.add_delete("/api/sessions/{session_id}", delete_session)
    app.router.add_delete("/api/sessions", delete_sessions)
    app.router.add_get("/api/health", health)
    app.router.add_get("/api/ready", ready)
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/openapi.json", openapi)
    app.router.add_get("/", index)


async def chat_stream(request: web.Request) -> web.StreamResponse:
    """Run an agent and stream its events as SSE (POST with a JSON body, or GET with a query).

    A run that fails before its first event is answered with its HTTP status and the JSON
    error, as ``POST /api/chat`` would; on GET (``EventSource``, which cannot read a refusal's
    status) it is a stream of the ``error`` and ``done`` events. Later errors are ``error``
    events, then ``done``. A request carrying ``Last-Event-ID`` is a client coming back: it
    re-attaches to that run and starts nothing (see :func:`_reattach`).
    """
    caller = Caller.of(request)
    last_event = request.headers.get("Last-Event-ID")
    if last_event is not None:
        return await _reattach(request, caller, last_event)
    parsed = await _parse(request, caller)
    if isinstance(parsed, web.Response):
        return _readable(
            request, parsed, "json" if request.query.get("events") == "json" else "text"
        )
    chat_request, executor, command, selection = parsed
    refusal = admission_refusal(request, json_error)
    if refusal is not None:
        return _readable(request, refusal, chat_request.events)
    mode = chat_request.events
    events = caller.stream(executor, command)
    streams = request.app[STATE].streams
    run = streams.runs.start(
        events, f"typed:{mode}", user_id=command.user_id, session_id=command.session_id,
        first=selection,
    )  # fmt: skip
    agent = executor.name
    # Not held for as long as the stream is open:
    del parsed, caller, chat_request, executor, command
    return await streams.respond(
        request,
        events,
        run.encoder(),
        lambda error: _readable(request, run_error(error, **{"X-Agent": agent}), mode),
        before=selection,
        agent=agent,
        run=run,
    )


def _readable(request: web.Request, response: web.Response, mode: EventMode) -> web.Response:
    """A refusal as ``EventSource`` can read it: on GET, a 200 stream of the ``error`` event
    (its ``retry_after`` too) and ``done``; POST keeps its HTTP status."""
    error = error_of(response)
    if request.method != "GET" or error is None:
        return response
    encoder = TypedEncoder(mode, "refused")
    event = ErrorEvent(
        code=error["code"], message=error["message"], retry_after=error.get("retry_after")
    )
    body = encoder.encode(event) + encoder.encode(DoneEvent("error", None, [], 0.0))
    headers = {**SSE_HEADERS, "X-Request-Id": request[REQUEST_ID]}
    return web.Response(body=body, headers=headers)


async def _reattach(request: web.Request, caller: Caller, last_event: str) -> web.StreamResponse:
    """A client coming back to its run after ``Last-Event-ID``: the events after that one,
    then the rest as they come. A run this process cannot place (unknown, someone else's,
    past the window, finished at that event) is a 204, which stops ``EventSource``; one it
    cannot look up (Redis down) a 503, since it may go on elsewhere. Nothing is started."""
    runs = request.app[STATE].streams.runs
    run_id, _, position = last_event.rpartition(":")
    try:
        run = await runs.locate(run_id) if run_id else None
    except StoreUnavailable as exc:  # the run may go on elsewhere: not a 204
        return json_error(503, str(exc))
    user = caller.user_id(request.query.get("user_id") or None)
    if run is None or not run.belongs_to(user) or not position.isdigit() or run.overflowed:
        return web.Response(status=204)
    start = int(position) + 1
    if run.done_at is not None and start > run.done_at:
        return web.Response(status=204)
    return await request.app[STATE].streams.reattach(request, run, start)


async def run_events(request: web.Request) -> web.StreamResponse:
    """``GET /api/runs/{run_id}/events``: re-attach to a run, from its start or after the
    ``Last-Event-ID`` given; 404 for a run this service cannot place, 503 if Redis cannot
    say."""
    try:
        run = await _own_run(request)
    except StoreUnavailable as exc:
        return json_error(503, str(exc))
    if run is None:
        return json_error(404, "no such run is kept: it is unknown, someone else's or expired")
    if run.overflowed:
        return json_error(404, "the run's events were too many to keep for a re-attach")
    _, _, position = request.headers.get("Last-Event-ID", "").rpartition(":")
    start = int(position) + 1 if position.isdigit() else 0
    return await request.app[STATE].streams.reattach(request, run, start)


async def stop_run(request: web.Request) -> web.Response:
    """``DELETE /api/runs/{run_id}``: the client stops its run now (its tools included), on
    whichever replica it runs (503 if Redis cannot be asked or told)."""
    try:
        run = await _own_run(request)
        if run is None:
            return json_error(404, "no such run is kept: it is unknown, someone else's or expired")
        runs = request.app[STATE].streams.runs
        going = run.done_at is None and not run.overflowed
        if isinstance(run, LiveRun):
            await runs.stop(run)
        elif going and runs.relay is not None:
            await runs.relay.stop(run.run_id)
    except StoreUnavailable as exc:
        return json_error(503, str(exc))
    return web.json_response({"run_id": run.run_id, "stopped": going})


async def _own_run(request: web.Request) -> LiveRun | RemoteRun | None:
    """The run the path names, if it is the caller's."""
    run = await request.app[STATE].streams.runs.locate(request.match_info["run_id"])
    user = Caller.of(request).user_id(request.query.get("user_id") or None)
    return run if run is not None and run.belongs_to(user) else None


async def chat(request: web.Request) -> web.Response:
    """Run an agent and answer with its ``AgentResult``, or with the JSON error (its status
    from the error code) if the run failed."""
    caller = Caller.of(request)
    parsed = await _parse(request, caller)
    if isinstance(parsed, web.Response):
        return parsed
    _, executor, command, _ = parsed
    refusal = admission_refusal(request, json_error)
    if refusal is not None:
        return refusal
    result = await caller.run(executor, command)
    if result.error is not None:
        return run_error(result.error, **{"X-Agent": executor.name})
    return web.Response(
        body=result.model_dump_json(),
        content_type="application/json",
        headers={"X-Request-Id": caller.request_id, "X-Agent": executor.name},
    )


async def tool_result(request: web.Request) -> web.Response:
    """A client's answer to a frontend tool call its stream is waiting for.

    404 for an unknown, expired or someone else's call (without saying which), 409 for a call
    already answered; either way nothing changes.
    """
    data = await json_object(request)
    if isinstance(data, web.Response):
        return data
    answer = validated(ToolResultRequest, data)
    if isinstance(answer, web.Response):
        return answer
    user_id = Caller.of(request).user_id(answer.user_id)
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
    user_id = Caller.of(request).user_id(request.query.get("user_id") or None)
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


async def delete_sessions(request: web.Request) -> web.Response:
    """Forget every conversation of the caller in every agent's store: ``{"user_id",
    "deleted": <sessions>}``. The caller must be known (an API key, ``X-User-Id`` or
    ``user_id`` in the query): the conversations of no one in particular are not one user's
    to delete (400)."""
    user_id = Caller.of(request).user_id(request.query.get("user_id") or None)
    if not user_id or len(user_id) > 256:
        return json_error(400, "say whose sessions to delete: an API key, X-User-Id or user_id")
    deleted = 0
    for store in _distinct(e.memory for e in request.app[AGENTS].agents.values()):
        if not isinstance(store, UserScopedStore):
            return json_error(501, f"{type(store).__name__} cannot delete a user's sessions")
        try:
            deleted += await store.delete_user(user_id)
        except StoreUnavailable as exc:
            return json_error(503, str(exc))
    return web.json_response({"user_id": user_id, "deleted": deleted})


async def health(request: web.Request) -> web.Response:
    """Liveness: ``{"success": true, "data": {"status", "timestamp", "uptime", "checks"}}``,
    always 200 (also while shutting down); ``status`` is ``degraded`` while a check is down.
    With ``?ready=1`` it is the readiness probe (:func:`ready`)."""
    if request.query.get("ready", "") not in ("", "0", "false"):
        return await ready(request)
    checks = await request.app[STATE].health.run()
    return _health_response(HealthResponse(data=_health_data(request, checks)))


async def ready(request: web.Request) -> web.Response:
    """Readiness: the health answer, but 503 (``success: false`` and an ``unavailable`` error
    naming what is down) while degraded, so a load balancer sends requests elsewhere; and 503
    from the moment the service begins to shut down, at once (nothing is pinged then)."""
    state = request.app[STATE]
    if state.streams.shutting_down:
        return _not_ready(request, _health_data(request, state.health.known()), "shutting down")
    data = _health_data(request, await state.health.run())
    down = sorted(name for name, check in data.checks.items() if check == "down")
    if not down:
        return _health_response(HealthResponse(data=data))
    return _not_ready(request, data, f"{', '.join(down)} down")


def _not_ready(request: web.Request, data: HealthData, why: str) -> web.Response:
    error = ErrorDetail(
        code=ErrorCode.UNAVAILABLE,
        message=f"not ready: {why}",
        request_id=request[REQUEST_ID],
        retry_after=RETRY_AFTER_SECONDS,
    )
    return _health_response(
        HealthResponse(success=False, data=data, error=error),
        status=503,
        headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
    )


def _health_data(request: web.Request, checks: dict[str, CheckState]) -> HealthData:
    return HealthData(
        status="degraded" if "down" in checks.values() else "healthy",
        timestamp=dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds"),
        uptime=round(time.monotonic() - request.app[STATE].started_monotonic, 3),
        checks=checks,
    )


def _health_response(
    body: HealthResponse, *, status: int = 200, headers: dict[str, str] | None = None
) -> web.Response:
    return web.Response(
        body=body.model_dump_json(exclude_none=True),
        status=status,
        content_type="application/json",
        headers=headers,
    )


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


_T = TypeVar("_T")


def _distinct(parts: Iterable[_T]) -> list[_T]:
    """``parts`` without repeats of the same object (agents may share a store or registry)."""
    return list({id(part): part for part in parts}.values())


async def _parse(
    request: web.Request, caller: Caller
) -> tuple[ChatRequest, ServedAgent, AgentCommand, AgentSelectedEvent | None] | web.Response:
    """Validate a chat request and pick its agent; a 400 JSON error response if anything is
    wrong. The agent is the one named, the one whose run a resume continues, or the router's
    pick (then announced by the returned event)."""
    data = query_object(request) if request.method == "GET" else await json_object(request)
    if isinstance(data, web.Response):
        return data
    chat_request = validated(ChatRequest, data)
    if isinstance(chat_request, web.Response):
        return chat_request
    command = chat_request.to_command(caller.user_id(chat_request.user_id))
    try:
        executor, selection = await request.app[AGENTS].resolve(command, chat_request.agent)
    except ConfigurationError as exc:
        return json_error(400, str(exc))
    return chat_request, executor, command, selection


PUBLIC_HANDLERS: frozenset[Callable[[web.Request], Awaitable[web.StreamResponse]]] = frozenset(
    {health, ready, metrics, openapi, index}
)
"""Handlers that need no API key."""
