"""What the Slack message shows: the run's events folded into one state, and its Markdown.

:class:`MessageState` is written by the task that reads the events and read by the task that
calls Slack. The update strategy renders the whole message from it each time
(:meth:`MessageState.render`); the native strategy only sends what is new, so every change is
also queued as a chunk (:class:`ChunkQueue`): text, or a task card for a tool or a stretch of
reasoning. The reasoning text itself never becomes part of the message.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Final

from ...events import (
    AgentEvent,
    DoneEvent,
    ErrorEvent,
    MessageEvent,
    NestedEvent,
    ReasoningEvent,
    ToolEndEvent,
    ToolStartEvent,
)

__all__ = ["MARKDOWN_LIMIT", "ChunkQueue", "MessageState", "default_tool_label", "markdown_chunk"]

MARKDOWN_LIMIT: Final = 12_000
"""Slack's limit for one ``markdown_text``: the update strategy cuts longer answers, with a note."""

_TRUNCATED: Final = "\n\n_… (cut: a Slack message shows at most 12,000 characters)_"


def default_tool_label(tool: str) -> str:
    """``"Checking get_weather"``: what the message says while a tool runs."""
    return f"Checking {tool}"


def markdown_chunk(text: str) -> dict[str, Any]:
    """A streaming chunk of Markdown text."""
    return {"type": "markdown_text", "text": text}


def _gap(tail: str) -> str:
    """What separates a new paragraph from text ending in ``tail`` (its last two characters)."""
    if not tail or tail.endswith("\n\n"):
        return ""
    return "\n" if tail.endswith("\n") else "\n\n"


class ChunkQueue:
    """The native strategy's chunks not sent yet, and all the text it has appended so far.

    ``cards`` says whether Slack's streaming API takes task cards (slack-sdk >= 3.40); without
    them a tool shows as a line of text that stays, and reasoning shows nothing (a status line
    would stay in the answer).
    """

    def __init__(self, *, cards: bool) -> None:
        self.cards = cards
        self.pending: list[dict[str, Any]] = []
        self.text: list[str] = []  # all markdown text appended
        self._tail = ""  # the last two characters appended
        self._thoughts = 0  # task card ids of the stretches of reasoning

    def take(self) -> list[dict[str, Any]]:
        """The chunks to send now; the queue starts empty again."""
        chunks, self.pending = self.pending, []
        return chunks

    def requeue(self, chunks: list[dict[str, Any]]) -> None:
        """Put back ``chunks`` whose call failed, ahead of what was queued since."""
        self.pending[:0] = chunks

    def push_text(self, text: str) -> None:
        if not text:
            return
        self.text.append(text)
        self._tail = (self._tail + text)[-2:]
        while len(text) > MARKDOWN_LIMIT:  # one chunk may hold at most Slack's limit
            self.pending.append(markdown_chunk(text[:MARKDOWN_LIMIT]))
            text = text[MARKDOWN_LIMIT:]
        last = self.pending[-1] if self.pending else None
        if (
            last is not None
            and last["type"] == "markdown_text"
            and len(last["text"]) + len(text) <= MARKDOWN_LIMIT
        ):
            last["text"] += text  # coalesce: one chunk per run of text (within Slack's limit)
        else:
            self.pending.append(markdown_chunk(text))

    def push_paragraph(self, text: str) -> None:
        """``text`` as a paragraph of its own after what was appended so far."""
        self.push_text(f"{_gap(self._tail)}{text}")

    def tool_started(self, call_id: str, label: str) -> None:
        if self.cards:
            self._push_task(call_id, label, "in_progress")
        else:  # no task cards before slack-sdk 3.40: a line that stays
            self.push_paragraph(f"_{label}…_\n\n")

    def tool_ended(self, call_id: str, title: str, status: str) -> None:
        if self.cards:
            ok = status == "success"
            self._push_task(call_id, title, "complete" if ok else "error", None if ok else status)

    def thinking_started(self, label: str) -> None:
        if self.cards:
            self._thoughts += 1
            self._push_task(f"thinking_{self._thoughts}", label, "in_progress")

    def thinking_stopped(self, label: str) -> None:
        if self.cards:
            self._push_task(f"thinking_{self._thoughts}", label, "complete")

    def _push_task(self, call_id: str, title: str, status: str, details: str | None = None) -> None:
        chunk: dict[str, Any] = {
            "type": "task_update",
            "id": call_id,
            "title": title,
            "status": status,
        }
        if details:
            chunk["details"] = details
        for index, queued in enumerate(self.pending):
            if queued["type"] == "task_update" and queued["id"] == call_id:
                self.pending[index] = chunk  # only the newest state of a task is worth sending
                return
        self.pending.append(chunk)


class MessageState:
    """Everything the message should show, folded from the run's events.

    ``changed`` is set on every change, so the sending task wakes up; ``finished`` once the run
    is over (its done event, or the end of the stream). ``queue`` is the native strategy's
    :class:`ChunkQueue` (``None`` with the update strategy, which renders the whole message).
    """

    def __init__(
        self,
        *,
        queue: ChunkQueue | None,
        tool_label: Callable[[str], str] | None,
        thinking_label: str | None,
        placeholder: str,
        empty_text: str,
    ) -> None:
        self.queue = queue
        self._tool_label = tool_label
        self._thinking_label = thinking_label
        self._placeholder = placeholder
        self._empty_text = empty_text
        self.text: list[str] = []  # the agent's text, as streamed
        self.tools: dict[str, str] = {}  # running tools: call id -> label
        self.thinking = False  # the model reasons and has not written (or called a tool) since
        self.errors: list[str] = []
        self.finished = False
        self.changed = asyncio.Event()

    def apply(self, event: AgentEvent) -> None:
        """Fold one event of the run into the message."""
        queue = self.queue
        if isinstance(event, NestedEvent):
            return  # a nested agent's events: the tool call that runs it shows as a tool
        if isinstance(event, ReasoningEvent):
            self.start_thinking()  # its text is never sent
            return
        if not isinstance(event, ToolEndEvent):
            self.stop_thinking()
        if isinstance(event, MessageEvent):
            self.text.append(event.text)
            if queue is not None:
                queue.push_text(event.text)
        elif isinstance(event, ToolStartEvent):
            if self._tool_label is None:
                return
            label = self._tool_label(event.tool)
            self.tools[event.call_id] = label
            if queue is not None:
                queue.tool_started(event.call_id, label)
        elif isinstance(event, ToolEndEvent):
            title = self.tools.pop(event.call_id, None)
            if queue is not None and title is not None:
                queue.tool_ended(event.call_id, title, event.status)
        elif isinstance(event, ErrorEvent):
            self.add_error(event.message)
        elif isinstance(event, DoneEvent):
            self.finished = True
        self.changed.set()

    def start_thinking(self) -> None:
        if self.thinking or self._thinking_label is None:
            return
        self.thinking = True
        if self.queue is not None:
            self.queue.thinking_started(self._thinking_label)
        self.changed.set()

    def stop_thinking(self) -> None:
        if not self.thinking:
            return
        self.thinking = False
        if self.queue is not None and self._thinking_label is not None:
            self.queue.thinking_stopped(self._thinking_label)
        self.changed.set()

    def add_error(self, message: str) -> None:
        """A "⚠️" line: an error event, or the run failing outside the event protocol."""
        self.stop_thinking()
        self.errors.append(message)
        if self.queue is not None:
            self.queue.push_paragraph(f"⚠️ {message}")
        self.changed.set()

    def finish(self) -> None:
        """The stream of events ended (also without a done event)."""
        self.stop_thinking()
        self.finished = True
        self.changed.set()

    def render(self) -> str:
        """The whole message for the update strategy: text, error lines, thinking, running
        tools."""
        body = "".join(self.text)
        lines = [f"⚠️ {message}" for message in self.errors]
        if not self.finished:
            if self.thinking:
                lines.append(f"_{self._thinking_label}…_")
            lines.extend(f"_{label}…_" for label in self.tools.values())
        if lines:
            body = body + _gap(body[-2:]) + "\n".join(lines)
        if not body.strip():
            body = self._empty_text if self.finished else self._placeholder
        if len(body) > MARKDOWN_LIMIT:
            body = body[: MARKDOWN_LIMIT - len(_TRUNCATED)] + _TRUNCATED
        return body
