"""``DemoModel``: the offline default of the service.

It needs no network and no API key: it streams its answer word by word and, when the user asks
about the weather or the time and the demo tools (``get_weather``, ``get_time``) are on offer,
calls them (both at once when asked for both) and then answers from their results. When the
user asks about *their* time zone ("what is my time zone?") and the request offers a tool named
``get_browser_timezone`` (the chat page declares it as a client tool), it calls that tool instead
of ``get_time`` and answers with what the browser said.

Any other tool on offer is called when the message names it (its name, or words of its
description), with arguments drawn from the message by the tool's schema
(:mod:`.demo_calls`), so that one's own tools can be seen at work without a model.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator

import anyio

from ..errors import UnsupportedRequestError
from ..messages import AssistantMessage, Message, ToolMessage, UserMessage
from .base import ModelChunk, ModelRequest
from .demo_calls import named_calls
from .scripted import ScriptItem, call, text_turn, tool_turn

__all__ = ["DemoModel"]

_WEATHER_RE = re.compile(r"\b(weather|temperature|forecast|rain\w*|sunny|cold|hot|warm)\b", re.I)
_TIME_RE = re.compile(r"\b(time|clock|date|day is it)\b", re.I)
_MY_ZONE_RE = re.compile(r"\bmy\s+time[\s-]*zone\b", re.I)
_ZONE_NAME_RE = re.compile(r"^(?:[A-Za-z][A-Za-z0-9_+-]*)(?:/[A-Za-z0-9_+-]+)*$")
_BROWSER_TZ = "get_browser_timezone"
_OWN_RULES = frozenset({"get_weather", "get_time", _BROWSER_TZ})
"""Tools called by the rules above, never by :func:`named_calls`."""
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
    """An offline model that streams word by word and calls the tools a message names (the
    demo tools when asked about the weather or the time)."""

    def __init__(self, *, word_delay: float = 0.03, name: str = "demo") -> None:
        self._word_delay = word_delay
        self._name = name

    @property
    def name(self) -> str:
        """The model name used in metrics and logs."""
        return self._name

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        """Answer the request's last message; a ``response_format`` it cannot honour (it
        writes prose) is refused."""
        if "response_format" in request.params:
            raise UnsupportedRequestError(
                "the demo model cannot answer in a response_format; serve a real model "
                "(--model) for structured output",
                feature="response_format",
            )
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
        asks_browser = _BROWSER_TZ in offered and bool(_MY_ZONE_RE.search(prompt))
        if asks_browser:
            # "my time zone" is a question for the browser, not for get_time
            calls.append(call(_BROWSER_TZ, {}, id=None))
        elif "get_time" in offered and _TIME_RE.search(prompt):
            zone = _ZONES.get((place or "").lower(), "UTC")
            calls.append(call("get_time", {"timezone": zone}, id=None))
        named = named_calls(prompt, request.tools, skip=_OWN_RULES)
        calls += [call(name, arguments, id=None) for name, arguments in named]
        if calls:
            names = " and ".join(c.name for c in calls)
            return tool_turn(
                *calls,
                text=f"Let me check that for you ({names}). ",
                fragment_size=8,
                usage=(usage[0], 12),
            )
        answer = _small_talk(prompt, sorted(offered - _OWN_RULES))
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
    if message.name == _BROWSER_TZ:
        return _describe_browser_zone(message.content)
    return f"The {message.name} tool said: {message.content}"


def _describe_browser_zone(content: str) -> str:
    """The answer to "what is my time zone?" from the browser's result (or its failure).

    The result message does not say whether the call failed, so the failures the executor writes
    (``ClientToolError: ...`` from the client, a timeout, ...) are told apart from a zone name by
    its shape: a bare IANA name, a JSON string, or a JSON object with a ``timezone`` field.
    """
    if content.startswith("ClientToolError: "):
        reason = content.removeprefix("ClientToolError: ").strip().rstrip(".")
        return f"Your browser could not tell me your time zone: {reason or 'no reason given'}."
    try:
        data: object = json.loads(content)
    except ValueError:
        data = content
    zone = ""
    if isinstance(data, str):
        zone = data.strip()
    elif isinstance(data, dict):
        found = next((data[k] for k in ("timezone", "timeZone", "tz") if k in data), None)
        zone = found.strip() if isinstance(found, str) else ""
    if len(zone) <= 64 and _ZONE_NAME_RE.match(zone):
        return f"Your browser says your time zone is {zone}."
    detail = content.strip()[:200].rstrip(".") or "it sent an empty answer"
    return f"I could not get your time zone from your browser: {detail}."


def _small_talk(prompt: str, others: list[str]) -> str:
    """What the demo model says to a message that calls no tool; ``others`` are the tools on
    offer that a message calls by naming them."""
    hint = "Ask me about the weather in a city, or the time, to see tool calls stream."
    if others:
        shown = ", ".join(others[:8]) + (", ..." if len(others) > 8 else "")
        hint = f"Name one of my tools ({shown}) to see it called."
    if not prompt.strip():
        return f"Hello! {hint}" if others else "Hello! Ask me about the weather or the time."
    return (
        "I am the offline demo model, so I can only pretend to think. "
        f'You said: "{prompt.strip()[:200]}". {hint}'
    )


def _count_words(messages: list[Message]) -> int:
    return sum(
        len(getattr(m, "content", "").split())
        for m in messages
        if not isinstance(m, AssistantMessage) or m.content
    )
