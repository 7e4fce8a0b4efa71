"""The Bot Server's stream: a run's events as the plain text, or the ReAct step lines, that a
client of that earlier service reads (``fetch`` and a reader, ``text/plain``).

Without ``reactVerbose`` the stream is the answer's text as it is written, nothing else
(:class:`BotServerText`). With it (:class:`BotServerSteps`) it is one JSON object per line per
ReAct step, built from the run's events::

    {"thought": ..., "action": "tool_call", "action_input": {"tool_name", "parameters"},
     "observation": <the tool's result>}                  one line per call, once it ended
    {"thought": ..., "action": "user_input", "action_input": {"tool_name": "ask_user",
     "parameters": {"question": ...}}}                      the run stops to ask the person
    {"thought": ..., "action": "final_answer", "answer": <the answer>}

``thought`` is what the model wrote in that turn before its calls (its reasoning when it wrote
none); the final answer's ``thought`` is the last turn's reasoning. A run that fails says so in
one line ``{"error": <message>}`` in both forms. Every byte is content: an idle stream gets no
heartbeat.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from agent_executor import (
    AgentEvent,
    ApprovalRequiredEvent,
    DoneEvent,
    ErrorEvent,
    MessageEvent,
    ReasoningEvent,
    ToolEndEvent,
    ToolStartEvent,
)
from agent_executor.tools.ask_user import ASK_USER

from .base import EventTable

__all__ = ["MEDIA_TYPE", "BotServerSteps", "BotServerText", "step_line"]

MEDIA_TYPE = "text/plain; charset=utf-8"


def step_line(step: Mapping[str, Any]) -> bytes:
    """One step (or error) as the line the client splits on."""
    return json.dumps(step, ensure_ascii=False).encode() + b"\n"


def _error(encoder: Any, event: ErrorEvent) -> bytes:
    return step_line({"error": event.message})


class BotServerText:
    """The answer as plain text; a question the run stops to ask (``ask_user``) is text too."""

    media_type = MEDIA_TYPE
    heartbeat = b""
    headers: Mapping[str, str] = {}
    __slots__ = ("_written",)

    def __init__(self) -> None:
        self._written = False

    def opening(self) -> bytes:
        return b""

    def encode(self, event: AgentEvent) -> bytes:
        return _TEXT.encode(self, event)

    def _message(self, event: MessageEvent) -> bytes:
        if not self._written and not event.text.strip():
            return b""  # the break before a later turn's text, with nothing before it
        self._written = True
        return event.text.encode()

    def _question(self, event: ApprovalRequiredEvent) -> bytes:
        if event.tool != ASK_USER.name:
            return _needs_approval(event)
        text = str(event.arguments.get("question", ""))
        return (("\n\n" if self._written else "") + text).encode()

    def _error(self, event: ErrorEvent) -> bytes:
        return (b"\n" if self._written else b"") + _error(self, event)


_TEXT = EventTable(
    {
        MessageEvent: BotServerText._message,
        ApprovalRequiredEvent: BotServerText._question,
        ErrorEvent: BotServerText._error,
    }
)


class BotServerSteps:
    """The run as ReAct step lines (see the module docstring)."""

    media_type = MEDIA_TYPE
    heartbeat = b""
    headers: Mapping[str, str] = {}
    __slots__ = ("_calls", "_reasoning", "_text", "_thought_given", "_turn_over")

    def __init__(self) -> None:
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self._calls: dict[str, dict[str, Any]] = {}
        self._thought_given = False
        self._turn_over = False

    def opening(self) -> bytes:
        return b""

    def encode(self, event: AgentEvent) -> bytes:
        return _STEPS.encode(self, event)

    def _next_turn(self) -> None:
        """Text after a turn's calls belongs to the next turn."""
        if self._turn_over:
            self._text.clear()
            self._reasoning.clear()
            self._thought_given = self._turn_over = False

    def _message(self, event: MessageEvent) -> bytes:
        self._next_turn()
        self._text.append(event.text)
        return b""

    def _reasoning_part(self, event: ReasoningEvent) -> bytes:
        self._next_turn()
        self._reasoning.append(event.text)
        return b""

    def _thought(self) -> str:
        """The turn's thought, on the first of its steps only."""
        if self._thought_given:
            return ""
        self._thought_given = True
        return "".join(self._text).strip() or "".join(self._reasoning).strip()

    def _tool_start(self, event: ToolStartEvent) -> bytes:
        self._calls[event.call_id] = event.arguments
        return b""

    def _tool_end(self, event: ToolEndEvent) -> bytes:
        self._turn_over = True
        step = {
            "thought": self._thought(),
            "action": "tool_call",
            "action_input": {
                "tool_name": event.tool,
                "parameters": self._calls.pop(event.call_id, {}),
            },
            "observation": event.result or "",
        }
        return step_line(step)

    def _question(self, event: ApprovalRequiredEvent) -> bytes:
        if event.tool != ASK_USER.name:
            return _needs_approval(event)
        question = str(event.arguments.get("question", ""))
        step = {
            "thought": self._thought() or question,
            "action": "user_input",
            "action_input": {"tool_name": event.tool, "parameters": dict(event.arguments)},
        }
        return step_line(step)

    def _done(self, event: DoneEvent) -> bytes:
        if event.finish_reason in ("error", "waiting_for_approval", "tool_calls"):
            return b""
        answer = "" if self._turn_over else "".join(self._text).strip()
        thought = "" if self._turn_over else "".join(self._reasoning).strip()
        return step_line({"thought": thought, "action": "final_answer", "answer": answer})


_STEPS = EventTable(
    {
        MessageEvent: BotServerSteps._message,
        ReasoningEvent: BotServerSteps._reasoning_part,
        ToolStartEvent: BotServerSteps._tool_start,
        ToolEndEvent: BotServerSteps._tool_end,
        ApprovalRequiredEvent: BotServerSteps._question,
        ErrorEvent: _error,
        DoneEvent: BotServerSteps._done,
    }
)


def _needs_approval(event: ApprovalRequiredEvent) -> bytes:
    """A call held for a person's approval, which this protocol cannot carry back."""
    return step_line(
        {"error": f"the tool {event.tool} needs a person's approval, which this client cannot give"}
    )
