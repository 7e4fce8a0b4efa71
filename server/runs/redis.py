"""Runs that outlive their replica's connection: with ``--redis-url`` a run's events are also
written to a Redis Stream, so a client whose re-attach lands on another replica (behind a load
balancer) streams the rest of a run still going on the first.

One stream per run, ``<prefix>run:<id>``, whose entry ids are the events' positions
(``0-<position + 1>``: a reader asks for what follows the position it has), and a hash
``<prefix>run:<id>:meta`` (the user, the dialect, where ``done`` is). The replica running the run
writes them from a task of the run's own (batched: one round trip for the events that came
since the last), which also reads two keys other replicas set: ``:reader`` while a client reads
the run there (the run is not abandoned), ``:stop`` for an explicit stop. Every key has a TTL,
so nothing is left behind: the replay window once the run is done; while it goes, the stream
and its hash hold a lease (``lease_seconds``) that the task renews at least once a second, so
a replica that dies takes its runs with it within seconds, and a client reading one of them on
another replica is told (``unavailable``) instead of waiting for the run's longest possible
life.

Redis may go away for a while (a restart, a failover, a network blip) while runs go on. Nothing
here gives up on the first error: the mirror tries again every half second and, once Redis
answers, asks it what it kept (a restart keeps nothing) and writes the rest; a client reading
through another replica keeps waiting, and the replica running the run keeps it for that
client, for as long as the lease would have lasted. Past that, the reader is told
(``unavailable``), as for a replica that died. A re-attach that cannot ask Redis is a 503
(``StoreUnavailable``), not a 204: the run may well go on.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from agent_executor import AgentEvent, DoneEvent, event_adapter
from agent_executor.redis.client import RedisPart

from .hub import LiveRun
from .relay import RemoteRun

__all__ = ["RedisRunRelay"]

logger = logging.getLogger("server.runs")

_BLOCK_MS = 1000
_RETRY_SECONDS = 0.5
"""How soon a task that Redis failed tries again."""
_MISSING_SECONDS = 3.0
"""How long a reader waits for a run's stream that Redis no longer has (expired, or lost in a
restart) to be written again before it ends: the mirror writes it again within a second or
two of Redis answering; a replica that died never does."""


class RedisRunRelay(RedisPart):
    """Mirrors this replica's runs into Redis and finds other replicas' runs there."""

    def __init__(
        self,
        redis: Any,
        *,
        prefix: str = "agent-executor:",
        running_ttl: float = 3600.0,
        window_seconds: float = 300.0,
        grace_seconds: float = 5.0,
        lease_seconds: float = 10.0,
    ) -> None:
        super().__init__(redis, prefix=prefix)
        self.running_ttl = running_ttl
        self.lease_seconds = lease_seconds
        self.window_seconds = window_seconds
        self.grace_seconds = grace_seconds
        self._tasks: set[asyncio.Future[object]] = set()
        self._failing_since: float | None = None

    def _keys(self, run_id: str) -> tuple[str, str]:
        base = f"{self.prefix}run:{run_id}"
        return base, base + ":meta"

    def _failed(self, exc: Exception) -> float:
        """Note that Redis failed (logged once per outage); how long it has been failing."""
        now = time.monotonic()
        if self._failing_since is None:
            self._failing_since = now
            logger.warning(
                "Redis failed; runs go on and are mirrored again once it answers: %s", exc
            )
        return now - self._failing_since

    def _answered(self) -> None:
        if self._failing_since is not None:
            down = time.monotonic() - self._failing_since
            self._failing_since = None
            logger.info("Redis answers again, after %.1f s", down)

    def mirror(
        self, run: LiveRun, dialect: str, stop: Callable[[LiveRun], Awaitable[None]]
    ) -> None:
        """Write ``run``'s events to Redis as they come, until its ``done`` (a stopped run's
        too: the ``error`` and ``done`` its log closes with)."""
        self._spawn(self._mirror(run, dialect, stop))

    def _spawn(self, work: Awaitable[object]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _mirror(
        self, run: LiveRun, dialect: str, stop: Callable[[LiveRun], Awaitable[None]]
    ) -> None:
        """Write the run's events in batches, renewing its lease, until it is finished and
        written. After a Redis error (half a second later), or once Redis has lost the run's
        hash (a restart, or an outage longer than the lease), what Redis kept is looked at
        first (:meth:`_resume`). The task gives up only on a finished run Redis has failed
        for longer than the replay window: its keys would be gone by then anyway."""
        sent: int | None = None  # events Redis holds (None: ask it)
        asked = False  # another replica asked to stop the run
        while True:
            try:
                if sent is None:
                    sent = await self._resume(run, dialect)
                sent, finished, stopped = await self._write(run, sent)
            except Exception as exc:  # a Redis outage costs the re-attach elsewhere, not the run
                sent = None
                down = self._failed(exc)
                if _finished(run) and down > self.window_seconds:
                    logger.warning(
                        "run %s: not mirrored to Redis: it failed for %.0f s", run.run_id, down
                    )
                    return
                await anyio.sleep(_RETRY_SECONDS)
                continue
            self._answered()
            if sent is None:  # the hash was gone: write everything again
                continue
            if finished:
                return
            if stopped and not asked:  # in a task of its own: the lease is renewed meanwhile
                asked = True
                self._spawn(stop(run))
            with anyio.move_on_after(1.0):
                await run.log.grown()

    async def _resume(self, run: LiveRun, dialect: str) -> int:
        """Write the run's hash and return how many of its events the stream holds. A stream
        whose hash is gone is deleted and written again from the first event: Redis lost
        both (a restart), and a batch written since went into a new stream that lacks the
        events before it."""
        stream, meta = self._keys(run.run_id)
        pipe = self.redis.pipeline(transaction=False)
        pipe.exists(meta)
        pipe.xrevrange(stream, count=1)
        kept, last = await pipe.execute()
        sent = int(last[0][0].split(b"-")[1]) if kept and last else 0
        pipe = self.redis.pipeline(transaction=False)
        if not sent:
            pipe.delete(stream)
        pipe.hset(meta, mapping={"user": run.user_id or "", "dialect": dialect, "done": -1})
        pipe.pexpire(meta, int(self.lease_seconds * 1000))
        if run.session_id is not None:
            session = self._key("run-of", run.user_id, run.session_id)
            pipe.set(session, run.run_id, px=int(self.running_ttl * 1000))
        await pipe.execute()
        return sent

    async def _write(self, run: LiveRun, sent: int) -> tuple[int | None, bool, bool]:
        """Write the events after the first ``sent`` and renew the lease (or, once the run is
        finished, keep its keys for the window): how many Redis then holds (``None`` if the
        run's hash was gone), whether the run is finished, and whether another replica asked
        to stop it."""
        stream, meta = self._keys(run.run_id)
        log = run.log
        pipe = self.redis.pipeline(transaction=False)
        pipe.exists(meta)
        for position in range(sent, len(log)):
            data = event_adapter.dump_json(log.event(position))
            pipe.xadd(stream, {"e": data}, id=f"0-{position + 1}")
        written = len(log)
        finished = _finished(run)
        ttl = int((self.window_seconds if finished else self.lease_seconds) * 1000)
        if finished:
            pipe.hset(meta, mapping={"done": written - 1 if log.done else -2})
        pipe.pexpire(stream, ttl)
        pipe.pexpire(meta, ttl)
        pipe.get(stream + ":stop")
        kept, *_, stopped = await pipe.execute()
        return written if kept else None, finished, bool(stopped)

    async def has_reader(self, run_id: str) -> bool:
        """Whether a client reads the run on another replica now.

        A reader's replica renews its key every half grace period; a Redis restart loses it
        until the next renewal, so an absent key is looked for once more after that long.
        While Redis does not answer (for up to the lease), maybe: the run is kept rather than
        cancelled under a client still reading it elsewhere, who is told only once the lease
        would have run out."""
        stream, _ = self._keys(run_id)
        try:
            found = bool(await self.redis.exists(stream + ":reader"))
            if not found:
                await anyio.sleep(_beat_seconds(self.grace_seconds))
                found = bool(await self.redis.exists(stream + ":reader"))
        except Exception as exc:
            return self._failed(exc) < self.lease_seconds
        self._answered()
        return found

    async def find(self, run_id: str) -> RemoteRun | None:
        """The run, if a replica wrote it to Redis and it has not expired
        (:class:`~agent_executor.StoreUnavailable` if Redis cannot say)."""
        _, meta = self._keys(run_id)
        async with self._calling("finding a run"):
            fields: dict[Any, Any] = await self.redis.hgetall(meta)
        self._answered()
        if not fields:
            return None
        decoded = {k.decode(): v.decode() for k, v in fields.items()}
        return _RedisRun(self, run_id, decoded)

    async def run_of_session(self, user_id: str | None, session_id: str) -> str | None:
        """The session's latest run a replica wrote to Redis
        (:class:`~agent_executor.StoreUnavailable` if Redis cannot say)."""
        async with self._calling("finding a session's run"):
            found = await self.redis.get(self._key("run-of", user_id, session_id))
        self._answered()
        return found.decode() if isinstance(found, bytes) else None

    async def stop(self, run_id: str) -> None:
        """Ask the replica running the run to stop it
        (:class:`~agent_executor.StoreUnavailable` if Redis cannot be told)."""
        stream, _ = self._keys(run_id)
        async with self._calling("stopping a run"):
            await self.redis.set(stream + ":stop", 1, px=int(self.running_ttl * 1000))

    async def aclose(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await super().aclose()


class _RedisRun(RemoteRun):
    """A run another replica runs (or ran), read from its Redis Stream."""

    def __init__(self, relay: RedisRunRelay, run_id: str, meta: dict[str, str]) -> None:
        done = int(meta.get("done", -1))
        super().__init__(
            run_id,
            user_id=meta.get("user") or None,
            dialect=meta.get("dialect", ""),
            done_at=done if done >= 0 else None,
            overflowed=done == -2,
        )
        self._relay = relay
        self._heartbeat: asyncio.Task[None] | None = None

    def reader(self, start: int) -> _StreamReader:
        return _StreamReader(self._relay, self.run_id, start)

    def attach(self) -> None:
        self._heartbeat = asyncio.get_running_loop().create_task(self._beat())

    def detach(self) -> None:
        if self._heartbeat is not None:
            self._heartbeat.cancel()

    async def _beat(self) -> None:
        """Say a client reads the run here, so the replica running it does not abandon it (a
        beat Redis failed is tried again at the next: the replica running the run keeps it
        meanwhile, see :meth:`RedisRunRelay.has_reader`)."""
        stream, _ = self._relay._keys(self.run_id)
        every = _beat_seconds(self._relay.grace_seconds)
        while True:
            try:
                await self._relay.redis.set(stream + ":reader", 1, px=int(every * 4000))
            except Exception as exc:
                self._relay._failed(exc)
            await anyio.sleep(every)


class _StreamReader:
    """The run's events from a position on, from its Redis Stream, until its ``done``."""

    def __init__(self, relay: RedisRunRelay, run_id: str, start: int) -> None:
        self._relay = relay
        self._stream, _ = relay._keys(run_id)
        self._last = f"0-{start}"
        self._ready: list[AgentEvent] = []
        self._done = False
        self._missing_since: float | None = None

    def __aiter__(self) -> _StreamReader:
        return self

    async def __anext__(self) -> AgentEvent:
        while not self._ready:
            if self._done:
                raise StopAsyncIteration
            await self._read()
        event = self._ready.pop(0)
        self._done = self._done or type(event) is DoneEvent
        return event

    def drain_nowait(self) -> list[AgentEvent]:
        ready, self._ready = self._ready, []
        if any(type(event) is DoneEvent for event in ready):
            self._done = True
        return ready

    async def _read(self) -> None:
        """Take what the stream holds after the last event read, waiting a second for it.

        The reader ends (the caller then says ``unavailable``) once the stream is gone for
        ``_MISSING_SECONDS`` (expired: the replica died, or never finished it) or Redis has
        failed for as long as the lease: until then an outage is waited out."""
        relay = self._relay
        try:
            answer: Any = await relay.redis.xread({self._stream: self._last}, block=_BLOCK_MS)
            present = bool(answer) or bool(await relay.redis.exists(self._stream))
        except Exception as exc:
            if relay._failed(exc) >= relay.lease_seconds:
                self._done = True
            else:
                await anyio.sleep(_RETRY_SECONDS)
            return
        relay._answered()
        if not present:
            now = time.monotonic()
            self._missing_since = self._missing_since or now
            self._done = now - self._missing_since >= _MISSING_SECONDS
            return
        self._missing_since = None
        for entry_id, fields in answer[0][1] if answer else ():
            self._last = entry_id.decode()
            self._ready.append(event_adapter.validate_json(fields[b"e"]))

    async def aclose(self) -> None:
        self._done = True


def _finished(run: LiveRun) -> bool:
    """Whether nothing more of ``run`` will be written: done (a stopped run once its log is
    closed with ``error`` and ``done``, not when the stop begins), or too long to keep."""
    return run.log.done or run.log.overflowed


def _beat_seconds(grace_seconds: float) -> float:
    """How often a replica says a client reads a run there: twice per grace period."""
    return max(grace_seconds / 2, 0.1)
