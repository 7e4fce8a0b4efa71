"""The state of one run, shared by its steps; both execution modes read their output from it."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .context import RunContext
from .errors import ErrorCode
from .events import AgentEvent, DoneEvent
from .messages import Message, ToolCall, Usage
from .results import AgentResult, ErrorInfo, FinishReason, PendingApproval, ToolCallRecord
from .tools import Tool

__all__ = ["Emit", "PendingCall", "Run", "RunFailed"]

Emit = Callable[[AgentEvent], None]


class RunFailed(Exception):
    """Ends a run with an error code; raised by the run's steps, caught once by the executor."""

    def __init__(self, code: ErrorCode, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.info = ErrorInfo(code=code.value, message=message, retry_after=retry_after)


@dataclass(slots=True)
class PendingCall:
    """A tool call that has started and not ended (reported as cancelled if the run stops)."""

    tool: str
    arguments: dict[str, Any]
    started: float


class Run:
    """Everything a run accumulates: messages, text, usage, tool calls, outcome."""

    __slots__ = (
        "awaiting_approval",
        "cancelled",
        "ctx",
        "emit",
        "error",
        "finish_reason",
        "first_token_at",
        "identical_streak",
        "last_call_key",
        "messages",
        "new_messages",
        "output",
        "pending",
        "pending_approvals",
        "reasoning",
        "repaired",
        "started",
        "texts",
        "tool_calls_made",
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
        self.tool_calls_made = 0
        self.first_token_at: float | None = None
        self.finish_reason: FinishReason = "stop"
        self.error: ErrorInfo | None = None
        self.cancelled = False
        self.output: Any = None
        self.repaired = False
        self.pending: dict[str, PendingCall] = {}
        self.last_call_key: tuple[str, str] | None = None
        self.identical_streak = 0
        self.tools: Mapping[str, Tool] = {}
        self.tool_specs: list[dict[str, Any]] = []
        self.awaiting_approval: list[ToolCall] = []
        self.pending_approvals: list[PendingApproval] = []

    @property
    def records(self) -> list[ToolCallRecord]:
        """The run's tool calls so far, in the order they were made."""
        return self.ctx.tool_calls

    def add(self, message: Message) -> None:
        """Append a message to the conversation and to what the run will save."""
        self.messages.append(message)
        self.new_messages.append(message)

    def add_usage(self, usage: Usage | None) -> None:
        if usage is not None:
            self.usage = usage if self.usage is None else self.usage + usage

    def fail(self, info: ErrorInfo) -> None:
        """Record the run's failure (the first one wins)."""
        if self.error is None:
            self.error = info
            self.finish_reason = "error"

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
            pending_approvals=list(self.pending_approvals),
        )

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
            pending_approvals=list(self.pending_approvals),
            reasoning="".join(self.reasoning) if self.reasoning else None,
        )
