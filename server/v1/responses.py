"""``POST /v1/responses``: the part of OpenAI's Responses API that agent frameworks use (the
OpenAI Agents SDK calls it by default).

``input`` is a string or items (``message``, ``function_call``, ``function_call_output``;
``reasoning`` items are skipped), ``instructions`` a system message for this response only,
``tools`` function tools run by the client, ``text.format`` the response format. The mapping
onto a run is the Chat Completions one (:mod:`.conversation`): a model turn becomes one
assistant message with its calls, and results that answer calls an earlier response handed
back resume that run. Each response is stored (unless ``store: false``) with the conversation
it leaves, the agent's own tool calls included, in the agent's conversation store (Redis too,
when configured), so that ``previous_response_id`` continues it; it expires with the store's
sessions.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import AsyncGenerator, Mapping
from contextlib import aclosing
from typing import Any

import orjson
from aiohttp import web
from pydantic import BaseModel, ConfigDict

from agent_executor import (
    AgentEvent,
    AssistantMessage,
    DoneEvent,
    ErrorEvent,
    Message,
    MessageEvent,
    ServedAgent,
    StoreUnavailable,
    SystemMessage,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
)

from ..dialects import EventTable
from ..dialects.framing import HEARTBEAT
from ..errors import openai_error
from ..request import Caller, admission_refusal, json_object, validated
from ..state import STATE
from .common import agent_for, refusal, run_error
from .conversation import Request, WireError, client_tools, tool_choice

__all__ = ["ResponsesEncoder", "ResponsesRequest", "create_response"]

_SESSION = "responses/"
"""Stored responses live in the conversation store under ``responses/<id>`` sessions."""


class ResponsesRequest(BaseModel):
    """The fields of a Responses API request that an agent honours; fields that would change
    the answer and cannot be honoured are refused, others are ignored."""

    model_config = ConfigDict(extra="ignore")

    model: str
    input: str | list[dict[str, Any]]
    instructions: str | None = None
    tools: list[Any] | None = None
    tool_choice: Any = None
    parallel_tool_calls: bool | None = None
    text: dict[str, Any] | None = None
    stream: bool = False
    store: bool = True
    previous_response_id: str | None = None
    user: str | None = None
    safety_identifier: str | None = None
    metadata: dict[str, Any] | None = None
    temperature: float | None = None
    top_p: float | None = None
    max_output_tokens: int | None = None
    reasoning: dict[str, Any] | None = None
    background: bool | None = None
    conversation: Any = None
    prompt: Any = None

    def refused(self) -> WireError | None:
        """The first field asking for what an agent cannot do."""
        if self.background:
            return WireError("background responses are not supported", "background")
        if self.conversation is not None:
            return WireError(
                "conversations are not supported: use previous_response_id", "conversation"
            )
        if self.prompt is not None:
            return WireError("stored prompts are not supported", "prompt")
        return None

    def params(self) -> dict[str, Any]:
        """The sampling parameters that go to the model."""
        params: dict[str, Any] = {}
        if self.temperature is not None:
            params["temperature"] = self.temperature
        if self.top_p is not None:
            params["top_p"] = self.top_p
        if self.max_output_tokens is not None:
            params["max_tokens"] = self.max_output_tokens
        effort = (self.reasoning or {}).get("effort")
        if effort is not None:
            params["reasoning_effort"] = effort
        return params


async def create_response(request: web.Request) -> web.StreamResponse:
    """Run an agent for a Responses API request."""
    caller = Caller.of(request)
    data = await json_object(request, openai_error, orjson.loads)
    if isinstance(data, web.Response):
        return data
    body = validated(ResponsesRequest, data, openai_error)
    if isinstance(body, web.Response):
        return body
    executor = agent_for(request, body.model)
    if isinstance(executor, web.Response):
        return executor
    user = caller.user_id(body.user or body.safety_identifier)
    try:
        problem = body.refused()
        if problem is not None:
            raise problem
        history = await _previous(executor, user, body.previous_response_id)
        wire, instructions = _request(body, user, history, executor)
        command = wire.command(executor.tools)
    except WireError as exc:
        return refusal(exc)
    except StoreUnavailable as exc:
        return openai_error(503, str(exc), code="unavailable", **{"Retry-After": "5"})
    refused = admission_refusal(request, openai_error)
    if refused is not None:
        return refused
    response = _Response(body, uuid.uuid4().hex)
    if not body.stream:
        result = await caller.run(executor, command)
        if result.error is not None:
            return run_error(result.error)
        if body.store:
            await _store(executor, user, response.id, result.messages, instructions)
        calls = result.client_tool_calls
        return web.json_response(response.finished(result.content, calls, result.usage))
    events: AsyncGenerator[AgentEvent, None] = caller.stream(executor, command)
    if body.store:
        events = _storing(events, executor, user, response.id, instructions)
    encoder = ResponsesEncoder(response)
    return await request.app[STATE].streams.respond(request, events, encoder, run_error)


async def _storing(
    events: AsyncGenerator[AgentEvent, None],
    executor: ServedAgent,
    user: str | None,
    response_id: str,
    instructions: SystemMessage | None,
) -> AsyncGenerator[AgentEvent, None]:
    """The run's events, its conversation stored before its ``done`` goes out (so that a
    client that continues from ``response.completed`` at once finds it)."""
    async with aclosing(events):
        async for event in events:
            if type(event) is DoneEvent and event.finish_reason != "error":
                await _store(executor, user, response_id, event.messages, instructions)
            yield event


def _request(
    body: ResponsesRequest, user: str | None, history: list[Message], executor: ServedAgent
) -> tuple[Request, SystemMessage | None]:
    """The request in our terms, and the system message ``instructions`` became (for this
    response only: it is not stored with the conversation)."""
    tools = client_tools(_functions(body.tools or []))
    instructions = SystemMessage(content=body.instructions) if body.instructions else None
    wire = Request(
        messages=_messages(body.input, history),
        history=[*([instructions] if instructions else []), *history],
        user_id=user,
        tools=tools,
        choice=tool_choice(body.tool_choice, tools, executor.tools),
        parallel_tool_calls=body.parallel_tool_calls,
        response_format=_text_format((body.text or {}).get("format")),
        params=body.params(),
    )
    return wire, instructions


async def _previous(
    executor: ServedAgent, user: str | None, response_id: str | None
) -> list[Message]:
    """The conversation a stored response left (none without ``previous_response_id``)."""
    if response_id is None:
        return []
    if not response_id.startswith("resp_"):
        raise WireError(
            f"Previous response with id {response_id!r} not found.", "previous_response_id"
        )
    history = await executor.memory.load(user, _SESSION + response_id.removeprefix("resp_"))
    if not history:
        raise WireError(
            f"Previous response with id {response_id!r} not found.", "previous_response_id"
        )
    return history


async def _store(
    executor: ServedAgent,
    user: str | None,
    response_id: str,
    conversation: list[Message],
    instructions: SystemMessage | None,
) -> None:
    """Keep the conversation a response leaves, for ``previous_response_id`` (without the
    system message of its ``instructions``, which are for that response only)."""
    kept = [m for m in conversation if m is not instructions]
    # A store that is down logged why; the answer stands, it just cannot be continued by id.
    with contextlib.suppress(StoreUnavailable):
        await executor.memory.append(user, _SESSION + response_id.removeprefix("resp_"), kept)


def _functions(tools: list[Any]) -> list[dict[str, Any]]:
    """The function tools (``{"type": "function", "name", ...}``); others are refused."""
    for index, tool in enumerate(tools):
        if not isinstance(tool, dict) or tool.get("type") != "function":
            kind = tool.get("type") if isinstance(tool, dict) else None
            raise WireError(
                f"tools[{index}]: only function tools are supported (not {kind!r})", "tools"
            )
    return tools


def _text_format(value: Any) -> dict[str, Any] | None:
    """``text.format`` as a Chat Completions ``response_format``."""
    if value is None or (isinstance(value, dict) and value.get("type") == "text"):
        return None
    if isinstance(value, dict) and value.get("type") == "json_object":
        return {"type": "json_object"}
    if isinstance(value, dict) and value.get("type") == "json_schema":
        name, schema = value.get("name"), value.get("schema", {})
        if isinstance(name, str) and isinstance(schema, dict):
            spec = {"name": name, "schema": schema, "strict": bool(value.get("strict"))}
            return {"type": "json_schema", "json_schema": spec}
    raise WireError(
        "text.format must be text, json_object or json_schema with a name and a schema", "text"
    )


def _messages(value: str | list[dict[str, Any]], history: list[Message]) -> list[Message]:
    """The input items as our messages: a model turn's message and function calls become one
    assistant message; a function call's output a tool message named after its call."""
    if isinstance(value, str):
        return [UserMessage(content=value)]
    names = {c.id: c.name for m in history if isinstance(m, AssistantMessage) for c in m.tool_calls}
    out: list[Message] = []
    for index, item in enumerate(value):
        kind = item.get("type", "message")
        if kind == "message":
            out.append(_message(item, index))
        elif kind == "function_call":
            call = _call(item, index)
            names[call.id] = call.name
            _add_call(out, call)
        elif kind == "function_call_output":
            call_id = item.get("call_id")
            if not isinstance(call_id, str):
                raise WireError(f"input[{index}].call_id: required", "input")
            content = _content(item.get("output"), index)
            out.append(
                ToolMessage(tool_call_id=call_id, name=names.get(call_id, ""), content=content)
            )
        elif kind != "reasoning":
            raise WireError(f"input[{index}]: items of type {kind!r} are not supported", "input")
    return out


def _message(item: dict[str, Any], index: int) -> Message:
    role, content = item.get("role"), _content(item.get("content"), index)
    if role in ("system", "developer"):
        return SystemMessage(content=content)
    if role == "user":
        return UserMessage(content=content)
    if role == "assistant":
        return AssistantMessage(content=content)
    raise WireError(f"input[{index}].role: must be user, assistant, system or developer", "input")


def _call(item: dict[str, Any], index: int) -> ToolCall:
    call_id, name, arguments = item.get("call_id"), item.get("name"), item.get("arguments", "")
    if not isinstance(call_id, str) or not isinstance(name, str):
        raise WireError(f"input[{index}]: a function_call needs call_id and name", "input")
    if not isinstance(arguments, str):
        arguments = orjson.dumps(arguments).decode()
    return ToolCall(id=call_id, name=name, arguments=arguments or "{}")


def _add_call(messages: list[Message], call: ToolCall) -> None:
    """Put ``call`` on the model turn it belongs to: the assistant message just before it."""
    last = messages[-1] if messages else None
    if isinstance(last, AssistantMessage):
        messages[-1] = last.model_copy(update={"tool_calls": (*last.tool_calls, call)})
    else:
        messages.append(AssistantMessage(content="", tool_calls=(call,)))


def _content(value: Any, index: int) -> str:
    """Text content: a string, or text parts (``input_text``, ``output_text``)."""
    if value is None or isinstance(value, str):
        return value or ""
    if isinstance(value, list):
        texts = []
        for part in value:
            kind = part.get("type") if isinstance(part, dict) else None
            if kind not in ("input_text", "output_text", "text", "refusal"):
                raise WireError(f"input[{index}]: only text content is supported", "input")
            texts.append(part.get("text") or part.get("refusal") or "")
        return "\n".join(texts)
    raise WireError(f"input[{index}].content: must be text", "input")


class _Response:
    """One response's identity and settings, and its object in the API's shape."""

    __slots__ = ("body", "created", "id")

    def __init__(self, body: ResponsesRequest, key: str) -> None:
        self.body = body
        self.id = f"resp_{key}"
        self.created = int(time.time())

    def shape(self, status: str, output: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
        body = self.body
        return {
            "id": self.id,
            "object": "response",
            "created_at": self.created,
            "status": status,
            "model": body.model,
            "output": output,
            "instructions": body.instructions,
            "tools": body.tools or [],
            "tool_choice": body.tool_choice or "auto",
            "parallel_tool_calls": body.parallel_tool_calls is not False,
            "text": body.text or {"format": {"type": "text"}},
            "previous_response_id": body.previous_response_id,
            "metadata": body.metadata or {},
            "temperature": body.temperature,
            "top_p": body.top_p,
            "max_output_tokens": body.max_output_tokens,
            "store": body.store,
            "error": None,
            "incomplete_details": None,
            "usage": None,
            **extra,
        }

    def finished(self, text: str, calls: list[ToolCall], usage: Usage | None) -> dict[str, Any]:
        output = [message_item(f"msg_{self.id[5:]}", text, "completed")] if text else []
        output += [call_item(f"fc_{call.id}", call, "completed") for call in calls]
        return self.shape("completed", output, usage=usage_object(usage))


def message_item(item_id: str, text: str, status: str) -> dict[str, Any]:
    content = (
        [{"type": "output_text", "text": text, "annotations": []}] if status == "completed" else []
    )
    return {
        "id": item_id,
        "type": "message",
        "role": "assistant",
        "status": status,
        "content": content,
    }


def call_item(item_id: str, call: ToolCall, status: str) -> dict[str, Any]:
    arguments = call.arguments if status == "completed" else ""
    return {
        "id": item_id,
        "type": "function_call",
        "call_id": call.id,
        "name": call.name,
        "arguments": arguments,
        "status": status,
    }


def usage_object(usage: Usage | None) -> dict[str, Any]:
    """The Responses API's usage object (``cost_usd`` added when known)."""
    given, written = (usage.input_tokens, usage.output_tokens) if usage else (0, 0)
    out: dict[str, Any] = {
        "input_tokens": given,
        "input_tokens_details": {"cached_tokens": usage.cached_input_tokens if usage else 0},
        "output_tokens": written,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": given + written,
    }
    if usage is not None and usage.cost_usd is not None:
        out["cost_usd"] = usage.cost_usd
    return out


class ResponsesEncoder:
    """Encodes a run's events as the Responses API's stream: ``response.created`` and
    ``response.in_progress`` first; the text as one message item (``output_item.added``,
    ``content_part.added``, ``output_text.delta`` ..., then their ``.done`` events); at the end
    the client tools' calls as function-call items (``function_call_arguments.delta`` and
    ``.done``), and ``response.completed`` with the whole response and its usage, or
    ``response.failed`` with the run's error. Every event carries its ``sequence_number``."""

    media_type = "text/event-stream"
    heartbeat = HEARTBEAT
    headers: Mapping[str, str] = {}
    __slots__ = ("_error", "_response", "_sequence", "_texts")

    def __init__(self, response: _Response) -> None:
        self._response = response
        self._sequence = 0
        self._texts: list[str] = []
        self._error: ErrorEvent | None = None

    def opening(self) -> bytes:
        shape = self._response.shape("in_progress", [])
        return self._event("response.created", response=shape) + self._event(
            "response.in_progress", response=shape
        )

    def encode(self, event: AgentEvent) -> bytes:
        return _TABLE.encode(self, event)

    def _text(self, event: MessageEvent) -> bytes:
        out = b"" if self._texts else self._open_message()
        self._texts.append(event.text)
        return out + self._event(
            "response.output_text.delta",
            item_id=self._message_id, output_index=0, content_index=0,
            delta=event.text, logprobs=[],
        )  # fmt: skip

    def _failed(self, event: ErrorEvent) -> bytes:
        self._error = event  # sent with response.failed, at the end
        return b""

    @property
    def _message_id(self) -> str:
        return f"msg_{self._response.id[5:]}"

    def _event(self, kind: str, **fields: Any) -> bytes:
        data = orjson.dumps({"type": kind, "sequence_number": self._sequence, **fields})
        self._sequence += 1
        return b"event: " + kind.encode() + b"\ndata: " + data + b"\n\n"

    def _open_message(self) -> bytes:
        item = message_item(self._message_id, "", "in_progress")
        part = {"type": "output_text", "text": "", "annotations": []}
        return self._event("response.output_item.added", output_index=0, item=item) + self._event(
            "response.content_part.added",
            item_id=self._message_id, output_index=0, content_index=0, part=part,
        )  # fmt: skip

    def _close_message(self) -> tuple[bytes, list[dict[str, Any]]]:
        if not self._texts:
            return b"", []
        text, item_id = "".join(self._texts), self._message_id
        part = {"type": "output_text", "text": text, "annotations": []}
        item = message_item(item_id, text, "completed")
        where = {"item_id": item_id, "output_index": 0, "content_index": 0}
        out = (
            self._event("response.output_text.done", **where, text=text, logprobs=[])
            + self._event("response.content_part.done", **where, part=part)
            + self._event("response.output_item.done", output_index=0, item=item)
        )
        return out, [item]

    def _closing(self, done: DoneEvent) -> bytes:
        out, output = self._close_message()
        for call in done.client_tool_calls:
            index, item_id = len(output), f"fc_{call.id}"
            where = {"item_id": item_id, "output_index": index}
            item = call_item(item_id, call, "completed")
            out += (
                self._event("response.output_item.added", output_index=index,
                            item=call_item(item_id, call, "in_progress"))
                + self._event("response.function_call_arguments.delta", **where,
                              delta=call.arguments)
                + self._event("response.function_call_arguments.done", **where,
                              arguments=call.arguments, name=call.name)
                + self._event("response.output_item.done", output_index=index, item=item)
            )  # fmt: skip
            output.append(item)
        if done.finish_reason == "error":
            error = self._error
            detail = {
                "code": error.code if error else "internal_error",
                "message": error.message if error else "the run failed",
            }
            failed = self._response.shape("failed", output, error=detail)
            return out + self._event("response.failed", response=failed)
        shape = self._response.shape("completed", output, usage=usage_object(done.usage))
        return out + self._event("response.completed", response=shape)


_TABLE = EventTable(
    {
        MessageEvent: ResponsesEncoder._text,
        ErrorEvent: ResponsesEncoder._failed,
        DoneEvent: ResponsesEncoder._closing,
    }
)
