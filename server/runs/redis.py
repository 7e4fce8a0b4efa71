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
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
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
        self._tasks: set[asyncio.Task[None]] = set()

    def _keys(self, run_id: str) -> tuple[str, str]:
        base = f"{self.prefix}run:{run_id}"
        return base, base + ":meta"

    def mirror(
        self, run: LiveRun, dialect: str, stop: Callable[[LiveRun], Awaitable[None]]
    ) -> None:
        """Write ``run``'s events to Redis as they come, until its ``done`` (or its stop)."""
        task = asyncio.get_running_loop().create_task(self._mirror(run, dialect, stop))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _mirror(
        self, run: LiveRun, dialect: str, stop: Callable[[LiveRun], Awaitable[None]]
    ) -> None:
        stream, meta = self._keys(run.run_id)
        ttl = int(self.lease_seconds * 1000)
        sent = 0
        try:
            await self.redis.hset(
                meta, mapping={"user": run.user_id or "", "dialect": dialect, "done": -1}
            )
            if run.session_id is not None:
                session = self._key("run-of", run.user_id, run.session_id)
                await self.redis.set(session, run.run_id, px=int(self.running_ttl * 1000))
            while True:
                log = run.log
                pipe = self.redis.pipeline(transaction=False)
                for position in range(sent, len(log)):
                    data = event_adapter.dump_json(log.event(position))
                    pipe.xadd(stream, {"e": data}, id=f"0-{position + 1}")
                sent = len(log)
                finished = log.done or log.overflowed or run.stopped
                if finished:
                    ttl = int(self.window_seconds * 1000)
                    pipe.hset(meta, mapping={"done": sent - 1 if log.done else -2})
                pipe.pexpire(stream, ttl)
                pipe.pexpire(meta, ttl)
                pipe.get(stream + ":stop")
                *_, stopped = await pipe.execute()
                if finished:
                    return
                if stopped:
                    await stop(run)
                    continue
                with anyio.move_on_after(1.0):
                    await log.grown()
        except Exception as exc:  # a Redis outage costs the re-attach elsewhere, not the run
            logger.warning("run %s: mirroring to Redis failed: %s", run.run_id, exc)

    async def has_reader(self, run_id: str) -> bool:
        """Whether a client reads the run on another replica now."""
        stream, _ = self._keys(run_id)
        with contextlib.suppress(Exception):
            return bool(await self.redis.exists(stream + ":reader"))
        return False

    async def find(self, run_id: str) -> RemoteRun | None:
        """The run, if a replica wrote it to Redis and it has not expired."""
        _, meta = self._keys(run_id)
        try:
            fields: dict[Any, Any] = await self.redis.hgetall(meta)
        except Exception as exc:
            logger.warning("finding run %s in Redis failed: %s", run_id, exc)
            return None
        if not fields:
            return None
        decoded = {k.decode(): v.decode() for k, v in fields.items()}
        return _RedisRun(self, run_id, decoded)

    async def run_of_session(self, user_id: str | None, session_id: str) -> str | None:
        """The session's latest run a replica wrote to Redis."""
        try:
            found = await self.redis.get(self._key("run-of", user_id, session_id))
        except Exception as exc:
            logger.warning("finding a session's run in Redis failed: %s", exc)
            return None
        return found.decode() if isinstance(found, bytes) else None

    async def stop(self, run_id: str) -> None:
        """Ask the replica running the run to stop it."""
        stream, _ = self._keys(run_id)
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
        """Say a client reads the run here, so the replica running it does not abandon it."""
        stream, _ = self._relay._keys(self.run_id)
        every = max(self._relay.grace_seconds / 2, 0.1)
        with contextlib.suppress(Exception):
            while True:
                await self._relay.redis.set(stream + ":reader", 1, px=int(every * 4000))
                await anyio.sleep(every)


class _StreamReader:
    """The run's events from a position on, from its Redis Stream, until its ``done``."""

    def __init__(self, relay: RedisRunRelay, run_id: str, start: int) -> None:
        self._relay = relay
        self._stream, _ = relay._keys(run_id)
        self._last = f"0-{start}"
        self._ready: list[AgentEvent] = []
        self._done = False

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
        answer: Any = await self._relay.redis.xread({self._stream: self._last}, block=_BLOCK_MS)
        if not answer:
            if not await self._relay.redis.exists(self._stream):
                self._done = True  # expired, or the replica never finished it
            return
        for entry_id, fields in answer[0][1]:
            self._last = entry_id.decode()
            self._ready.append(event_adapter.validate_json(fields[b"e"]))

    async def aclose(self) -> None:
        self._done = True
