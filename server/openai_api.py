"""OpenAI-compatible endpoints: ``POST /v1/chat/completions`` and ``GET /v1/models``.

Any OpenAI client can talk to an agent: the request's ``model`` names a configured agent
(``default`` is the default one), the agent runs its own tools server-side, and the client sees
the answer in OpenAI's format — ``chat.completion`` or a stream of ``chat.completion.chunk``
ending in ``data: [DONE]``. Errors use OpenAI's shape and statuses (400, 401, 404, 429 with
``Retry-After``, 500, 503), because OpenAI clients retry 429 and 5xx by themselves. For the
same reason a streamed request is refused with an HTTP status, not an in-stream error, when its
run fails before the first event (a guard's rejection, a full queue, an unreachable model): the
first event is taken before the response starts, as on ``/api/chat/stream``.
"""

from __future__ import annotations

import time
from typing import Any, Literal

import orjson
from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field

from agent_executor import (
    AgentCommand,
    AgentEvent,
    AgentResult,
    AssistantMessage,
    DoneEvent,
    ErrorEvent,
    ErrorInfo,
    Message,
    MessageEvent,
    ReasoningEvent,
    SystemMessage,
    Usage,
    UserMessage,
)

from .errors import STATUS_BY_CODE, openai_error, retry_after_seconds, status_for
from .request import Caller, json_object, shutdown_refusal, validated
from .state import AGENTS, STATE

__all__ = ["add_openai_routes"]

_CREATED = int(time.time())


class _ContentPart(BaseModel):
    model_config = ConfigDict(extra="ignore")

    type: str
    text: str | None = None


class OpenAIMessage(BaseModel):
    """One message of an OpenAI chat request (text content only)."""

    model_config = ConfigDict(extra="ignore")

    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[_ContentPart] | None = None

    def text(self) -> str:
        if self.content is None or isinstance(self.content, str):
            return self.content or ""
        if any(part.type != "text" for part in self.content):
            raise ValueError("only text content parts are supported")
        return "".join(part.text or "" for part in self.content)


class ChatCompletionRequest(BaseModel):
    """The fields of OpenAI's chat completion request that an agent uses; others are ignored."""

    model_config = ConfigDict(extra="ignore")

    model: str
    messages: list[OpenAIMessage] = Field(min_length=1)
    stream: bool = False
    stream_options: dict[str, Any] | None = None
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    max_completion_tokens: int | None = None
    user: str | None = None
    n: int = 1
    tools: list[Any] | None = None
    functions: list[Any] | None = None


def add_openai_routes(app: web.Application) -> None:
    """Register the OpenAI-compatible endpoints on ``app``."""
    app.router.add_post("/v1/chat/completions", chat_completions)
    app.router.add_get("/v1/models", models)


async def models(request: web.Request) -> web.Response:
    """The configured agents, in OpenAI's list shape."""
    agents = request.app[AGENTS]
    names = ["default", *sorted(n for n in agents.agents if n != "default")]
    data = [
        {"id": n, "object": "model", "created": _CREATED, "owned_by": "agent-executor"}
        for n in names
    ]
    return web.json_response({"object": "list", "data": data})


async def chat_completions(request: web.Request) -> web.StreamResponse:
    """Run an agent for an OpenAI chat completion request."""
    caller = Caller.of(request)
    parsed = await _parse(request, caller)
    if isinstance(parsed, web.Response):
        return parsed
    body, command = parsed
    executor = request.app[AGENTS].get(None if body.model == "default" else body.model)
    if executor is None:
        return openai_error(
            404,
            f"The model `{body.model}` does not exist; see GET /v1/models",
            code="model_not_found",
            param="model",
        )
    refusal = shutdown_refusal(request, openai_error)
    if refusal is not None:
        return refusal
    if not body.stream:
        result = await caller.run(executor, command)
        if result.error is not None:
            return _run_error(result.error)
        return web.json_response(_completion(caller.request_id, body.model, result))
    include_usage = bool((body.stream_options or {}).get("include_usage"))
    encoder = ChunkEncoder(caller.request_id, body.model, include_usage)
    events = caller.stream(executor, command)
    return await request.app[STATE].streams.respond(request, events, encoder, _run_error)


async def _parse(
    request: web.Request, caller: Caller
) -> tuple[ChatCompletionRequest, AgentCommand] | web.Response:
    data = await json_object(request, openai_error, orjson.loads)
    if isinstance(data, web.Response):
        return data
    body = validated(ChatCompletionRequest, data, openai_error)
    if isinstance(body, web.Response):
        return body
    if body.tools or body.functions:
        return openai_error(
            400,
            "client-supplied tools are not supported: the agent runs its own tools on the server",
            param="tools",
        )
    if body.n != 1:
        return openai_error(400, "only n=1 is supported", param="n")
    try:
        command = _command(caller, body)
    except ValueError as exc:
        return openai_error(400, str(exc), param="messages")
    return body, command


def _command(caller: Caller, body: ChatCompletionRequest) -> AgentCommand:
    *history, last = body.messages
    if last.role != "user" or not last.text().strip():
        raise ValueError("the last message must be a non-empty user message")
    messages: list[Message] = []
    for message in history:
        text = message.text()
        if message.role in ("system", "developer"):
            messages.append(SystemMessage(content=text))
        elif message.role == "user":
            messages.append(UserMessage(content=text))
        elif message.role == "assistant":
            messages.append(AssistantMessage(content=text))
        else:
            raise ValueError("tool messages are not supported: the agent runs its own tools")
    params = {
        k: v
        for k, v in (
            ("temperature", body.temperature),
            ("top_p", body.top_p),
            ("max_tokens", body.max_tokens or body.max_completion_tokens),
        )
        if v is not None
    }
    return AgentCommand(
        user_prompt=last.text(),
        user_id=caller.user_id(body.user),
        messages=messages,
        model_params=params,
    )


def _run_error(error: ErrorInfo | ErrorEvent) -> web.Response:
    status = status_for(error)
    headers = {}
    if error.retry_after is not None or status in (429, 503):
        headers["Retry-After"] = str(retry_after_seconds(error.retry_after))
    return openai_error(status, error.message, code=error.code, **headers)


def _usage(usage: Usage | None) -> dict[str, Any]:
    """OpenAI's usage object; ``prompt_tokens_details.cached_tokens`` as OpenAI reports it,
    and ``cost_usd`` (ours, as LiteLLM's proxy adds ``cost``) when the cost is known."""
    prompt = usage.input_tokens if usage else 0
    completion = usage.output_tokens if usage else 0
    out: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    if usage is not None and usage.cached_input_tokens:
        out["prompt_tokens_details"] = {"cached_tokens": usage.cached_input_tokens}
    if usage is not None and usage.cost_usd is not None:
        out["cost_usd"] = usage.cost_usd
    return out


def _completion(request_id: str, model: str, result: AgentResult) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": result.content}
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
                "finish_reason": "stop",
            }
        ],
        "usage": _usage(result.usage),
    }


class ChunkEncoder:
    """Encodes a run's events as ``chat.completion.chunk`` SSE lines.

    Text becomes content deltas (the first also carries the role), reasoning becomes
    ``reasoning_content`` deltas (the field DeepSeek, vLLM and litellm's clients read); tool
    events are the agent's own business and are not sent; an error becomes an
    ``{"error": ...}`` event, which OpenAI clients raise; ``done`` becomes the final chunk,
    the usage chunk if asked, and ``[DONE]``.
    """

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

    def encode(self, event: AgentEvent) -> bytes:
        if isinstance(event, (MessageEvent, ReasoningEvent)):
            field = "content" if type(event) is MessageEvent else "reasoning_content"
            delta = {field: event.text}
            if not self._started:
                self._started = True
                delta["role"] = "assistant"
            return self._chunk([{"index": 0, "delta": delta, "finish_reason": None}])
        if isinstance(event, ErrorEvent):
            server_side = STATUS_BY_CODE.get(event.code, 500) >= 500
            kind = "server_error" if server_side else "invalid_request_error"
            error = {"message": event.message, "type": kind, "param": None, "code": event.code}
            return b"data: " + orjson.dumps({"error": error}) + b"\n\n"
        if isinstance(event, DoneEvent):
            parts = (
                []
                if event.finish_reason == "error"
                else [self._chunk([{"index": 0, "delta": {}, "finish_reason": "stop"}])]
            )
            if self._include_usage and event.finish_reason != "error":
                parts.append(self._chunk([], usage=_usage(event.usage)))
            parts.append(b"data: [DONE]\n\n")
            return b"".join(parts)
        return b""

    def _chunk(self, choices: list[dict[str, Any]], usage: dict[str, Any] | None = None) -> bytes:
        tail: dict[str, Any] = {"choices": choices}
        if usage is not None:
            tail["usage"] = usage
        return b"data: " + self._head + b"," + orjson.dumps(tail)[1:] + b"\n\n"
