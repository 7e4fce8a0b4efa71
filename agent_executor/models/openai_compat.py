"""``OpenAICompatModel``: the fast path to OpenAI and every OpenAI-compatible server.

It speaks the Chat Completions streaming protocol directly, over keep-alive HTTP/1.1
connections of its own (``_http.py``: an open stream holds about 9.5 KiB there against 23
KiB in aiohttp's client, docs/benchmarks.md), the pool sized by ``max_connections``, and does the
least work per chunk: bytes are split into lines in bulk, and each ``data:`` line is decoded by
msgspec into the few fields a turn reads (the chunk's id, model and the like are skipped, not
built: docs/benchmarks.md). It serves OpenAI, vLLM, Ollama,
llama.cpp's server, DeepSeek, Groq, Together, OpenRouter and Azure OpenAI (``base_url`` of the
deployment, ``query={"api-version": ...}``, ``headers={"api-key": ...}``).

Behaviour is the same as ``LiteLLMModel``'s: failures become :class:`ModelError` with the same
retry classification (the executor retries before the first chunk), usage is requested with
``stream_options.include_usage``, and tool-call fragments go to the executor's one assembler.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping
from ssl import SSLContext
from typing import Any

import msgspec
import orjson

from ..errors import ConfigurationError, ModelError, UnsupportedRequestError, retryable_status
from ..messages import Usage, to_openai_messages
from ._connections import ConnectionPool
from ._http import Response
from .base import ModelChunk, ModelRequest, ToolCallDelta

__all__ = ["OpenAICompatModel"]

OPENAI_BASE_URL = "https://api.openai.com/v1"


class OpenAICompatModel:
    """A model behind an OpenAI-compatible ``/chat/completions`` endpoint.

    ``model`` is sent as is (an ``openai/`` prefix is removed, as litellm does); ``name`` (for
    metrics and logs) defaults to the string given. ``api_key`` defaults to ``OPENAI_API_KEY``
    for OpenAI's own URL. Other keyword arguments (``temperature``, ``max_tokens``, ...) are
    sent in every request body. ``ssl`` is the TLS context for ``https`` (the system's
    certificates by default).
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        headers: Mapping[str, str] | None = None,
        query: Mapping[str, str] | None = None,
        max_connections: int | None = None,
        connect_timeout: float = 10.0,
        name: str | None = None,
        ssl: SSLContext | None = None,
        **params: Any,
    ) -> None:
        if "session" in params:
            raise TypeError(
                "OpenAICompatModel has no aiohttp session any more: it keeps its own "
                "connections (pass ssl= for a TLS context, max_connections= for the pool)"
            )
        self._name = name or model
        self._model = model.removeprefix("openai/")
        base = (base_url or OPENAI_BASE_URL).rstrip("/")
        self._url = base if base.endswith("/chat/completions") else f"{base}/chat/completions"
        if api_key is None and base_url is None:
            api_key = os.environ.get("OPENAI_API_KEY")
        self._headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._headers.update(headers or {})
        self._query = dict(query or {})
        self._params = params
        self._max_connections = max_connections
        self._pool_fixed = max_connections is not None
        self._connect_timeout = connect_timeout
        self._ssl = ssl
        self._pool: ConnectionPool | None = None
        try:
            self._connections()  # a bad URL or header is refused here, not at the first call
        except ValueError as exc:
            raise ConfigurationError(f"OpenAICompatModel({model!r}): {exc}") from None

    @property
    def name(self) -> str:
        """The model name used in metrics and logs."""
        return self._name

    async def aclose(self) -> None:
        """Close the model's connections."""
        if self._pool is not None:
            await self._pool.aclose()
            self._pool = None

    def reserve_connections(self, count: int) -> None:
        """Size the pool for ``count`` concurrent calls (an executor does this with its
        ``max_concurrency``), unless ``max_connections`` was given; before the first call."""
        if not self._pool_fixed:
            self._max_connections = max(self._max_connections or 0, count)
            if self._pool is not None:
                self._pool.set_limit(self._max_connections)

    def _connections(self) -> ConnectionPool:
        pool = self._pool
        if pool is None:
            pool = self._pool = ConnectionPool(
                self._url,
                headers=self._headers,
                query=self._query,
                limit=self._max_connections or 100,
                connect_timeout=self._connect_timeout,
                ssl_context=self._ssl,
            )
        return pool

    def _body(self, request: ModelRequest) -> bytes:
        body: dict[str, Any] = {
            **self._params,
            **request.params,
            "model": self._model,
            "messages": to_openai_messages(request.messages),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if request.tools:
            body["tools"] = request.tools
        # A copy of its own size: orjson's result keeps its whole write buffer (4 KiB at least),
        # and the body lives as long as the stream.
        return bytes(memoryview(orjson.dumps(body)))

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        """Stream one completion."""
        response: Response | None = None
        try:
            response = await self._connections().post(self._body(request))
            if response.status != 200:
                raise await _http_error(response)
            # The SSE body, parsed here rather than in a generator of its own (one
            # async-generator hop less per chunk): bytes → lines → ``data:`` payloads →
            # chunks, until ``[DONE]`` or the end of the body. Comments (``: ping``),
            # ``event:`` lines and blank lines are skipped; CRLF ends are stripped. The bytes
            # read are dropped once split: a lagging reader's backlog is held once, as lines,
            # while its chunks are yielded one by one, not twice.
            read = response.read
            pending = b""
            reasoning = _Reasoning()
            while data := await read():
                lines = (pending + data).split(b"\n") if pending else data.split(b"\n")
                del data
                pending = lines.pop()
                for line in lines:
                    if not line or not line.startswith(b"data:"):  # the blank line of each
                        continue
                    payload = line[5:].strip()
                    if payload == b"[DONE]":
                        await response.finish()  # the body's end: the connection is reused
                        if reasoning.parts:
                            yield reasoning.chunk()
                        return
                    if payload:
                        chunk = _convert(_decode(payload), reasoning)
                        if chunk is not None:
                            yield chunk
                # Nothing of this read stays while the next is awaited: a lagging stream
                # held its last read's lines there (about 8 KiB each at 9,000 streams).
                del lines
                line = payload = b""
                chunk = None
            payload = pending[5:].strip() if pending.startswith(b"data:") else b""
            if payload and payload != b"[DONE]":
                chunk = _convert(_decode(payload), reasoning)
                if chunk is not None:
                    yield chunk
            if reasoning.parts:
                yield reasoning.chunk()
        except ModelError:
            raise
        except OSError as exc:  # also the client's HTTPProtocolError and TimeoutError
            raise ModelError(f"{type(exc).__name__}: {exc}", retryable=True) from exc
        except (msgspec.MsgspecError, AttributeError, TypeError) as exc:
            raise ModelError(f"the model sent a malformed chunk: {exc}") from exc
        finally:
            if response is not None:
                response.release()


class _Reasoning:
    """A turn's reasoning text and the field it came in, to be sent back under that name."""

    __slots__ = ("key", "parts")

    def __init__(self) -> None:
        self.key = "reasoning_content"
        self.parts: list[str] = []

    def chunk(self) -> ModelChunk:
        return ModelChunk(provider_fields={self.key: "".join(self.parts)})


class _Delta(msgspec.Struct, gc=False):
    content: Any = None
    tool_calls: Any = None
    reasoning_content: Any = None
    reasoning: Any = None


class _Choice(msgspec.Struct, gc=False):
    delta: _Delta | None = None
    finish_reason: Any = None
    error: Any = None


class _Chunk(msgspec.Struct, gc=False):
    """The fields of a ``chat.completion.chunk`` that a turn reads; the rest is skipped."""

    choices: list[_Choice] | None = None
    usage: Any = None
    error: Any = None
    x_groq: Any = None


_decode = msgspec.json.Decoder(_Chunk).decode
_NO_DELTA = _Delta()


def _convert(obj: _Chunk, reasoning: _Reasoning) -> ModelChunk | None:
    """A ``chat.completion.chunk`` → :class:`ModelChunk` (``None`` if it holds nothing).

    An ``error`` object, or a ``finish_reason`` of ``"error"``, is the provider reporting a
    failure on an HTTP 200 stream (OpenRouter, OpenAI): it raises, never ends the turn as if
    it had succeeded.
    """
    choices = obj.choices
    raw_usage = obj.usage
    usage = _usage(raw_usage) if raw_usage else None
    if not choices:
        if obj.error:
            raise _stream_error(obj.error)
        return ModelChunk(usage=usage) if usage else None
    choice = choices[0]
    delta = choice.delta or _NO_DELTA
    text = delta.content or None
    finish = choice.finish_reason
    raw_calls = delta.tool_calls
    if (
        text is not None
        and finish is None
        and not usage
        and raw_calls is None
        and delta.reasoning_content is None
        and delta.reasoning is None
        and not obj.error
    ):
        return ModelChunk(text)  # the common case: a bare text delta
    if obj.error:
        raise _stream_error(obj.error)
    thought = _reasoning_delta(delta, reasoning)
    if finish:
        if finish == "error":
            raise _stream_error(choice.error or {"message": "finish_reason error"})
        if usage is None:
            usage = _groq_usage(obj)
    calls = tuple(_delta(call) for call in raw_calls) if raw_calls else None
    if not (text or calls or finish or usage or thought):
        return None
    return ModelChunk(
        text=text, tool_calls=calls, finish_reason=finish, usage=usage, reasoning=thought
    )


def _reasoning_delta(delta: _Delta, reasoning: _Reasoning) -> str | None:
    """Reasoning arrives as ``reasoning_content`` (DeepSeek, SGLang, older vLLM) or
    ``reasoning`` (vLLM, OpenRouter, Ollama); it goes back under the same name."""
    for key, thought in (
        ("reasoning_content", delta.reasoning_content),
        ("reasoning", delta.reasoning),
    ):
        if thought and isinstance(thought, str):
            reasoning.key = key
            reasoning.parts.append(thought)
            return thought
    return None


def _groq_usage(obj: _Chunk) -> Usage | None:
    """Groq reports a stream's usage in ``x_groq.usage`` on its last chunk."""
    extra = obj.x_groq
    raw = extra.get("usage") if isinstance(extra, dict) else None
    return _usage(raw) if isinstance(raw, dict) else None


_CALL_KEYS = frozenset(("id", "index", "type", "function"))


def _delta(call: dict[str, Any]) -> ToolCallDelta:
    function = call.get("function") or {}
    arguments = function.get("arguments")
    if arguments is not None and not isinstance(arguments, str):
        # llama.cpp and Venice send the arguments as a JSON object, not as its text.
        arguments = orjson.dumps(arguments).decode()
    extra = {k: v for k, v in call.items() if k not in _CALL_KEYS and v is not None}
    return ToolCallDelta(
        index=call.get("index"),
        id=call.get("id") or None,
        name=function.get("name") or None,
        arguments=arguments or None,
        provider_fields=extra or None,
    )


def _stream_error(error: Any) -> ModelError:
    """An error reported inside an HTTP 200 stream → :class:`ModelError`.

    Retryable unless its code says the request itself is wrong; the executor retries only
    when nothing of the turn was streamed yet.
    """
    detail = error if isinstance(error, dict) else {"message": str(error)}
    code = detail.get("code") or detail.get("type")
    status = code if isinstance(code, int) else None
    if isinstance(code, str) and code.isdigit():
        status = int(code)
    if status is not None:
        retryable = retryable_status(status)
    else:
        retryable = not any(word in str(code).lower() for word in _FINAL_CODES)
    message = detail.get("message") or str(error)
    return ModelError(
        f"the model reported an error mid-stream: {message}",
        retryable=retryable,
        status_code=status,
    )


_FINAL_CODES = ("invalid", "auth", "permission", "not_found", "context_length", "content_filter")


def _usage(raw: dict[str, Any]) -> Usage | None:
    prompt = raw.get("prompt_tokens") or 0
    completion = raw.get("completion_tokens") or 0
    if not (prompt or completion):
        return None
    details = raw.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    return Usage(input_tokens=prompt, output_tokens=completion, cached_input_tokens=cached or 0)


async def _http_error(response: Response) -> ModelError:
    """A non-200 answer → :class:`ModelError`, classified like litellm's by status."""
    status = response.status
    text = (await response.read_all()).decode("utf-8", errors="replace")[:2000]
    try:
        detail = orjson.loads(text).get("error", {})
        message = detail.get("message") if isinstance(detail, dict) else str(detail)
    except (orjson.JSONDecodeError, AttributeError):
        message = None
    retryable = retryable_status(status)
    if status in (400, 422) and message:
        refused = next((name for name in _ASKED if name in message), None)
        if refused is not None:
            return UnsupportedRequestError(
                f"the model's endpoint refused {refused} (HTTP {status})", feature=refused
            )
    return ModelError(
        f"HTTP {status}: {message or text or response.reason}",
        retryable=retryable,
        status_code=status,
        retry_after=_retry_after(response.retry_after),
    )


_ASKED = ("response_format", "tool_choice", "parallel_tool_calls")
"""Request fields that change the answer: an endpoint refusing one is told apart."""


def _retry_after(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None
