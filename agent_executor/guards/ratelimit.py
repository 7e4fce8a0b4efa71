"""``RateLimitGuard``: per-user request rate limits (GCRA), with a pluggable storage.

The algorithm is the generic cell rate algorithm: each key has a theoretical arrival time
(TAT). With ``limit`` requests per ``period`` the emission interval is ``T = period / limit``
and a burst of ``burst`` requests may arrive at once; a request at time ``now`` is allowed when
``max(TAT, now) + T - now <= burst * T``, and then moves the TAT by ``T``. So ``20/minute``
lets 20 requests through back to back, then one more every 3 seconds; the refused request is
told exactly how long to wait (``retry_after``). One float per key is all the state there is,
and one read-modify-write per request is all the work: the in-memory storage does it without
awaiting (atomic on the event loop), a Redis storage would do it in one Lua script.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable
from typing import ClassVar, Protocol, runtime_checkable

from ..context import RunContext
from ..errors import ConfigurationError, ErrorCode, GuardRejection
from ..resources import aclose_all

__all__ = [
    "InMemoryRateLimitStorage",
    "RateLimitGuard",
    "RateLimitStorage",
    "parse_rate",
]

_UNITS = {
    "s": 1.0,
    "sec": 1.0,
    "second": 1.0,
    "m": 60.0,
    "min": 60.0,
    "minute": 60.0,
    "h": 3600.0,
    "hour": 3600.0,
    "d": 86400.0,
    "day": 86400.0,
}
_RATE_RE = re.compile(r"^\s*(\d+)\s*/\s*(\d+(?:\.\d+)?)?\s*([a-z]+?)s?\s*$")


def parse_rate(rate: str) -> tuple[int, float]:
    """``"20/minute"`` → ``(20, 60.0)``; also ``5/s``, ``100/hour``, ``1000/day``, ``10/30s``."""
    match = _RATE_RE.match(rate.lower())
    unit = _UNITS.get(match.group(3)) if match else None
    if match is None or unit is None or int(match.group(1)) < 1:
        raise ConfigurationError(
            f"invalid rate {rate!r}: use N/PERIOD such as 20/minute, 5/second or 100/hour"
        )
    return int(match.group(1)), float(match.group(2) or 1) * unit


@runtime_checkable
class RateLimitStorage(Protocol):
    """Where rate-limit state lives; ``acquire`` must be atomic per key."""

    async def acquire(self, key: str, *, now: float, interval: float, burst: int) -> float | None:
        """One GCRA step: ``None`` if the request is allowed, else seconds until it would be."""
        ...


class InMemoryRateLimitStorage:
    """Rate-limit state in this process: one float per active key.

    Keys whose TAT has passed hold no information and are swept every ``sweep_every`` calls;
    past ``max_keys`` the oldest keys are dropped (which can only let requests through early).
    """

    def __init__(self, *, max_keys: int = 100_000, sweep_every: int = 10_000) -> None:
        self._tat: dict[str, float] = {}
        self._max_keys = max_keys
        self._sweep_every = sweep_every
        self._calls = 0

    def __len__(self) -> int:
        return len(self._tat)

    async def acquire(self, key: str, *, now: float, interval: float, burst: int) -> float | None:
        """GCRA, with no ``await`` between reading and writing the key's state."""
        self._calls += 1
        if self._calls % self._sweep_every == 0 or len(self._tat) > self._max_keys:
            self._sweep(now)
        tat = max(self._tat.get(key, now), now) + interval
        wait = tat - now - burst * interval
        if wait > 1e-9:
            return wait
        self._tat.pop(key, None)  # re-insert so dict order is least recently used first
        self._tat[key] = tat
        return None

    def _sweep(self, now: float) -> None:
        for key in [k for k, tat in self._tat.items() if tat <= now]:
            del self._tat[key]
        while len(self._tat) > self._max_keys:
            del self._tat[next(iter(self._tat))]


def _default_key(ctx: RunContext) -> str:
    return ctx.user_id or ctx.client_address or "anonymous"


class RateLimitGuard:
    """Refuses a user's run with ``rate_limited`` and ``retry_after`` past a request rate.

    ``RateLimitGuard("20/minute")`` allows 20 requests back to back per key and refills at 20
    per minute; ``burst`` sets another burst size. The key is the user id (the authenticated
    one, in the service), else the client address the service passes in, else
    ``"anonymous"``; ``key=`` replaces that choice. ``clock`` (seconds, monotonic) is for tests.
    A run is charged once: the guard is not run again on a command a ``before_agent_start``
    hook rewrote (``checks_content = False``).
    """

    name = "rate_limit"
    codes: ClassVar[tuple[str, ...]] = (ErrorCode.RATE_LIMITED.value,)
    checks_content: ClassVar[bool] = False

    def __init__(
        self,
        rate: str,
        *,
        burst: int | None = None,
        storage: RateLimitStorage | None = None,
        key: Callable[[RunContext], str] = _default_key,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.limit, self.period = parse_rate(rate)
        self.burst = self.limit if burst is None else burst
        if self.burst < 1:
            raise ConfigurationError("the rate-limit burst must be at least 1")
        self.interval = self.period / self.limit
        self.storage: RateLimitStorage = (
            storage if storage is not None else InMemoryRateLimitStorage()
        )
        self._key = key
        self._clock = clock
        self._rate = rate.strip()

    async def aclose(self) -> None:
        """Close the storage's connections, if it has any (a Redis storage)."""
        await aclose_all([self.storage])

    async def check(self, ctx: RunContext) -> None:
        """Take one request from the key's allowance, or refuse with the time to wait."""
        wait = await self.storage.acquire(
            self._key(ctx), now=self._clock(), interval=self.interval, burst=self.burst
        )
        if wait is not None:
            retry_after = math.ceil(wait * 1000 - 1e-6) / 1000  # whole ms, up, ignoring fp noise
            raise GuardRejection(
                ErrorCode.RATE_LIMITED,
                f"rate limit of {self._rate} exceeded; retry in {retry_after:g} s",
                retry_after=retry_after,
            )
