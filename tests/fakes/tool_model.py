"""A model that decides from what it is asked, behind a fake OpenAI-compatible server, for the
tests in which other people's agent frameworks drive the service.

A framework decides how many model calls a task takes (a retry, a handoff, an output tool), so a
fixed script would test the script; :class:`ToolModel` answers each request by these rules, as a
cooperative model would:

1. after tool results (the last message is a tool message): a text answer quoting them, or, when
   a ``response_format`` asks for JSON, a JSON value made from its schema with the results in
   its first string field;
2. when the request forces a tool (``tool_choice`` names one, or ``required``) or the user's
   last message names offered tools (``lookup_order(...)`` with JSON arguments, or a bare tool
   name): those tools' calls, arguments taken from the message or made from the tool's schema,
   in one turn;
3. a ``response_format``: JSON made from its schema (``json_object``: ``{"answer": ...}``);
4. otherwise a short text answer naming the user's message.

:class:`ThreadedModelServer` runs it in a thread of its own, so that synchronous clients in a
test can call the service, which calls it, without blocking its event loop.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .openai_server import (
    FakeOpenAIServer,
    JsonDict,
    Response,
    Stream,
    text_stream,
    tool_call_stream,
)

__all__ = ["ThreadedModelServer", "ToolModel", "sample", "served_tool_model"]

_CALL_RE = r"\b{name}\s*(\((?P<args>\{{.*?\}})\))?"


def sample(schema: Any, defs: dict[str, Any] | None = None, text: str = "value") -> Any:
    """A value matching a JSON schema (the subset models are given: objects, arrays, enums,
    ``$ref``, ``anyOf``): every property, the first string field set to ``text``."""
    if not isinstance(schema, dict):
        return text
    defs = {**(defs or {}), **schema.get("$defs", {}), **schema.get("definitions", {})}
    if "$ref" in schema:
        return sample(defs.get(schema["$ref"].rsplit("/", 1)[-1], {}), defs, text)
    for key in ("anyOf", "oneOf", "allOf"):
        if schema.get(key):
            choices = [c for c in schema[key] if c.get("type") != "null"] or schema[key]
            return sample(choices[0], defs, text)
    if "enum" in schema:
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    kind = schema.get("type", "object" if "properties" in schema else "string")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if kind == "object":
        out: dict[str, Any] = {}
        for name, prop in (schema.get("properties") or {}).items():
            out[name] = sample(prop, defs, text)
            if isinstance(out[name], str):
                text = "value"  # only the first string field carries the text
        return out
    if kind == "array":
        return [sample(schema.get("items", {}), defs, text)]
    return {"integer": 1, "number": 1.5, "boolean": True, "null": None}.get(kind, text)


class ToolModel:
    """Answers a Chat Completions request body by the rules of this module."""

    def __init__(self, *, usage: tuple[int, int] = (12, 5)) -> None:
        self._usage = usage
        self._ids = itertools.count(1)

    def __call__(self, body: JsonDict) -> Response:
        messages = body.get("messages") or []
        last = messages[-1] if messages else {}
        tools = {t["function"]["name"]: t["function"] for t in body.get("tools") or []}
        if last.get("role") == "tool":
            results = [m.get("content") for m in _trailing_tools(messages)]
            text = "Done: " + "; ".join(str(r) for r in results)
            name = _forced(body, tools, messages)
            if name is None:
                return self._answer(body, text)
            return self._stream([(name, sample(tools[name].get("parameters"), text=text))])
        calls = self._calls(body, tools, _text(last))
        if calls:
            return self._stream(calls)
        return self._answer(body, f"You said: {_text(last)}")

    def _stream(self, calls: list[tuple[str, Any]]) -> Response:
        ids = [(f"call_{name}_{next(self._ids)}", name, args) for name, args in calls]
        return Stream(tool_call_stream(ids, fragment_size=7, usage=self._usage))

    def _answer(self, body: JsonDict, text: str) -> Response:
        form = body.get("response_format") or {}
        if form.get("type") == "json_schema":
            text = json.dumps(sample(form["json_schema"].get("schema", {}), text=text))
        elif form.get("type") == "json_object":
            text = json.dumps({"answer": text})
        pieces = re.findall(r".{1,6}", text, re.S)
        return Stream(text_stream(pieces, usage=self._usage))

    @staticmethod
    def _calls(body: JsonDict, tools: dict[str, JsonDict], prompt: str) -> list[tuple[str, Any]]:
        choice = body.get("tool_choice")
        if choice == "none" or not tools:
            return []
        if isinstance(choice, dict):
            names = [choice["function"]["name"]]
        else:
            names = [n for n in tools if re.search(_CALL_RE.format(name=re.escape(n)), prompt)]
            names.sort(key=lambda n: prompt.find(n))
            if not names and choice == "required":
                names = [next(iter(tools))]
        calls = []
        for name in names:
            match = re.search(_CALL_RE.format(name=re.escape(name)), prompt)
            given = match.group("args") if match else None
            arguments = json.loads(given) if given else sample(tools[name].get("parameters"))
            calls.append((name, arguments))
        return calls


def _forced(body: JsonDict, tools: dict[str, JsonDict], messages: list[JsonDict]) -> str | None:
    """The tool a forced ``tool_choice`` makes the model call after tool results: the named
    one, or (``required``) the first offered tool not called yet."""
    choice = body.get("tool_choice")
    if isinstance(choice, dict):
        return str(choice["function"]["name"])
    if choice != "required" or not tools:
        return None
    called = {
        call["function"]["name"] for message in messages for call in message.get("tool_calls") or ()
    }
    return next((name for name in tools if name not in called), next(iter(tools)))


def _text(message: JsonDict) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(part.get("text") or "" for part in content if isinstance(part, dict))
    return content or ""


def _trailing_tools(messages: list[JsonDict]) -> list[JsonDict]:
    tail: list[JsonDict] = []
    for message in reversed(messages):
        if message.get("role") != "tool":
            break
        tail.insert(0, message)
    return tail


class ThreadedModelServer:
    """A :class:`FakeOpenAIServer` answering with a :class:`ToolModel`, in its own thread."""

    def __init__(self) -> None:
        self.server = FakeOpenAIServer()
        self.server.respond_with(ToolModel())
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return self.server.base_url

    @property
    def requests(self) -> list[JsonDict]:
        """The bodies the model was sent, in order."""
        return list(self.server.requests)

    def start(self) -> None:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self.server.start(), self._loop).result(10)

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self.server.stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()


@contextmanager
def served_tool_model() -> Iterator[ThreadedModelServer]:
    """A :class:`ThreadedModelServer`, started and stopped."""
    model = ThreadedModelServer()
    model.start()
    try:
        yield model
    finally:
        model.stop()
