"""The fast model client's HTTP/1.1: a POST, its streamed answer, and keep-alive connections.

Why not aiohttp's client, which the service already loads: an open aiohttp response holds
the request and response objects with their headers, a ``StreamReader`` and its deque, the
connection and timers, and each chunk goes parser → ``StreamReader`` → ``iter_any``. On 3,000
streams of 100 chunks read at once (``python benchmarks/model_http.py``, docs/benchmarks.md)
a process holds 23.0 KiB per open stream with aiohttp's client and 9.5 KiB with this one, and
spends 14.3 against 13.2 µs of CPU per chunk. At 9,000 concurrent streams through the service
that was 74 → 59 KiB per stream.

It does only what :class:`~agent_executor.models.OpenAICompatModel` needs: this module reads
an answer (the status and the few headers a model call uses, then the body as it arrives:
``Content-Length``, chunked, or up to the close; ``gzip`` and ``deflate`` decoded), and
``_connections.py`` sends the ``POST`` and keeps the connections (alive and reused, at most
``limit`` in use at once, TLS for ``https``). No redirects, proxies, cookies or HTTP/2: a model
endpoint needs none of them, and a redirect or an unreadable answer becomes an error the
caller reports.

A read takes at most the pool's ``read_buffer`` (8 to 256 KiB, less the more of the pool's
connections are in use). Bytes that arrive while nobody waits for them (the reader is busy: a
lagging stream) pause reading until the reader takes them, and reading also pauses once a
whole read's worth waits, so a stream holds at most one read unread. A lagging stream
leaves the model's backlog in the kernel's socket buffer, where TCP slows the sender, rather
than in this process. A plain ``Protocol`` takes up to 256 KiB per read: at 9,000 streams the
backlog held in the process was 10 KiB and more per stream.
"""

from __future__ import annotations

import asyncio
import zlib
from typing import Protocol

__all__ = ["HTTPProtocolError", "Response"]

_HEAD_LIMIT = 64 * 1024
_ERROR_BODY_LIMIT = 64 * 1024

# The chunked body's states.
_SIZE, _DATA, _DATA_END, _TRAILER = range(4)


class _Owner(Protocol):
    """Where a connection goes when its answer is done (the pool of ``_connections.py``), and
    the buffer its reads land in: one per pool, shared by its connections, since a read is
    copied out of it before the event loop does anything else. Its length is also
    the pause mark: the pool sets it from how many connections share its budget."""

    read_buffer: memoryview

    def _put_back(self, response: Response, reusable: bool) -> None: ...


class HTTPProtocolError(ConnectionError):
    """The server's answer is not HTTP/1.x this client can read, or ended before its end."""


class Response(asyncio.BufferedProtocol):
    """One connection, and the answer being read on it.

    The protocol is the response (one object per open stream, not three): ``status``,
    ``reason`` and the headers a model call reads are set when the head has arrived; the body
    is taken with :meth:`read` until it returns ``b""``; :meth:`release` gives the connection
    back to its pool (kept alive when the answer was read to its end) or closes it.
    """

    __slots__ = (
        "_body",
        "_buffered",
        "_chunked",
        "_closed",
        "_decoder",
        "_error",
        "_framing",
        "_head",
        "_in_use",
        "_keep_alive",
        "_length_left",
        "_paused",
        "_pool",
        "_transport",
        "_waiter",
        "complete",
        "idle_since",
        "reason",
        "retry_after",
        "status",
    )

    def __init__(self, pool: _Owner) -> None:
        self._pool = pool
        self._transport: asyncio.Transport | None = None
        self._closed = False
        self._in_use = True
        self.idle_since = 0.0
        self._reset()

    def _reset(self) -> None:
        self._head = b""
        self._body: list[bytes] = []
        self._buffered = 0
        self._waiter: asyncio.Future[None] | None = None
        self._error: Exception | None = None
        self._framing = ""
        self._chunked: _Chunked | None = None
        self._length_left = 0
        self._decoder: zlib._Decompress | None = None
        self._keep_alive = False
        self._paused = False
        self.complete = False
        self.status = 0
        self.reason = ""
        self.retry_after: str | None = None

    # -- asyncio.BufferedProtocol -----------------------------------------------------------

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._pool.read_buffer

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        if self._in_use and not self.complete and self._error is None:
            if self._framing == "close":
                try:
                    self._finish()
                except zlib.error as error:
                    self._error = HTTPProtocolError(f"the body does not decompress: {error}")
            else:
                self._error = HTTPProtocolError(
                    "the server closed the connection before the answer ended"
                )
                if exc is not None:
                    self._error.__cause__ = exc
        self._wake()

    def buffer_updated(self, nbytes: int) -> None:
        data = bytes(self._pool.read_buffer[:nbytes])
        waiter = self._waiter
        waited = waiter is not None and not waiter.done()
        if not self._in_use or self.complete:
            self._fail(HTTPProtocolError("the server sent bytes nobody asked for"))
            return
        try:
            if not self.status:
                data = self._read_head(data)
                if not data or not self.status:
                    return
            if self._chunked is not None:
                if self._chunked.feed(data, self):
                    self._finish()
            elif self._framing == "length":
                self._read_length(data)
            else:
                self._deliver(data)
        except HTTPProtocolError as exc:
            self._fail(exc)
            return
        except zlib.error as exc:
            self._fail(HTTPProtocolError(f"the body does not decompress: {exc}"))
            return
        if (
            (not waited or self._buffered >= len(self._pool.read_buffer))
            and not self._paused
            and not self.complete
            and self._transport is not None
        ):
            self._paused = True
            self._transport.pause_reading()

    # -- the exchange -----------------------------------------------------------------------

    @property
    def answered(self) -> bool:
        """Whether any byte of an answer has come back on this connection."""
        return bool(self.status or self._head)

    @property
    def closed(self) -> bool:
        return self._closed

    async def exchange(self, request: bytes, loop: asyncio.AbstractEventLoop) -> None:
        """Send ``request`` and wait for the answer's head."""
        assert self._transport is not None
        self._transport.write(request)
        del request  # written (or copied into the transport's buffer): not kept for the wait
        while not self.status:
            if self._error is not None:
                raise self._error
            if self._closed:
                raise HTTPProtocolError("the server closed the connection without answering")
            waiter = self._waiter = loop.create_future()
            try:
                await waiter
            finally:
                self._waiter = None

    def reuse(self) -> None:
        """Ready for the next request on this kept-alive connection."""
        self._in_use = True
        self._reset()

    def abandon(self, close: bool = True) -> None:
        """Out of its pool's hands without a release (a stale connection, or one of an
        earlier event loop, which is not closed from this one)."""
        self._in_use = False
        if close:
            self.close()
        else:
            self._closed = True

    # -- reading ----------------------------------------------------------------------------

    async def read(self) -> bytes:
        """The body bytes that have arrived since the last read (waiting for some); ``b""``
        once the body has ended."""
        while not self._body:
            if self._error is not None:
                raise self._error
            if self.complete or self._closed:
                return b""
            waiter = self._waiter = asyncio.get_running_loop().create_future()
            try:
                await waiter
            finally:
                self._waiter = None
        body = self._body
        data = body[0] if len(body) == 1 else b"".join(body)
        body.clear()
        self._buffered = 0
        if self._paused and self._transport is not None:
            self._paused = False
            self._transport.resume_reading()
        return data

    async def read_all(self, limit: int = _ERROR_BODY_LIMIT) -> bytes:
        """The whole body, up to ``limit`` bytes (an error answer's text)."""
        parts: list[bytes] = []
        while sum(map(len, parts)) < limit and (data := await self.read()):
            parts.append(data)
        return b"".join(parts)[:limit]

    async def finish(self) -> None:
        """Read the rest of the body and drop it, so that the connection can be reused."""
        while await self.read():
            pass

    def release(self) -> None:
        """Done with the answer: the connection goes back to the pool if it can carry another
        request, or is closed."""
        if not self._in_use:
            return
        self._in_use = False
        reusable = (
            self.complete
            and self._keep_alive
            and self._error is None
            and not self._closed
            and not self._paused
        )
        self._pool._put_back(self, reusable)

    def close(self) -> None:
        self._closed = True
        if self._transport is not None:
            self._transport.close()

    # -- the head ---------------------------------------------------------------------------

    def _read_head(self, data: bytes) -> bytes:
        head = self._head + data if self._head else data
        end = head.find(b"\r\n\r\n")
        if end < 0:
            if len(head) > _HEAD_LIMIT:
                raise HTTPProtocolError("the answer's head is too long")
            self._head = head
            return b""
        self._head = b""
        lines = head[:end].decode("latin-1").split("\r\n")
        version, status, reason = _status_line(lines[0])
        if 100 <= status < 200:  # 100 Continue, 103 Early Hints: the answer follows
            return self._read_head(head[end + 4 :]) if len(head) > end + 4 else b""
        fields = _fields(lines[1:])
        self.status, self.reason = status, reason
        self.retry_after = fields.get("retry-after")
        tokens = {token.strip() for token in fields.get("connection", "").lower().split(",")}
        self._keep_alive = (
            "keep-alive" in tokens if version == "HTTP/1.0" else "close" not in tokens
        )
        self._decoder = _decoder(fields.get("content-encoding", "").lower())
        self._frame(status, fields)
        self._wake()
        return head[end + 4 :]

    def _frame(self, status: int, fields: dict[str, str]) -> None:
        """How the body ends (RFC 9112, section 6.3): no body, chunked, a length, or the
        connection's close."""
        transfer, length = fields.get("transfer-encoding"), fields.get("content-length")
        if status in (204, 304):
            self._finish()
        elif transfer:
            if transfer.lower().rsplit(",", 1)[-1].strip() != "chunked":
                raise HTTPProtocolError(f"unreadable Transfer-Encoding {transfer!r}")
            self._framing = "chunked"
            self._chunked = _Chunked()
        elif length:
            if not length.isdigit():
                raise HTTPProtocolError(f"a Content-Length of {length!r}")
            self._framing = "length"
            self._length_left = int(length)
            if not self._length_left:
                self._finish()
        else:
            self._framing = "close"
            self._keep_alive = False

    # -- the body ---------------------------------------------------------------------------

    def _read_length(self, data: bytes) -> None:
        left = self._length_left
        if len(data) > left:
            raise HTTPProtocolError("the server sent more than its Content-Length")
        self._length_left = left - len(data)
        self._deliver(data)
        if not self._length_left:
            self._finish()

    def _deliver(self, data: bytes) -> None:
        if self._decoder is not None:
            data = self._decoder.decompress(data)
        if data:
            self._body.append(data)
            self._buffered += len(data)
            self._wake()

    def _finish(self) -> None:
        if self._decoder is not None:
            tail = self._decoder.flush()
            self._decoder = None
            if tail:
                self._body.append(tail)
        self.complete = True
        self._wake()

    def _fail(self, error: Exception) -> None:
        if self._error is None:
            self._error = error
        self._wake()
        self.close()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)


class _Chunked:
    """The chunked transfer coding (RFC 9112, section 7.1), decoded in bulk: every whole
    chunk of a read is delivered at once; a partial size line or chunk end waits for the
    next read."""

    __slots__ = ("kept", "left", "state")

    def __init__(self) -> None:
        self.state = _SIZE
        self.left = 0
        self.kept = b""

    def feed(self, data: bytes, response: Response) -> bool:
        """Deliver the chunks' data in ``data`` to ``response``; whether the body ended."""
        if self.kept:
            data = self.kept + data
            self.kept = b""
        pos, end = 0, len(data)
        while pos < end:
            state = self.state
            if state == _DATA:
                take = min(self.left, end - pos)
                response._deliver(data[pos : pos + take] if take < end or pos else data)
                pos += take
                self.left -= take
                if not self.left:
                    self.state = _DATA_END
            elif state == _DATA_END:
                if end - pos < 2:
                    return self._keep(data, pos)
                if data[pos : pos + 2] != b"\r\n":
                    raise HTTPProtocolError("a chunk does not end where its size says")
                pos += 2
                self.state = _SIZE
            else:
                line_end = data.find(b"\r\n", pos)
                if line_end < 0:
                    return self._keep(data, pos)
                line, pos = data[pos:line_end], line_end + 2
                if state == _SIZE:
                    self._size(line)
                elif not line:  # the empty line that ends the trailer section
                    if pos < end:
                        raise HTTPProtocolError("the server sent bytes after the answer")
                    return True
        return False

    def _size(self, line: bytes) -> None:
        try:
            size = int(line, 16)  # a bare size, as servers send it
        except ValueError:
            text = line.split(b";", 1)[0].strip()  # a size, then extensions
            try:
                size = int(text, 16)
            except ValueError:
                raise HTTPProtocolError(f"a chunk size of {text[:20]!r}") from None
        if size < 0:
            raise HTTPProtocolError(f"a chunk size of {line[:20]!r}")
        self.left, self.state = size, _DATA if size else _TRAILER

    def _keep(self, data: bytes, pos: int) -> bool:
        if len(data) - pos > _HEAD_LIMIT:
            raise HTTPProtocolError("a chunk size line is too long")
        self.kept = data[pos:]
        return False


def _status_line(line: str) -> tuple[str, int, str]:
    version, _, rest = line.partition(" ")
    code, _, reason = rest.partition(" ")
    if not version.startswith("HTTP/1.") or not code.isdigit() or len(code) != 3:
        raise HTTPProtocolError(f"not an HTTP/1 status line: {line[:80]!r}")
    return version, int(code), reason


_FIELDS = frozenset(
    (
        "connection",
        "content-encoding",
        "content-length",
        "retry-after",
        "transfer-encoding",
    )
)


def _fields(lines: list[str]) -> dict[str, str]:
    """The header fields a model call reads, by lower-case name (a repeated one joined with
    commas, as RFC 9110 section 5.3 allows)."""
    fields: dict[str, str] = {}
    for line in lines:
        name, sep, value = line.partition(":")
        if not sep:
            raise HTTPProtocolError(f"not a header line: {line[:80]!r}")
        name = name.strip().lower()
        if name in _FIELDS:
            value = value.strip()
            fields[name] = f"{fields[name]}, {value}" if name in fields else value
    return fields


def _decoder(encoding: str) -> zlib._Decompress | None:
    if encoding in ("gzip", "x-gzip"):
        return zlib.decompressobj(16 + zlib.MAX_WBITS)
    if encoding == "deflate":
        return zlib.decompressobj()
    if encoding in ("", "identity"):
        return None
    raise HTTPProtocolError(f"the body is encoded with {encoding!r}")
