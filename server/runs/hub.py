"""The runs of one service that a client can come back to.

A streamed run is no longer tied to the connection that started it: its events go to an
:class:`~.log.EventLog` as they are emitted, and the connection is only its first reader. When
that connection drops before ``done``, the run goes on for ``grace_seconds``, waiting for the
client to re-attach (``Last-Event-ID``, ``GET /api/runs/{id}/events``, the AI SDK's resume); a
re-attached client gets the events it missed, then the rest as they come, and nothing runs
twice. Nobody came back: the run is cancelled as a vanished client's always was, its tools
included. An explicit stop (``DELETE /api/runs/{id}``) cancels at once. A finished run's events
are kept ``window_seconds`` (a late re-attach gets them, an ``EventSource`` reconnecting after
``done`` is told to stop), within ``max_bytes`` for all finished runs together, the oldest
forgotten first. At shutdown a client may still re-attach while the open streams have their
grace period; once they have ended, the runs nobody reads are cancelled
(:meth:`RunHub.stop_all`).
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Protocol

from agent_executor import AgentEvent, DoneEvent, ErrorEvent, EventStream

from ..dialects import Encoder
from ..dialects.registry import EncoderAt, encoder_at
from ..errors import ServiceErrorCode
from .log import EventLog, LogReader
from .relay import RemoteRun

__all__ = ["STOPPED", "LiveRun", "RunHub", "RunRelay"]

logger = logging.getLogger("server.runs")

STOPPED = ErrorEvent(
    code=ServiceErrorCode.CANCELLED.value, message="the run was stopped before it finished"
)
"""The error that ends the stream of every client reading a run the service stopped (an
explicit stop, or nobody back within the grace), followed by ``done``: a stream ends with
``done`` unless its connection is lost."""


@dataclass(eq=False, slots=True)
class LiveRun:
    """A run a client can re-attach to: whose it is, its events, and who reads them."""

    run_id: str
    user_id: str | None
    session_id: str | None
    encoder_at: EncoderAt
    """The run's dialect, from a position on."""
    dialect: str | None
    """Its name in ``server/dialects/registry.py`` (``None``: not re-encodable elsewhere)."""
    log: EventLog
    events: EventStream | None
    """The run's own stream while it may still be going (released once it is kept finished)."""
    readers: int = 0
    consumed: bool = False
    """Whether the hub takes the run's events from its stream (its client has left)."""
    stopped: bool = False
    """Cancelled by the service (no client came back, an explicit stop, shutdown)."""
    _timer: asyncio.TimerHandle | None = field(default=None, repr=False)

    def belongs_to(self, user_id: str | None) -> bool:
        """Whether ``user_id`` may read this run (the user who started it)."""
        return self.user_id == user_id

    def reader(self, start: int) -> LogReader:
        """The events from ``start`` on, then each as it comes, until ``done``."""
        return LogReader(self.log, start)

    def encoder(self, start: int = 0) -> Encoder:
        """The run's dialect from event ``start`` on."""
        return self.encoder_at(self.run_id, start)

    @property
    def done_at(self) -> int | None:
        """The position of the run's ``done`` (``None`` while it goes on)."""
        return len(self.log) - 1 if self.log.done and not self.stopped else None

    @property
    def overflowed(self) -> bool:
        return self.log.overflowed


class RunRelay(Protocol):
    """Shares this replica's runs with the other replicas, and finds theirs
    (``RedisRunRelay``)."""

    def mirror(
        self, run: LiveRun, dialect: str, stop: Callable[[LiveRun], Awaitable[None]]
    ) -> None:
        """Share ``run``'s events as they come; ``stop`` it when another replica asks."""
        ...

    async def has_reader(self, run_id: str) -> bool:
        """Whether a client reads the run on another replica now."""
        ...

    async def find(self, run_id: str) -> RemoteRun | None:
        """Another replica's run, if it is still kept."""
        ...

    async def run_of_session(self, user_id: str | None, session_id: str) -> str | None:
        """The id of the session's latest run another replica keeps."""
        ...

    async def stop(self, run_id: str) -> None:
        """Ask the replica running the run to stop it."""
        ...

    async def aclose(self) -> None: ...


class RunHub:
    """Every run of this process that a client may re-attach to (docs/sse-protocol.md)."""

    def __init__(
        self,
        *,
        grace_seconds: float = 5.0,
        window_seconds: float = 300.0,
        max_bytes: int = 64 << 20,
        max_run_bytes: int = 1 << 20,
        relay: RunRelay | None = None,
    ) -> None:
        self.relay = relay
        self.grace_seconds = grace_seconds
        self.window_seconds = window_seconds
        self.max_bytes = max_bytes
        self.max_run_bytes = max_run_bytes
        self._runs: dict[str, LiveRun] = {}
        self._sessions: dict[tuple[str | None, str], LiveRun] = {}
        self._finished: OrderedDict[str, int] = OrderedDict()
        self._finished_bytes = 0
        self._tasks: set[asyncio.Task[None]] = set()

    def __len__(self) -> int:
        return len(self._runs)

    def start(
        self,
        events: EventStream,
        dialect: str | EncoderAt,
        *,
        user_id: str | None,
        session_id: str | None = None,
        first: AgentEvent | None = None,
    ) -> LiveRun:
        """Keep ``events``' run re-attachable from its start, in ``dialect`` (a registered
        dialect's name, which other replicas can rebuild too; or a factory of this process's
        own); ``first`` is an event of the service's own that goes before the run's."""
        name = dialect if isinstance(dialect, str) else None
        factory = encoder_at(dialect) if isinstance(dialect, str) else dialect
        log = EventLog(self.max_run_bytes)
        if first is not None:
            log.append(first)
        log.follow(events)
        run_id = secrets.token_urlsafe(12)
        run = LiveRun(run_id, user_id, session_id, factory, name, log, events)
        self._runs[run.run_id] = run
        if session_id is not None:
            self._sessions[(user_id, session_id)] = run
        if self.relay is not None and name is not None:
            self.relay.mirror(run, name, self.stop)
        return run

    def find(self, run_id: str) -> LiveRun | None:
        """The run, if this process still has it."""
        return self._runs.get(run_id)

    async def locate(self, run_id: str) -> LiveRun | RemoteRun | None:
        """The run, kept here or (with a relay) by another replica."""
        run = self._runs.get(run_id)
        if run is not None or self.relay is None:
            return run
        return await self.relay.find(run_id)

    async def locate_session(
        self, user_id: str | None, session_id: str
    ) -> LiveRun | RemoteRun | None:
        """The session's latest run still kept, here or (with a relay) on another replica."""
        run = self._sessions.get((user_id, session_id))
        if run is not None or self.relay is None:
            return run
        run_id = await self.relay.run_of_session(user_id, session_id)
        return None if run_id is None else await self.relay.find(run_id)

    def of_session(self, user_id: str | None, session_id: str) -> LiveRun | None:
        """The session's latest run still kept (running or finished within the window)."""
        return self._sessions.get((user_id, session_id))

    def attach(self, run: LiveRun | RemoteRun) -> None:
        """A client reads the run: it is not abandoned."""
        if isinstance(run, RemoteRun):
            run.attach()
            return
        run.readers += 1
        if run._timer is not None and not run.log.done:
            run._timer.cancel()
            run._timer = None

    def detach(self, run: LiveRun | RemoteRun) -> None:
        """A client stopped reading: a run whose last reader left before ``done`` waits
        ``grace_seconds`` for one to come back, then is cancelled."""
        if isinstance(run, RemoteRun):
            run.detach()
            return
        run.readers -= 1
        if run.readers > 0 or run.stopped:
            return
        if run.log.done:
            self._finish(run)
        elif run._timer is None:
            if run.events is not None and not run.consumed:
                run.consumed = True
                self._spawn(self._consume(run.events, run.log))
            loop = asyncio.get_running_loop()
            run._timer = loop.call_later(self.grace_seconds, self._abandoned, run)

    def forget(self, run: LiveRun) -> None:
        """Drop a run no client can come back to (refused before its first event)."""
        self._remove(run)

    async def stop(self, run: LiveRun) -> None:
        """Cancel the run now (an explicit stop, shutdown), its tools included."""
        if run.stopped or run.log.done:
            return
        run.stopped = True
        if run._timer is not None:
            run._timer.cancel()
            run._timer = None
        try:
            if run.events is not None:
                await run.events.aclose()
        finally:  # its readers, here and on other replicas, are told however the run ended
            run.log.close(STOPPED, DoneEvent("error", None, [], 0.0))
            self._remove(run)

    async def stop_all(self) -> int:
        """Cancel every run still going, its tools included (at shutdown, once the open
        streams have ended; at cleanup); how many there were."""
        going = [run for run in self._runs.values() if not run.stopped and not run.log.done]
        for run in going:
            await self.stop(run)
        return len(going)

    async def aclose(self) -> None:
        """Cancel every run still going and forget every run (the app's cleanup): no run
        goes on and no task of the hub is left."""
        await self.stop_all()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for run in list(self._runs.values()):
            self._remove(run)
        if self.relay is not None:
            await self.relay.aclose()

    def _abandoned(self, run: LiveRun) -> None:
        """The grace period passed: cancel the run if nobody came back (and it has not
        finished meanwhile, when it is kept for the window instead)."""
        run._timer = None
        if self._unread(run):
            self._spawn(self._abandon(run))

    def _unread(self, run: LiveRun) -> bool:
        """Whether ``run`` still goes with nobody reading it here; a run that finished
        meanwhile is kept for the window instead."""
        if run.readers or run.stopped:
            return False
        if run.log.done:
            self._finish(run)
            return False
        return True

    def _spawn(self, work: Coroutine[object, None, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    @staticmethod
    async def _consume(events: EventStream, log: EventLog) -> None:
        """Take the run's events from its stream while no client does (the log keeps them),
        so that each reaches the log, and a re-attached reader, as the run emits it."""
        try:
            async for _ in events:
                events.drain_nowait()
                log.compact()
        except Exception:
            logger.exception("a run whose client left failed")
        log.compact()

    async def _abandon(self, run: LiveRun) -> None:
        """Cancel a run nobody came back to, unless a client reads it on another replica
        (then look again after another grace period) or came back here since the grace
        ended (its request ran before this task did, or while the relay was asked)."""
        if self.relay is not None and await self.relay.has_reader(run.run_id):
            loop = asyncio.get_running_loop()
            run._timer = loop.call_later(self.grace_seconds, self._abandoned, run)
            return
        if not self._unread(run):
            return
        logger.info("run %s: no client came back within %.0f s", run.run_id, self.grace_seconds)
        await self.stop(run)

    def _finish(self, run: LiveRun) -> None:
        """The run is done and nobody reads it: keep its events for the window."""
        if run.run_id in self._finished or run.run_id not in self._runs:
            return
        run.events = None  # its task holds the run's whole state
        size = run.log.size
        self._finished[run.run_id] = size
        self._finished_bytes += size
        while self._finished_bytes > self.max_bytes and self._finished:
            oldest = self._runs.get(next(iter(self._finished)))
            if oldest is None:
                self._finished.popitem(last=False)
                continue
            self._remove(oldest)
        if run.run_id in self._runs:
            loop = asyncio.get_running_loop()
            run._timer = loop.call_later(self.window_seconds, self._remove, run)

    def _remove(self, run: LiveRun) -> None:
        if run._timer is not None:
            run._timer.cancel()
            run._timer = None
        self._runs.pop(run.run_id, None)
        size = self._finished.pop(run.run_id, None)
        if size is not None:
            self._finished_bytes -= size
        if run.session_id is not None:
            key = (run.user_id, run.session_id)
            if self._sessions.get(key) is run:
                del self._sessions[key]
