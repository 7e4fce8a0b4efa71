"""The open Server-Sent Event streams of one app: the writer that streams a run to one
client, the monitor that watches them all, and the bookkeeping from a stream's first byte to
its drain at shutdown.

Everything about a stream's lifetime lives here, so the endpoints only say which events to send
and how to encode them (:meth:`Streams.respond`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable

import anyio
from aiohttp import web

from agent_executor import AgentEvent, DoneEvent, ErrorEvent, EventStream
from agent_executor.observability import Metrics

from ..dialects import Encoder
from ..dialects.framing import SSE_HEADERS
from ..keys import REQUEST_ID
from ..runs import REPLICA_GONE, STOPPED, LiveRun, RemoteRun, RunHub

__all__ = ["SHUTTING_DOWN", "SSEWriter", "StreamMonitor", "Streams", "first_event"]

logger = logging.getLogger("server.sse")

Events = AsyncGenerator[AgentEvent, None]
"""A run's events: an ``EventStream``, or a generator over one (an endpoint's own step)."""

SHUTTING_DOWN = ErrorEvent(code="overloaded", message="the server is shutting down")
"""The error that ends a stream still open when the shutdown grace period is over: the code
clients already retry on (see docs/http-api.md), as before the ``unavailable`` code existed."""


async def first_event(
    events: Events, wait: float
) -> tuple[asyncio.Task[AgentEvent] | None, ErrorEvent | None]:
    """Start ``events`` and wait at most ``wait`` seconds for its first event: the task taking
    it, if one was needed (done or still waiting: awaiting it later takes the event, cancelling
    it ends the run), and the error the run was refused with, if that is its first event.

    An ``EventStream`` is only peeked at (a future and a timer: the event stays in it); any
    other generator over one needs a task to take the event without giving up on it.
    """
    if isinstance(events, EventStream):
        event = await events.peek(wait)
        return None, event if isinstance(event, ErrorEvent) else None
    task = asyncio.ensure_future(anext(events))
    try:
        await asyncio.wait({task}, timeout=wait)
    except BaseException:
        task.cancel()
        await events.aclose()
        raise
    return task, _refusal(task)


async def _end_unfinished(
    writer: SSEWriter, run: LiveRun | RemoteRun | None, duration_ms: float
) -> None:
    """Close a stream whose events ended before ``done`` with the client still there: at
    shutdown (``overloaded``), because the service stopped its run (``cancelled``; a
    re-attached client reads that from the run's log), or because the replica running it went
    away (``unavailable``)."""
    if writer.done_sent or writer.disconnected or writer.slow_reader:
        return
    if writer.stopped:
        error = SHUTTING_DOWN
    elif isinstance(run, LiveRun) and run.stopped:
        error = STOPPED
    elif isinstance(run, RemoteRun):
        error = REPLICA_GONE
    else:
        return
    await writer.send(error)
    await writer.send(DoneEvent("error", None, [], duration_ms))


def _settle(task: asyncio.Task[AgentEvent] | None) -> None:
    """Cancel ``task`` if it still waits; take its failure, if any, as seen."""
    if task is None:
        return
    if not task.done():
        task.cancel()
    elif not task.cancelled():
        task.exception()


def _refusal(first: asyncio.Task[AgentEvent]) -> ErrorEvent | None:
    """The run's error if it failed before anything else (the task's error, if any, raised)."""
    if not first.done():
        return None
    try:
        event = first.result()
    except StopAsyncIteration:
        return None
    return event if isinstance(event, ErrorEvent) else None


class SSEWriter:
    """Streams one run's events to one client.

    ``pump`` returns when the run has ended (after its ``done``), the client has gone away
    (``disconnected``), or :meth:`stop` was called (``stopped``, e.g. at shutdown; the caller
    then sends its own closing events). Heartbeats, vanished clients and stalled readers are
    the :class:`StreamMonitor`'s business (one task for all streams, not one per stream): a
    client that stops reading cannot make the server buffer without bound, because once one
    write has waited ``write_timeout_seconds`` the connection is cut (``slow_reader``).
    """

    __slots__ = (
        "_done_written", "_encoder", "_heartbeat", "_heartbeat_task", "_last_write", "_request",
        "_response", "_scope", "_write_timeout", "_writing_since", "after_write", "disconnected",
        "done_sent", "slow_reader", "stopped",
    )  # fmt: skip

    def __init__(
        self,
        request: web.Request,
        response: web.StreamResponse,
        encoder: Encoder,
        heartbeat_seconds: float,
        write_timeout_seconds: float = 30.0,
    ) -> None:
        self._request = request
        self._response = response
        self._encoder = encoder
        self._heartbeat = heartbeat_seconds
        self._last_write = time.monotonic()
        self._write_timeout = write_timeout_seconds
        self._writing_since: float | None = None
        self._heartbeat_task: asyncio.Task[None] | None = None
        self._scope: anyio.CancelScope | None = None
        self._done_written = False
        self.done_sent = False
        self.disconnected = False
        self.slow_reader = False
        self.stopped = False
        self.after_write: Callable[[], None] | None = None
        """Called after each write (a run's log takes over what the run emitted)."""

    async def pump(
        self, events: AsyncIterator[AgentEvent], first: asyncio.Future[AgentEvent] | None = None
    ) -> None:
        """Write every event of ``events`` until it ends, the client leaves or ``stop()``
        (the caller closes ``events``, or leaves the run to the hub).

        ``first``, when given, is the first event, still on its way (taken from ``events``
        before the headers went out). Events that are already waiting when one is written go
        out in the same write (an ``EventStream`` offers them through ``drain_nowait``), so a
        burst of deltas costs one write and no delta waits for a later one.
        """
        drain = getattr(events, "drain_nowait", None)
        encode = self._encode
        with anyio.CancelScope() as scope:
            self._scope = scope
            try:
                if first is not None:
                    await self._write_batch(await first, drain)
                async for event in events:
                    more = drain() if drain is not None else None
                    if more:
                        await self._write(b"".join([encode(event), *map(encode, more)]))
                        more = None  # not held while the next event is awaited
                    else:
                        await self._write(encode(event))
            except StopAsyncIteration:
                pass  # ``first`` found the stream ended
            except ConnectionResetError:
                self.disconnected = True

    def stop(self) -> None:
        """End ``pump`` now (the run is cancelled); the caller writes the closing events."""
        self.stopped = True
        if self._scope is not None:
            self._scope.cancel()

    async def send(self, event: AgentEvent) -> None:
        """Write one event."""
        await self._write(self._encode(event))

    async def _write_batch(
        self, event: AgentEvent, drain: Callable[[], list[AgentEvent]] | None
    ) -> None:
        """Write ``event`` and every event already waiting after it, in one write."""
        more = drain() if drain is not None else ()
        await self._write(b"".join([self._encode(event), *map(self._encode, more)]))

    def check(self, now: float) -> None:
        """The monitor's visit: end the stream if the client is gone or has stopped reading,
        else send a heartbeat if nothing was written for a while."""
        transport = self._request.transport
        if transport is None or transport.is_closing():
            self._end(disconnected=True)
            return
        writing_since = self._writing_since
        if writing_since is not None:
            if now - writing_since > self._write_timeout:
                self._cut_slow_reader(transport)
            return
        idle = now - self._last_write >= self._heartbeat
        if idle and self._heartbeat_task is None and self._encoder.heartbeat:
            self._heartbeat_task = asyncio.get_running_loop().create_task(self._beat())

    def _encode(self, event: AgentEvent) -> bytes:
        if type(event) is DoneEvent:
            self._done_written = True
        return self._encoder.encode(event)

    async def _write(self, data: bytes) -> None:
        self._last_write = self._writing_since = time.monotonic()
        try:
            await self._response.write(data)
        finally:
            self._writing_since = None
        if self.after_write is not None:
            self.after_write()
        if self._done_written:
            self.done_sent = True

    async def _beat(self) -> None:
        try:
            await self._write(self._encoder.heartbeat)
        except ConnectionResetError:
            self._end(disconnected=True)
        finally:
            self._heartbeat_task = None

    def _end(self, *, disconnected: bool) -> None:
        self.disconnected = self.disconnected or disconnected
        if self._scope is not None:
            self._scope.cancel()

    def _cut_slow_reader(self, transport: asyncio.Transport) -> None:
        logger.warning(
            "client %s is not reading: cut the stream after a write waited %.0f s (request id %s)",
            self._request.remote,
            self._write_timeout,
            self._request.get(REQUEST_ID),
        )
        self.slow_reader = True
        transport.abort()
        self._end(disconnected=True)


class StreamMonitor:
    """One task watching every open stream, every ``interval`` seconds: heartbeats when idle,
    streams of vanished clients ended, stalled readers cut.

    With ``handler_cancellation`` (the CLI and aiohttp's test server enable it) aiohttp cancels a
    handler the moment its client leaves; the monitor covers apps run without it, within
    ``interval``.
    """

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self.writers: set[SSEWriter] = set()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            now = time.monotonic()
            for writer in list(self.writers):
                writer.check(now)


class Streams:
    """Every open stream of one app, and what happens to them at shutdown.

    :meth:`respond` answers a request with a run's events (heartbeats, vanished clients, slow
    readers and shutdown included) and counts the stream in the metrics while it is open;
    :meth:`drain` gives them the grace period when the app shuts down, then ends them. One
    :class:`StreamMonitor` task watches them, started and stopped with the app (:meth:`start`,
    :meth:`close`).
    """

    def __init__(
        self,
        metrics: Metrics,
        *,
        heartbeat_seconds: float,
        write_timeout_seconds: float,
        runs: RunHub | None = None,
    ) -> None:
        self._metrics = metrics
        self.runs = runs if runs is not None else RunHub()
        """The runs a client can come back to."""
        self._heartbeat = heartbeat_seconds
        self._write_timeout = write_timeout_seconds
        self.monitor = StreamMonitor(min(heartbeat_seconds, write_timeout_seconds / 2, 1.0))
        self.idle = asyncio.Event()
        self.idle.set()
        self.shutting_down = False
        """Set once the app shuts down (on the signal, with the listener still open): readiness
        answers 503 and new runs are refused (503)."""

    @property
    def open(self) -> set[SSEWriter]:
        """The open streams (the monitor's set)."""
        return self.monitor.writers

    def start(self) -> None:
        """Start the monitor (on the app's startup)."""
        self.monitor.start()

    async def close(self) -> None:
        """Stop the monitor and the runs still kept (on the app's cleanup)."""
        await self.monitor.stop()
        await self.runs.aclose()

    async def respond(
        self,
        request: web.Request,
        events: Events,
        encoder: Encoder,
        refuse: Callable[[ErrorEvent], web.StreamResponse],
        *,
        before: AgentEvent | None = None,
        agent: str | None = None,
        run: LiveRun | None = None,
    ) -> web.StreamResponse:
        """Answer ``request`` with ``events`` as ``encoder``'s dialect: heartbeats,
        disconnects, shutdown included.

        The headers wait for the run's first event, for at most one heartbeat interval: a run
        that fails before it has said anything (a guard's refusal, no capacity, a model that
        cannot be reached) is answered by ``refuse(error)``, an HTTP status, instead of a
        stream. Once the headers are out, errors are events. ``before`` goes out first (the
        router's pick); ``agent`` names the agent in an ``X-Agent`` header. A ``run`` the
        :attr:`runs` hub keeps outlives this connection: a client that leaves before ``done``
        may come back to it (:meth:`reattach`).
        """
        first: asyncio.Task[AgentEvent] | None = None
        try:
            first, error = await first_event(events, self._heartbeat)
            if error is not None:
                await events.aclose()
                if run is not None:
                    self.runs.forget(run)
                return refuse(error)
            response = await self._prepare(request, encoder, agent)
        except BaseException:
            _settle(first)
            await events.aclose()
            if run is not None:
                self.runs.forget(run)
            raise
        writer = SSEWriter(request, response, encoder, self._heartbeat, self._write_timeout)
        if run is not None:
            writer.after_write = run.log.settle
        self._opened(writer, run)
        try:
            await self._stream(writer, events, before, first, run)
        except ConnectionResetError:
            writer.disconnected = True
        finally:
            _settle(first)
            await self._release(writer, events, run)
            self._closed(writer)
        return response

    async def reattach(
        self, request: web.Request, run: LiveRun | RemoteRun, start: int
    ) -> web.StreamResponse:
        """Answer ``request`` with ``run``'s events from ``start`` on: those it missed at
        once, then each as it comes, until ``done`` (nothing of the run happens again)."""
        encoder = run.encoder(start)
        self.runs.attach(run)  # before the headers: the grace must not end while they go out
        try:
            response = await self._prepare(request, encoder, None)
        except BaseException:
            self.runs.detach(run)
            raise
        writer = SSEWriter(request, response, encoder, self._heartbeat, self._write_timeout)
        self._opened(writer)
        reader = run.reader(start)
        try:
            await writer.pump(reader)
            await _end_unfinished(writer, run, 0.0)
        except ConnectionResetError:
            writer.disconnected = True
        finally:
            await reader.aclose()
            await self._release(writer, None, run)
            self._closed(writer)
        return response

    async def _prepare(
        self, request: web.Request, encoder: Encoder, agent: str | None
    ) -> web.StreamResponse:
        headers = {**SSE_HEADERS, "Content-Type": encoder.media_type, **encoder.headers}
        headers["X-Request-Id"] = request[REQUEST_ID]
        if agent is not None:
            headers["X-Agent"] = agent
        response = web.StreamResponse(headers=headers)
        await response.prepare(request)
        opening = encoder.opening()
        if opening:
            await response.write(opening)
        return response

    async def _release(
        self, writer: SSEWriter, events: Events | None, run: LiveRun | RemoteRun | None
    ) -> None:
        """After a stream: close the run's events, or leave the run to the hub (which waits
        for its client to come back); a stream stopped at shutdown stops its run."""
        if run is None:
            if events is not None:
                await events.aclose()
            return
        if writer.stopped and isinstance(run, LiveRun):
            await self.runs.stop(run)
        self.runs.detach(run)

    async def drain(self, grace_seconds: float) -> None:
        """On shutdown: refuse new runs; let the open streams finish for ``grace_seconds`` (a
        client may re-attach to its run meanwhile, opening another), then end them, each with
        an ``overloaded`` error and its ``done``; then cancel the runs nobody reads (those
        whose client left, kept for a re-attach: :attr:`runs`)."""
        self.shutting_down = True
        if self.open:
            logger.info(
                "shutting down: waiting up to %g s for %d open streams",
                grace_seconds,
                len(self.open),
            )
            with anyio.move_on_after(grace_seconds):
                await self.idle.wait()
            for writer in list(self.open):
                writer.stop()
            with anyio.move_on_after(5):
                await self.idle.wait()
            if self.open:
                logger.warning("%d streams did not end at shutdown", len(self.open))
        left = await self.runs.stop_all()
        if left:
            logger.info("shutting down: cancelled %d runs whose client had left", left)

    @staticmethod
    async def _stream(
        writer: SSEWriter,
        events: Events,
        before: AgentEvent | None,
        first: asyncio.Future[AgentEvent] | None,
        run: LiveRun | None,
    ) -> None:
        started = time.perf_counter()
        if before is not None:
            await writer.send(before)
        await writer.pump(events, first)
        await _end_unfinished(writer, run, round((time.perf_counter() - started) * 1000, 3))

    def _opened(self, writer: SSEWriter, run: LiveRun | RemoteRun | None = None) -> None:
        if run is not None:
            self.runs.attach(run)
        self.open.add(writer)
        self.idle.clear()
        self._metrics.sse_streams_active.inc()

    def _closed(self, writer: SSEWriter) -> None:
        self._metrics.sse_streams_active.dec()
        if not writer.done_sent and not writer.stopped:
            self._metrics.sse_disconnects.inc()
        self.open.discard(writer)
        if not self.open:
            self.idle.set()
