"""A run's events as they were emitted, kept so that a client that lost its connection gets the
rest of the run (and a client that reloads the page gets all of it) without running anything
again.

The log is on the per-token path, so it does nothing there: the run's stream retains its events
(:meth:`EventStream.retain`), and the log takes them over in batches (:meth:`EventLog.compact`:
after a write to the run's client once 16 have gathered or a reader waits, and whenever the log
is read). Text deltas, nearly all of a run's events, are kept as one string per batch and one
byte each for their length, folded in by C loops (no encoding: any text, lone surrogates
included, comes back as it went in); the other events are kept as they are. Reading rebuilds
the events in order, from any position.
"""

from __future__ import annotations

import asyncio
import sys
from array import array
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import replace
from itertools import repeat
from operator import attrgetter, is_not

from agent_executor import AgentEvent, DoneEvent, EventStream, MessageEvent

__all__ = ["EventLog", "LogReader"]

_TEXT = attrgetter("text")
_NONE_LONG: dict[int, int] = {}
"""No delta of 255 characters or more (shared: a log makes its own at its first)."""
_SMALL = 1024
"""A piece of text shorter than this takes the next batch's text in (not a piece of its own)."""
_BATCH = 16
"""Events a run's stream retains before the log takes them over (about 1.5 KiB of objects)."""


class EventLog:
    """The events of one run, in order, in bounded memory.

    Text is kept as strings of many deltas each, and each delta's share as one byte (its length
    in characters, up to 254; longer lengths and the other events are kept apart), so a token
    costs about one byte more than its text. Where an event starts is added up when the log is
    read, which is rare: a client coming back. Past ``max_bytes`` of text the log stops keeping
    events (``overflowed``): what it holds can no longer be replayed whole, so a re-attach is
    refused rather than given a gap.
    """

    __slots__ = (
        "_chars", "_chunk_starts", "_chunks", "_done", "_long", "_others", "_sizes", "_source",
        "_starts", "_text_bytes", "_waiter", "max_bytes", "overflowed",
    )  # fmt: skip

    def __init__(self, max_bytes: int = 1 << 20) -> None:
        self._chunks: list[str] = []
        """The text, in pieces of whole deltas (small ones joined as they come)."""
        self._chunk_starts: list[int] | None = None
        """Where each piece after the first starts (a run's text is mostly one piece)."""
        self._chars = 0
        self._text_bytes = 0
        self._sizes = bytearray()
        """Per event, the characters of its text (255: see ``_long``; 0 for other events)."""
        self._long: dict[int, int] = _NONE_LONG
        self._others: dict[int, AgentEvent] = {}
        self._starts: array[int] | None = None
        """Where each event's text starts, added up as far as a read needed it."""
        self._waiter: asyncio.Future[None] | None = None
        self._done = False
        self.max_bytes = max_bytes
        self.overflowed = False
        self._source: EventStream | None = None

    def follow(self, events: EventStream) -> None:
        """Keep the events of the run ``events`` streams, from its next one on."""
        events.retain()
        self._source = events

    def append(self, event: AgentEvent) -> None:
        """Keep ``event`` (one of the service's own, before the run's)."""
        self._fold([event])

    def settle(self) -> None:
        """Take the run's events over if a reader waits for them or enough have gathered
        (after each write to the run's client: mostly two checks)."""
        source = self._source
        if self._waiter is not None or (source is not None and source.retained >= _BATCH):
            self.compact()

    def compact(self) -> None:
        """Take over the events the run emitted since, and wake the readers waiting for
        more."""
        source = self._source
        if source is not None:
            batch = source.release()
            if batch:
                self._fold(batch)
            if self._done:
                self._source = None  # the run's task holds the run's whole state
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

    def _fold(self, batch: list[AgentEvent]) -> None:
        if self.overflowed:
            if DoneEvent in map(type, batch):
                self._done = True
            return
        kinds = list(map(type, batch))
        if kinds.count(MessageEvent) == len(kinds):
            self._fold_texts(batch)
        else:
            not_text = list(map(is_not, kinds, repeat(MessageEvent)))
            start = 0
            while start < len(batch):
                try:
                    end = not_text.index(True, start)
                except ValueError:
                    end = len(batch)
                if end > start:
                    self._fold_texts(batch[start:end])
                if end < len(batch):
                    self._fold_other(batch[end])
                start = end + 1
        if self._text_bytes > self.max_bytes:
            self.overflowed = True

    def _fold_texts(self, batch: list[AgentEvent]) -> None:
        """Fold text deltas with C loops only (unless one is 255 characters or longer)."""
        texts: list[str] = list(map(_TEXT, batch))
        try:
            sizes = bytes(map(len, texts))
        except ValueError:  # a delta of 256 characters or more
            sizes = b"\xff"
        if 255 in sizes:
            for text in texts:
                if len(text) >= 255:
                    if self._long is _NONE_LONG:
                        self._long = {}
                    self._long[len(self._sizes)] = len(text)
                self._sizes.append(min(len(text), 255))
        else:
            self._sizes += sizes
        joined = "".join(texts)
        self._text_bytes += sys.getsizeof(joined)
        chunks = self._chunks
        if not chunks:
            chunks.append(joined)
        elif len(chunks[-1]) < _SMALL:
            chunks[-1] += joined
        else:
            if self._chunk_starts is None:
                self._chunk_starts = []
            self._chunk_starts.append(self._chars)
            chunks.append(joined)
        self._chars += len(joined)

    def _fold_other(self, event: AgentEvent) -> None:
        if type(event) is DoneEvent:
            self._done = True
            if event.messages:
                # The run's conversation rides on its ``done`` for the service's own use
                # (storing it); no dialect sends it, and a finished run is kept for minutes.
                event = replace(event, messages=[])
        self._others[len(self._sizes)] = event
        self._sizes.append(0)

    def __len__(self) -> int:
        self.compact()
        return len(self._sizes)

    @property
    def done(self) -> bool:
        """Whether the run's ``done`` is in the log (or the log was closed)."""
        self.compact()
        return self._done

    @property
    def size(self) -> int:
        """About how many bytes the log holds."""
        self.compact()
        starts = 0 if self._starts is None else 4 * len(self._starts)
        return self._text_bytes + len(self._sizes) + starts + 200 * len(self._others)

    def event(self, position: int) -> AgentEvent:
        """The event at ``position`` (0 is the first)."""
        if position >= len(self._sizes):
            self.compact()
        other = self._others.get(position)
        if other is not None:
            return other
        start = self._start(position)
        end = start + self._long.get(position, self._sizes[position])
        if start == end:
            return MessageEvent("")
        index = bisect_right(self._chunk_starts or (), start)
        offset = self._chunk_starts[index - 1] if index and self._chunk_starts else 0
        return MessageEvent(self._chunks[index][start - offset : end - offset])

    def _start(self, position: int) -> int:
        """Where the text of the event at ``position`` starts (adding up the sizes so far)."""
        if self._starts is None:
            self._starts = array("I", [0])
        starts, sizes, long = self._starts, self._sizes, self._long
        for known in range(len(starts) - 1, position):
            starts.append(starts[known] + long.get(known, sizes[known]))
        return starts[position]

    def events(self, start: int, stop: int) -> Iterator[AgentEvent]:
        """The events from ``start`` up to ``stop`` (excluded)."""
        return (self.event(position) for position in range(start, stop))

    async def grown(self) -> None:
        """Wait until another event is kept (or the log is closed)."""
        if self._waiter is None:
            self._waiter = asyncio.get_running_loop().create_future()
        await asyncio.shield(self._waiter)

    def close(self, *last: AgentEvent) -> None:
        """Wake every reader: nothing more will come. ``last``: the events that end a run
        stopped before its ``done`` (its readers are told why), kept unless the run's own
        ``done`` came first."""
        self.compact()
        if last and not self._done:
            self._fold(list(last))
        self._done = True
        self._source = None
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
