"""All Server-Sent Events framing, and the writer that streams a run to one client.

Framing follows the WHATWG event-stream rules: each event has an ``id:``, an ``event:`` (the
event type) and one ``data:`` line per line of its data, so text containing line breaks comes
back intact (CR and CRLF arrive as LF, as the format defines; ``json`` mode escapes them, so
every character survives). An idle stream gets a ``:`` comment as a heartbeat.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any, Literal, Protocol

import anyio
import orjson
from aiohttp import web

from agent_executor import (
    AgentEvent,
    AgentSelectedEvent,
    ApprovalRequiredEvent,
    DoneEvent,
    ErrorEvent,
    MessageEvent,
    ReasoningEvent,
    ToolCallEvent,
    ToolEndEvent,
    ToolStartEvent,
)

from .keys import REQUEST_ID

__all__ = [
    "HEARTBEAT",
    "SSE_HEADERS",
    "AgentEventEncoder",
    "EventEncoder",
    "EventMode",
    "SSEWriter",
    "StreamMonitor",
    "encode_data",
    "frame",
]

logger = logging.getLogger("server.sse")

EventMode = Literal["text", "json"]

SSE_HEADERS = {
    "Content-Type": "text/event-stream",
    "Cache-Control": "no-cache",
    "X-Accel-Buffering": "no",
    "Connection": "keep-alive",
}
HEARTBEAT = b": heartbeat\n\n"

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


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
    done: dict[str, Any] = {
        "finish_reason": event.finish_reason,
        "usage": event.usage.model_dump() if event.usage else None,
        "tool_calls": [record.model_dump(mode="json") for record in event.tool_calls],
        "duration_ms": event.duration_ms,
        "output": event.output,
    }
    if event.pending_approvals:
        done["pending_approvals"] = [p.model_dump(mode="json") for p in event.pending_approvals]
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
            if type(event) is AgentSelectedEvent:
                self._next_id = event_id
                return b""
        return frame(event.type, encode_data(event, self._mode), event_id)


class SSEWriter:
    """Streams one run's events to one client.

    ``pump`` returns when the run has ended (after its ``done``), the client has gone away
    (``disconnected``), or :meth:`stop` was called (``stopped``, e.g. at shutdown; the caller
    then sends its own closing events). Heartbeats, vanished clients and stalled readers are
    the :class:`StreamMonitor`'s business (one task for all streams, not one per stream): a
    client that stops reading cannot make the server buffer without bound, because once one
    write has waited ``write_timeout_seconds`` the connection is cut (``slow_reader``).
    """

    __slots__ = (
        "_done_written", "_encoder", "_heartbeat", "_heartbeat_task", "_last_write", "_request",
        "_response", "_scope", "_write_timeout", "_writing_since", "disconnected", "done_sent",
        "slow_reader", "stopped",
    )  # fmt: skip

    def __init__(
        self,
        request: web.Request,
        response: web.StreamResponse,
        encoder: EventEncoder,
        heartbeat_seconds: float,
        write_timeout_seconds: float = 30.0,
    ) -> None:
        self._request = request
        self._response = response
        self._encoder = encoder
        self._heartbeat = heartbeat_seconds
        self._last_write = time.monotonic()
        self._write_timeout = write_timeout_seconds
        self._writing_since: float | None = None
        self._heartbeat_task: asyncio.Task[None] | None = None
        self._scope: anyio.CancelScope | None = None
        self._done_written = False
        self.done_sent = False
        self.disconnected = False
        self.slow_reader = False
        self.stopped = False

    async def pump(self, events: AsyncIterator[AgentEvent]) -> None:
        """Write every event of ``events`` until it ends, the client leaves or ``stop()``.

        Events that are already waiting when one is written go out in the same write (an
        ``EventStream`` offers them through ``drain_nowait``), so a burst of deltas costs one
        write and no delta waits for a later one.
        """
        drain = getattr(events, "drain_nowait", None)
        encode = self._encode
        async with aclosing(events):  # type: ignore[type-var]
            with anyio.CancelScope() as scope:
                self._scope = scope
                try:
                    async for event in events:
                        more = drain() if drain is not None else None
                        if more:
                            await self._write(b"".join([encode(event), *map(encode, more)]))
                        else:
                            await self._write(encode(event))
                except ConnectionResetError:
                    self.disconnected = True

    def stop(self) -> None:
        """End ``pump`` now (the run is cancelled); the caller writes the closing events."""
        self.stopped = True
        if self._scope is not None:
            self._scope.cancel()

    async def send(self, event: AgentEvent) -> None:
        """Write one event."""
        await self._write(self._encode(event))

    def check(self, now: float) -> None:
        """The monitor's visit: end the stream if the client is gone or has stopped reading,
        else send a heartbeat if nothing was written for a while."""
        transport = self._request.transport
        if transport is None or transport.is_closing():
            self._end(disconnected=True)
            return
        writing_since = self._writing_since
        if writing_since is not None:
            if now - writing_since > self._write_timeout:
                self._cut_slow_reader(transport)
            return
        if now - self._last_write >= self._heartbeat and self._heartbeat_task is None:
            self._heartbeat_task = asyncio.get_running_loop().create_task(self._beat())

    def _encode(self, event: AgentEvent) -> bytes:
        if type(event) is DoneEvent:
            self._done_written = True
        return self._encoder.encode(event)

    async def _write(self, data: bytes) -> None:
        self._last_write = self._writing_since = time.monotonic()
        try:
            await self._response.write(data)
        finally:
            self._writing_since = None
        if self._done_written:
            self.done_sent = True

    async def _beat(self) -> None:
        try:
            await self._write(HEARTBEAT)
        except ConnectionResetError:
            self._end(disconnected=True)
        finally:
            self._heartbeat_task = None

    def _end(self, *, disconnected: bool) -> None:
        self.disconnected = self.disconnected or disconnected
        if self._scope is not None:
            self._scope.cancel()

    def _cut_slow_reader(self, transport: asyncio.Transport) -> None:
        logger.warning(
            "client %s is not reading: cut the stream after a write waited %.0f s (request id %s)",
            self._request.remote,
            self._write_timeout,
            self._request.get(REQUEST_ID),
        )
        self.slow_reader = True
        transport.abort()
        self._end(disconnected=True)


class StreamMonitor:
    """One task watching every open stream, every ``interval`` seconds: heartbeats when idle,
    streams of vanished clients ended, stalled readers cut.

    With ``handler_cancellation`` (the CLI and aiohttp's test server enable it) aiohttp cancels a
    handler the moment its client leaves; the monitor covers apps run without it, within
    ``interval``.
    """

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self.writers: set[SSEWriter] = set()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            now = time.monotonic()
            for writer in list(self.writers):
                writer.check(now)
