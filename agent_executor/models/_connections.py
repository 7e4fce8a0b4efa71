"""The fast model client's connections to its endpoint: the ``POST``, keep-alive and reuse,
a limit on connections in use, TLS, and one pool per event loop (``_http.py`` reads the
answers)."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import ssl
import time
from collections.abc import Mapping
from urllib.parse import quote, urlencode, urlsplit

import anyio

from .._version import __version__
from ..errors import out_of_descriptors
from ._http import HTTPProtocolError, Response

__all__ = ["ConnectionPool"]

READ_MAX = 256 * 1024
READ_MIN = 8 * 1024
UNREAD_BUDGET = 64 * 1024 * 1024
"""Bytes of model answers a pool lets wait unread, across its connections in use (see
:meth:`ConnectionPool._share_reads`)."""

_DNS_TTL = 10.0
_KEEP_ALIVE = 30.0
_NO_DESCRIPTOR_PAUSES = (0.02, 0.05, 0.1, 0.2, 0.4)


class ConnectionPool:
    """Keep-alive connections to one origin (``scheme://host:port``), at most ``limit`` in
    use at once; one per event loop (connections do not cross loops)."""

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str],
        query: Mapping[str, str] | None = None,
        limit: int = 100,
        connect_timeout: float = 10.0,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {url!r}")
        self._host = parts.hostname
        self._tls = parts.scheme == "https"
        self._port = parts.port or (443 if self._tls else 80)
        self._ssl = ssl_context
        self._limit = limit
        self._connect_timeout = connect_timeout
        target = quote(parts.path or "/", safe="/%:@!$&'()*+,;=-._~")
        query_text = "&".join(q for q in (parts.query, urlencode(dict(query or {}))) if q)
        if query_text:
            target = f"{target}?{query_text}"
        host = f"[{self._host}]" if ":" in self._host else self._host
        if parts.port is not None and parts.port != (443 if self._tls else 80):
            host = f"{host}:{self._port}"
        lines = [f"POST {target} HTTP/1.1", f"Host: {host}"]
        names = {name.lower() for name in headers}
        if "user-agent" not in names:
            lines.append(f"User-Agent: agent-executor/{__version__}")
        if "accept-encoding" not in names:
            lines.append("Accept-Encoding: gzip, deflate")
        for name, value in headers.items():
            if any(c in f"{name}{value}" for c in "\r\n\0") or not name.strip():
                raise ValueError(f"a header cannot hold a line break: {name!r}")
            if name.lower() in ("host", "content-length", "transfer-encoding", "connection"):
                continue
            lines.append(f"{name}: {value}")
        self._head = ("\r\n".join(lines) + "\r\n").encode()  # UTF-8, as aiohttp sent it
        self._loop: asyncio.AbstractEventLoop | None = None
        self._slots: asyncio.Semaphore | None = None
        self._idle: list[Response] = []
        self._open: set[Response] = set()
        self._literal = _is_address(self._host)
        self._read_whole = self.read_buffer = memoryview(bytearray(READ_MAX))
        self._addresses: list[str] = [self._host] if self._literal else []
        self._resolved_at = 0.0
        self._closed = False

    def set_limit(self, limit: int) -> None:
        """At most ``limit`` connections in use from now on (a limit only grows once requests
        have started: callers may be holding the old one's slots)."""
        if self._slots is None:
            self._limit = limit
        elif limit > self._limit:
            for _ in range(limit - self._limit):
                self._slots.release()
            self._limit = limit

    async def post(self, body: bytes) -> Response:
        """Send ``body`` and wait for the answer's head; the caller must :meth:`Response.release`
        it (also on error and cancellation)."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            self._start(loop)
        if self._closed:
            raise HTTPProtocolError("the model's connection pool is closed")
        slots = self._slots
        if slots is None:
            slots = self._slots = asyncio.Semaphore(self._limit)
        await slots.acquire()
        response: Response | None = None
        try:
            response = self._reuse()
            if response is not None:
                try:
                    await self._send(response, body, loop)
                    return response
                except OSError:
                    if response.answered:
                        raise
                    # Nothing came back on a kept-alive connection: the server had closed it
                    # as the request went out. Sent again once on a new one, as browsers do.
                    self._drop(response)
                    response.abandon()
            response = None
            response = await self._connect(loop)
            await self._send(response, body, loop)
        except BaseException:
            if response is None:
                slots.release()
            else:
                response.close()
                response.release()
            raise
        return response

    async def _send(self, response: Response, body: bytes, loop: asyncio.AbstractEventLoop) -> None:
        await response.exchange(
            b"".join((self._head, b"Content-Length: %d\r\n\r\n" % len(body), body)), loop
        )

    async def aclose(self) -> None:
        """Close every connection, idle or in use (those of an earlier event loop are only
        dropped: their loop closes them, or the collector does)."""
        self._closed = True
        if self._loop is asyncio.get_running_loop():
            for response in self._open:
                response.close()
        self._open = set()
        self._idle = []

    def _start(self, loop: asyncio.AbstractEventLoop) -> None:
        """A new event loop (the first, or a test's next one): the old loop's connections are
        dropped, not reused."""
        for response in self._open:
            response.abandon(close=False)
        self._open = set()
        self._idle = []
        self._slots = None
        self._loop = loop
        self._closed = False

    def _reuse(self) -> Response | None:
        idle = self._idle
        now = time.monotonic()
        while idle:
            response = idle.pop()
            if response.closed or now - response.idle_since > _KEEP_ALIVE:
                response.close()
                self._drop(response)
                continue
            response.reuse()
            self._share_reads()
            return response
        return None

    async def _connect(self, loop: asyncio.AbstractEventLoop) -> Response:
        """A new connection; with no descriptor left (``EMFILE``, ``ENFILE``) tried again for up
        to ~0.8 s: a process is often full only for a moment (a burst of requests being refused
        holds theirs while they are answered), and a run the service admitted should not fail
        for that moment. After it the error reaches the run as ``overloaded``."""
        with anyio.fail_after(self._connect_timeout):
            for pause in _NO_DESCRIPTOR_PAUSES:
                try:
                    return await self._open_connection(loop)
                except OSError as exc:
                    if not out_of_descriptors(exc):
                        raise
                await asyncio.sleep(pause)
            return await self._open_connection(loop)

    async def _open_connection(self, loop: asyncio.AbstractEventLoop) -> Response:
        response = Response(self)
        context = self._context() if self._tls else None
        error: OSError | None = None
        for address in await self._resolve(loop):
            try:
                await loop.create_connection(
                    lambda: response,
                    address,
                    self._port,
                    ssl=context,
                    server_hostname=self._host if context is not None else None,
                )
            except OSError as exc:
                error = exc
                continue
            self._open.add(response)
            self._share_reads()
            return response
        assert error is not None
        raise error

    async def _resolve(self, loop: asyncio.AbstractEventLoop) -> list[str]:
        """The host's addresses, kept ``_DNS_TTL`` seconds (a burst of new connections asks
        the resolver once, as aiohttp's cache did)."""
        host = self._host
        if self._literal or (self._addresses and time.monotonic() - self._resolved_at < _DNS_TTL):
            return self._addresses
        infos = await loop.getaddrinfo(host, self._port, type=socket.SOCK_STREAM)
        addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
        if not addresses:
            raise OSError(f"no address for {host}")
        self._addresses, self._resolved_at = addresses, time.monotonic()
        return addresses

    def _context(self) -> ssl.SSLContext:
        if self._ssl is None:
            self._ssl = ssl.create_default_context()
        return self._ssl

    def _put_back(self, response: Response, reusable: bool) -> None:
        if self._slots is not None and response in self._open:
            self._slots.release()
        if reusable and not self._closed and response in self._open:
            response.idle_since = time.monotonic()
            self._idle.append(response)
            self._share_reads()
            return
        self._drop(response)
        response.close()

    def _drop(self, response: Response) -> None:
        self._open.discard(response)
        self._share_reads()

    def _share_reads(self) -> None:
        """Each connection's read size and pause mark (``read_buffer``'s length): the pool's
        ``UNREAD_BUDGET`` shared among the connections in use, from ``READ_MIN`` to
        ``READ_MAX``. A few streams read in large gulps (a burst costs few wake-ups);
        thousands hold little each while their readers lag."""
        in_use = len(self._open) - len(self._idle)
        size = min(READ_MAX, max(READ_MIN, UNREAD_BUDGET // max(1, in_use)))
        if size != len(self.read_buffer):
            self.read_buffer = self._read_whole[:size]


def _is_address(host: str) -> bool:
    """Whether ``host`` is an IP address already (nothing to resolve)."""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True
