"""The service's event loop (``server/event_loop.py``): a turn takes at most
``EVENTS_PER_TURN`` ready descriptors, every ready one comes in turn, streams over the bound are
all served, and a listener out of descriptors is tried once a second, not thousands of times."""

from __future__ import annotations

import asyncio
import errno
import selectors
import socket
import sys
from typing import Any

import pytest

from server import event_loop

pytestmark = pytest.mark.skipif(event_loop.loop_factory() is None, reason="epoll is Linux's")


def test_a_turn_takes_at_most_the_bound_and_every_ready_socket_comes_in_turn(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(event_loop, "EVENTS_PER_TURN", 4)
    selector = event_loop.BoundedEpollSelector()
    pairs = [socket.socketpair() for _ in range(10)]
    try:
        for ours, theirs in pairs:
            theirs.send(b"x")
            selector.register(ours, selectors.EVENT_READ)
        turns = [selector.select(0) for _ in range(3)]
        assert [len(turn) for turn in turns] == [4, 4, 4]
        assert {key.fileobj for turn in turns for key, _ in turn} == {ours for ours, _ in pairs}
    finally:
        selector.close()
        for ours, theirs in pairs:
            ours.close()
            theirs.close()


def test_streams_over_the_bound_are_all_served(monkeypatch: pytest.MonkeyPatch) -> None:
    """Forty connections, each sent 200 messages at once, read by a loop that takes four
    ready descriptors a turn: every byte arrives."""
    if sys.version_info < (3, 11):
        pytest.skip("asyncio.Runner")
    monkeypatch.setattr(event_loop, "EVENTS_PER_TURN", 4)
    message = b"data: " + b"x" * 200 + b"\n\n"

    async def one(server_port: int) -> int:
        reader, writer = await asyncio.open_connection("127.0.0.1", server_port)
        received = 0
        while chunk := await reader.read(4096):
            received += len(chunk)
        writer.close()
        return received

    async def scenario() -> list[int]:
        async def flood(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            for _ in range(200):
                writer.write(message)
            await writer.drain()
            writer.close()

        server = await asyncio.start_server(flood, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        async with server:
            return await asyncio.gather(*(one(port) for _ in range(40)))

    factory = event_loop.loop_factory()
    assert factory is not None
    with asyncio.Runner(loop_factory=factory) as runner:
        assert isinstance(runner.get_loop(), asyncio.SelectorEventLoop)
        assert runner.run(scenario()) == [200 * len(message)] * 40


class _FullListener(socket.socket):
    """A listening socket whose ``accept()`` fails with ``EMFILE`` while ``full``, as it does
    when the process has no descriptor left for the connection."""

    full = True
    calls = 0

    def accept(self) -> tuple[socket.socket, Any]:
        self.calls += 1
        if self.full:
            raise OSError(errno.EMFILE, "Too many open files")
        return super().accept()


def test_a_listener_out_of_descriptors_is_tried_once_a_second() -> None:
    """asyncio's loop of Python 3.11 calls ``accept()`` for the rest of a turn's ``backlog``
    after it fails for want of descriptors, scheduling a retry for each (python/cpython#151615).
    The service's loop stops at the first: one call, one report, one retry a second later,
    which then accepts the waiting connections as usual."""
    if sys.version_info < (3, 11):
        pytest.skip("asyncio.Runner")
    reports: list[str] = []
    accepted: list[asyncio.Transport] = []

    class Accepted(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            assert isinstance(transport, asyncio.Transport)
            accepted.append(transport)

    async def scenario(listener: _FullListener) -> tuple[int, int, int]:
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(lambda _, context: reports.append(context["message"]))
        server = await loop.create_server(Accepted, sock=listener, backlog=4096)
        port = listener.getsockname()[1]
        clients = [socket.create_connection(("127.0.0.1", port)) for _ in range(3)]
        try:
            await asyncio.sleep(0.3)  # the turn that failed, and nothing after it
            while_full = (listener.calls, len(reports), len(accepted))
            listener.full = False
            for _ in range(40):  # the retry, a second after the failure
                if len(accepted) == len(clients):
                    break
                await asyncio.sleep(0.05)
            return (*while_full, len(accepted))
        finally:
            for client in clients:
                client.close()
            for transport in accepted:
                transport.close()
            server.close()
            await server.wait_closed()

    factory = event_loop.loop_factory()
    assert factory is not None
    listener = _FullListener(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    with asyncio.Runner(loop_factory=factory) as runner:
        calls, reported, accepted_while_full, _ = runner.run(scenario(listener))
    assert (calls, reported, accepted_while_full) == (1, 1, 0), reports[:3]
    assert reports == ["socket.accept() out of system resource"]
    assert len(accepted) == 3  # after the retry: all three
