"""The state of one run, shared by its steps; both execution modes read their output from it.

:class:`RunState` holds what every step reads (the context, the conversation, the text, the
outcome). Two parts have one owner each and are changed only through their own methods: the
:class:`ToolBudget` (the tool-call module counts calls against the limits) and the
:class:`ApprovalState` (calls held for a person, and the approvals the run asks for).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ..approvals import PendingRun
from ..command import AgentCommand
from ..context import RunContext
from ..errors import OUT_OF_DESCRIPTORS, ErrorCode, ModelError
from ..events import AgentEvent, DoneEvent, ErrorEvent
from ..messages import AssistantMessage, Message, ToolCall, Usage
from ..results import AgentResult, ErrorInfo, FinishReason, PendingApproval, ToolCallRecord
from ..settings import RunLimits
from ..tools import Tool

__all__ = [
    "DETAIL_LIMIT",
    "ApprovalState",
    "Emit",
    "HandoffRequest",
    "Mode",
    "PendingCall",
    "RequestOrigin",
    "RunCommand",
    "RunFailed",
    "RunState",
    "ToolBudget",
    "error_detail",
    "error_event",
    "overloaded",
]

Mode = Literal["stream", "execute"]
"""How a run was asked for: ``execute_stream()`` or ``execute()``."""


@dataclass(frozen=True, slots=True)
class RequestOrigin:
    """Where a run's request came from: its request id, network address and HTTP headers,
    when known (the service's ``Caller`` is the HTTP side of the same thing)."""

    request_id: str | None = None
    address: str | None = None
    headers: Mapping[str, str] | None = None


Emit = Callable[[AgentEvent], None]
"""Where a run's events go: dropped by ``execute()``, pushed to the stream by
``execute_stream()``."""


def drop(event: AgentEvent) -> None:
    """The ``emit`` of ``execute()``: its result is read from the run, not from events."""


_NO_LIMITS = RunLimits(request_timeout=None)

DETAIL_LIMIT = 2000
"""How much of a cause ``ErrorInfo.detail`` keeps (a provider's page of HTML is cut)."""


def error_detail(error: BaseException) -> str:
    """The cause of a run's error as ``ErrorInfo.detail`` gives it: the exception's type, the
    provider's HTTP status if any, and its text, cut at :data:`DETAIL_LIMIT` characters."""
    kind = type(error).__name__
    if isinstance(error, ModelError) and error.status_code is not None:
        kind += f" (HTTP {error.status_code})"
    text = str(error).strip()
    detail = f"{kind}: {text}" if text else kind
    return detail if len(detail) <= DETAIL_LIMIT else detail[: DETAIL_LIMIT - 1] + "…"


class RunFailed(Exception):
    """Ends a run with an error code; raised by the run's steps, caught once by the driver.

    ``detail`` is the cause for the library user (``ErrorInfo.detail``, never sent to
    clients).
    """

    def __init__(
        self,
        code: ErrorCode,
        message: str,
        retry_after: float | None = None,
        *,
        detail: str | None = None,
    ) -> None:
        super().__init__(message)
        self.info = ErrorInfo(
            code=code.value, message=message, retry_after=retry_after, detail=detail
        )


def overloaded() -> ErrorInfo:
    """The error of a run the process had no file descriptor for: ``overloaded``, worth a
    retry in a second."""
    return ErrorInfo(code=ErrorCode.OVERLOADED.value, message=OUT_OF_DESCRIPTORS, retry_after=1.0)


def error_event(error: ErrorInfo) -> ErrorEvent:
    """The ``error`` event of a run that failed with ``error`` (its detail too)."""
    return ErrorEvent(
        code=error.code,
        message=error.message,
        retry_after=error.retry_after,
        detail=error.detail,
    )


@dataclass(slots=True)
class PendingCall:
    """A tool call that has started and not ended (reported as cancelled if the run stops)."""

    tool: str
    arguments: dict[str, Any]
    started: float


class ToolBudget:
    """The run's tool calls counted against ``max_tool_calls`` and ``max_identical_calls``."""

    __slots__ = ("identical_streak", "last_call_key", "made")

    def __init__(self, made: int = 0) -> None:
        self.made = made
        self.last_call_key: tuple[str, str] | None = None
        self.identical_streak = 0

    def spent(self, limit: int | None) -> bool:
        """Whether the run has made every call ``limit`` allows."""
        return limit is not None and self.made >= limit

    def count(self, key: tuple[str, str] | None) -> int:
        """Count one call; with its ``key`` (name, canonical arguments), return how many
        identical calls in a row it makes (0 when the call is not compared)."""
        self.made += 1
        if key is None:
            return 0
        self.identical_streak = self.identical_streak + 1 if key == self.last_call_key else 1
        self.last_call_key = key
        return self.identical_streak


class ApprovalState:
    """Calls held for a person's decision or handed back to the client, and the approvals the
    paused run asks for."""

    __slots__ = ("client", "held", "requested")

    def __init__(self) -> None:
        self.held: list[ToolCall] = []
        self.client: list[ToolCall] = []
        self.requested: list[PendingApproval] = []

    def __bool__(self) -> bool:
        """Whether the turn stops at held calls (the run pauses)."""
        return bool(self.held or self.client)

    def hold(self, call: ToolCall) -> None:
        """Keep ``call`` from running until a person decides (counted when decided)."""
        self.held.append(call)

    def hand_back(self, call: ToolCall) -> None:
        """Leave a client tool's ``call`` to the caller (counted when its result comes)."""
        self.client.append(call)

    def request(self, approval: PendingApproval) -> None:
        self.requested.append(approval)


@dataclass(frozen=True, slots=True)
class HandoffRequest:
    """A handoff the model asked for in this turn: the call of which tool (``call_id``)."""

    tool: str
    call_id: str


class RunState:
    """Everything a run accumulates: messages, text, usage, tool calls, outcome."""

    __slots__ = (
        "approvals",
        "budget",
        "cancelled",
        "ctx",
        "emit",
        "error",
        "finish_reason",
        "handoff",
        "handoffs",
        "history",
        "limits",
        "messages",
        "new_messages",
        "output",
        "paused",
        "pending",
        "prefix_length",
        "reasoning",
        "repaired",
        "response_format",
        "response_format_optional",
        "started",
        "texts",
        "tool_specs",
        "tools",
        "turns",
        "usage",
    )

    def __init__(self, ctx: RunContext, emit: Emit) -> None:
        self.ctx = ctx
        self.emit = emit
        self.started = time.perf_counter()
        self.messages: list[Message] = []
        self.new_messages: list[Message] = []
        self.texts: list[str] = []
        self.reasoning: list[str] = []
        self.usage: Usage | None = None
        self.turns = 0
        self.finish_reason: FinishReason = "stop"
        self.error: ErrorInfo | None = None
        self.cancelled = False
        self.output: Any = None
        self.repaired = False
        self.pending: dict[str, PendingCall] = {}
        self.tools: Mapping[str, Tool] = {}
        self.tool_specs: list[dict[str, Any]] = []
        self.budget = ToolBudget()
        self.approvals = ApprovalState()
        self.handoff: HandoffRequest | None = None
        self.handoffs = 0
        self.limits: RunLimits = _NO_LIMITS
        """What the run may spend (the executor's limits and the command's, the lower)."""
        self.paused: PendingRun | None = None
        """What an orchestrator keeps of a run it paused (a group's or flow's own state);
        ``None``: the driver takes the paused run's state from the run itself."""
        self.history: list[Message] = []
        """The conversation before the run (stored, or the command's), as it went on from it."""
        self.prefix_length: int | None = None
        """How many of the command's explicit messages the run continues (kept with a pause)."""
        self.response_format: dict[str, Any] | None = None
        """The provider's ``response_format`` every model call of the run is sent with."""
        self.response_format_optional = False
        """Whether the run checks its answer itself, so a model that cannot constrain its
        output may be called without ``response_format``."""

    @property
    def records(self) -> list[ToolCallRecord]:
        """The run's tool calls so far, in the order they were made."""
        return self.ctx.tool_calls

    def add(self, message: Message) -> None:
        """Append a message to the conversation and to what the run will save."""
        self.messages.append(message)
        self.new_messages.append(message)

    def replace_result(self, result: AgentResult) -> None:
        """An ``after_agent_complete`` hook's result in place of the run's: its content is
        the run's text and the last assistant message's (what memory keeps), its output the
        run's output."""
        if result.content != "".join(self.texts):
            self.texts[:] = [result.content] if result.content else []
            for index in range(len(self.new_messages) - 1, -1, -1):
                message = self.new_messages[index]
                if isinstance(message, AssistantMessage):
                    changed = message.model_copy(update={"content": result.content})
                    self.new_messages[index] = changed
                    break
        self.output = result.output

    def add_usage(self, usage: Usage | None) -> None:
        if usage is not None:
            self.usage = usage if self.usage is None else self.usage + usage

    def fail(self, info: ErrorInfo) -> None:
        """Record the run's failure (the first one wins); a spending limit's is ``budget``."""
        if self.error is None:
            self.error = info
            self.finish_reason = "budget" if info.code == "budget_exceeded" else "error"

    def duration_ms(self) -> float:
        return round((time.perf_counter() - self.started) * 1000, 3)

    def done_event(self) -> DoneEvent:
        """The closing event of a stream."""
        return DoneEvent(
            finish_reason=self.finish_reason,
            usage=self.usage,
            tool_calls=list(self.records),
            duration_ms=self.duration_ms(),
            output=self.output,
            pending_approvals=list(self.approvals.requested),
            sources=list(self.ctx.sources),
            client_tool_calls=list(self.approvals.client),
            messages=self.conversation(),
        )

    def conversation(self) -> list[Message]:
        """The history the run went on from and the messages it added."""
        return [*self.history, *self.new_messages]

    def result(self) -> AgentResult:
        """The outcome as ``execute()`` returns it."""
        return AgentResult(
            success=self.error is None,
            content="".join(self.texts),
            tool_calls=list(self.records),
            usage=self.usage,
            error=self.error,
            duration_ms=self.duration_ms(),
            finish_reason=self.finish_reason,
            output=self.output,
            pending_approvals=list(self.approvals.requested),
            reasoning="".join(self.reasoning) if self.reasoning else None,
            sources=list(self.ctx.sources),
            client_tool_calls=list(self.approvals.client),
            messages=self.conversation(),
        )


RunCommand = Callable[[AgentCommand, Mode, Emit, RequestOrigin], Awaitable[RunState]]
"""Runs a command on one agent's driver (``Driver.run``): how agent tools, groups and flows
run the agents they use, nested in their own run."""
