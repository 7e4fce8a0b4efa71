"""Recorded provider stream shapes and the local server that replays them byte for byte.

A :class:`Fixture` is one provider quirk as it was seen on the wire: the exact bytes of each
HTTP answer the provider gave (SSE comments, CRLF line ends, missing ``[DONE]`` and all), how
those bytes were cut into network writes, and what a correct client must make of them: the
tools that run, the final text, the usage, and what goes back to the provider on the next
request. Every fixture names its provider and the public source its shape comes from.

The tests replay the answers with the shared fake server (``tests/fakes/openai_server.py``,
its :class:`~tests.fakes.openai_server.Raw` kind), one per request to ``/v1/chat/completions``
(or ``/v1/messages`` for Anthropic's Messages API), which keeps every request body it got.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.fakes.openai_server import Raw

__all__ = ["Expect", "Fixture", "Reply", "sse"]


def sse(*events: dict[str, Any] | str, done: bool = True, eol: str = "\n") -> bytes:
    """An OpenAI-style SSE body: ``data: <json>`` per event, a blank line after each.

    A ``str`` event is put on the wire as it is (a comment, a malformed line, a line without
    the space after ``data:``): include its own line ends. ``done`` adds ``data: [DONE]``.
    """
    out: list[str] = []
    for event in events:
        if isinstance(event, str):
            out.append(event)
        else:
            out.append(f"data: {json.dumps(event, separators=(',', ':'))}{eol}{eol}")
    if done:
        out.append(f"data: [DONE]{eol}{eol}")
    return "".join(out).encode()


Reply = Raw
"""One HTTP answer as the provider sent it (the shared fake's byte-for-byte response kind)."""


@dataclass(frozen=True)
class Expect:
    """What a correct client makes of a fixture's answers.

    ``tools``: the calls that ran, in order, each once (name, arguments as a dict).
    ``text``: the run's final ``AgentResult.content``. ``usage``: (input, output) tokens
    summed over the run, ``None`` when the provider sent none. ``reasoning``: the run's
    ``AgentResult.reasoning``. ``error``: the run's error code when it must fail (then
    ``text`` is not checked and the run must not be a success). ``requests``: how many
    requests the server must have received (retries included).
    ``assistant_fields``: top-level fields the assistant message that carried the tool calls
    must have in the next request, with their values (e.g. ``reasoning_content``).
    ``call_fields``: per tool call of that message, fields it must carry back (e.g.
    ``extra_content`` with Gemini's thought signature), in call order.
    ``check``: any further check of the list of request bodies the server received.
    """

    tools: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    text: str = ""
    usage: tuple[int, int] | None = None
    reasoning: str | None = None
    error: str | None = None
    requests: int | None = None
    assistant_fields: dict[str, Any] = field(default_factory=dict)
    call_fields: list[dict[str, Any]] = field(default_factory=list)
    check: Callable[[list[dict[str, Any]]], None] | None = None


@dataclass(frozen=True)
class Fixture:
    """One provider quirk: its name, its public source, the answers, the expected outcome.

    ``tools`` names the tools the agent offers (each accepts any JSON object and answers
    ``"<name> ok"``). ``clients`` limits the clients it runs through (``fast``, ``litellm``).
    ``model`` is the model name sent (some clients route on it).
    """

    name: str
    provider: str
    source: str
    replies: list[Reply]
    expect: Expect
    tools: tuple[str, ...] = ()
    clients: tuple[str, ...] = ("fast", "litellm")
    model: str = "test-model"
