"""``POST /api/ag-ui`` (and ``/api/ag-ui/{agent}``): the service's agents, groups and flows for
AG-UI clients (CopilotKit, ``@ag-ui/client``'s ``HttpAgent``); docs/browser.md.

A run is a run of the thread's session, kept by the run hub like the native stream's (the
``X-Run-Id`` header names it for ``GET /api/runs/{id}/events`` and ``DELETE /api/runs/{id}``),
and answered in AG-UI's events (:mod:`server.dialects.ag_ui`), always as SSE, whatever the
``Accept`` header asks. A request refused before its run says anything gets its HTTP status and
the service's JSON error, as on the other endpoints: ``HttpAgent`` rejects the run with an
error carrying that status and the parsed body (and a ``Retry-After`` stays readable); once the
stream has begun, an error is ``RUN_ERROR``.

The ``ag-ui-protocol`` package is loaded by the first request, not with the app: a service
whose clients never speak AG-UI never pays for it, and one installed without the ``[ag-ui]``
extra answers 404 naming what to install.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

from agent_executor import (
    AgentCommand,
    AgentRouter,
    AgentSelectedEvent,
    ConfigurationError,
    ServedAgent,
    StoreUnavailable,
)
from agent_executor.errors import MissingExtraError

from .dialects import Encoder
from .dialects.registry import register
from .errors import json_error, run_error
from .request import Caller, admission_refusal, json_object
from .state import AGENTS, STATE

if TYPE_CHECKING:
    from .dialects.ag_ui import AGUIRequest

__all__ = ["AG_UI_PATH", "DIALECT", "add_ag_ui_routes", "run_agent"]

AG_UI_PATH = "/api/ag-ui"
DIALECT = "ag-ui"
"""The name AG-UI runs are kept under by the run hub (``server/dialects/registry.py``)."""

_Picked = tuple[ServedAgent, AgentSelectedEvent | None, AgentCommand]


def add_ag_ui_routes(app: web.Application) -> None:
    """Serve ``app``'s agents to AG-UI clients: ``POST /api/ag-ui`` (the agent named by
    ``forwardedProps.agent``, or the default or router's pick) and ``POST /api/ag-ui/{agent}``."""
    register(DIALECT, _reattached)
    app.router.add_post(AG_UI_PATH, run_agent)
    app.router.add_post(AG_UI_PATH + "/{agent}", run_agent)


def _reattached(run_id: str, start: int) -> Encoder:
    """The dialect of a client re-attaching to an AG-UI run (``GET /api/runs/{id}/events``),
    on any replica: loaded here, as a replica may not have served AG-UI yet."""
    from .dialects.ag_ui import reattached

    return reattached(run_id, start)


async def run_agent(request: web.Request) -> web.StreamResponse:
    """Run what a ``RunAgentInput`` asks for and stream the run as AG-UI events."""
    try:
        from .dialects import ag_ui
    except MissingExtraError as exc:
        return json_error(404, f"there is no AG-UI endpoint here: {exc}")
    caller = Caller.of(request)
    data = await json_object(request)
    if isinstance(data, web.Response):
        return data
    try:
        wanted = ag_ui.read_input(data)
    except ag_ui.InputError as exc:
        return json_error(400, str(exc))
    picked = await _pick(request, wanted, caller.user_id(None))
    if isinstance(picked, web.Response):
        return picked
    executor, selection, command = picked
    refusal = admission_refusal(request, json_error)
    if refusal is not None:
        return refusal
    events = caller.stream(executor, command)
    streams = request.app[STATE].streams
    run = streams.runs.start(
        events, DIALECT, user_id=command.user_id, session_id=wanted.thread_id, first=selection
    )
    encoder, agent = wanted.encoder(run.run_id), executor.name
    # Not held for as long as the stream is open:
    del data, wanted, picked, caller, executor, command
    return await streams.respond(
        request,
        events,
        encoder,
        lambda error: run_error(error, **{"X-Agent": agent}),
        before=selection,
        agent=agent,
        run=run,
    )


async def _pick(
    request: web.Request, wanted: AGUIRequest, user: str | None
) -> _Picked | web.Response:
    """The agent and its command: the agent named (in the path or ``forwardedProps.agent``),
    for a resume the one whose run of the thread waits for it, else the router's pick (then
    announced by the returned event) or the default agent. 400 for an unknown agent, 503 when
    the conversation store is down."""
    named, given = request.match_info.get("agent"), wanted.agent
    if named is not None and given is not None and named != given:
        return json_error(400, f"the path names agent {named!r}, forwardedProps.agent {given!r}")
    agents = request.app[AGENTS]
    command = wanted.command(user)
    try:
        name = named or given
        if name is None and wanted.resumes:
            name = await _holder(agents, user, wanted.thread_id) or agents.default
        executor, selection = await agents.resolve(command, name)
        command = await _with_history(executor, command, wanted)
    except ConfigurationError as exc:
        return json_error(400, str(exc))
    except StoreUnavailable as exc:
        return json_error(503, str(exc))
    return executor, selection, command


async def _holder(agents: AgentRouter, user: str | None, thread_id: str) -> str | None:
    """The agent whose run of the thread is paused (for tool results or a person's answer)."""
    for name, executor in agents.agents.items():
        if await executor.waiting_for_approval(user, thread_id):
            return name
    return None


async def _with_history(
    executor: ServedAgent, command: AgentCommand, wanted: AGUIRequest
) -> AgentCommand:
    """``command``, whose history is the thread's memory; or, when the service has no memory
    of the thread (begun elsewhere, forgotten, its replica without a shared store), the client's
    earlier messages. A resume whose paused run is kept goes on from that run."""
    if not wanted.earlier:
        return command
    user, thread = command.user_id, wanted.thread_id
    if wanted.resumes:
        kept = await executor.waiting_for_approval(user, thread)
    else:
        kept = bool(await executor.memory.load(user, thread))
    return command if kept else command.model_copy(update={"messages": wanted.earlier})
