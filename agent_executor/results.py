"""What a run returns: :class:`AgentResult` and the records it is made of.

These are pydantic models because they cross the wire (``POST /api/chat`` returns an
``AgentResult``; the ``done`` event carries ``ToolCallRecord`` and ``Usage``).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from ._frozen import FrozenModel
from .messages import Message, ToolCall, Usage

__all__ = [
    "AgentResult",
    "ErrorInfo",
    "FinishReason",
    "PendingApproval",
    "Source",
    "ToolCallRecord",
    "ToolStatus",
]

ToolStatus = Literal[
    "success", "error", "invalid_arguments", "not_found", "timeout", "rejected", "cancelled"
]
"""How a tool call ended (``tool_end.status``); none of these ends the run."""

FinishReason = Literal[
    "stop", "max_tool_calls", "max_turns", "error", "waiting_for_approval", "budget", "tool_calls"
]
"""Why a run ended (``done.finish_reason``); ``waiting_for_approval``: paused until a person
approves or rejects the calls in ``pending_approvals`` (the run resumes with a new command);
``budget``: a spending limit of the run stopped it (with a ``budget_exceeded`` error);
``tool_calls``: paused at the client tools the model called (``client_tool_calls``), which the
caller runs before resuming the run with their results (``client_tool_mode="return"``)."""


class ToolCallRecord(FrozenModel):
    """One tool call of a run and its outcome; ``result`` is the text the model was given."""

    call_id: str
    tool: str
    arguments: dict[str, Any]
    status: ToolStatus
    duration_ms: float
    result: str


class PendingApproval(FrozenModel):
    """A tool call waiting for a person: approve or reject it (or, for ``ask_user``, answer it)
    by resuming the session with this ``approval_token``."""

    call_id: str
    tool: str
    arguments: dict[str, Any]
    approval_token: str


class Source(FrozenModel):
    """Where a passage the model was given comes from (a retrieval hook records them):
    ``source`` is a path, URL or id, ``title`` its heading, ``score`` the retriever's."""

    source: str
    title: str | None = None
    score: float | None = None


class ErrorInfo(FrozenModel):
    """Why a run failed: an ``error.code`` (docs/http-api.md) and a human-readable message.

    ``detail`` is the cause, for the program that runs the executor (see ``ErrorEvent``):
    the provider's text for ``llm_error``, the exception for ``internal_error``. It is left
    out of JSON (``model_dump``, ``POST /api/chat``), as ``AgentResult.messages`` is.
    """

    code: str
    message: str
    retry_after: float | None = None
    detail: str | None = Field(default=None, exclude=True)


class AgentResult(FrozenModel):
    """The finished run returned by ``AgentExecutor.execute()``.

    ``content`` is all text the model produced, exactly what ``execute_stream()`` yields as
    ``message`` events; ``reasoning`` is the model's reasoning text (``reasoning`` events;
    ``None`` when the model gave none or reasoning events are off); ``output`` is the
    validated structured output, if the command asked; ``sources`` are where the passages a
    retrieval hook gave the model come from; ``client_tool_calls`` are the client tools' calls
    a run with ``finish_reason="tool_calls"`` hands back (arguments as the model wrote them);
    ``messages`` is the conversation the run leaves, to continue it with explicit messages: the
    history it went on from and the messages it added (tool calls with their results, server
    tools' too; not the system prompt, not retrieved passages), left out of its JSON.
    """

    success: bool
    content: str
    tool_calls: list[ToolCallRecord]
    usage: Usage | None
    error: ErrorInfo | None
    duration_ms: float
    finish_reason: FinishReason
    output: Any = None
    pending_approvals: list[PendingApproval] = Field(default_factory=list)
    reasoning: str | None = None
    sources: list[Source] = Field(default_factory=list)
    client_tool_calls: list[ToolCall] = Field(default_factory=list)
    messages: list[Message] = Field(default_factory=list, exclude=True, repr=False)
