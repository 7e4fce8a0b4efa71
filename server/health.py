"""What ``/api/health`` and ``/api/ready`` report: whether the parts a run needs are up.

Two checks, both cheap:

- ``redis``, when an agent's conversation store or the tool-result relay is on Redis: a PING to
  each, at most ``timeout_seconds`` long. The answer is reused for ``cache_seconds`` and
  concurrent probes share one round of pings, so probes (the endpoint needs no API key) cannot
  flood Redis.
- ``model``: down while an agent's model is known down from its own recent calls
  (:attr:`ServedAgent.model_health`); nothing is sent to the model for it.

A change of a check is logged once (down with the reason, then up again), not on every probe.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Literal

from agent_executor import AgentRouter, ServedAgent

__all__ = ["CheckState", "HealthChecks"]

logger = logging.getLogger("server")

CheckState = Literal["ok", "down"]

Ping = Callable[[], Awaitable[None]]


class HealthChecks:
    """The checks of one app's agents (see the module docstring)."""

    def __init__(
        self, agents: AgentRouter, *, timeout_seconds: float = 0.5, cache_seconds: float = 1.0
    ) -> None:
        self._executors = list(agents.agents.values())
        self._pings = _pings(self._executors)
        self._timeout = timeout_seconds
        self._cache_seconds = cache_seconds
        self._pinged_at = -float("inf")
        self._pinged: dict[str, CheckState] = {}
        self._lock = asyncio.Lock()
        self._seen: dict[str, CheckState] = {}

    async def run(self) -> dict[str, CheckState]:
        """Each check's state: ``{"model": "ok", "redis": "down"}`` (``redis`` only with Redis)."""
        down = [e for e in self._executors if e.model_health.down]
        checks: dict[str, CheckState] = {"model": "down" if down else "ok"}
        self._note("model", checks["model"], _reasons(down))
        if self._pings:
            checks.update(await self._stores())
        return checks

    def known(self) -> dict[str, CheckState]:
        """Each check's state as last seen, nothing pinged: what a replica shutting down
        reports, so that its readiness answers at once."""
        down = any(e.model_health.down for e in self._executors)
        checks: dict[str, CheckState] = {"model": "down" if down else "ok"}
        checks.update({name: self._seen.get(name, "ok") for name in self._pings})
        return checks

    async def _stores(self) -> dict[str, CheckState]:
        async with self._lock:  # probes arriving together share one round of pings
            if time.monotonic() - self._pinged_at >= self._cache_seconds:
                names = list(self._pings)
                states = await asyncio.gather(*(self._ping(name) for name in names))
                self._pinged = dict(zip(names, states, strict=True))
                self._pinged_at = time.monotonic()
            return self._pinged

    async def _ping(self, name: str) -> CheckState:
        reason = ""
        try:
            await asyncio.wait_for(_all(self._pings[name]), self._timeout)
        except asyncio.TimeoutError:
            reason = f"no answer within {self._timeout} s"
        except Exception as exc:  # StoreUnavailable, or whatever a custom part raises
            reason = str(exc) or type(exc).__name__
        state: CheckState = "down" if reason else "ok"
        self._note(name, state, reason)
        return state

    def _note(self, name: str, state: CheckState, reason: str) -> None:
        """Log a check whose state changed (a check starts as ok)."""
        if self._seen.get(name, "ok") != state:
            if state == "down":
                logger.warning("health: %s is down (%s)", name, reason)
            else:
                logger.info("health: %s is up again", name)
        self._seen[name] = state


async def _all(pings: list[Ping]) -> None:
    """Every ping, to its end; the first failure raised."""
    outcomes = await asyncio.gather(*(ping() for ping in pings), return_exceptions=True)
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            raise outcome


def _pings(executors: Iterable[ServedAgent]) -> dict[str, list[Ping]]:
    """The ``ping`` of every distinct part that offers one (a Redis store or relay), by the
    check it belongs to (its ``health_check`` name)."""
    parts: dict[int, Any] = {}
    for executor in executors:
        for part in (executor.memory, executor.tool_results.relay):
            if callable(getattr(part, "ping", None)) and isinstance(
                getattr(part, "health_check", None), str
            ):
                parts[id(part)] = part
    pings: dict[str, list[Ping]] = {}
    for part in parts.values():
        pings.setdefault(part.health_check, []).append(part.ping)
    return pings


def _reasons(executors: list[ServedAgent]) -> str:
    return "; ".join(f"agent {e.name}: {e.model_health.reason}" for e in executors)
