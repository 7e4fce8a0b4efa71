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
import re
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Literal

from .._json_outline import JsonOutline
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
    """One reply of the model, read step by step as its text streams in.

    Every chunk costs time in its own length only: the steps are found, and the final answer
    decoded, from what each chunk adds (decoding the whole open answer again at every chunk
    made a long answer quadratic: about 10 s of CPU for 32,000 characters).
    """

    __slots__ = ("_scanned", "_streamed", "_texts", "answered", "calls", "problem")

    def __init__(self) -> None:
        self._texts: list[str] = []
        self._scanned = _Scanner()
        self._streamed = 0
        self.calls = 0
        self.answered = False
        self.problem: str | None = None

    @property
    def text(self) -> str:
        """The reply's whole text so far (what the correction sends back)."""
        return "".join(self._texts)

    def feed(self, text: str) -> Iterator[ModelChunk]:
        self._texts.append(text)
        if self.answered:
            return
        for step, answer in self._scanned.feed(text):
            if step is None:
                yield from self._answer_so_far(answer)
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

    def _answer_so_far(self, text: str) -> Iterator[ModelChunk]:
        """More of the final answer's text while its JSON string is still open (not after
        calls: the model answers again once it has their results)."""
        if self.calls or not text:
            return
        yield ModelChunk(text=text)
        self._streamed += len(text)

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
    """Finds JSON objects in streamed text (text around them is ignored), one character at a
    time, each read once: each complete object as ``(object, "")``; and, while the ``answer``
    string of a final-answer step is open, the text each feed adds to it, decoded, as
    ``(None, text)``.

    Inside an object it tells keys from values at its top level, which is how it knows the
    ``action`` (the model writes it before the ``answer``, as the protocol asks; an answer
    written first is given whole when its step closes).
    """

    __slots__ = (
        "_action",
        "_answer",
        "_is_key",
        "_key",
        "_outline",
        "_parts",
        "_string",
        "seen",
    )

    def __init__(self) -> None:
        self._parts: list[str] = []  # the open object's text from earlier feeds
        self._outline = JsonOutline("{}")
        self._is_key = False  # at the top level, the next string is a key
        self._key = ""  # the top-level key whose value comes next
        self._action = ""
        self._string: list[str] | None = None  # a top-level key or action being read
        self._answer: _AnswerText | None = None  # the final answer's string, while open
        self.seen = False

    def feed(self, text: str) -> Iterator[tuple[str | None, str]]:
        outline = self._outline
        start = 0 if outline.depth else -1  # where the open object begins in ``text``
        mark = 0  # where the open string's text in ``text`` begins
        for index, char in outline.marks(text):
            depth = outline.depth  # before ``char``
            if outline.in_string:  # ``char`` closes the string
                yield from self._string_closed(text[mark:index])
            elif char == '"':
                if depth:
                    mark = index + 1
                    self._string_opened(depth)
            elif char == "{":
                if depth == 0:
                    start, self.seen = index, True
                    self._is_key, self._key, self._action = True, "", ""
            elif char == "}":
                if depth == 1:
                    yield "".join(self._parts) + text[start : index + 1], ""
                    self._parts.clear()
                    start = -1
            elif depth == 1:
                if char == ",":
                    self._is_key = True
                elif char == ":":
                    self._is_key = False
        if outline.depth:
            self._parts.append(text[start:])
            if outline.in_string:
                yield from self._string_goes_on(text[mark:])

    def _string_opened(self, depth: int) -> None:
        if depth != 1:
            return
        if self._is_key or self._key == "action":
            self._string = []
        elif self._key == "answer" and self._action == "final_answer":
            self._answer = _AnswerText()

    def _string_goes_on(self, text: str) -> Iterator[tuple[str | None, str]]:
        if self._string is not None:
            self._string.append(text)
        elif self._answer is not None:
            yield None, self._answer.more(text)

    def _string_closed(self, text: str) -> Iterator[tuple[str | None, str]]:
        if self._string is not None:
            value = "".join(self._string) + text
            if self._is_key:
                self._key = value
            else:
                self._action = value
            self._string = None
        elif self._answer is not None:
            yield None, self._answer.more(text, closed=True)
            self._answer = None


class _AnswerText:
    """The body of a JSON string decoded piece by piece: what cannot be decoded yet (half an
    escape, or the first half of a surrogate pair such as ``\\ud83d\\ude00``) waits for the
    next piece, so no piece is ever a lone surrogate that the SSE writer could not encode."""

    __slots__ = ("_failed", "_held")

    def __init__(self) -> None:
        self._held = ""
        self._failed = False

    def more(self, raw: str, *, closed: bool = False) -> str:
        if self._failed:
            return ""
        raw = self._held + raw
        cut = len(raw) if closed else _decodable(raw)
        self._held = raw[cut:]
        try:
            return str(json.loads(f'"{raw[:cut]}"', strict=False))
        except ValueError:  # not JSON: the step will say so when it closes
            self._failed = True
            return ""


_HELD_TAIL = re.compile(r"(?:\\u[dD][89abAB][0-9a-fA-F]{2})?(?:\\(?:u[0-9a-fA-F]{0,3})?)?\Z")
"""What may end a string's body so far and cannot be decoded alone: the first half of a
surrogate pair, then perhaps the start of an escape."""


def _decodable(raw: str) -> int:
    """How much of ``raw``, the start of a JSON string's body, decodes on its own: all of it
    but a tail of :data:`_HELD_TAIL` (at most 11 characters) that is a real escape."""
    pos = max(0, len(raw) - 12)
    while (match := _HELD_TAIL.search(raw, pos)) is not None and match.start() < len(raw):
        start = before = match.start()
        while before > 0 and raw[before - 1] == "\\":
            before -= 1
        if (start - before) % 2 == 0:  # not itself the second half of an escaped backslash
            return start
        pos = start + 1
    return len(raw)


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
