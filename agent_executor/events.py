"""The typed events of a streamed run (see docs/sse-protocol.md).

Python and SSE share this one model: each event is a frozen, slotted dataclass with a ``type``
discriminator, and :data:`event_adapter` serialises any of them. ``MessageEvent`` is created once
per text delta, so it stays a plain dataclass with a single field and a hand-written
``__init__`` that writes its slots directly: a frozen dataclass's generated one goes through
``object.__setattr__`` for every field, which is measurable per token
(``benchmarks/instructions.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter

from .messages import Message, ToolCall, Usage
from .results import FinishReason, PendingApproval, Source, ToolCallRecord, ToolStatus

__all__ = [
    "AgentEvent",
    "AgentSelectedEvent",
    "ApprovalRequiredEvent",
    "CompactedEvent",
    "DoneEvent",
    "ErrorEvent",
    "MessageEvent",
    "NestedEvent",
    "NodeEndEvent",
    "NodeStartEvent",
    "ReasoningEvent",
    "ToolCallEvent",
    "ToolEndEvent",
    "ToolStartEvent",
    "event_adapter",
]


@dataclass(frozen=True, slots=True, init=False)
class MessageEvent:
    """A piece of the model's text, yielded the moment it arrives."""

    text: str
    type: Literal["message"] = field(default="message", init=False, repr=False)

    def __init__(self, text: str) -> None:
        _set_text(self, text)
        _set_type(self, "message")


# The slots' own setters: a frozen instance is written once, here, without the generic
# attribute look-up of ``object.__setattr__``.
_set_text = MessageEvent.__dict__["text"].__set__
_set_type = MessageEvent.__dict__["type"].__set__


@dataclass(frozen=True, slots=True)
class ReasoningEvent:
    """A piece of the model's reasoning (thinking) text, yielded as it arrives.

    Never part of the answer: it is not in ``message`` events nor in ``AgentResult.content``
    (it is gathered in ``AgentResult.reasoning``). ``AgentExecutor(reasoning_events=False)``
    keeps it from the caller; what the provider needs back on the next turn still goes back.
    """

    text: str
    type: Literal["reasoning"] = field(default="reasoning", init=False, repr=False)


@dataclass(frozen=True, slots=True)
class ToolStartEvent:
    """A tool call is about to run (or to be refused); ``arguments`` as the model sent them."""

    tool: str
    call_id: str
    arguments: dict[str, Any]
    type: Literal["tool_start"] = field(default="tool_start", init=False, repr=False)


@dataclass(frozen=True, slots=True)
class ToolEndEvent:
    """A tool call has ended with ``status`` (see :data:`~agent_executor.results.ToolStatus`);
    ``result`` is the text the model is given for it (after screening and truncation)."""

    tool: str
    call_id: str
    status: ToolStatus
    duration_ms: float
    result: str | None = None
    type: Literal["tool_end"] = field(default="tool_end", init=False, repr=False)


@dataclass(frozen=True, slots=True)
class ToolCallEvent:
    """A frontend tool was called: the client runs it and posts its result
    (``POST /api/chat/tool-result``) while the run waits for it, or, with
    ``client_tool_mode="return"``, the run ends (``tool_calls``) and is resumed with it."""

    tool: str
    call_id: str
    arguments: dict[str, Any]
    type: Literal["tool_call"] = field(default="tool_call", init=False, repr=False)


@dataclass(frozen=True, slots=True)
class ApprovalRequiredEvent:
    """A tool call needs a person's approval (or, for ``ask_user``, an answer); the stream then
    ends with ``done`` ``waiting_for_approval`` and the client resumes with the token."""

    tool: str
    call_id: str
    arguments: dict[str, Any]
    approval_token: str
    type: Literal["approval_required"] = field(default="approval_required", init=False, repr=False)


@dataclass(frozen=True, slots=True)
class AgentSelectedEvent:
    """An agent was picked for this request, or took the conversation over (``json`` mode only
    on the wire).

    ``selected_by`` is ``router``, or ``default`` when routing fell back to the default agent,
    with the reason in ``detail``; or ``handoff`` when the agent speaking handed the run over to
    ``agent`` (``detail`` says which agent did), which answers from then on; or ``group``
    when an agent group gives ``agent`` the next round, or ``flow`` when a flow's node runs
    ``agent`` (``detail`` says which round or node, and why).
    """

    agent: str
    selected_by: Literal["router", "default", "handoff", "group", "flow"]
    detail: str | None = None
    type: Literal["agent_selected"] = field(default="agent_selected", init=False, repr=False)


@dataclass(frozen=True, slots=True)
class NestedEvent:
    """An event of a run nested in this one: an agent used as a tool (``json`` mode only on
    the wire).

    ``agent`` names the nested agent, ``call_id`` is the tool call of this run that runs it,
    and ``event`` is its event as its own stream would yield it (itself a ``NestedEvent`` when
    that agent uses another agent). Its text is never part of this run's ``message`` events or
    ``content``; its ``done`` carries what it spent, which this run's usage includes.
    """

    agent: str
    call_id: str
    event: AgentEvent
    type: Literal["nested"] = field(default="nested", init=False, repr=False)


NodeStatus = Literal["success", "error", "waiting"]
"""How a flow's node ended: it gave its output, it failed, or its agent waits for a person."""


@dataclass(frozen=True, slots=True)
class NodeStartEvent:
    """A flow's node starts (``json`` mode only on the wire); ``kind`` is ``agent``,
    ``model``, ``tool``, ``filter`` or ``function``."""

    node: str
    kind: str
    type: Literal["node_start"] = field(default="node_start", init=False, repr=False)


@dataclass(frozen=True, slots=True)
class NodeEndEvent:
    """A flow's node ended (``json`` mode only on the wire): with its output (the text it
    passes on, cut to 2,000 characters), failed, or paused the flow waiting for a person."""

    node: str
    kind: str
    status: NodeStatus
    output: str
    type: Literal["node_end"] = field(default="node_end", init=False, repr=False)


@dataclass(frozen=True, slots=True)
class CompactedEvent:
    """The run's conversation grew past what the model can read, and its older turns were
    summarised before the next model call (``json`` mode only on the wire): how many messages
    and estimated tokens it had before and has after. Text already streamed stays streamed;
    the run's answer and what memory keeps are not changed by it."""

    messages_before: int
    messages_after: int
    tokens_before: int
    tokens_after: int
    type: Literal["compacted"] = field(default="compacted", init=False, repr=False)


@dataclass(frozen=True, slots=True)
class ErrorEvent:
    """The run failed; always followed by exactly one :class:`DoneEvent`.

    ``message`` is what a client may be told (for ``llm_error``, a generic text with the
    request id). ``detail`` is the cause, for the program that runs the executor to log or
    show: the provider's text for ``llm_error``, the exception for ``internal_error``
    (``None`` when the message says it all). It is never serialised (``event_adapter``
    leaves it out, the service never sends it) and not compared.
    """

    code: str
    message: str
    retry_after: float | None = None
    detail: Annotated[str | None, Field(exclude=True)] = field(default=None, compare=False)
    type: Literal["error"] = field(default="error", init=False, repr=False)


@dataclass(frozen=True, slots=True)
class DoneEvent:
    """The last event of every stream, after an error too; ``sources`` are where the passages
    a retrieval hook gave the model come from; ``client_tool_calls`` are the calls a run that
    ended with ``tool_calls`` hands back to the client; ``messages`` is the conversation the run
    leaves (see ``AgentResult.messages``), never sent to clients as it is."""

    finish_reason: FinishReason
    usage: Usage | None
    tool_calls: list[ToolCallRecord]
    duration_ms: float
    output: Any = None
    pending_approvals: list[PendingApproval] = field(default_factory=list)
    sources: list[Source] = field(default_factory=list)
    client_tool_calls: list[ToolCall] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list, repr=False, compare=False)
    type: Literal["done"] = field(default="done", init=False, repr=False)


AgentEvent = Annotated[
    MessageEvent
    | ReasoningEvent
    | ToolStartEvent
    | ToolEndEvent
    | ToolCallEvent
    | ApprovalRequiredEvent
    | AgentSelectedEvent
    | NestedEvent
    | NodeStartEvent
    | NodeEndEvent
    | CompactedEvent
    | ErrorEvent
    | DoneEvent,
    Field(discriminator="type"),
]
"""Any event of a streamed run."""

event_adapter: TypeAdapter[AgentEvent] = TypeAdapter(AgentEvent)
"""Serialises and validates any :data:`AgentEvent` (``event_adapter.dump_json(event)``)."""
