"""The service's own dialect (docs/sse-protocol.md): each event as an SSE event named after its
type, its ``data`` the text (``text`` mode) or a JSON object (``json`` mode), its ``id`` the run
and the event's position in it (``<run id>:<position>``), so that a client that lost the
connection re-attaches with ``Last-Event-ID`` and gets the rest. The stream opens with a
``retry:`` hint shorter than the time a run waits for its client to come back.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, Literal

import orjson

from agent_executor import (
    AgentEvent,
    AgentSelectedEvent,
    ApprovalRequiredEvent,
    CompactedEvent,
    DoneEvent,
    ErrorEvent,
    MessageEvent,
    NestedEvent,
    NodeEndEvent,
    NodeStartEvent,
    ReasoningEvent,
    ToolCallEvent,
    ToolEndEvent,
    ToolStartEvent,
)

from .framing import HEARTBEAT, frame, retry

__all__ = ["EventMode", "TypedEncoder", "encode_data", "json_fields"]

EventMode = Literal["text", "json"]

_Fields = Callable[[Any], dict[str, Any]]


def _nested(event: NestedEvent) -> dict[str, Any]:
    inner = event.event
    return {
        "agent": event.agent,
        "call_id": event.call_id,
        "event": {"type": inner.type, **json_fields(inner)},
    }


def _done(event: DoneEvent) -> dict[str, Any]:
    done: dict[str, Any] = {
        "finish_reason": event.finish_reason,
        "usage": event.usage.model_dump() if event.usage else None,
        "tool_calls": [record.model_dump(mode="json") for record in event.tool_calls],
        "duration_ms": event.duration_ms,
        "output": event.output,
    }
    if event.pending_approvals:
        done["pending_approvals"] = [p.model_dump(mode="json") for p in event.pending_approvals]
    if event.sources:
        done["sources"] = [source.model_dump(mode="json") for source in event.sources]
    return done


def _error(event: ErrorEvent) -> dict[str, Any]:
    fields: dict[str, Any] = {"code": event.code, "message": event.message}
    if event.retry_after is not None:
        fields["retry_after"] = event.retry_after
    return fields


_JSON: Mapping[type[Any], _Fields] = {
    MessageEvent: lambda e: {"text": e.text},
    ReasoningEvent: lambda e: {"text": e.text},
    ToolStartEvent: lambda e: {"tool": e.tool, "call_id": e.call_id, "arguments": e.arguments},
    ToolEndEvent: lambda e: {
        "tool": e.tool,
        "call_id": e.call_id,
        "status": e.status,
        "duration_ms": e.duration_ms,
        "result": e.result,
    },
    ErrorEvent: _error,
    ToolCallEvent: lambda e: {"call_id": e.call_id, "tool": e.tool, "arguments": e.arguments},
    ApprovalRequiredEvent: lambda e: {
        "call_id": e.call_id,
        "tool": e.tool,
        "arguments": e.arguments,
        "approval_token": e.approval_token,
    },
    AgentSelectedEvent: lambda e: {
        "agent": e.agent,
        "selected_by": e.selected_by,
        "detail": e.detail,
    },
    NodeStartEvent: lambda e: {"node": e.node, "kind": e.kind},
    NodeEndEvent: lambda e: {
        "node": e.node,
        "kind": e.kind,
        "status": e.status,
        "output": e.output,
    },
    NestedEvent: _nested,
    CompactedEvent: lambda e: {
        "messages_before": e.messages_before,
        "messages_after": e.messages_after,
        "tokens_before": e.tokens_before,
        "tokens_after": e.tokens_after,
    },
    DoneEvent: _done,
}
"""Each event type's ``data`` in ``json`` mode (see docs/sse-protocol.md), the one table."""

_TEXT: Mapping[type[Any], Callable[[Any], str] | None] = {
    MessageEvent: lambda e: e.text,
    ToolStartEvent: lambda e: e.tool,
    ToolEndEvent: lambda e: e.tool,
    ErrorEvent: lambda e: e.message,
    DoneEvent: lambda e: "",
    ToolCallEvent: None,
    ApprovalRequiredEvent: None,
    ReasoningEvent: None,
}
"""Each event type's ``data`` in ``text`` mode: its text, ``None`` for JSON (``tool_call`` and
``approval_required`` carry what a client must act on, ``reasoning`` is never taken for the
answer), absent for an event a text stream leaves out (who speaks, nested runs, a flow's
nodes)."""


def json_fields(event: AgentEvent) -> dict[str, Any]:
    """An event's fields in ``json`` mode."""
    return _JSON[type(event)](event)


def _dumps(fields: dict[str, Any]) -> str:
    try:
        return orjson.dumps(fields, default=_default).decode()
    except TypeError:  # e.g. lone surrogates, which orjson refuses; json escapes them
        return json.dumps(fields, separators=(",", ":"), default=_default)


def encode_data(event: AgentEvent, mode: EventMode) -> str | None:
    """The ``data`` of an event in ``text`` or ``json`` mode (``None``: not sent in it)."""
    if mode == "text":
        if type(event) not in _TEXT:
            return None
        text = _TEXT[type(event)]
        if text is not None:
            return text(event)
    return _dumps(json_fields(event))


def _default(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    if dump is not None:
        return dump(mode="json")
    return repr(value)


class TypedEncoder:
    """The typed SSE of one run, in ``text`` or ``json`` mode, from event ``start`` of the run
    on (a re-attached client's stream goes on from where it was); ``done`` carries the run id
    in ``json`` mode."""

    media_type = "text/event-stream"
    heartbeat = HEARTBEAT
    __slots__ = ("_json", "_next", "_prefix", "_retry_ms", "_text_only", "run_id")

    def __init__(
        self, mode: EventMode, run_id: str, *, start: int = 0, retry_ms: int = 1000
    ) -> None:
        self._json = mode == "json"
        self.run_id = run_id
        self._prefix = f"{run_id}:"
        self._next = start
        self._retry_ms = retry_ms
        self._text_only = False if retry_ms else not self._json
        """Text mode once the ``retry:`` hint has gone out: text deltas take the short path."""

    @property
    def headers(self) -> Mapping[str, str]:
        return {"X-Run-Id": self.run_id}

    def opening(self) -> bytes:
        return b""

    def encode(self, event: AgentEvent) -> bytes:
        position = self._next
        self._next = position + 1
        if type(event) is MessageEvent and self._text_only:
            # The per-token path: one f-string, the id written in place.
            text = event.text
            if "\n" in text or "\r" in text:
                return frame("message", text, f"{self._prefix}{position}")
            return f"id: {self._prefix}{position}\nevent: message\ndata: {text}\n\n".encode(
                "utf-8", "replace"
            )
        if self._retry_ms:
            # In the first event's block: a block of its own would be an empty event to
            # clients that do not follow the format's rule for blocks without data.
            hint, self._retry_ms = self._retry_ms, 0
            self._text_only = not self._json
            return retry(hint) + self.encode_at(event, position)
        return self.encode_at(event, position)

    def encode_at(self, event: AgentEvent, position: int) -> bytes:
        """``event`` as the run's event at ``position``."""
        kind = type(event)
        event_id = f"{self._prefix}{position}"
        if self._json:
            fields = _JSON[kind](event)
            if kind is DoneEvent:
                fields["run_id"] = self.run_id
            return frame(event.type, _dumps(fields), event_id)
        data = encode_data(event, "text")
        return b"" if data is None else frame(event.type, data, event_id)
