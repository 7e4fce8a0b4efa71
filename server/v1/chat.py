"""``POST /v1/chat/completions``: an agent as an OpenAI chat model.

The request's ``model`` names a configured agent (``default`` is the default one); the agent
runs its own tools on the server, and the client's ``tools`` are offered beside them: when the
model calls one, the answer ends with ``finish_reason: "tool_calls"`` and those calls, the
client runs them and sends the conversation again with their results, and the run goes on (see
:mod:`.conversation`). ``response_format`` goes to the model as it is. Errors use OpenAI's
shape and statuses, because OpenAI clients retry 429 and 5xx by themselves; for the same reason
a streamed request is refused with an HTTP status when its run fails before the first event.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, Literal

import orjson
from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field

from agent_executor import (
    AgentEvent,
    AgentResult,
    AssistantMessage,
    DoneEvent,
    ErrorEvent,
    Message,
    MessageEvent,
    ReasoningEvent,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)

from ..dialects.framing import HEARTBEAT
from ..errors import STATUS_BY_CODE, openai_error
from ..request import Caller, admission_refusal, json_object, validated
from ..state import STATE
from .common import agent_for, refusal, run_error, usage_object
from .conversation import Request, WireError, client_tools, tool_choice

__all__ = ["ChatCompletionRequest", "ChunkEncoder", "chat_completions"]


class _ContentPart(BaseModel):
    model_config = ConfigDict(extra="ignore")

    type: str
    text: str | None = None


class _Function(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: str
    arguments: str | dict[str, Any] = ""


class _ToolCall(BaseModel):
    model_config = ConfigDict(extra="ignore")

    id: str
    type: Literal["function"] = "function"
    function: _Function


class ChatMessage(BaseModel):
    """One message of an OpenAI chat request: text content, an assistant's tool calls, or a
    tool's result."""

    model_config = ConfigDict(extra="ignore")

    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[_ContentPart] | None = None
    tool_calls: list[_ToolCall] | None = None
    tool_call_id: str | None = None

    def text(self) -> str:
        if self.content is None or isinstance(self.content, str):
            return self.content or ""
        if any(part.type not in ("text", "input_text", "output_text") for part in self.content):
            raise WireError("only text content parts are supported", "messages")
        return "\n".join(part.text or "" for part in self.content)


class ChatCompletionRequest(BaseModel):
    """The fields of OpenAI's chat completion request that an agent honours; fields that
    would change the answer and cannot be honoured are refused, others are ignored."""

    model_config = ConfigDict(extra="ignore")

    model: str
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
    stream_options: dict[str, Any] | None = None
    user: str | None = None
    n: int = 1
    tools: list[Any] | None = None
    tool_choice: Any = None
    parallel_tool_calls: bool | None = None
    response_format: dict[str, Any] | None = None
    functions: list[Any] | None = None
    function_call: Any = None
    logprobs: bool | None = None
    top_logprobs: int | None = None
    modalities: list[str] | None = None
    audio: dict[str, Any] | None = None
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    max_completion_tokens: int | None = None
    stop: str | list[str] | None = None
    seed: int | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    logit_bias: dict[str, float] | None = None
    reasoning_effort: str | None = None

    def refused(self) -> WireError | None:
        """The first field asking for what an agent cannot do."""
        if self.n != 1:
            return WireError("only n=1 is supported: an agent gives one answer", "n")
        if self.functions is not None or self.function_call is not None:
            return WireError("the legacy 'functions' are not supported: use 'tools'", "functions")
        if self.logprobs or self.top_logprobs:
            return WireError(
                "logprobs are not supported: an agent's answer spans model calls", "logprobs"
            )
        if self.audio is not None or (self.modalities and set(self.modalities) != {"text"}):
            return WireError("only text output is supported", "modalities")
        return None

    def params(self) -> dict[str, Any]:
        """The sampling parameters that go to the model."""
        fields = ("temperature", "top_p", "stop", "seed", "presence_penalty",
                  "frequency_penalty", "logit_bias", "reasoning_effort")  # fmt: skip
        params = {name: getattr(self, name) for name in fields if getattr(self, name) is not None}
        limit = self.max_completion_tokens or self.max_tokens
        if limit is not None:
            params["max_tokens"] = limit
        return params


async def chat_completions(request: web.Request) -> web.StreamResponse:
    """Run an agent for an OpenAI chat completion request."""
    caller = Caller.of(request)
    data = await json_object(request, openai_error, orjson.loads)
    if isinstance(data, web.Response):
        return data
    body = validated(ChatCompletionRequest, data, openai_error)
    if isinstance(body, web.Response):
        return body
    executor = agent_for(request, body.model)
    if isinstance(executor, web.Response):
        return executor
    try:
        problem = body.refused()
        if problem is not None:
            raise problem
        command = _request(body, caller, executor.tools).command(executor.tools)
    except WireError as exc:
        return refusal(exc)
    refused = admission_refusal(request, openai_error)
    if refused is not None:
        return refused
    if not body.stream:
        result = await caller.run(executor, command)
        if result.error is not None:
            return run_error(result.error)
        return web.json_response(_completion(caller.request_id, body.model, result))
    include_usage = bool((body.stream_options or {}).get("include_usage"))
    encoder = ChunkEncoder(caller.request_id, body.model, include_usage)
    events = caller.stream(executor, command)
    return await request.app[STATE].streams.respond(request, events, encoder, run_error)


def _request(body: ChatCompletionRequest, caller: Caller, server_tools: Any) -> Request:
    tools = client_tools(_functions(body.tools or []))
    return Request(
        messages=_messages(body.messages),
        user_id=caller.user_id(body.user),
        tools=tools,
        choice=tool_choice(_named(body.tool_choice), tools, server_tools),
        parallel_tool_calls=body.parallel_tool_calls,
        response_format=_response_format(body.response_format),
        params=body.params(),
    )


def _functions(tools: list[Any]) -> list[dict[str, Any]]:
    """The ``function`` of each ``{"type": "function", "function": {...}}`` tool."""
    functions = []
    for index, tool in enumerate(tools):
        if not isinstance(tool, dict) or tool.get("type") != "function":
            raise WireError(f"tools[{index}]: only function tools are supported", "tools")
        function = tool.get("function")
        if not isinstance(function, dict):
            raise WireError(f"tools[{index}].function: must be an object", "tools")
        functions.append(function)
    return functions


def _named(choice: Any) -> Any:
    """``{"type": "function", "function": {"name"}}`` → ``{"name"}``; other values as given."""
    if isinstance(choice, dict) and isinstance(choice.get("function"), dict):
        return choice["function"]
    return choice


def _response_format(value: dict[str, Any] | None) -> dict[str, Any] | None:
    if value is None or value.get("type") == "text":
        return None
    kind = value.get("type")
    if kind == "json_object":
        return value
    spec = value.get("json_schema")
    if kind != "json_schema" or not isinstance(spec, dict) or not isinstance(spec.get("name"), str):
        raise WireError(
            "response_format must be text, json_object or json_schema with a json_schema.name",
            "response_format",
        )
    if not isinstance(spec.get("schema", {}), dict):
        raise WireError("response_format.json_schema.schema must be an object", "response_format")
    return value


def _messages(messages: list[ChatMessage]) -> list[Message]:
    """The conversation in our messages; a tool message gets the name of the call it answers."""
    out: list[Message] = []
    names: dict[str, str] = {}
    for message in messages:
        role = message.role
        if role in ("system", "developer"):
            out.append(SystemMessage(content=message.text()))
        elif role == "user":
            out.append(UserMessage(content=message.text()))
        elif role == "assistant":
            calls = tuple(_call(call) for call in message.tool_calls or ())
            names.update((call.id, call.name) for call in calls)
            out.append(AssistantMessage(content=message.text(), tool_calls=calls))
        else:
            call_id = message.tool_call_id
            if not call_id:
                raise WireError("a tool message needs its tool_call_id", "messages")
            out.append(
                ToolMessage(
                    tool_call_id=call_id, name=names.get(call_id, ""), content=message.text()
                )
            )
    return out


def _call(call: _ToolCall) -> ToolCall:
    arguments = call.function.arguments
    if not isinstance(arguments, str):
        arguments = orjson.dumps(arguments).decode()
    return ToolCall(id=call.id, name=call.function.name, arguments=arguments or "{}")


def _tool_calls(calls: list[ToolCall]) -> list[dict[str, Any]]:
    return [
        {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
        for c in calls
    ]


def _completion(request_id: str, model: str, result: AgentResult) -> dict[str, Any]:
    calls = result.client_tool_calls
    message: dict[str, Any] = {"role": "assistant", "content": result.content or None}
    if not calls:
        message["content"] = result.content
    else:
        message["tool_calls"] = _tool_calls(calls)
    if result.reasoning:
        message["reasoning_content"] = result.reasoning
    return {
        "id": f"chatcmpl-{request_id}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": "tool_calls" if calls else "stop",
            }
        ],
        "usage": usage_object(result.usage),
    }


class ChunkEncoder:
    """Encodes a run's events as ``chat.completion.chunk`` SSE lines.

    Text becomes content deltas (the first also carries the role), reasoning becomes
    ``reasoning_content`` deltas (the field DeepSeek, vLLM and litellm's clients read); the
    agent's own tool calls are its business and are not sent; an error becomes an
    ``{"error": ...}`` event, which OpenAI clients raise; ``done`` becomes the client tools'
    calls (as OpenAI streams them: per call a delta with its id and name, then one with its
    arguments), the final chunk, the usage chunk if asked, and ``[DONE]``.
    """

    media_type = "text/event-stream"
    heartbeat = HEARTBEAT
    headers: Mapping[str, str] = {}
    __slots__ = ("_created", "_head", "_include_usage", "_model", "_started")

    def __init__(self, request_id: str, model: str, include_usage: bool) -> None:
        self._created = int(time.time())
        self._model = model
        self._include_usage = include_usage
        self._started = False
        self._head = orjson.dumps(
            {
                "id": f"chatcmpl-{request_id}",
                "object": "chat.completion.chunk",
                "created": self._created,
                "model": model,
            }
        )[:-1]

    def opening(self) -> bytes:
        return b""

    def encode(self, event: AgentEvent) -> bytes:
        if type(event) is MessageEvent or type(event) is ReasoningEvent:
            field = "content" if type(event) is MessageEvent else "reasoning_content"
            delta = {field: event.text}
            if not self._started:
                self._started = True
                delta["role"] = "assistant"
            return self._chunk([{"index": 0, "delta": delta, "finish_reason": None}])
        if type(event) is ErrorEvent:
            server_side = STATUS_BY_CODE.get(event.code, 500) >= 500
            kind = "server_error" if server_side else "invalid_request_error"
            error = {"message": event.message, "type": kind, "param": None, "code": event.code}
            return b"data: " + orjson.dumps({"error": error}) + b"\n\n"
        if type(event) is DoneEvent:
            return self._done(event)
        return b""

    def _delta(self, delta: dict[str, Any]) -> bytes:
        if not self._started:
            self._started = True
            delta["role"] = "assistant"
        return self._chunk([{"index": 0, "delta": delta, "finish_reason": None}])

    def _done(self, event: DoneEvent) -> bytes:
        if event.finish_reason == "error":
            return b"data: [DONE]\n\n"
        parts = []
        for index, call in enumerate(event.client_tool_calls):
            head = {"index": index, "id": call.id, "type": "function",
                    "function": {"name": call.name, "arguments": ""}}  # fmt: skip
            parts.append(self._delta({"tool_calls": [head]}))
            arguments = {"index": index, "function": {"arguments": call.arguments}}
            parts.append(self._delta({"tool_calls": [arguments]}))
        finish = "tool_calls" if event.client_tool_calls else "stop"
        parts.append(self._chunk([{"index": 0, "delta": {}, "finish_reason": finish}]))
        if self._include_usage:
            parts.append(self._chunk([], usage=usage_object(event.usage)))
        parts.append(b"data: [DONE]\n\n")
        return b"".join(parts)

    def _chunk(self, choices: list[dict[str, Any]], usage: dict[str, Any] | None = None) -> bytes:
        tail: dict[str, Any] = {"choices": choices}
        if usage is not None:
            tail["usage"] = usage
        return b"data: " + self._head + b"," + orjson.dumps(tail)[1:] + b"\n\n"
