"""Server-Sent Events framing: bytes on the wire, no I/O.

Framing follows the WHATWG event-stream rules: each event has an ``id:``, an ``event:`` (the
event type) and one ``data:`` line per line of its data, so text containing line breaks comes
back intact (CR and CRLF arrive as LF, as the format defines; ``json`` mode escapes them, so
every character survives). An idle stream gets a ``:`` comment as a heartbeat.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal, Protocol

import orjson

from agent_executor import (
    AgentEvent,
    AgentSelectedEvent,
    ApprovalRequiredEvent,
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

__all__ = [
    "HEARTBEAT",
    "SSE_HEADERS",
    "AgentEventEncoder",
    "EventEncoder",
    "EventMode",
    "encode_data",
    "frame",
]

EventMode = Literal["text", "json"]

SSE_HEADERS = {
    "Content-Type": "text/event-stream",
    "Cache-Control": "no-cache",
    "X-Accel-Buffering": "no",
    "Connection": "keep-alive",
}
HEARTBEAT = b": heartbeat\n\n"

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_JSON_ONLY = frozenset({AgentSelectedEvent, NestedEvent, NodeStartEvent, NodeEndEvent})
"""Events a ``text``-mode stream leaves out: who speaks, nested runs, a flow's nodes."""


def frame(event: str, data: str, event_id: int) -> bytes:
    """One event on the wire: ``id``, ``event`` and a ``data:`` line per line of ``data``."""
    if "\n" in data or "\r" in data:
        data = "\ndata: ".join(_LINE_BREAK.split(data))
    text = f"id: {event_id}\nevent: {event}\ndata: {data}\n\n"
    return text.encode("utf-8", "replace")


def encode_data(event: AgentEvent, mode: EventMode) -> str:
    """The ``data`` of an event in ``text`` or ``json`` mode (SPEC section 3).

    ``tool_call`` and ``approval_required`` carry JSON in both modes: a client has to act on
    their call id, arguments and token, which a bare name would not give it. ``reasoning``
    carries JSON too, so that no client can take the model's thinking for its answer text.
    """
    if mode == "text":
        if isinstance(event, MessageEvent):
            return event.text
        if isinstance(event, (ToolStartEvent, ToolEndEvent)):
            return event.tool
        if isinstance(event, ErrorEvent):
            return event.message
        if not isinstance(event, (ToolCallEvent, ApprovalRequiredEvent, ReasoningEvent)):
            return ""
    fields = _json_fields(event)
    try:
        return orjson.dumps(fields, default=_default).decode()
    except TypeError:  # e.g. lone surrogates, which orjson refuses; json escapes them
        return json.dumps(fields, separators=(",", ":"), default=_default)


def _json_fields(event: AgentEvent) -> dict[str, Any]:
    if isinstance(event, (MessageEvent, ReasoningEvent)):
        return {"text": event.text}
    if isinstance(event, ToolStartEvent):
        return {"tool": event.tool, "call_id": event.call_id, "arguments": event.arguments}
    if isinstance(event, ToolEndEvent):
        return {
            "tool": event.tool,
            "call_id": event.call_id,
            "status": event.status,
            "duration_ms": event.duration_ms,
        }
    if isinstance(event, ErrorEvent):
        fields: dict[str, Any] = {"code": event.code, "message": event.message}
        if event.retry_after is not None:
            fields["retry_after"] = event.retry_after
        return fields
    if isinstance(event, ToolCallEvent):
        return {"call_id": event.call_id, "tool": event.tool, "arguments": event.arguments}
    if isinstance(event, ApprovalRequiredEvent):
        return {
            "call_id": event.call_id,
            "tool": event.tool,
            "arguments": event.arguments,
            "approval_token": event.approval_token,
        }
    if isinstance(event, AgentSelectedEvent):
        return {"agent": event.agent, "selected_by": event.selected_by, "detail": event.detail}
    if isinstance(event, NodeStartEvent):
        return {"node": event.node, "kind": event.kind}
    if isinstance(event, NodeEndEvent):
        return {
            "node": event.node,
            "kind": event.kind,
            "status": event.status,
            "output": event.output,
        }
    if isinstance(event, NestedEvent):
        inner = event.event
        nested = {"type": inner.type, **_json_fields(inner)}
        return {"agent": event.agent, "call_id": event.call_id, "event": nested}
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


def _default(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    if dump is not None:
        return dump(mode="json")
    return repr(value)


class EventEncoder(Protocol):
    """Turns one event into the bytes of its SSE frame(s); one encoder per stream."""

    def encode(self, event: AgentEvent) -> bytes: ...


class AgentEventEncoder:
    """The service's own framing (SPEC section 3): ``id``, ``event``, ``data`` in ``text`` or
    ``json`` mode."""

    __slots__ = ("_mode", "_next_id")

    def __init__(self, mode: EventMode) -> None:
        self._mode = mode
        self._next_id = 1

    def encode(self, event: AgentEvent) -> bytes:
        event_id = self._next_id
        self._next_id = event_id + 1
        if self._mode == "text":
            if type(event) is MessageEvent:
                return frame("message", event.text, event_id)
            if type(event) in _JSON_ONLY:
                self._next_id = event_id  # json mode only: a nested agent's text is not ours
                return b""
        return frame(event.type, encode_data(event, self._mode), event_id)
