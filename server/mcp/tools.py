"""Every agent, group and flow of the service as one MCP tool: the tool list, and the call that
runs the agent (docs/mcp-server.md).

MCP clients (desktop assistants, IDEs, other agents) know how to call tools, not our HTTP API;
as tools, the service's agents are one configuration line away from any of them. A tool takes
``message`` and an optional ``session_id`` (the conversation to continue, remembered per user
and session as on every other endpoint) and answers with the agent's text, and the sources after
it when retrieval ran. The run is streamed, so a client that asked for progress hears of the
text and of the tool calls while the agent works. A run that fails is a tool error
(``isError``) whose text starts with our error code, never a protocol error: the model that
called the tool reads it and decides what to do. Only an unknown tool name is a protocol error,
as the MCP specification has it.

How a call reaches the service is not this module's business: the HTTP endpoint
(:mod:`.service`) and ``agent-executor mcp`` (stdio) each say how to find a call's
:class:`~server.request.Caller` and whether new calls are refused.
"""

from __future__ import annotations

import asyncio
import logging
import math
import re
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import aclosing, contextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from agent_executor import (
    AgentCommand,
    AgentRouter,
    DoneEvent,
    ErrorCode,
    ErrorEvent,
    ErrorInfo,
    MessageEvent,
    ServedAgent,
    Source,
    ToolEndEvent,
    ToolStartEvent,
    Usage,
    __version__,
)
from agent_executor._extras import requires_extra

from ..errors import RETRY_AFTER_SECONDS, retry_after_seconds
from ..request import Caller
from ..schemas import ErrorDetail, describe_validation_error
from ..sse.streams import SHUTTING_DOWN

with requires_extra("mcp", "serving agents over MCP"):
    from mcp import MCPError, types
    from mcp.server import Server, ServerRequestContext
    from mcp.server.session import ServerSession

__all__ = ["INPUT_SCHEMA", "AgentTools", "CallerOf", "ToolAnswer", "ToolInput"]

logger = logging.getLogger("server.mcp")

CallerOf = Callable[[ServerRequestContext[Any, Any]], Caller | None]
"""Who makes a call: the transport's answer for one request (``None``: it cannot tell)."""

INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "message": {
            "type": "string",
            "minLength": 1,
            "description": "What to ask or tell the agent.",
        },
        "session_id": {
            "type": "string",
            "minLength": 1,
            "maxLength": 256,
            "description": "The conversation to continue: the agent remembers the earlier "
            "messages of this session. Leave it out for a one-off question.",
        },
    },
    "required": ["message"],
    "additionalProperties": False,
}
"""The input schema of every agent tool (what :class:`ToolInput` accepts)."""

_INSTRUCTIONS = (
    "Each tool is an agent of this service: give it a message, and a session_id to continue a "
    "conversation; it answers in text, after using its own tools."
)
_UNSAFE_NAME_RE = re.compile(r"[^A-Za-z0-9._-]")
_PROGRESS_INTERVAL_SECONDS = 0.25
_WAITING_NOTE = "[The run is paused: a tool call waits for a person's approval, given outside MCP.]"


class ToolInput(BaseModel):
    """The arguments of a call (:data:`INPUT_SCHEMA`)."""

    model_config = ConfigDict(extra="forbid")

    message: str = Field(min_length=1)
    session_id: str | None = Field(default=None, min_length=1, max_length=256)

    @field_validator("message")
    @classmethod
    def _not_blank(cls, message: str) -> str:
        if not message.strip():
            raise ValueError("must not be empty")
        return message


class ToolAnswer(BaseModel):
    """The ``structuredContent`` of a call that succeeded: the answer, why the run ended, what
    it used, where its passages came from, and the request id the service's log knows it by."""

    answer: str
    finish_reason: str
    request_id: str
    usage: Usage | None = None
    sources: list[Source] = Field(default_factory=list)


_OUTPUT_SCHEMA = ToolAnswer.model_json_schema(mode="serialization")


class AgentTools:
    """The agents of ``agents`` as MCP tools: :attr:`server` answers ``tools/list`` and
    ``tools/call`` on any transport.

    ``caller`` finds who makes a call (their user id keys memory, rate limits and budgets);
    while ``refusing()`` is true (the service shuts down), a call is an ``unavailable`` tool
    error.
    """

    def __init__(
        self, agents: AgentRouter, *, caller: CallerOf, refusing: Callable[[], bool]
    ) -> None:
        self._agents = _by_tool_name(agents)
        self._caller = caller
        self._refusing = refusing
        self._calls = _Calls()
        self.server: Server[Any] = Server(
            "agent-executor",
            version=__version__,
            instructions=_INSTRUCTIONS,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            get_tool_input_schema=self._input_schema,
        )

    @property
    def names(self) -> list[str]:
        """The tools' names."""
        return list(self._agents)

    async def drain(self, grace_seconds: float) -> None:
        """At shutdown: refuse new calls, let running ones finish for ``grace_seconds``, then
        end them (their result: an ``overloaded`` tool error, as for a stream at shutdown)."""
        await self._calls.drain(grace_seconds)

    def _input_schema(self, name: str) -> Mapping[str, Any] | None:
        return INPUT_SCHEMA if name in self._agents else None

    async def _list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[_tool(n, a) for n, a in self._agents.items()])

    async def _call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        agent = self._agents.get(params.name)
        if agent is None:
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
        caller = self._caller(ctx)
        if caller is None:
            raise MCPError(code=types.INTERNAL_ERROR, message="the call came without its caller")
        if self._refusing() or self._calls.draining:
            refusal = ErrorInfo(
                code=ErrorCode.UNAVAILABLE.value,
                message="the server is shutting down",
                retry_after=RETRY_AFTER_SECONDS,
            )
            return _failure(refusal, caller.request_id)
        try:
            given = ToolInput.model_validate(params.arguments or {})
        except ValidationError as exc:
            invalid = ErrorInfo(
                code=ErrorCode.INVALID_INPUT.value, message=describe_validation_error(exc)
            )
            return _failure(invalid, caller.request_id)
        command = AgentCommand(
            user_prompt=given.message, user_id=caller.user, session_id=given.session_id
        )
        result: types.CallToolResult | None = None
        with self._calls.track() as scope, scope:  # drain() may cancel it at shutdown
            result = await _answer(agent, command, caller, _Progress(ctx.session))
        return _failure(SHUTTING_DOWN, caller.request_id) if result is None else result


def _by_tool_name(router: AgentRouter) -> dict[str, ServedAgent]:
    """The agents by tool name: an agent's own name, made a valid MCP tool name if it is not
    one (other characters become ``_``; a name taken twice gets ``_2``, ``_3``...)."""
    tools: dict[str, ServedAgent] = {}
    for name, agent in router.agents.items():
        base = _UNSAFE_NAME_RE.sub("_", name)[:120] or "agent"
        tool, number = base, 1
        while tool in tools:
            number += 1
            tool = f"{base}_{number}"
        tools[tool] = agent
    return tools


def _tool(name: str, agent: ServedAgent) -> types.Tool:
    description = agent.description.strip() or (
        f"Ask the agent {name!r}: it answers your message in text, using its own tools."
    )
    return types.Tool(
        name=name,
        description=description,
        input_schema=INPUT_SCHEMA,
        output_schema=_OUTPUT_SCHEMA,
    )


async def _answer(
    agent: ServedAgent, command: AgentCommand, caller: Caller, progress: _Progress
) -> types.CallToolResult:
    """Run ``command`` on ``agent`` for ``caller``: its answer or its failure, as a result."""
    try:
        outcome = await _stream(agent, command, caller, progress)
    except Exception:  # a bug of ours is a tool error too, never a protocol error
        logger.exception("MCP tool call failed (request id %s)", caller.request_id)
        message = f"internal error (request id {caller.request_id})"
        return _failure(
            ErrorInfo(code=ErrorCode.INTERNAL_ERROR.value, message=message), caller.request_id
        )
    return outcome.result(caller.request_id)


@dataclass
class _Outcome:
    """What a run said: its text, its error, its ``done``."""

    text: list[str] = field(default_factory=list)
    error: ErrorEvent | None = None
    done: DoneEvent | None = None

    def result(self, request_id: str) -> types.CallToolResult:
        if self.error is not None:
            return _failure(self.error, request_id)
        if self.done is None:
            lost = ErrorInfo(
                code=ErrorCode.INTERNAL_ERROR.value, message="the run ended without a result"
            )
            return _failure(lost, request_id)
        answer = ToolAnswer(
            answer="".join(self.text),
            finish_reason=self.done.finish_reason,
            request_id=request_id,
            usage=self.done.usage,
            sources=self.done.sources,
        )
        return types.CallToolResult(
            content=[types.TextContent(text=_text(answer))],
            structured_content=answer.model_dump(mode="json"),
        )


async def _stream(
    agent: ServedAgent, command: AgentCommand, caller: Caller, progress: _Progress
) -> _Outcome:
    """Stream the run, telling ``progress`` of its text and tool calls as they come; leaving
    (a cancelled call, a client gone) closes the stream, which cancels the run."""
    outcome = _Outcome()
    async with aclosing(caller.stream(agent, command)) as events:
        async for event in events:
            if isinstance(event, MessageEvent):
                outcome.text.append(event.text)
                await progress.text(event.text)
            elif isinstance(event, ToolStartEvent):
                await progress.note(f"calling {event.tool}")
            elif isinstance(event, ToolEndEvent):
                await progress.note(f"{event.tool}: {event.status}")
            elif isinstance(event, ErrorEvent):
                outcome.error = event
            elif isinstance(event, DoneEvent):
                outcome.done = event
    return outcome


def _text(answer: ToolAnswer) -> str:
    """The answer as the client's model reads it: the text, then the sources, if any."""
    lines = [answer.answer]
    if answer.sources:
        lines.append("\nSources:")
        lines.extend(
            f"- {s.title} ({s.source})" if s.title else f"- {s.source}" for s in answer.sources
        )
    if answer.finish_reason == "waiting_for_approval":
        lines.append(f"\n{_WAITING_NOTE}")
    return "\n".join(lines)


def _failure(error: ErrorInfo | ErrorEvent, request_id: str) -> types.CallToolResult:
    """A tool error: ``code: message`` as text, the service's error object as structured
    content (``retry_after`` in whole seconds when waiting helps)."""
    detail = ErrorDetail(
        code=_known(error.code),
        message=error.message,
        request_id=request_id,
        retry_after=None if error.retry_after is None else retry_after_seconds(error.retry_after),
    )
    return types.CallToolResult(
        content=[types.TextContent(text=f"{error.code}: {error.message}")],
        structured_content={"error": detail.model_dump(mode="json", exclude_none=True)},
        is_error=True,
    )


def _known(code: str) -> ErrorCode:
    """``code`` as an :class:`ErrorCode` (``internal_error`` for one it does not know)."""
    try:
        return ErrorCode(code)
    except ValueError:
        return ErrorCode.INTERNAL_ERROR


class _Progress:
    """One call's progress notifications: its text as it comes (deltas gathered, at most one
    notification every :data:`_PROGRESS_INTERVAL_SECONDS`), and each tool call's start and end
    at once. ``progress`` counts the notifications, so it grows with each one; a client that
    sent no progress token gets none (the session drops them)."""

    __slots__ = ("_count", "_last", "_pending", "_session")

    def __init__(self, session: ServerSession) -> None:
        self._session = session
        self._count = 0
        self._last = -math.inf
        self._pending: list[str] = []

    async def text(self, delta: str) -> None:
        self._pending.append(delta)
        if time.monotonic() - self._last >= _PROGRESS_INTERVAL_SECONDS:
            await self._flush()

    async def note(self, message: str) -> None:
        await self._flush()
        await self._send(message)

    async def _flush(self) -> None:
        if self._pending:
            text = "".join(self._pending)
            self._pending.clear()
            await self._send(text)

    async def _send(self, message: str) -> None:
        self._count += 1
        self._last = time.monotonic()
        await self._session.report_progress(self._count, message=message)


class _Calls:
    """The calls running now, each in a cancel scope of its own, for :meth:`AgentTools.drain`."""

    def __init__(self) -> None:
        self._scopes: set[anyio.CancelScope] = set()
        self._idle = asyncio.Event()
        self._idle.set()
        self.draining = False

    @contextmanager
    def track(self) -> Iterator[anyio.CancelScope]:
        """A scope for one call (the caller enters it), counted until the block ends."""
        scope = anyio.CancelScope()
        self._scopes.add(scope)
        self._idle.clear()
        try:
            yield scope
        finally:
            self._scopes.discard(scope)
            if not self._scopes:
                self._idle.set()

    async def drain(self, grace_seconds: float) -> None:
        self.draining = True
        with anyio.move_on_after(grace_seconds):
            await self._idle.wait()
        for scope in list(self._scopes):
            scope.cancel()
