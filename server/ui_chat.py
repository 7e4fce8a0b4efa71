"""``POST /api/chat/ui`` and ``GET /api/chat/ui/{chat_id}/stream``: the service as the backend
of the Vercel AI SDK's ``useChat`` (its ``DefaultChatTransport``), answering in the UI message
stream (:mod:`.dialects.ui_message`), so that a React app needs no server code of its own.

The request is the transport's body (``id``, ``messages`` of parts, ``trigger``,
``messageId``) plus what the app puts in the transport's ``body`` option: ``agent``, ``tools``
(the client's own tools, as on ``/api/chat/stream``) and ``metadata``. Why it maps as it does:

- The chat ``id`` is the session and the user is the API key's (else ``X-User-Id``): the
  service keeps the conversation, server tool calls and results and what providers need back
  included, so the last message is the request. The client's earlier messages (their text)
  are the history only where the service has no memory of the chat (a chat begun elsewhere or
  forgotten after ``--session-ttl``, a replica without a shared store): a chat reloaded on
  another device goes on either way, and its user messages are screened by the guards as any
  ``messages`` are.
- The client's tools hand their calls back (``client_tool_mode="return"``), as the AI SDK's
  client-side tools expect: the stream ends at the call, the client runs it and sends the chat
  again, its last (assistant) message carrying the result in the tool part; that request resumes
  the paused run in the same assistant message. Approvals come back the same way, in tool parts
  ``approval-responded`` whose approval id is the signed approval token.
- ``regenerate-message`` takes the last answer out of the session before the message is run
  again, when the session's last turn answered that same message (a failed run left none).
- Each stream is a run of the hub (:mod:`.runs`) under the chat's session, so the AI SDK's
  ``resume: true`` gets an answer still in flight, replayed from its start.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field

from agent_executor import (
    AgentCommand,
    AgentSelectedEvent,
    Approval,
    AssistantMessage,
    ClientTool,
    ClientToolResult,
    ConfigurationError,
    Message,
    ServedAgent,
    StoreUnavailable,
    UserMessage,
)
from agent_executor.memory import CompactableStore, ConversationStore

from .dialects.ui_message import DIALECT, Resumed, UIMessageStream
from .errors import json_error, run_error
from .request import Caller, admission_refusal, json_object, validated
from .state import AGENTS, STATE

__all__ = [
    "UIApproval",
    "UIChatRequest",
    "UIMessage",
    "UIPart",
    "UIRequestError",
    "UITurn",
    "add_ui_routes",
    "turn_of",
    "ui_chat",
    "ui_resume",
]


def add_ui_routes(app: web.Application) -> None:
    """Register the AI SDK's chat endpoints on ``app``."""
    app.router.add_post("/api/chat/ui", ui_chat)
    app.router.add_get("/api/chat/ui/{chat_id}/stream", ui_resume)


class UIApproval(BaseModel):
    """A tool part's approval: its id (our approval token) and the person's decision."""

    model_config = ConfigDict(extra="ignore")

    id: str
    approved: bool | None = None
    reason: str | None = None


class UIPart(BaseModel):
    """One part of a UI message, as far as the service reads it (the rest is the client's)."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    type: str
    text: str | None = None
    tool_call_id: str | None = Field(default=None, alias="toolCallId")
    state: str | None = None
    output: Any = None
    error_text: str | None = Field(default=None, alias="errorText")
    provider_executed: bool | None = Field(default=None, alias="providerExecuted")
    approval: UIApproval | None = None

    @property
    def is_tool(self) -> bool:
        """Whether this is a tool part (``tool-<name>``, or ``dynamic-tool``)."""
        return self.type.startswith("tool-") or self.type == "dynamic-tool"

    @property
    def waits(self) -> bool:
        """Whether the client still owes this call its approval or (its own tool) its result."""
        if self.state == "approval-requested":
            return True
        return not self.provider_executed and self.state in ("input-streaming", "input-available")


class UIMessage(BaseModel):
    """One message of the chat, as the AI SDK sends it."""

    model_config = ConfigDict(extra="ignore")

    id: str
    role: Literal["system", "user", "assistant"]
    parts: list[UIPart] = Field(default_factory=list)


class UIChatRequest(BaseModel):
    """The body ``DefaultChatTransport`` sends, with the app's ``agent``, ``tools`` and
    ``metadata`` (its ``body`` option)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    id: str = Field(min_length=1, max_length=256, description="The chat: the session.")
    messages: list[UIMessage] = Field(min_length=1)
    trigger: Literal["submit-message", "regenerate-message"] = "submit-message"
    message_id: str | None = Field(default=None, alias="messageId")
    agent: str | None = Field(default=None, description="A configured agent, group or flow.")
    tools: list[ClientTool] = Field(
        default_factory=list, description="Tools the client runs itself (its onToolCall)."
    )
    metadata: dict[str, Any] = Field(default_factory=dict)


class UIRequestError(ValueError):
    """A chat request the service cannot act on (answered 400 with this message)."""


@dataclass(frozen=True, slots=True)
class UITurn:
    """What a request asks for: an answer to the user's ``prompt`` (``regenerate``: in place
    of the session's last one), or, with ``tool_results`` or ``approvals``, the rest of the
    paused turn in the assistant message ``message_id``. ``earlier`` is the client's copy of
    the chat before the turn's user message (``asked``), as text."""

    prompt: str = ""
    asked: str = ""
    earlier: list[Message] = field(default_factory=list)
    regenerate: bool = False
    tool_results: list[ClientToolResult] | None = None
    approvals: list[Approval] | None = None
    message_id: str | None = None
    resumed: Resumed = field(default_factory=Resumed)


def turn_of(body: UIChatRequest) -> UITurn:
    """What ``body`` asks for, read from its last message (:class:`UIRequestError` if it asks
    for nothing the service can do)."""
    *earlier, last = body.messages
    regenerate = body.trigger == "regenerate-message"
    if last.role == "assistant" and not regenerate:
        return _continuation(earlier, last)
    if last.role != "user":
        raise UIRequestError(
            "the last message must be the user's, or the assistant's with tool results or "
            "approvals (submit-message)"
        )
    if any(part.type == "file" for part in last.parts):
        raise UIRequestError("only text parts are supported in the user's message")
    prompt = _text(last)
    if not prompt.strip():
        raise UIRequestError("the last message has no text")
    return UITurn(prompt=prompt, asked=prompt, earlier=_history(earlier), regenerate=regenerate)


def _text(message: UIMessage) -> str:
    """A message's text: its text parts (one per step for the assistant's)."""
    joint = "\n" if message.role == "user" else "\n\n"
    return joint.join(part.text for part in message.parts if part.type == "text" and part.text)


def _history(messages: Sequence[UIMessage]) -> list[Message]:
    """The client's copy of the chat, as text (the agent's own instructions stand: the chat's
    system messages are left out)."""
    history: list[Message] = []
    for message in messages:
        text = _text(message)
        if text and message.role == "user":
            history.append(UserMessage(content=text))
        elif text and message.role == "assistant":
            history.append(AssistantMessage(content=text))
    return history


def _continuation(earlier: Sequence[UIMessage], message: UIMessage) -> UITurn:
    """The results and decisions the last step of the assistant's message gives its paused
    turn (the calls it handed back, the calls waiting for approval)."""
    parts = [part for part in _last_step(message.parts) if part.is_tool]
    waiting = sorted(str(part.tool_call_id) for part in parts if part.waits)
    if waiting:
        raise UIRequestError(f"the calls {waiting} still wait for their result or approval")
    results: list[ClientToolResult] = []
    approvals: list[Approval] = []
    for part in parts:
        if part.tool_call_id is None:
            raise UIRequestError(f"a {part.type} part has no toolCallId")
        if part.state == "approval-responded":
            approvals.append(_approval(part.tool_call_id, part.approval))
        elif not part.provider_executed and part.state == "output-available":
            results.append(ClientToolResult(call_id=part.tool_call_id, result=part.output))
        elif not part.provider_executed and part.state == "output-error":
            error = part.error_text or "the tool failed"
            results.append(ClientToolResult(call_id=part.tool_call_id, error=error))
    if not results and not approvals:
        raise UIRequestError(
            "the last message is the assistant's, with no tool result or approval to go on with"
        )
    resumed = Resumed(
        answered=frozenset(result.call_id for result in results),
        approved=frozenset(a.call_id for a in approvals if a.approved),
        denied=frozenset(a.call_id for a in approvals if not a.approved),
    )
    users = [index for index, message in enumerate(earlier) if message.role == "user"]
    asking = users[-1] if users else 0
    return UITurn(
        asked=_text(earlier[asking]) if users else "",
        earlier=_history(earlier[:asking]),
        tool_results=results or None,
        approvals=approvals or None,
        message_id=message.id,
        resumed=resumed,
    )


def _last_step(parts: Sequence[UIPart]) -> Sequence[UIPart]:
    """The parts after the last ``step-start``: the turn the run paused at."""
    starts = [index for index, part in enumerate(parts) if part.type == "step-start"]
    return parts[starts[-1] + 1 :] if starts else parts


def _approval(call_id: str, approval: UIApproval | None) -> Approval:
    """The person's decision; the ``reason`` is the answer to ``ask_user``."""
    if approval is None or approval.approved is None:
        raise UIRequestError(f"the approval of call {call_id!r} has no decision")
    return Approval(
        call_id=call_id,
        approved=approval.approved,
        approval_token=approval.id,
        answer=approval.reason,
    )


async def ui_chat(request: web.Request) -> web.StreamResponse:
    """``POST /api/chat/ui``: run the turn a ``useChat`` request asks for and stream it.

    A request the service cannot act on is a 400, and a run that fails before its first event
    gets its HTTP status and JSON error (the AI SDK raises both); later errors are an ``error``
    chunk, then ``finish`` and ``[DONE]``.
    """
    caller = Caller.of(request)
    parsed = await _parse(request)
    if isinstance(parsed, web.Response):
        return parsed
    body, turn = parsed
    command = _command(body, turn, caller.user)
    picked = await _agent(request, body.agent, command)
    if isinstance(picked, web.Response):
        return picked
    executor, selection = picked
    refusal = admission_refusal(request, json_error)
    if refusal is not None:
        return refusal
    try:
        command = await _with_history(executor.memory, command, turn)
    except StoreUnavailable as exc:
        return json_error(503, str(exc))
    encoder_at = UIMessageStream(caller.request_id, executor.name, turn.message_id, turn.resumed)
    events = caller.stream(executor, command)
    streams = request.app[STATE].streams
    run = streams.runs.start(
        events, encoder_at.name, user_id=command.user_id, session_id=command.session_id,
        first=selection,
    )  # fmt: skip
    agent = executor.name
    del parsed, body, turn, caller, command, executor  # not held while the stream is open
    return await streams.respond(
        request,
        events,
        run.encoder(),
        lambda error: run_error(error, **{"X-Agent": agent}),
        before=selection,
        agent=agent,
        run=run,
    )


async def ui_resume(request: web.Request) -> web.StreamResponse:
    """``GET /api/chat/ui/{chat_id}/stream`` (``useChat({resume: true})``, ``resumeStream()``):
    the chat's answer still in flight, from its start, then live; 204 when it has none, 503
    when Redis cannot say."""
    streams = request.app[STATE].streams
    chat = request.match_info["chat_id"]
    try:
        run = await streams.runs.locate_session(Caller.of(request).user, chat)
    except StoreUnavailable as exc:  # the answer may be in flight elsewhere: not a 204
        return json_error(503, str(exc))
    if (
        run is None
        or run.done_at is not None
        or run.overflowed
        or not (run.dialect or "").startswith(f"{DIALECT}:")  # a run of another dialect
    ):
        return web.Response(status=204)
    return await streams.reattach(request, run, 0)


async def _parse(request: web.Request) -> tuple[UIChatRequest, UITurn] | web.Response:
    """The request and the turn it asks for; a 400 JSON error if either is wrong."""
    data = await json_object(request)
    if isinstance(data, web.Response):
        return data
    body = validated(UIChatRequest, data)
    if isinstance(body, web.Response):
        return body
    try:
        return body, turn_of(body)
    except UIRequestError as exc:
        return json_error(400, str(exc))


def _command(body: UIChatRequest, turn: UITurn, user: str | None) -> AgentCommand:
    return AgentCommand(
        user_prompt=turn.prompt,
        user_id=user,
        session_id=body.id,
        metadata=body.metadata,
        client_tools=body.tools,
        client_tool_mode="return",
        tool_results=turn.tool_results,
        approvals=turn.approvals,
    )


async def _agent(
    request: web.Request, name: str | None, command: AgentCommand
) -> tuple[ServedAgent, AgentSelectedEvent | None] | web.Response:
    """The agent named, or the one whose run of the chat the request resumes, or the
    router's pick; 400 for an unknown name, 503 when the store cannot say."""
    router = request.app[AGENTS]
    try:
        if name is None and command.resumes and command.session_id is not None:
            for executor in router.agents.values():
                if await executor.waiting_for_approval(command.user_id, command.session_id):
                    return executor, None
        return await router.resolve(command, name)
    except ConfigurationError as exc:
        return json_error(400, str(exc))
    except StoreUnavailable as exc:
        return json_error(503, str(exc))


async def _with_history(
    memory: ConversationStore, command: AgentCommand, turn: UITurn
) -> AgentCommand:
    """``command``, its history the chat's memory (the last answer taken back first for
    ``regenerate``); or, where the service has no memory of the chat, the client's earlier
    messages, then (for a run that goes on) the message that began the paused turn, where the
    paused run is found again."""
    if not turn.regenerate and not turn.earlier:
        return command
    user, session = command.user_id, command.session_id
    assert session is not None
    stored = await memory.load(user, session)
    if turn.regenerate:
        stored = await _take_back(memory, user, session, stored, turn.asked)
    if stored or not turn.earlier:
        return command
    history = [*turn.earlier, UserMessage(content=turn.asked)] if command.resumes else turn.earlier
    return command.model_copy(update={"messages": history})


async def _take_back(
    memory: ConversationStore,
    user: str | None,
    session: str,
    history: list[Message],
    asked: str,
) -> list[Message]:
    """The history without its last turn if that turn answered ``asked`` (a run that failed
    left none: nothing to take back); cut before the turn's user message, which the run adds
    again."""
    last = next(
        (i for i in range(len(history) - 1, -1, -1) if isinstance(history[i], UserMessage)), None
    )
    if last is None or history[last] != UserMessage(content=asked):
        return history
    kept = history[:last]
    if isinstance(memory, CompactableStore):
        await memory.replace_prefix(user, session, history, kept)  # unless it changed meanwhile
        return kept
    await memory.delete(user, session)
    if kept:
        await memory.append(user, session, kept)
    return kept
