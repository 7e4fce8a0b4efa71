"""The fast model client's own HTTP/1.1 (``agent_executor/models/_http.py``) against servers
it was not written with.

- uvicorn (h11) and the standard library's ``http.server`` serve the streams, so chunked,
  ``Content-Length`` and close-delimited bodies, keep-alive and ``Connection: close`` come
  from two independent HTTP implementations;
- aiohttp's server serves the TLS case, with a certificate made here by ``cryptography``;
- the chunked body with extensions and a trailer is RFC 9112's (section 7.1: ``chunk-ext``,
  ``trailer-section``), put on the wire byte for byte and also fed split at every byte;
- 1xx interim answers (RFC 9110, section 15.2) before the real one, gzip error bodies, a
  server closing mid-body, a malformed chunk size.
"""

from __future__ import annotations

import asyncio
import datetime
import gc
import gzip
import http.server
import ipaddress
import json
import ssl
import subprocess
import sys
import threading
import tracemalloc
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

from agent_executor import (
    ConfigurationError,
    ModelChunk,
    ModelError,
    OpenAICompatModel,
    UserMessage,
)
from agent_executor.models import ModelRequest, _connections
from agent_executor.models._connections import READ_MAX, READ_MIN, ConnectionPool
from agent_executor.models._http import Response

from .fakes.local import serve_locally
from .fakes.openai_server import text_stream

REQUEST = ModelRequest(messages=[UserMessage(content="hi")])


def _sse(chunks: list[dict[str, Any]]) -> list[bytes]:
    return [f"data: {json.dumps(c)}\n\n".encode() for c in chunks] + [b"data: [DONE]\n\n"]


async def _texts(model: OpenAICompatModel) -> list[str]:
    return [c.text async for c in model.stream(REQUEST) if c.text]


# -- uvicorn (h11): chunked streams and keep-alive ---------------------------------------------


@pytest.fixture
async def uvicorn_server() -> AsyncIterator[tuple[str, list[Any]]]:
    """An SSE endpoint on uvicorn; ``clients`` records each request's (host, port)."""
    clients: list[Any] = []

    async def completions(request: Request) -> StreamingResponse:
        clients.append(request.client)
        body = await request.json()
        pieces = body["messages"][0]["content"].split()

        async def frames() -> AsyncIterator[bytes]:
            for frame in _sse(text_stream(pieces, usage=(3, len(pieces)))):
                yield frame
                await asyncio.sleep(0)

        return StreamingResponse(frames(), media_type="text/event-stream")

    app = Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"])])
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="error", http="h11")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/v1", clients
    finally:
        server.should_exit = True
        await task


async def test_a_chunked_stream_from_uvicorn_arrives_delta_by_delta_on_one_connection(
    uvicorn_server: tuple[str, list[Any]],
) -> None:
    base_url, clients = uvicorn_server
    model = OpenAICompatModel("m", base_url=base_url)
    try:
        first = [c async for c in model.stream(ModelRequest([UserMessage(content="a b c")]))]
        second = await _texts(model)
    finally:
        await model.aclose()

    assert [c.text for c in first if c.text] == ["a", "b", "c"]
    assert [c.usage.output_tokens for c in first if c.usage] == [3]
    assert second == ["hi"]
    assert len(clients) == 2 and clients[0] == clients[1]  # kept alive and reused


# -- the standard library's http.server: Content-Length, close-delimited, errors -----------------


Handler = Callable[[http.server.BaseHTTPRequestHandler], None]


@pytest.fixture
def stdlib_server() -> Iterator[Callable[[Handler, str], str]]:
    """Serve one handler function with ``http.server`` (in a thread) as HTTP/1.0 or 1.1."""
    servers: list[http.server.ThreadingHTTPServer] = []

    def serve(answer: Handler, version: str = "HTTP/1.1") -> str:
        class _Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = version

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers["Content-Length"]))
                self.server.peers.append(self.client_address)  # type: ignore[attr-defined]
                answer(self)

            def log_message(self, *args: Any) -> None:
                pass

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        server.peers = []  # type: ignore[attr-defined]
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}/v1"

    yield serve
    for server in servers:
        server.shutdown()
        server.server_close()


async def test_content_length_and_close_delimited_bodies_from_http_server(
    stdlib_server: Callable[[Handler, str], str],
) -> None:
    body = b"".join(_sse(text_stream(["one", " two"])))

    def with_length(handler: http.server.BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    def until_close(handler: http.server.BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.end_headers()
        for line in body.splitlines(keepends=True):
            handler.wfile.write(line)
            handler.wfile.flush()

    length_model = OpenAICompatModel("m", base_url=stdlib_server(with_length, "HTTP/1.1"))
    close_model = OpenAICompatModel("m", base_url=stdlib_server(until_close, "HTTP/1.0"))
    try:
        assert await _texts(length_model) == ["one", " two"]
        assert await _texts(length_model) == ["one", " two"]
        assert await _texts(close_model) == ["one", " two"]
        assert await _texts(close_model) == ["one", " two"]
    finally:
        await length_model.aclose()
        await close_model.aclose()


async def test_a_gzip_error_body_with_retry_after_is_a_classified_model_error(
    stdlib_server: Callable[[Handler, str], str],
) -> None:
    error = {"error": {"message": "Rate limit reached for requests", "type": "requests"}}
    packed = gzip.compress(json.dumps(error).encode())

    def rate_limited(handler: http.server.BaseHTTPRequestHandler) -> None:
        handler.send_response(429)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Encoding", "gzip")
        handler.send_header("Retry-After", "7")
        handler.send_header("Content-Length", str(len(packed)))
        handler.end_headers()
        handler.wfile.write(packed)

    model = OpenAICompatModel("m", base_url=stdlib_server(rate_limited, "HTTP/1.1"))
    try:
        with pytest.raises(ModelError) as caught:
            await _texts(model)
    finally:
        await model.aclose()

    assert caught.value.status_code == 429
    assert caught.value.retryable
    assert caught.value.retry_after == 7.0
    assert "Rate limit reached for requests" in caught.value.message


# -- bytes on the wire: RFC 9112's chunked body, 1xx answers, broken bodies ------------------------

# RFC 9112, section 7.1: chunk extensions (``;name=value``) and a trailer section after the
# last chunk; RFC 9110, section 15.2: interim 1xx answers before the final one.
_HEAD = (
    b"HTTP/1.1 100 Continue\r\n\r\n"
    b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
)


def _chunked(frames: list[bytes]) -> bytes:
    parts = [b"%x;ext=%d\r\n%s\r\n" % (len(f), i, f) for i, f in enumerate(frames)]
    return b"".join(parts) + b"0\r\nExpires: Wed, 21 Oct 2015 07:28:00 GMT\r\n\r\n"


class _RawServer:
    """A TCP server that answers every request with ``answer`` (bytes, written in parts)."""

    def __init__(self, answer: list[bytes], close: bool = False, requests: int = 0) -> None:
        self.answer, self.close, self.connections = answer, close, 0
        self.requests = requests  # answered per connection before it closes unanswered (0: ∞)

    async def __aenter__(self) -> str:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}/v1"

    async def __aexit__(self, *exc: object) -> None:
        self.server.close()
        await self.server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        served = 0
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    int(line.split(b":")[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                )
                await reader.readexactly(length)
                served += 1
                if self.requests and served > self.requests:
                    break
                for part in self.answer:
                    writer.write(part)
                    await writer.drain()
                    await asyncio.sleep(0.005)
                if self.close:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


async def test_rfc_9112_chunk_extensions_trailers_and_interim_answers_on_the_wire() -> None:
    frames = _sse(text_stream(["Hel", "lo"]))
    async with _RawServer([_HEAD, _chunked(frames)]) as base_url:
        model = OpenAICompatModel("m", base_url=base_url)
        try:
            assert await _texts(model) == ["Hel", "lo"]
            assert await _texts(model) == ["Hel", "lo"]
        finally:
            await model.aclose()


def test_the_same_answer_split_at_every_byte_reads_the_same() -> None:
    frames = _sse(text_stream(["Hel", "lo"]))
    wire = _HEAD + _chunked(frames)
    splits = [[wire[:cut], wire[cut:]] for cut in range(1, len(wire))]
    splits.append([wire[i : i + 1] for i in range(len(wire))])
    for parts in splits:
        pool = ConnectionPool("http://127.0.0.1:1/v1", headers={})
        response = Response(pool)
        for part in parts:
            pool.read_buffer[: len(part)] = part  # as the transport's ``recv_into`` does
            response.buffer_updated(len(part))
        assert response.status == 200, parts[0]
        assert response.complete, parts[0]
        assert b"".join(response._body) == b"".join(frames), parts[0]


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        (
            [_HEAD, b"%x\r\n%s\r\n" % (20, b"data: {}\n\n"[:10])],
            "closed the connection before the answer ended",
        ),
        ([_HEAD, b"zz\r\ndata: {}\r\n"], "chunk size"),
        ([_HEAD, b"-a\r\ndata: {}\r\n"], "chunk size"),
        ([b"SPDY/3 200 OK\r\n\r\n"], "not an HTTP/1 status line"),
        ([b"HTTP/1.1 200 OK\r\nContent-Encoding: br\r\nContent-Length: 2\r\n\r\nxx"], "'br'"),
    ],
    ids=[
        "closed-mid-body",
        "bad-chunk-size",
        "negative-chunk-size",
        "not-http",
        "unknown-encoding",
    ],
)
async def test_a_broken_answer_is_a_retryable_model_error(answer: list[bytes], says: str) -> None:
    async with _RawServer(answer, close=True) as base_url:
        model = OpenAICompatModel("m", base_url=base_url)
        try:
            with pytest.raises(ModelError) as caught:
                await _texts(model)
        finally:
            await model.aclose()

    assert caught.value.retryable
    assert says in caught.value.message


async def test_connection_close_is_honoured_and_a_new_connection_opened() -> None:
    frames = b"".join(_sse(text_stream(["x"])))
    answer = [
        b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: %d\r\n\r\n" % len(frames),
        frames,
    ]
    server = _RawServer(answer)  # keeps its side open: the client must close
    async with server as base_url:
        model = OpenAICompatModel("m", base_url=base_url)
        try:
            assert await _texts(model) == ["x"]
            assert await _texts(model) == ["x"]
        finally:
            await model.aclose()

    assert server.connections == 2


async def test_a_kept_alive_connection_the_server_closed_is_retried_once_on_a_new_one() -> None:
    frames = b"".join(_sse(text_stream(["x"])))
    answer = [b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(frames), frames]
    server = _RawServer(answer, requests=1)  # reads the second request, then hangs up
    async with server as base_url:
        model = OpenAICompatModel("m", base_url=base_url)
        try:
            assert await _texts(model) == ["x"]
            assert await _texts(model) == ["x"]
            assert await _texts(model) == ["x"]
        finally:
            await model.aclose()

    assert server.connections == 3


# -- the pool: its limit, cancellation, event loops ----------------------------------------------


async def test_no_more_connections_than_the_limit_and_a_cancelled_stream_gives_its_back() -> None:
    held = asyncio.Event()
    open_now = peak = 0

    async def completions(request: web.Request) -> web.StreamResponse:
        nonlocal open_now, peak
        open_now += 1
        peak = max(peak, open_now)
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        try:
            for i, frame in enumerate(_sse(text_stream(["a", "b"]))):
                await response.write(frame)
                while i == 1 and not held.is_set():  # after "a": until released or gone
                    if request.transport is None or request.transport.is_closing():
                        return response
                    await asyncio.sleep(0.01)
        finally:
            open_now -= 1
        return response

    app = web.Application()
    app.router.add_post("/v1/chat/completions", completions)
    runner, port = await serve_locally(app)
    model = OpenAICompatModel("m", base_url=f"http://127.0.0.1:{port}/v1", max_connections=2)
    try:
        stuck = model.stream(REQUEST)
        first: ModelChunk = await stuck.__anext__()  # holds one of the two connections
        assert first is not None
        await stuck.aclose()  # a consumer that stops: the connection is closed, its slot freed
        for _ in range(500):
            if not open_now:
                break
            await asyncio.sleep(0.01)
        assert open_now == 0  # the server saw the connection close
        peak = 0
        tasks = [asyncio.create_task(_texts(model)) for _ in range(5)]
        await asyncio.sleep(0.2)
        assert peak == 2
        held.set()
        results = await asyncio.gather(*tasks)
    finally:
        await model.aclose()
        await runner.cleanup()

    assert results == [["a", "b"]] * 5
    assert peak == 2


def _flood(frames: int, frame: bytes, written: list[int]) -> web.Application:
    """An app answering each completion with ``frames`` × ``frame`` as fast as the socket
    takes them (``written``: frames written so far, per request)."""

    async def completions(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        written.append(0)
        slot = len(written) - 1
        for _ in range(frames):
            await response.write(frame)
            written[slot] += 1
        return response

    app = web.Application()
    app.router.add_post("/v1/chat/completions", completions)
    return app


async def test_a_reader_that_lags_leaves_the_backlog_to_tcp_and_loses_nothing() -> None:
    """A stream whose reader falls behind (a busy process) holds at most one read unread (256
    KiB for a lone connection, as asyncio's own reads): reading pauses when bytes arrive that
    nobody waits for. The rest waits in the socket buffers, and the server's writes wait for
    the reader."""
    frame = b"data: " + b"x" * 1000 + b"\n\n"
    frames, written = 16384, []  # 16 MiB: more than loopback's socket buffers hold
    runner, port = await serve_locally(_flood(frames, frame, written))
    pool = ConnectionPool(f"http://127.0.0.1:{port}/v1/chat/completions", headers={})
    try:
        response = await pool.post(b"{}")
        received = len(await response.read())
        await asyncio.sleep(0.5)  # not reading
        assert response._buffered <= READ_MAX
        assert written[0] < frames  # the server waits for the reader
        while data := await response.read():
            received += len(data)
        response.release()
    finally:
        await pool.aclose()
        await runner.cleanup()
    assert written == [frames]
    assert received == frames * len(frame)


async def test_many_lagging_streams_share_the_budget_of_unread_bytes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With more connections in use than the budget gives a full read each, each holds less
    (down to 8 KiB), so thousands of lagging streams do not hold the model's backlog in the
    process."""
    monkeypatch.setattr(_connections, "UNREAD_BUDGET", 20 * READ_MIN)
    frame = b"data: " + b"y" * 500 + b"\n\n"
    frames, written = 4096, []
    runner, port = await serve_locally(_flood(frames, frame, written))
    pool = ConnectionPool(f"http://127.0.0.1:{port}/v1/chat/completions", headers={})
    try:
        responses = [await pool.post(b"{}") for _ in range(20)]
        assert len(pool.read_buffer) == READ_MIN
        totals = [len(await r.read()) for r in responses]  # what came while the rest opened
        await asyncio.sleep(0.5)  # none read
        assert max(r._buffered for r in responses) <= READ_MIN
        for i, response in enumerate(responses):
            total = totals[i]
            while data := await response.read():
                total += len(data)
            totals[i] = total
            response.release()
        assert len(pool.read_buffer) == 20 * READ_MIN  # all idle (kept alive): the whole budget
    finally:
        await pool.aclose()
        await runner.cleanup()
    assert totals == [frames * len(frame)] * 20
    assert written == [frames] * 20


async def test_a_stream_waiting_for_the_model_holds_nothing_of_its_last_read() -> None:
    """Between two reads a stream keeps no line of the last one: 9,000 lagging streams each
    held their last read's lines (about 8 KiB) while they waited for the next."""
    burst = b"".join(
        b"data: " + json.dumps(c).encode() + b"\n\n"
        for c in text_stream(["x" * 900] * 64, finish_reason=None)
    )
    later = asyncio.Event()

    async def completions(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(burst)  # one write: the client reads it in one or two gulps
        await later.wait()
        await response.write(b"data: [DONE]\n\n")
        return response

    app = web.Application()
    app.router.add_post("/v1/chat/completions", completions)
    runner, port = await serve_locally(app)
    model = OpenAICompatModel("m", base_url=f"http://127.0.0.1:{port}/v1")
    tracemalloc.start()
    try:
        later.set()
        assert len([c async for c in model.stream(REQUEST)]) == 64  # the pool and its buffer
        later.clear()
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        stream = model.stream(REQUEST)
        seen = 0
        async for chunk in stream:
            seen += chunk.text is not None
            if seen == 64:
                break
        del chunk
        waiting = asyncio.create_task(anext(stream, None))
        await asyncio.sleep(0.1)
        assert not waiting.done()
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
        later.set()
        assert await waiting is None
    finally:
        tracemalloc.stop()
        await model.aclose()
        await runner.cleanup()
    assert len(burst) > 60_000
    assert held < 16_000, f"a waiting stream holds {held} bytes after a {len(burst)}-byte read"


@pytest.mark.filterwarnings("ignore::ResourceWarning")  # the first loop's socket, left open
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_one_model_serves_one_event_loop_after_another(uvicorn_thread: str) -> None:
    model = OpenAICompatModel("m", base_url=uvicorn_thread)

    async def use_and_close() -> list[str]:
        try:
            return await _texts(model)
        finally:
            await model.aclose()

    assert asyncio.run(_texts(model)) == ["hi"]  # not closed: its connection stays in the pool
    assert asyncio.run(use_and_close()) == ["hi"]  # that connection is not reused here
    assert asyncio.run(use_and_close()) == ["hi"]
    gc.collect()  # the first loop's transport warns here, under this test's filters


@pytest.fixture
def uvicorn_thread() -> Iterator[str]:
    """The SSE endpoint of ``uvicorn_server`` in a thread of its own (for sync tests)."""

    async def completions(request: Request) -> StreamingResponse:
        await request.body()
        return StreamingResponse(iter(_sse(text_stream(["hi"]))), media_type="text/event-stream")

    app = Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"])])
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        threading.Event().wait(0.01)
    yield f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}/v1"
    server.should_exit = True
    thread.join(5)


_FULL_FOR_A_MOMENT = """
import asyncio, os, resource, sys
from agent_executor import OpenAICompatModel, UserMessage
from agent_executor.models import ModelRequest

async def main():
    request = ModelRequest([UserMessage(content="hi")])
    warm = OpenAICompatModel("m", base_url=sys.argv[1])  # every lazy import done before
    [c async for c in warm.stream(request)]
    await warm.aclose()
    model = OpenAICompatModel("m", base_url=sys.argv[1])  # no connection of its own yet
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (len(os.listdir("/proc/self/fd")) + 8, hard))
    held = []
    try:
        while True:
            held.append(os.open(os.devnull, os.O_RDONLY))
    except OSError:
        pass
    asyncio.get_running_loop().call_later(0.1, lambda: [os.close(fd) for fd in held[-4:]])
    print([c.text async for c in model.stream(request) if c.text])
    await model.aclose()

asyncio.run(main())
"""


def test_a_process_out_of_descriptors_for_a_moment_still_connects(uvicorn_thread: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _FULL_FOR_A_MOMENT, uvicorn_thread],
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert done.stdout.strip() == "['hi']", done.stderr[-2000:]


def test_an_aiohttp_session_is_refused_with_what_to_pass_instead() -> None:
    with pytest.raises(TypeError, match="ssl="):
        OpenAICompatModel("m", base_url="http://127.0.0.1:1/v1", session=object())


def test_a_key_with_a_line_break_or_a_url_that_is_not_http_is_refused_when_made() -> None:
    with pytest.raises(ConfigurationError, match="line break: 'Authorization'"):
        OpenAICompatModel("m", base_url="http://127.0.0.1:1/v1", api_key="sk-test\n")
    with pytest.raises(ConfigurationError, match="not an http"):
        OpenAICompatModel("m", base_url="localhost:8000/v1")


# -- TLS ----------------------------------------------------------------------------------------


def _certificate(directory: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


async def test_https_with_the_servers_certificate_and_not_without_it(tmp_path: Path) -> None:
    cert, key = _certificate(tmp_path)
    served = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    served.load_cert_chain(cert, key)

    async def completions(request: web.Request) -> web.StreamResponse:
        await request.read()
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for frame in _sse(text_stream(["secure"])):
            await response.write(frame)
        return response

    app = web.Application()
    app.router.add_post("/v1/chat/completions", completions)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=served)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    trusted = ssl.create_default_context(cafile=str(cert))
    pinned = OpenAICompatModel("m", base_url=f"https://127.0.0.1:{port}/v1", ssl=trusted)
    system = OpenAICompatModel("m", base_url=f"https://127.0.0.1:{port}/v1")
    try:
        assert await _texts(pinned) == ["secure"]
        with pytest.raises(ModelError) as caught:
            await _texts(system)  # the system's authorities do not know this certificate
    finally:
        await pinned.aclose()
        await system.aclose()
        await runner.cleanup()

    assert "CERTIFICATE_VERIFY_FAILED" in caught.value.message
