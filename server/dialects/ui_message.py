"""The Vercel AI SDK's UI message stream (``x-vercel-ai-ui-message-stream: v1``), which
``useChat`` and its ``DefaultChatTransport`` read: SSE ``data:`` lines of JSON chunks, ending
with ``data: [DONE]``.

One run is one assistant message. ``start`` opens it (the message id, and ``request_id``,
``run_id`` and ``agent`` as its metadata); ``finish`` closes it (the AI SDK's finish reason, and
ours, the usage and the duration as metadata). Text and reasoning become text and reasoning
parts (``*-start``, ``*-delta``, ``*-end`` with ids); the service's own tools become tool parts
marked ``providerExecuted`` (the client neither runs them nor waits for them: ``onToolCall`` is
not called for them and ``lastAssistantMessageIsCompleteWithToolCalls`` leaves them out), with
their output, the text the model was given, or their error. A client tool's call (the run then
ends, ``tool-calls``) is a tool part without output for the client to fill; a call that needs a
person's approval is a tool part with a ``tool-approval-request`` whose ``approvalId`` is the
signed approval token, so that the approval the client sends back carries it.

Steps follow the model's turns as the events show them: a step opens with the first thing the
stream shows, and a new one opens where text or reasoning follows tool activity (the next
turn's answer); turns that only call tools share a step. The paragraph break the service puts
between two turns' text is dropped where the text starts a new part (the parts are apart
already) and kept inside a part (two agents' text meeting). A run that goes on with a paused
turn (:class:`Resumed`) continues the client's message: the calls of that turn that the client
answered are not shown again, approved ones get their output, rejected ones ``tool-output-denied``.

The encoder keeps no position: a re-attached client is given the whole stream again from
``start`` (the AI SDK's ``resumeStream`` replays from the beginning).
"""

from __future__ import annotations

import base64
import json
import mimetypes
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from agent_executor import (
    AgentEvent,
    AgentSelectedEvent,
    ApprovalRequiredEvent,
    DoneEvent,
    ErrorEvent,
    MessageEvent,
    ReasoningEvent,
    Source,
    ToolCallEvent,
    ToolEndEvent,
    ToolStartEvent,
)

from .base import EventTable
from .framing import HEARTBEAT
from .registry import register_family

__all__ = [
    "DIALECT",
    "FINISH_REASONS",
    "UI_STREAM_HEADER",
    "Resumed",
    "UIMessageEncoder",
    "UIMessageStream",
]

DIALECT = "ui"
"""The family name of the dialect in the run hub (``ui:<parameters>``)."""

UI_STREAM_HEADER = "x-vercel-ai-ui-message-stream"
"""The response header by which the AI SDK knows the protocol (value ``v1``)."""

FINISH_REASONS: Mapping[str, str] = {
    "stop": "stop",
    "tool_calls": "tool-calls",
    "waiting_for_approval": "tool-calls",
    "error": "error",
    "budget": "length",
    "max_tool_calls": "other",
    "max_turns": "other",
}
"""The AI SDK's finish reason for each of ours (ours is in the message metadata)."""

_Chunk = dict[str, Any]
_START_STEP: _Chunk = {"type": "start-step"}
_FINISH_STEP: _Chunk = {"type": "finish-step"}
_DONE = b"data: [DONE]\n\n"


@dataclass(frozen=True, slots=True)
class Resumed:
    """The calls of a paused turn that a request settles: their parts are in the client's
    message already. ``answered``: client tools' calls the client gave results for;
    ``approved`` and ``denied``: calls a person decided on."""

    answered: frozenset[str] = frozenset()
    approved: frozenset[str] = frozenset()
    denied: frozenset[str] = frozenset()

    def shown(self, call_id: str) -> bool:
        """Whether the client shows this call already."""
        return call_id in self.answered or call_id in self.approved or call_id in self.denied


@dataclass(frozen=True, slots=True)
class UIMessageStream:
    """How one run is shown as a UI message stream: the run hub's encoder factory for it.

    ``message_id`` is the assistant message the run continues (a paused turn's), ``None`` for
    a new message (``msg-<run id>``, the same on every replay). :attr:`name` carries all of it,
    so that a registry resolving the ``ui:`` family by name (:meth:`from_name`) could rebuild
    the stream on any replica from the name and the run's id alone.
    """

    request_id: str
    agent: str
    message_id: str | None = None
    resumed: Resumed = Resumed()

    def __call__(self, run_id: str, start: int = 0) -> UIMessageEncoder:
        """The stream of run ``run_id``, always from its ``start`` chunk (see the module)."""
        return UIMessageEncoder(self, run_id)

    @property
    def name(self) -> str:
        """The dialect's name in the run hub: ``ui:`` and these parameters, in base64url JSON."""
        resumed = self.resumed
        fields = {
            "request_id": self.request_id,
            "agent": self.agent,
            "message_id": self.message_id,
            "answered": sorted(resumed.answered),
            "approved": sorted(resumed.approved),
            "denied": sorted(resumed.denied),
        }
        encoded = base64.urlsafe_b64encode(orjson.dumps(fields)).rstrip(b"=").decode()
        return f"{DIALECT}:{encoded}"

    @classmethod
    def from_name(cls, name: str) -> UIMessageStream:
        """The stream a :attr:`name` describes (``ValueError`` for another dialect's name)."""
        family, _, encoded = name.partition(":")
        if family != DIALECT:
            raise ValueError(f"{name!r} is not a UI message stream")
        fields = orjson.loads(base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)))
        resumed = Resumed(
            answered=frozenset(fields["answered"]),
            approved=frozenset(fields["approved"]),
            denied=frozenset(fields["denied"]),
        )
        return cls(fields["request_id"], fields["agent"], fields["message_id"], resumed)


class UIMessageEncoder:
    """One run's UI message stream; one encoder per response (it tracks the open parts)."""

    media_type = "text/event-stream"
    heartbeat = HEARTBEAT
    __slots__ = ("_parts", "_reasoning", "_step", "_stream", "_text", "_tools", "message_id",
                 "run_id")  # fmt: skip

    def __init__(self, stream: UIMessageStream, run_id: str) -> None:
        self._stream = stream
        self.run_id = run_id
        self.message_id = stream.message_id or f"msg-{run_id}"
        self._step = False
        self._tools = False
        """The open step has shown tool activity: text or reasoning now opens the next."""
        self._text: str | None = None
        self._reasoning: str | None = None
        self._parts = 0

    @property
    def headers(self) -> Mapping[str, str]:
        return {UI_STREAM_HEADER: "v1", "X-Run-Id": self.run_id}

    def opening(self) -> bytes:
        metadata = {
            "request_id": self._stream.request_id,
            "run_id": self.run_id,
            "agent": self._stream.agent,
        }
        return _data([{"type": "start", "messageId": self.message_id, "messageMetadata": metadata}])

    def encode(self, event: AgentEvent) -> bytes:
        return _TABLE.encode(self, event)

    def _message(self, event: MessageEvent) -> bytes:
        chunks: list[_Chunk] = []
        if self._text is None:
            if not event.text.strip("\n"):
                return b""  # a paragraph break where a new part starts anyway
            chunks = self._content()
            self._text = self._part_id("text")
            chunks.append({"type": "text-start", "id": self._text})
        chunks.append({"type": "text-delta", "id": self._text, "delta": event.text})
        return _data(chunks)

    def _reasoning_delta(self, event: ReasoningEvent) -> bytes:
        chunks: list[_Chunk] = []
        if self._reasoning is None:
            chunks = self._content()
            self._reasoning = self._part_id("reasoning")
            chunks.append({"type": "reasoning-start", "id": self._reasoning})
        chunks.append({"type": "reasoning-delta", "id": self._reasoning, "delta": event.text})
        return _data(chunks)

    def _tool_start(self, event: ToolStartEvent) -> bytes:
        if self._stream.resumed.shown(event.call_id):
            return b""
        chunks = self._tool_activity()
        chunks += _tool_input(event.call_id, event.tool, event.arguments, server=True)
        return _data(chunks)

    def _tool_end(self, event: ToolEndEvent) -> bytes:
        resumed, call_id = self._stream.resumed, event.call_id
        if call_id in resumed.answered:
            return b""
        if call_id in resumed.denied:
            return _data([{"type": "tool-output-denied", "toolCallId": call_id}])
        if event.status == "success":
            output: _Chunk = {"type": "tool-output-available", "toolCallId": call_id}
            output["output"] = event.result
        else:
            output = {"type": "tool-output-error", "toolCallId": call_id}
            output["errorText"] = event.result or event.status
        return _data([{**output, "providerExecuted": True}])

    def _client_call(self, event: ToolCallEvent) -> bytes:
        chunks = self._tool_activity()
        chunks += _tool_input(event.call_id, event.tool, event.arguments, server=False)
        return _data(chunks)

    def _approval(self, event: ApprovalRequiredEvent) -> bytes:
        chunks = self._tool_activity()
        chunks += _tool_input(event.call_id, event.tool, event.arguments, server=True)
        chunks.append(
            {
                "type": "tool-approval-request",
                "approvalId": event.approval_token,
                "toolCallId": event.call_id,
            }
        )
        return _data(chunks)

    def _agent(self, event: AgentSelectedEvent) -> bytes:
        return _data([{"type": "message-metadata", "messageMetadata": {"agent": event.agent}}])

    def _error(self, event: ErrorEvent) -> bytes:
        chunks = self._close_parts()
        chunks.append({"type": "error", "errorText": event.message})
        return _data(chunks)

    def _done(self, event: DoneEvent) -> bytes:
        chunks = self._close_parts()
        chunks += [_source(source) for source in event.sources]
        if self._step:
            chunks.append(_FINISH_STEP)
            self._step = False
        metadata = {
            "finish_reason": event.finish_reason,
            "usage": event.usage.model_dump(mode="json") if event.usage else None,
            "duration_ms": event.duration_ms,
        }
        reason = FINISH_REASONS.get(event.finish_reason, "other")
        chunks.append({"type": "finish", "finishReason": reason, "messageMetadata": metadata})
        return _data(chunks) + _DONE

    def _content(self) -> list[_Chunk]:
        """Before text or reasoning: the other kind of part closed, and the step it is in
        (the next one after tool activity)."""
        chunks = self._close_parts()
        if self._step and self._tools:
            chunks.append(_FINISH_STEP)
            self._step = False
        self._enter_step(chunks)
        return chunks

    def _tool_activity(self) -> list[_Chunk]:
        """Before a tool part: the text and reasoning parts closed, a step open."""
        chunks = self._close_parts()
        self._enter_step(chunks)
        self._tools = True
        return chunks

    def _enter_step(self, chunks: list[_Chunk]) -> None:
        if not self._step:
            chunks.append(_START_STEP)
            self._step, self._tools = True, False

    def _close_parts(self) -> list[_Chunk]:
        chunks: list[_Chunk] = []
        if self._text is not None:
            chunks.append({"type": "text-end", "id": self._text})
            self._text = None
        if self._reasoning is not None:
            chunks.append({"type": "reasoning-end", "id": self._reasoning})
            self._reasoning = None
        return chunks

    def _part_id(self, kind: str) -> str:
        self._parts += 1
        return f"{kind}-{self._parts}"


_TABLE = EventTable(
    {
        MessageEvent: UIMessageEncoder._message,
        ReasoningEvent: UIMessageEncoder._reasoning_delta,
        ToolStartEvent: UIMessageEncoder._tool_start,
        ToolEndEvent: UIMessageEncoder._tool_end,
        ToolCallEvent: UIMessageEncoder._client_call,
        ApprovalRequiredEvent: UIMessageEncoder._approval,
        AgentSelectedEvent: UIMessageEncoder._agent,
        ErrorEvent: UIMessageEncoder._error,
        DoneEvent: UIMessageEncoder._done,
    }
)
"""Each event type the stream shows; the others (nested runs, a flow's nodes) are not shown."""


def _tool_input(
    call_id: str, tool: str, arguments: dict[str, Any], *, server: bool
) -> list[_Chunk]:
    """A tool part's input: its start, the arguments as one delta, and the whole input."""
    executed = {"providerExecuted": True} if server else {}
    return [
        {"type": "tool-input-start", "toolCallId": call_id, "toolName": tool, **executed},
        {"type": "tool-input-delta", "toolCallId": call_id, "inputTextDelta": _json(arguments)},
        {
            "type": "tool-input-available",
            "toolCallId": call_id,
            "toolName": tool,
            "input": arguments,
            **executed,
        },
    ]


def _source(source: Source) -> _Chunk:
    """Where a passage the model was given comes from: a URL, or a document."""
    if source.source.startswith(("http://", "https://")):
        chunk: _Chunk = {"type": "source-url", "sourceId": source.source, "url": source.source}
        if source.title:
            chunk["title"] = source.title
        return chunk
    media_type = mimetypes.guess_type(source.source)[0] or "text/plain"
    return {
        "type": "source-document",
        "sourceId": source.source,
        "mediaType": media_type,
        "title": source.title or source.source,
    }


def _json(value: Any) -> str:
    try:
        return orjson.dumps(value).decode()
    except TypeError:  # lone surrogates, which orjson refuses; json escapes them
        return json.dumps(value, separators=(",", ":"))


def _data(chunks: list[_Chunk]) -> bytes:
    """Chunks as SSE ``data:`` events (JSON never holds a line break)."""
    return "".join(f"data: {_json(chunk)}\n\n" for chunk in chunks).encode()


register_family(DIALECT, UIMessageStream.from_name)
