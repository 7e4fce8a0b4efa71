"""A run's events as they were emitted, kept so that a client that lost its connection gets the
rest of the run (and a client that reloads the page gets all of it) without running anything
again.

Text deltas, which are nearly all of a run's events, are kept as their UTF-8 bytes in one
buffer with one end offset each (a few bytes per token instead of an event object); the other
events are kept as they are. Reading rebuilds the events in order, from any position.
"""

from __future__ import annotations

import asyncio
from array import array
from collections.abc import Iterator

from agent_executor import AgentEvent, DoneEvent, MessageEvent

__all__ = ["EventLog", "LogReader"]


class EventLog:
    """The events of one run, in order, in bounded memory.

    Past ``max_bytes`` of text the log stops keeping events (``overflowed``): what it holds can
    no longer be replayed whole, so a re-attach is refused rather than given a gap.
    """

    __slots__ = ("_ends", "_others", "_text", "_waiter", "done", "max_bytes", "overflowed")

    def __init__(self, max_bytes: int = 1 << 20) -> None:
        self._text = bytearray()
        self._ends = array("I")
        self._others: dict[int, AgentEvent] = {}
        self._waiter: asyncio.Future[None] | None = None
        self.max_bytes = max_bytes
        self.done = False
        """Whether the run's ``done`` is in the log."""
        self.overflowed = False

    def __len__(self) -> int:
        return len(self._ends)

    @property
    def size(self) -> int:
        """About how many bytes the log holds."""
        return len(self._text) + 4 * len(self._ends) + 200 * len(self._others)

    def append(self, event: AgentEvent) -> None:
        """Keep ``event`` (the run's observer: called as the run emits it)."""
        if self.overflowed:
            return
        if type(event) is MessageEvent:
            self._text += event.text.encode("utf-8", "surrogatepass")
        else:
            self._others[len(self._ends)] = event
            if type(event) is DoneEvent:
                self.done = True
        self._ends.append(len(self._text))
        if len(self._text) > self.max_bytes:
            self.overflowed = True
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

    def event(self, position: int) -> AgentEvent:
        """The event at ``position`` (0 is the first)."""
        other = self._others.get(position)
        if other is not None:
            return other
        start = self._ends[position - 1] if position else 0
        return MessageEvent(
            self._text[start : self._ends[position]].decode("utf-8", "surrogatepass")
        )

    def events(self, start: int, stop: int) -> Iterator[AgentEvent]:
        """The events from ``start`` up to ``stop`` (excluded)."""
        return (self.event(position) for position in range(start, stop))

    async def grown(self) -> None:
        """Wait until another event is kept (or the log is closed)."""
        if self._waiter is None:
            self._waiter = asyncio.get_running_loop().create_future()
        await asyncio.shield(self._waiter)

    def close(self) -> None:
        """Wake every reader: nothing more will come (the run ended without its ``done``)."""
        self.done = True
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)


class LogReader:
    """A re-attached client's events: those kept from ``start`` on, then each as it comes,
    until the run's ``done``. Offers the waiting ones at once (``drain_nowait``), as the
    run's own stream does, so a replay goes out in few writes."""

    __slots__ = ("_log", "_next")

    def __init__(self, log: EventLog, start: int) -> None:
        self._log = log
        self._next = start

    def __aiter__(self) -> LogReader:
        return self

    async def __anext__(self) -> AgentEvent:
        log = self._log
        while self._next >= len(log):
            if log.done:
                raise StopAsyncIteration
            await log.grown()
        event = log.event(self._next)
        self._next += 1
        return event

    def drain_nowait(self) -> list[AgentEvent]:
        stop = len(self._log)
        events = list(self._log.events(self._next, stop))
        self._next = stop
        return events

    async def aclose(self) -> None:
        """Stop reading (the run goes on)."""
        self._next = len(self._log)
