"""``DemoModel``: the offline default of the service.

It needs no network and no API key: it streams its answer word by word and, when the user asks
about the weather or the time and the demo tools (``get_weather``, ``get_time``) are on offer,
calls them (both at once when asked for both) and then answers from their results.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator

import anyio

from ..messages import AssistantMessage, Message, ToolMessage, UserMessage
from .base import ModelChunk, ModelRequest
from .scripted import ScriptItem, call, text_turn, tool_turn

__all__ = ["DemoModel"]

_WEATHER_RE = re.compile(r"\b(weather|temperature|forecast|rain\w*|sunny|cold|hot|warm)\b", re.I)
_TIME_RE = re.compile(r"\b(time|clock|date|day is it)\b", re.I)
_PLACE_RE = re.compile(r"\b(?:in|for|at)\s+([A-Za-z][A-Za-z .'-]{0,40}?)\s*(?:[?!.,;]|$|\band\b)")
_ZONES = {
    "paris": "Europe/Paris",
    "london": "Europe/London",
    "berlin": "Europe/Berlin",
    "madrid": "Europe/Madrid",
    "rome": "Europe/Rome",
    "new york": "America/New_York",
    "chicago": "America/Chicago",
    "los angeles": "America/Los_Angeles",
    "san francisco": "America/Los_Angeles",
    "tokyo": "Asia/Tokyo",
    "sydney": "Australia/Sydney",
    "beijing": "Asia/Shanghai",
    "delhi": "Asia/Kolkata",
    "mumbai": "Asia/Kolkata",
}


class DemoModel:
    """An offline model that streams word by word and calls the demo tools when asked."""

    def __init__(self, *, word_delay: float = 0.03, name: str = "demo") -> None:
        self._word_delay = word_delay
        self._name = name

    @property
    def name(self) -> str:
        """The model name used in metrics and logs."""
        return self._name

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        """Answer the request's last message."""
        items = self._respond(request)
        for item in items:
            if isinstance(item, ModelChunk):
                if item.text and self._word_delay:
                    await anyio.sleep(self._word_delay)
                yield item

    def _respond(self, request: ModelRequest) -> list[ScriptItem]:
        messages = request.messages
        usage = (_count_words(messages), 0)
        if messages and isinstance(messages[-1], ToolMessage):
            answer = _answer_from_tools(messages)
            return text_turn(answer, usage=(usage[0], len(answer.split())))
        prompt = next((m.content for m in reversed(messages) if isinstance(m, UserMessage)), "")
        offered = {spec["function"]["name"] for spec in request.tools}
        calls = []
        place = _place(prompt)
        if "get_weather" in offered and _WEATHER_RE.search(prompt):
            calls.append(call("get_weather", {"city": place or "Paris"}, id=None))
        if "get_time" in offered and _TIME_RE.search(prompt):
            zone = _ZONES.get((place or "").lower(), "UTC")
            calls.append(call("get_time", {"timezone": zone}, id=None))
        if calls:
            names = " and ".join(c.name for c in calls)
            return tool_turn(
                *calls,
                text=f"Let me check that for you ({names}). ",
                fragment_size=8,
                usage=(usage[0], 12),
            )
        answer = _small_talk(prompt)
        return text_turn(answer, usage=(usage[0], len(answer.split())))


def _place(prompt: str) -> str | None:
    match = _PLACE_RE.search(prompt)
    return match.group(1).strip().title() if match else None


def _answer_from_tools(messages: list[Message]) -> str:
    results: list[str] = []
    for message in reversed(messages):
        if not isinstance(message, ToolMessage):
            break
        results.insert(0, _describe(message))
    return " ".join(results) + " Anything else?"


def _describe(message: ToolMessage) -> str:
    try:
        data = json.loads(message.content)
    except ValueError:
        data = None
    if message.name == "get_weather" and isinstance(data, dict):
        return (
            f"In {data.get('city')} it is {data.get('temperature_c')}°C and "
            f"{data.get('conditions')}."
        )
    if message.name == "get_time" and isinstance(data, dict):
        return f"It is {data.get('time')} on {data.get('date')} ({data.get('timezone')})."
    return f"The {message.name} tool said: {message.content}"


def _small_talk(prompt: str) -> str:
    if not prompt.strip():
        return "Hello! Ask me about the weather or the time."
    return (
        "I am the offline demo model, so I can only pretend to think. "
        f'You said: "{prompt.strip()[:200]}". Ask me about the weather in a city, '
        "or the time, to see tool calls stream."
    )


def _count_words(messages: list[Message]) -> int:
    return sum(
        len(getattr(m, "content", "").split())
        for m in messages
        if not isinstance(m, AssistantMessage) or m.content
    )
