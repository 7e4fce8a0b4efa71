"""One aiohttp request answered by an ASGI application.

The MCP SDK serves streamable HTTP only as an ASGI application, and the service is an aiohttp
app: this is the seam between the two, small enough to read at once. The request becomes an
ASGI ``http`` scope whose body was read up front (within the app's ``client_max_size``);
``send`` writes the answer through aiohttp, a whole body as a plain ``web.Response`` (which the
middlewares can still stamp) and a streamed one (Server-Sent Events) as a prepared
``web.StreamResponse``; ``receive``, once the body is taken, reports ``http.disconnect`` when
the answer is complete or the client has gone. A client that goes away cancels the handler
(``handler_cancellation``, which the CLI turns on) and so the application; without it, the
closed connection is noticed within :data:`_DISCONNECT_POLL_SECONDS`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping, MutableMapping
from typing import Any

import anyio
from aiohttp import web
from multidict import CIMultiDict

from ..errors import json_error

__all__ = ["ASGIApp", "Message", "Receive", "Scope", "Send", "respond"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_DISCONNECT_POLL_SECONDS = 1.0
_HOP_BY_HOP = frozenset({"content-length", "transfer-encoding", "connection"})
"""Headers aiohttp writes itself (from the body it is given) rather than taking them."""


async def respond(
    app: ASGIApp,
    request: web.Request,
    extra_scope: Mapping[str, Any],
    extra_headers: Mapping[str, str],
) -> web.StreamResponse:
    """Answer ``request`` with ``app``; ``extra_scope`` joins the scope (what the app's
    handlers read back from it), ``extra_headers`` the answer's headers."""
    exchange = _Exchange(request, await request.read(), extra_headers)
    await app({**_scope(request), **extra_scope}, exchange.receive, exchange.send)
    return exchange.response()


def _scope(request: web.Request) -> Scope:
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": f"{request.version.major}.{request.version.minor}",
        "method": request.method,
        "scheme": request.scheme,
        "path": request.path,
        "query_string": request.query_string.encode("latin-1"),
        "root_path": "",
        "headers": [(name.lower(), value) for name, value in request.raw_headers],
        "client": None,
        "server": None,
    }


class _Exchange:
    """The ASGI ``receive`` and ``send`` of one request, and the aiohttp answer they make."""

    __slots__ = (
        "_body", "_complete", "_extra", "_headers", "_request", "_status", "_stream", "_whole",
    )  # fmt: skip

    def __init__(self, request: web.Request, body: bytes, extra: Mapping[str, str]) -> None:
        self._request = request
        self._body: bytes | None = body
        self._extra = extra
        self._status = 500
        self._headers: CIMultiDict[str] = CIMultiDict()
        self._stream: web.StreamResponse | None = None
        self._whole: web.Response | None = None
        self._complete = asyncio.Event()

    async def receive(self) -> Message:
        if self._body is not None:
            body, self._body = self._body, None
            return {"type": "http.request", "body": body, "more_body": False}
        while not self._complete.is_set() and not _gone(self._request):
            with anyio.move_on_after(_DISCONNECT_POLL_SECONDS):
                await self._complete.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self._status = int(message["status"])
            self._headers = _headers(message.get("headers", ()))
            self._headers.update(self._extra)
        elif message["type"] == "http.response.body" and not self._complete.is_set():
            await self._write(bytes(message.get("body", b"")), bool(message.get("more_body")))

    async def _write(self, data: bytes, more: bool) -> None:
        if self._stream is None and not more:
            self._whole = web.Response(body=data, status=self._status, headers=self._headers)
            self._complete.set()
            return
        try:
            if self._stream is None:
                self._stream = web.StreamResponse(status=self._status, headers=self._headers)
                await self._stream.prepare(self._request)
            if data:
                await self._stream.write(data)
            if not more:
                await self._stream.write_eof()
        except ConnectionResetError:  # the client has gone: nothing more can reach it
            more = False
        if not more:
            self._complete.set()

    def response(self) -> web.StreamResponse:
        """The answer the application gave (a 500 if it gave none)."""
        if self._stream is not None:
            return self._stream
        if self._whole is not None:
            return self._whole
        return json_error(500, "the MCP endpoint gave no answer")


def _headers(raw: Iterable[tuple[bytes, bytes]]) -> CIMultiDict[str]:
    headers: CIMultiDict[str] = CIMultiDict()
    for name, value in raw:
        key = name.decode("latin-1")
        if key.lower() not in _HOP_BY_HOP:
            headers.add(key, value.decode("latin-1"))
    return headers


def _gone(request: web.Request) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()
