"""A scripted, OpenAI-compatible Chat Completions server for tests and benchmarks.

Usage::

    async with FakeOpenAIServer() as server:
        server.script(
            Stream(text_stream(["Hel", "lo"], usage=(10, 2))),
            Status(503),
        )
        ...  # point the client at ``server.base_url``
        assert len(server.requests) == 2

Each request to ``POST /v1/chat/completions`` (or ``/chat/completions``) consumes
the next scripted response.  When the script is exhausted the server answers
HTTP 500 with ``"fake server script exhausted"`` so that unexpected extra
requests (e.g. hidden retries) fail loudly.

``POST /v1/embeddings`` is not scripted: it answers every request in OpenAI's wire format
with :func:`hashed_embedding` vectors (a bag of stemmed words, feature-hashed), so similar
wordings get similar vectors and a vector search has something real to rank.

The server binds 127.0.0.1 only.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import itertools
import json
import math
import re
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, TypeAlias

from aiohttp import web

from .local import serve_locally

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from types import TracebackType

__all__ = [
    "FakeOpenAIServer",
    "Json",
    "Raw",
    "Response",
    "Status",
    "Stream",
    "chat_completion",
    "chunk",
    "error_body",
    "text_stream",
    "tool_call_stream",
    "usage_chunk",
]

JsonDict: TypeAlias = dict[str, Any]

EXHAUSTED_MESSAGE: Final = "fake server script exhausted"
DEFAULT_MODEL: Final = "test-model"
DEFAULT_CREATED: Final = 1_700_000_000

# Realistic OpenAI error bodies per status: (message, type, code).  Note that
# litellm maps errors partly by *message text* (e.g. "invalid_request_error"
# without "Incorrect API key provided" becomes BadRequestError whatever the
# status), so these mimic what OpenAI actually sends.
_ERRORS: Final[Mapping[int, tuple[str, str, str | None]]] = {
    400: ("Invalid request.", "invalid_request_error", None),
    401: ("Incorrect API key provided: sk-test.", "invalid_request_error", "invalid_api_key"),
    403: ("Forbidden.", "invalid_request_error", "unsupported_country_region_territory"),
    404: (
        "The model `test-model` does not exist or you do not have access to it.",
        "invalid_request_error",
        "model_not_found",
    ),
    429: (
        "Rate limit reached for test-model on requests per min (RPM). Please try again later.",
        "requests",
        "rate_limit_exceeded",
    ),
    500: (
        "The server had an error while processing your request. Sorry about that!",
        "server_error",
        None,
    ),
    502: ("Bad gateway.", "server_error", None),
    503: ("The server is overloaded or not ready yet.", "server_error", None),
}


# --------------------------------------------------------------------------- #
# Response kinds
# --------------------------------------------------------------------------- #


@dataclass(frozen=True)
class Stream:
    """A ``text/event-stream`` answer: each chunk is sent as ``data: {json}\\n\\n``
    (a ``str`` chunk is sent as it is, e.g. to send malformed JSON).

    ``drop_after=N`` abruptly closes the TCP connection after N chunks (no
    ``[DONE]``, no chunked-encoding terminator).  ``stall_after=N`` stops sending
    after N chunks and waits until the client disconnects or the server stops.
    ``latency`` delays the response headers (time to first byte); ``linger`` delays the end
    of the body after ``[DONE]``.
    """

    chunks: Sequence[JsonDict | str]
    delay: float = 0.0
    drop_after: int | None = None
    stall_after: int | None = None
    latency: float = 0.0
    linger: float = 0.0


@dataclass(frozen=True)
class Status:
    """A plain (non-streaming) HTTP error answer with an OpenAI-style error body."""

    status: int
    body: JsonDict | None = None
    headers: dict[str, str] | None = None
    latency: float = 0.0


@dataclass(frozen=True)
class Json:
    """A non-streaming HTTP 200 JSON answer (for ``stream: false`` requests)."""

    body: JsonDict
    headers: dict[str, str] = field(default_factory=dict)
    latency: float = 0.0


@dataclass(frozen=True)
class Raw:
    """An answer put on the wire byte for byte, as a provider recorded it (SSE comments, CRLF,
    ``event:`` lines, no ``[DONE]``, ...). ``body`` may be a sequence of parts: they are written
    ``pause`` seconds apart, so the client reads one event split across network reads."""

    body: bytes | Sequence[bytes]
    status: int = 200
    content_type: str = "text/event-stream"
    headers: dict[str, str] = field(default_factory=dict)
    pause: float = 0.02
    latency: float = 0.0


Response: TypeAlias = Stream | Status | Json | Raw


def error_body(status: int, message: str | None = None, *, code: str | None = None) -> JsonDict:
    """OpenAI-style error body ``{"error": {message, type, param, code}}`` for ``status``."""
    default_message, err_type, default_code = _ERRORS.get(
        status, (f"fake upstream error (HTTP {status})", "server_error", None)
    )
    return {
        "error": {
            "message": message if message is not None else default_message,
            "type": err_type,
            "param": None,
            "code": code if code is not None else default_code,
        }
    }


# --------------------------------------------------------------------------- #
# Chunk builders (real ``chat.completion.chunk`` shape)
# --------------------------------------------------------------------------- #

_ids = itertools.count(1)


def _new_id() -> str:
    return f"chatcmpl-fake{next(_ids):06d}"


def chunk(
    delta: JsonDict,
    *,
    finish_reason: str | None = None,
    id: str = "chatcmpl-fake",
    model: str = DEFAULT_MODEL,
    created: int = DEFAULT_CREATED,
    with_usage_field: bool = False,
) -> JsonDict:
    """One ``chat.completion.chunk`` with a single choice carrying ``delta``."""
    out: JsonDict = {
        "id": id,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "system_fingerprint": None,
        "choices": [
            {
                "index": 0,
                "delta": delta,
                "logprobs": None,
                "finish_reason": finish_reason,
            }
        ],
    }
    if with_usage_field:
        out["usage"] = None
    return out


def usage_chunk(
    prompt_tokens: int,
    completion_tokens: int,
    *,
    id: str = "chatcmpl-fake",
    model: str = DEFAULT_MODEL,
    created: int = DEFAULT_CREATED,
) -> JsonDict:
    """The trailing usage chunk OpenAI sends with ``stream_options.include_usage``."""
    return {
        "id": id,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "system_fingerprint": None,
        "choices": [],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def _finish(
    out: list[JsonDict],
    finish_reason: str | None,
    usage: tuple[int, int] | None,
    *,
    id: str,
    model: str,
) -> list[JsonDict]:
    with_usage = usage is not None
    if finish_reason is not None:
        out.append(
            chunk(
                {},
                finish_reason=finish_reason,
                id=id,
                model=model,
                with_usage_field=with_usage,
            )
        )
    if usage is not None:
        out.append(usage_chunk(usage[0], usage[1], id=id, model=model))
    return out


def text_stream(
    text_pieces: Sequence[str],
    *,
    finish_reason: str | None = "stop",
    usage: tuple[int, int] | None = None,
    model: str = DEFAULT_MODEL,
) -> list[JsonDict]:
    """Chunks for a plain text answer.

    First chunk is ``{"role": "assistant", "content": ""}`` (as OpenAI sends),
    then one chunk per piece, then an empty delta with ``finish_reason`` and,
    if ``usage=(prompt, completion)`` is given, a ``choices: []`` usage chunk.
    """
    cid = _new_id()
    wu = usage is not None
    out = [
        chunk(
            {"role": "assistant", "content": ""},
            id=cid,
            model=model,
            with_usage_field=wu,
        )
    ]
    out.extend(chunk({"content": p}, id=cid, model=model, with_usage_field=wu) for p in text_pieces)
    return _finish(out, finish_reason, usage, id=cid, model=model)


def _split(s: str, size: int) -> list[str]:
    return [s[i : i + size] for i in range(0, len(s), size)]


def tool_call_stream(
    calls: Sequence[tuple[str, str, Mapping[str, Any] | str]],
    *,
    fragment_size: int = 1,
    interleave: bool = False,
    text_before: Sequence[str] = (),
    finish_reason: str | None = "tool_calls",
    usage: tuple[int, int] | None = None,
    model: str = DEFAULT_MODEL,
) -> list[JsonDict]:
    """Chunks for an answer with tool calls ``(id, name, arguments)``.

    ``arguments`` may be a mapping (JSON-serialised compactly) or a raw string
    (e.g. deliberately malformed JSON).  Per call, the first delta carries
    ``index``, ``id``, ``type`` and ``function: {name, arguments: ""}``; later
    deltas carry only ``index`` and ``function: {arguments: <fragment>}``.
    With ``interleave=True`` the per-call delta sequences are emitted
    round-robin (call 0, call 1, ..., call 0, ...).
    """
    if fragment_size < 1:
        raise ValueError("fragment_size must be >= 1")
    cid = _new_id()
    wu = usage is not None

    per_call: list[list[JsonDict]] = []
    for index, (call_id, name, arguments) in enumerate(calls):
        args = (
            arguments
            if isinstance(arguments, str)
            else json.dumps(arguments, separators=(",", ":"))
        )
        seq: list[JsonDict] = [
            {
                "index": index,
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": ""},
            }
        ]
        seq.extend(
            {"index": index, "function": {"arguments": frag}}
            for frag in _split(args, fragment_size)
        )
        per_call.append(seq)

    ordered: list[JsonDict]
    if interleave:
        ordered = [d for group in itertools.zip_longest(*per_call) for d in group if d is not None]
    else:
        ordered = [d for seq in per_call for d in seq]

    out: list[JsonDict] = []
    if text_before:
        out.append(
            chunk(
                {"role": "assistant", "content": ""},
                id=cid,
                model=model,
                with_usage_field=wu,
            )
        )
        out.extend(
            chunk({"content": p}, id=cid, model=model, with_usage_field=wu) for p in text_before
        )
    for i, tc in enumerate(ordered):
        delta: JsonDict = {"tool_calls": [tc]}
        if i == 0 and not text_before:
            delta = {"role": "assistant", "content": None, **delta}
        out.append(chunk(delta, id=cid, model=model, with_usage_field=wu))
    return _finish(out, finish_reason, usage, id=cid, model=model)


def chat_completion(
    content: str | None = None,
    *,
    tool_calls: Sequence[tuple[str, str, Mapping[str, Any] | str]] = (),
    finish_reason: str | None = None,
    usage: tuple[int, int] = (0, 0),
    model: str = DEFAULT_MODEL,
) -> JsonDict:
    """A non-streaming ``chat.completion`` body (use with :class:`Json`)."""
    message: JsonDict = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = [
            {
                "id": call_id,
                "type": "function",
                "function": {
                    "name": name,
                    "arguments": args
                    if isinstance(args, str)
                    else json.dumps(args, separators=(",", ":")),
                },
            }
            for call_id, name, args in tool_calls
        ]
    if finish_reason is None:
        finish_reason = "tool_calls" if tool_calls else "stop"
    return {
        "id": _new_id(),
        "object": "chat.completion",
        "created": DEFAULT_CREATED,
        "model": model,
        "system_fingerprint": None,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": finish_reason,
            }
        ],
        "usage": {
            "prompt_tokens": usage[0],
            "completion_tokens": usage[1],
            "total_tokens": usage[0] + usage[1],
        },
    }


EMBEDDING_DIMENSIONS: Final = 512
_WORD_RE = re.compile(r"[a-z0-9]+")


def hashed_embedding(text: str) -> list[float]:
    """A deterministic embedding: the text's words, lower-cased and stemmed (Snowball English,
    stop words dropped), counted into 512 buckets by a hash of each word with a hashed sign
    (the hashing trick of Weinberger et al., 2009). Not normalised: the client must do that."""
    stemmer = _stemmer()
    vector = [0.0] * EMBEDDING_DIMENSIONS
    for word in _WORD_RE.findall(text.lower()):
        if word in _STOP_WORDS:
            continue
        digest = hashlib.blake2b(stemmer.stemWord(word).encode(), digest_size=8).digest()
        bucket = int.from_bytes(digest[:4], "little") % EMBEDDING_DIMENSIONS
        vector[bucket] += 1.0 if digest[4] & 1 else -1.0
    return vector


@functools.cache
def _stemmer() -> Any:
    import Stemmer  # PyStemmer, from the [retrieval] extra

    return Stemmer.Stemmer("english")


_STOP_WORDS: Final = frozenset(
    (
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "do",
        "does",
        "for",
        "from",
        "how",
        "i",
        "in",
        "is",
        "it",
        "of",
        "on",
        "or",
        "the",
        "this",
        "to",
        "what",
        "when",
        "which",
        "who",
        "why",
        "with",
    )
)


# --------------------------------------------------------------------------- #
# Server
# --------------------------------------------------------------------------- #


class FakeOpenAIServer:
    """Scripted OpenAI-compatible server on ``127.0.0.1:<free port>``."""

    def __init__(self, *, host: str = "127.0.0.1") -> None:
        self._host = host
        self._queue: deque[Response] = deque()
        self._responder: Callable[[JsonDict], Response] | None = None
        self._runner: web.AppRunner | None = None
        self._stopping = asyncio.Event()
        self._port: int | None = None
        #: JSON bodies of every request received, in order.
        self.requests: list[JsonDict] = []
        #: Headers of every request received (parallel to ``requests``).
        self.request_headers: list[dict[str, str]] = []
        self.request_paths: list[str] = []
        self.client_ports: list[int | None] = []
        #: JSON bodies of the requests to ``/v1/embeddings``.
        self.embedding_requests: list[JsonDict] = []
        #: Number of streams cut by ``drop_after`` / currently stalled.
        self.dropped = 0
        self.stalled = 0

    # -- scripting --------------------------------------------------------- #

    def script(self, *responses: Response) -> None:
        """Queue responses; each request consumes the next one."""
        self._queue.extend(responses)

    def respond_with(self, responder: Callable[[JsonDict], Response] | None) -> None:
        """Answer every request the script does not cover with ``responder(body)`` (a model
        that decides from what it is asked; see tests/fakes/tool_model.py)."""
        self._responder = responder

    @property
    def pending(self) -> int:
        """Number of scripted responses not yet consumed."""
        return len(self._queue)

    # -- lifecycle --------------------------------------------------------- #

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("server not started")
        return self._port

    @property
    def base_url(self) -> str:
        return f"http://{self._host}:{self.port}/v1"

    @property
    def root_url(self) -> str:
        """The server's root (for clients that append ``/v1/...`` themselves, as litellm does
        for Anthropic)."""
        return f"http://{self._host}:{self.port}"

    async def start(self) -> None:
        """Start serving; after :meth:`stop`, again on the same port (a provider coming back)."""
        self._stopping.clear()
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._handle)
        app.router.add_post("/chat/completions", self._handle)
        app.router.add_post("/v1/messages", self._handle)  # Anthropic's Messages API
        app.router.add_post("/v1/embeddings", self._embeddings)
        self._runner, self._port = await serve_locally(app, self._host, self._port or 0)

    async def _embeddings(self, request: web.Request) -> web.Response:
        """OpenAI's embeddings response (its API reference's shape: ``object: "list"``,
        ``data`` items with ``object``, ``index``, ``embedding``; ``model``; ``usage``)."""
        body = await request.json()
        self.embedding_requests.append(body)
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        data = [
            {"object": "embedding", "index": i, "embedding": hashed_embedding(text)}
            for i, text in enumerate(texts)
        ]
        tokens = sum(len(text.split()) for text in texts)
        return web.json_response(
            {
                "object": "list",
                "data": list(reversed(data)),  # order by "index", not by position
                "model": body["model"],
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            }
        )

    async def stop(self) -> None:
        self._stopping.set()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeOpenAIServer:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    # -- request handling -------------------------------------------------- #

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = {"_raw": raw.decode("utf-8", "replace")}
        self.requests.append(body if isinstance(body, dict) else {"_json": body})
        self.request_headers.append(dict(request.headers))
        self.request_paths.append(request.path_qs)
        peer = request.transport.get_extra_info("peername") if request.transport else None
        self.client_ports.append(peer[1] if peer else None)

        if not self._queue and self._responder is not None:
            self._queue.append(self._responder(self.requests[-1]))
        if not self._queue:
            return web.json_response(
                error_body(500, EXHAUSTED_MESSAGE, code="script_exhausted"),
                status=500,
            )
        resp = self._queue.popleft()
        if resp.latency > 0 and not await self._wait(request, resp.latency):
            return self._close(request, web.Response(status=499))
        if isinstance(resp, Status):
            return web.json_response(
                resp.body if resp.body is not None else error_body(resp.status),
                status=resp.status,
                headers=resp.headers,
            )
        if isinstance(resp, Json):
            return web.json_response(resp.body, headers=resp.headers)
        if isinstance(resp, Raw):
            return await self._raw(request, resp)
        return await self._stream(request, resp)

    @staticmethod
    async def _raw(request: web.Request, spec: Raw) -> web.StreamResponse:
        resp = web.StreamResponse(
            status=spec.status, headers={"Content-Type": spec.content_type, **spec.headers}
        )
        await resp.prepare(request)
        parts = [spec.body] if isinstance(spec.body, bytes) else list(spec.body)
        for n, part in enumerate(parts):
            if n:
                await asyncio.sleep(spec.pause)
            await resp.write(part)
        await resp.write_eof()
        return resp

    async def _stream(self, request: web.Request, spec: Stream) -> web.StreamResponse:
        resp = web.StreamResponse(
            status=200,
            headers={
                "Content-Type": "text/event-stream; charset=utf-8",
                "Cache-Control": "no-cache",
            },
        )
        await resp.prepare(request)
        try:
            for n, data in enumerate(spec.chunks):
                if spec.drop_after is not None and n >= spec.drop_after:
                    return self._drop(request, resp)
                if spec.stall_after is not None and n >= spec.stall_after:
                    return await self._stall(request, resp)
                if n and spec.delay:
                    await asyncio.sleep(spec.delay)
                payload = data if isinstance(data, str) else json.dumps(data)
                await resp.write(f"data: {payload}\n\n".encode())
            if spec.drop_after is not None:
                return self._drop(request, resp)
            if spec.stall_after is not None:
                return await self._stall(request, resp)
            await resp.write(b"data: [DONE]\n\n")
            if spec.linger:
                await asyncio.sleep(spec.linger)  # the body's end arrives after [DONE]
            await resp.write_eof()
        except ConnectionError:
            pass  # client went away
        return resp

    @staticmethod
    def _close(request: web.Request, resp: web.StreamResponse) -> web.StreamResponse:
        transport = request.transport
        if transport is not None:
            transport.close()
        return resp

    def _drop(self, request: web.Request, resp: web.StreamResponse) -> web.StreamResponse:
        self.dropped += 1
        return self._close(request, resp)  # no [DONE], no chunked terminator

    async def _wait(self, request: web.Request, seconds: float) -> bool:
        """Sleep up to ``seconds``; False if the client left or the server is stopping."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        while not self._stopping.is_set():
            transport = request.transport
            if transport is None or transport.is_closing():
                return False
            remaining = deadline - loop.time()
            if remaining <= 0:
                return True
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), timeout=min(remaining, 0.05))
        return False

    async def _stall(self, request: web.Request, resp: web.StreamResponse) -> web.StreamResponse:
        self.stalled += 1
        try:
            await self._wait(request, math.inf)
        finally:
            self.stalled -= 1
        return self._close(request, resp)
