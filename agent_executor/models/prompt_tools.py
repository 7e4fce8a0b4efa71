"""Tools for models without native function calling: the ReAct protocol in the prompt.

:class:`PromptToolsModel` wraps a model (many small local models behind Ollama or llama.cpp
have no function calling) so that the executor's loop sees native tool calls all the same: it
describes the tools in the system prompt, never sends the ``tools`` field, and reads the
model's answer as ReAct steps, one JSON object each::

    {"thought": "...", "action": "tool_call",
     "action_input": {"tool_name": "weather", "parameters": {"city": "Paris"}}}
    {"thought": "...", "action": "final_answer", "answer": "It is sunny in Paris."}

A ``tool_call`` step becomes a streamed tool call, so events, guards, hooks, limits and
approvals are those of native tools; earlier calls and their results go back to the model as
these steps and ``Observation`` messages. The final answer's text is streamed as it arrives,
not after the JSON closes; the thought is the turn's reasoning. A reply that holds no valid
step is sent back once with what is wrong; a second one ends the run with ``invalid_plan``
(:class:`~agent_executor.errors.PlanRefused`).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Literal

from ..errors import PlanRefused
from ..messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolMessage,
    Usage,
    UserMessage,
)
from ..resources import aclose_all
from .base import ChatModel, ModelChunk, ModelRequest, PooledModel, ToolCallDelta
from .litellm import import_litellm

__all__ = ["PROTOCOL", "PromptToolsModel", "ToolMode", "with_tool_mode"]

PROTOCOL = """You can use tools. Reply with JSON only, no Markdown and no other text: one \
object per step, on its own line.
To call a tool: {"thought": "<why>", "action": "tool_call", "action_input": {"tool_name": \
"<one of the tools>", "parameters": {<its arguments>}}}
Several independent calls may follow each other, one object per line. After your calls you \
are given each result as an Observation; then reply with your next steps.
To answer: {"thought": "<why>", "action": "final_answer", "answer": "<your answer to the user>"}
Write the keys in that order. The tools (name, description, JSON schema of the parameters):"""

_NOT_TOOL_PARAMS = ("tool_choice", "parallel_tool_calls")

ToolMode = Literal["native", "prompt", "auto"]
"""How tools are offered to a model: ``native`` function calling, ``prompt`` (this module's
protocol), or ``auto``: native when litellm's model data says the model supports it."""


def with_tool_mode(model: ChatModel, mode: ToolMode) -> ChatModel:
    """``model`` as it takes tools in ``mode``."""
    if mode == "prompt" or (mode == "auto" and not _calls_functions(model.name)):
        return model if isinstance(model, PromptToolsModel) else PromptToolsModel(model)
    return model


def _calls_functions(name: str) -> bool:
    """Whether litellm's model data says ``name`` has native function calling (unknown
    models do not: a local model behind Ollama or llama.cpp is the usual reason for prompt
    mode)."""
    litellm = import_litellm()  # seconds to import: only for ``auto``
    try:
        return bool(litellm.supports_function_calling(model=name))
    except Exception:  # litellm raises for a model it does not know
        return False


class PromptToolsModel:
    """``model`` driven to use tools through its prompt (see the module docstring)."""

    def __init__(self, model: ChatModel) -> None:
        self.model = model

    @property
    def name(self) -> str:
        return self.model.name

    def reserve_connections(self, count: int) -> None:
        """Size the wrapped model's pool, if it keeps one."""
        if isinstance(self.model, PooledModel):
            self.model.reserve_connections(count)

    async def aclose(self) -> None:
        await aclose_all([self.model])

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        if not request.tools and not any(_of_tools(m) for m in request.messages):
            async for chunk in self.model.stream(request):
                yield chunk
            return
        plain = _prompted(request)
        spent = _Spent()
        reply = _Reply()
        async for chunk in self._attempt(plain, reply, spent):
            yield chunk
        if reply.problem is not None and not reply.answered:
            retry = _correction(plain, reply)
            reply = _Reply()
            async for chunk in self._attempt(retry, reply, spent):
                yield chunk
        if reply.problem is not None and not reply.calls and not reply.answered:
            raise PlanRefused(
                f"the model's reply was not a valid ReAct step after one correction: "
                f"{reply.problem}"
            )
        yield ModelChunk(finish_reason="tool_calls" if reply.calls else "stop", usage=spent.total())

    async def _attempt(
        self, request: ModelRequest, reply: _Reply, spent: _Spent
    ) -> AsyncIterator[ModelChunk]:
        """One call of the wrapped model, read as steps into ``reply``; yields the steps'
        chunks as they become known."""
        async for chunk in self.model.stream(request):
            if chunk.usage is not None:
                spent.last = chunk.usage
            if chunk.text:
                for out in reply.feed(chunk.text):
                    yield out
        spent.add()
        for out in reply.finish(request):
            yield out


@dataclass(slots=True)
class _Spent:
    """What the wrapped model's calls spent: the last usage of each call, summed."""

    last: Usage | None = None
    sum: Usage | None = None

    def add(self) -> None:
        if self.last is not None:
            self.sum = self.last if self.sum is None else self.sum + self.last
        self.last = None

    def total(self) -> Usage | None:
        return self.sum


class _Reply:
    """One reply of the model, read step by step as its text streams in."""

    __slots__ = ("_buffer", "_scanned", "_streamed", "answered", "calls", "problem", "text")

    def __init__(self) -> None:
        self.text = ""
        self._buffer = ""
        self._scanned = _Scanner()
        self._streamed = 0
        self.calls = 0
        self.answered = False
        self.problem: str | None = None

    def feed(self, text: str) -> Iterator[ModelChunk]:
        self.text += text
        if self.answered:
            return
        for step, partial in self._scanned.feed(text):
            if step is None:
                yield from self._answer_so_far(partial)
            else:
                yield from self._step(step)
                if self.answered:
                    return

    def finish(self, request: ModelRequest) -> Iterator[ModelChunk]:
        if self.answered or self.calls:
            return
        if self.problem is None:
            self.problem = (
                "it holds no JSON step" if not self._scanned.seen else "its JSON step is unfinished"
            )
        yield from ()

    def _answer_so_far(self, partial: str) -> Iterator[ModelChunk]:
        """The final answer's text while its JSON string is still open (not after calls: the
        model answers again once it has their results)."""
        if self.calls:
            return
        text = _open_answer(partial)
        if text is not None and len(text) > self._streamed:
            yield ModelChunk(text=text[self._streamed :])
            self._streamed = len(text)

    def _step(self, raw: str) -> Iterator[ModelChunk]:
        try:
            step = json.loads(raw, strict=False)
        except ValueError as exc:
            self.problem = f"a step is not valid JSON ({exc})"
            return
        if not isinstance(step, dict):
            self.problem = "a step is not a JSON object"
            return
        thought = step.get("thought")
        if isinstance(thought, str) and thought:
            yield ModelChunk(reasoning=thought + "\n")
        action = step.get("action")
        if action == "tool_call":
            yield from self._call(step.get("action_input"))
        elif action == "final_answer" and not self.calls:
            answer = str(step.get("answer") or "")
            self.answered = True
            if len(answer) > self._streamed:
                yield ModelChunk(text=answer[self._streamed :])
        elif action != "final_answer":
            self.problem = f"unknown action {action!r} (tool_call or final_answer)"

    def _call(self, given: object) -> Iterator[ModelChunk]:
        name = given.get("tool_name") if isinstance(given, dict) else None
        if not isinstance(name, str) or not name:
            self.problem = "a tool_call step has no action_input.tool_name"
            return
        parameters = given.get("parameters") if isinstance(given, dict) else None
        arguments = json.dumps(parameters if isinstance(parameters, dict) else {})
        delta = ToolCallDelta(
            index=self.calls, id=f"react_{self.calls}", name=name, arguments=arguments
        )
        self.calls += 1
        yield ModelChunk(tool_calls=(delta,))


class _Scanner:
    """Finds JSON objects in streamed text (text around them is ignored): each complete one
    as ``(object, "")``, and the object still open after each feed as ``(None, partial)``."""

    __slots__ = ("_depth", "_escape", "_in_string", "_start", "_text", "seen")

    def __init__(self) -> None:
        self._text = ""
        self._depth = 0
        self._in_string = False
        self._escape = False
        self._start = -1
        self.seen = False

    def feed(self, text: str) -> Iterator[tuple[str | None, str]]:
        begin = len(self._text)
        self._text += text
        for index in range(begin, len(self._text)):
            char = self._text[index]
            if self._in_string:
                if self._escape:
                    self._escape = False
                elif char == "\\":
                    self._escape = True
                elif char == '"':
                    self._in_string = False
            elif char == '"' and self._depth:
                self._in_string = True
            elif char == "{":
                if self._depth == 0:
                    self._start, self.seen = index, True
                self._depth += 1
            elif char == "}" and self._depth:
                self._depth -= 1
                if self._depth == 0:
                    yield self._text[self._start : index + 1], ""
                    self._start = -1
        if self._depth:
            yield None, self._text[self._start :]


def _open_answer(partial: str) -> str | None:
    """The decoded text of the ``answer`` string of an unfinished final-answer step, as far
    as it has come (without a trailing half escape), or ``None`` before it begins."""
    action = partial.find('"action"')
    if action < 0 or '"final_answer"' not in partial[action : action + 40]:
        return None
    key = partial.find('"answer"', action)
    if key < 0:
        return None
    colon = partial.find(":", key + 8)
    quote = partial.find('"', colon + 1) if colon >= 0 else -1
    if quote < 0 or partial[colon + 1 : quote].strip():
        return None
    body = partial[quote + 1 :]
    end = _string_end(body)
    raw = body if end is None else body[:end]
    return _decoded(raw)


def _string_end(body: str) -> int | None:
    escape = False
    for index, char in enumerate(body):
        if escape:
            escape = False
        elif char == "\\":
            escape = True
        elif char == '"':
            return index
    return None


def _decoded(raw: str) -> str:
    """A JSON string's body decoded, a half-written escape at its end left for later."""
    lone = len(raw) - len(raw.rstrip("\\"))
    if lone % 2:
        raw = raw[:-1]
    else:
        start = raw.rfind("\\u")
        before = len(raw[:start]) - len(raw[:start].rstrip("\\")) if start >= 0 else 0
        if start >= 0 and len(raw) - start < 6 and before % 2 == 0:
            raw = raw[:start]
    try:
        return str(json.loads(f'"{raw}"', strict=False))
    except ValueError:
        return ""


def _prompted(request: ModelRequest) -> ModelRequest:
    """``request`` for a model that never sees the ``tools`` field: the tools in the system
    prompt with the protocol, earlier calls as steps and their results as observations."""
    catalog = json.dumps(
        [
            {
                "name": spec["function"]["name"],
                "description": spec["function"].get("description", ""),
                "parameters": spec["function"].get("parameters", {}),
            }
            for spec in request.tools
        ],
        ensure_ascii=False,
    )
    protocol = f"{PROTOCOL}\n{catalog}"
    if not request.tools:
        protocol += "\nNo tool may be called now: reply with your final_answer."
    messages: list[Message] = []
    for message in request.messages:
        messages.extend(_plain(message))
    if messages and isinstance(messages[0], SystemMessage):
        messages[0] = SystemMessage(content=f"{messages[0].content}\n\n{protocol}")
    else:
        messages.insert(0, SystemMessage(content=protocol))
    params = {k: v for k, v in request.params.items() if k not in _NOT_TOOL_PARAMS}
    return ModelRequest(messages, [], params)


def _plain(message: Message) -> list[Message]:
    if isinstance(message, AssistantMessage) and message.tool_calls:
        steps = [
            json.dumps(
                {
                    "thought": message.content if index == 0 else "",
                    "action": "tool_call",
                    "action_input": {
                        "tool_name": call.name,
                        "parameters": _arguments(call.arguments),
                    },
                },
                ensure_ascii=False,
            )
            for index, call in enumerate(message.tool_calls)
        ]
        return [AssistantMessage(content="\n".join(steps))]
    if isinstance(message, ToolMessage):
        return [UserMessage(content=f"Observation ({message.name}): {message.content}")]
    return [message]


def _of_tools(message: Message) -> bool:
    """Whether ``message`` is a call or a result of the prompt protocol's earlier turns."""
    return isinstance(message, ToolMessage) or (
        isinstance(message, AssistantMessage) and bool(message.tool_calls)
    )


def _arguments(raw: str) -> object:
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def _correction(request: ModelRequest, reply: _Reply) -> ModelRequest:
    """The request again, with the bad reply and what is wrong with it."""
    told = (
        f"That reply cannot be used: {reply.problem}. Reply again with JSON steps only, as "
        "the system prompt says."
    )
    messages = [*request.messages, AssistantMessage(content=reply.text), UserMessage(content=told)]
    return ModelRequest(messages, [], dict(request.params))
