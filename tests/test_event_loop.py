"""The service's event loop (``server/event_loop.py``): a turn takes at most
``EVENTS_PER_TURN`` ready descriptors, every ready one comes in turn, and streams over the
bound are all served."""

from __future__ import annotations

import asyncio
import selectors
import socket
import sys

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
