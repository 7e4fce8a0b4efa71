"""``EventStream``: what ``execute_stream()`` returns, an async generator of a run's events.

The run lives in its own task and pushes events into a :class:`_Channel`; the consumer pulls
them. So no cancel scope ever spans a consumer's ``yield`` (PEP 789), and the consumer can take
every event that is already waiting in one call (:meth:`EventStream.drain_nowait`, which the SSE
server uses to write several deltas in one frame batch).

Leaving early cancels the run: ``aclose()`` and cancellation of the consuming task cancel the
run's task and wait (shielded, bounded) until its tools are cancelled and its permit is
released; a stream dropped without ``aclose()`` (``break`` out of ``async for``) cancels the run
when it is garbage-collected, which CPython does at once. The run task holds only the channel,
never the stream, so that works.

A service that keeps a run's events for a client that comes back retains the stream
(:meth:`EventStream.retain`): events stay in the channel after the consumer took them until
:meth:`EventStream.release` hands them over, so keeping them costs the per-token path nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable, Coroutine
from types import TracebackType
from typing import Any

import anyio

from ..events import AgentEvent
from .state import Emit

__all__ = ["EventStream"]


class _Channel:
    """An unbounded single-consumer queue of events (model output is small; the run's
    ``request_timeout`` bounds it).

    A list and a read position rather than a ``deque``: a stream holds a few events at a time,
    and an empty deque alone costs ~0.7 KiB per open stream. A retaining channel keeps the
    events the consumer took until :meth:`release` hands them over (``kept``: how many at the
    list's start were handed over already), so keeping a run's events costs its hot path
    nothing.
    """

    __slots__ = ("buffer", "finished", "head", "kept", "retaining", "waiter")

    def __init__(self) -> None:
        self.buffer: list[AgentEvent] = []
        self.head = 0
        self.waiter: asyncio.Future[None] | None = None
        self.finished = False
        self.retaining = False
        self.kept = 0

    def push(self, event: AgentEvent) -> None:
        self.buffer.append(event)
        waiter = self.waiter
        if waiter is not None:
            self.waiter = None  # woken once: the rest of a burst does not look again
            _wake(waiter)

    def take(self) -> AgentEvent | None:
        """The oldest waiting event, or None."""
        buffer, head = self.buffer, self.head
        size = len(buffer)
        if head == size:
            return None
        event = buffer[head]
        if head + 1 == size and not self.retaining:
            buffer.clear()
            self.head = 0
        else:
            self.head = head + 1
        return event

    def take_all(self) -> list[AgentEvent]:
        """Every waiting event, oldest first."""
        buffer, head = self.buffer, self.head
        events = buffer[head:]
        if self.retaining:
            self.head = len(buffer)
        else:
            buffer.clear()
            self.head = 0
        return events

    def release(self) -> list[AgentEvent]:
        """Every event not handed over yet, taken or not; the taken ones are dropped."""
        buffer = self.buffer
        events = buffer[self.kept :]
        del buffer[: self.head]
        self.head = 0
        self.kept = len(buffer)
        return events

    def finish(self, _: object = None) -> None:
        self.finished = True
        waiter = self.waiter
        if waiter is not None:
            self.waiter = None
            _wake(waiter)


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


class EventStream(AsyncGenerator[AgentEvent, None]):
    """The events of one run, in order; the last one is always a ``DoneEvent``."""

    __slots__ = ("_channel", "_start", "_task")

    def __init__(self, start: Callable[[Emit], Coroutine[Any, Any, object]]) -> None:
        self._start: Callable[[Emit], Coroutine[Any, Any, object]] | None = start
        self._channel = _Channel()
        self._task: asyncio.Task[object] | None = None

    def __aiter__(self) -> EventStream:
        return self

    async def __anext__(self) -> AgentEvent:
        channel = self._channel
        if self._start is not None:
            self._begin()
        while True:
            event = channel.take()
            if event is not None:
                return event
            if channel.finished:
                self._raise_run_error()
                raise StopAsyncIteration
            waiter = channel.waiter = asyncio.get_running_loop().create_future()
            try:
                await waiter
            except BaseException:
                if not channel.retaining:  # a retained run is its keeper's to stop
                    await self.aclose()
                raise
            finally:
                channel.waiter = None

    async def peek(self, wait: float) -> AgentEvent | None:
        """The next event without taking it, waiting at most ``wait`` seconds for one (the
        run starts if it has not): None if none came in time or the stream has ended; a run
        that ended in an exception before any event raises it.

        The service waits so for a run's first event before it answers: a run refused at once
        gets an HTTP status instead of a stream. Unlike a task taking the event, waiting here
        costs a future and a timer, no task.
        """
        channel = self._channel
        if self._start is not None:
            self._begin()
        if channel.head == len(channel.buffer) and not channel.finished:
            loop = asyncio.get_running_loop()
            waiter = channel.waiter = loop.create_future()
            timer = loop.call_later(wait, _wake, waiter)
            try:
                await waiter
            finally:
                timer.cancel()
                channel.waiter = None
        if channel.head < len(channel.buffer):
            return channel.buffer[channel.head]
        if channel.finished:
            self._raise_run_error()
        return None

    def start(self) -> None:
        """Start the run now instead of at the first ``__anext__`` (no-op once started).

        The service starts it before writing the response headers, so the guards and the model
        request do not wait for them.
        """
        if self._start is not None:
            self._begin()

    def retain(self) -> None:
        """Keep every event, also once the consumer has taken it, until :meth:`release` hands
        it over (a service keeping a run's events for a client that comes back). A retained
        run is its keeper's: a consumer cancelled while it waits does not stop it
        (:meth:`aclose` and garbage collection still do)."""
        self._channel.retaining = True

    def release(self) -> list[AgentEvent]:
        """Every event the run emitted since the last release, in order, taken or still
        waiting (waiting ones stay queued for the consumer too): a retained stream's events
        are kept only until this hands them over."""
        return self._channel.release()

    @property
    def retained(self) -> int:
        """How many events :meth:`release` would hand over now."""
        channel = self._channel
        return len(channel.buffer) - channel.kept

    def drain_nowait(self) -> list[AgentEvent]:
        """Every event that is already waiting (possibly none), without waiting for more."""
        return self._channel.take_all()

    async def asend(self, value: None) -> AgentEvent:
        return await self.__anext__()

    async def athrow(
        self,
        typ: type[BaseException] | BaseException,
        val: BaseException | object = None,
        tb: TracebackType | None = None,
    ) -> AgentEvent:
        await self.aclose()
        if isinstance(typ, BaseException):
            raise typ
        raise typ() if val is None else val  # type: ignore[misc]

    async def aclose(self) -> None:
        """Stop the run (if it is still going) and wait until it has cleaned up."""
        self._start = None
        self._channel.finished = True
        self._channel.take_all()
        task = self._task
        if task is not None and not task.done():
            task.cancel()
            with anyio.CancelScope(shield=True), anyio.move_on_after(30):
                await asyncio.wait([task])

    def __del__(self) -> None:
        task = self._task
        if task is not None and not task.done():
            task.cancel()

    def _begin(self) -> None:
        start, self._start = self._start, None
        assert start is not None
        task = asyncio.get_running_loop().create_task(start(self._channel.push))
        task.add_done_callback(self._channel.finish)
        self._task = task

    def _raise_run_error(self) -> None:
        task = self._task
        if task is not None and task.done() and not task.cancelled():
            error = task.exception()
            if error is not None:
                raise error
