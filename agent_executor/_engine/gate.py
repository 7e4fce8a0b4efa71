"""The concurrency gate: ``max_concurrency`` permits and a bounded FIFO queue in front of them."""

from __future__ import annotations

import time

import anyio
import anyio.lowlevel

from ..errors import ErrorCode
from ..observability import Metrics
from .state import RunFailed

__all__ = ["ConcurrencyGate"]


class ConcurrencyGate:
    """Lets at most ``capacity`` runs hold a permit; the others wait, first come first served.

    A run that finds ``max_queue`` runs already waiting, or waits longer than ``queue_timeout``
    seconds, fails with ``overloaded``. The in-flight and queued gauges follow every permit.
    """

    def __init__(
        self,
        capacity: int,
        *,
        max_queue: int | None,
        queue_timeout: float | None,
        metrics: Metrics,
    ) -> None:
        self._limiter = anyio.CapacityLimiter(capacity)
        self._max_queue = max_queue
        self._queue_timeout = queue_timeout
        self._queued = 0
        self._metrics = metrics

    @property
    def capacity(self) -> int:
        return int(self._limiter.total_tokens)

    def permit(self) -> _Permit:
        """Hold one permit for the duration of the ``async with`` block."""
        return _Permit(self)

    async def _acquire(self, borrower: object) -> None:
        try:
            self._limiter.acquire_on_behalf_of_nowait(borrower)
        except anyio.WouldBlock:
            await self._wait(borrower)
        else:
            if self._queued:
                # Waiters were handed their permits but have not run since: let them go
                # first, or this newcomer would start before runs that queued before it.
                await anyio.lowlevel.cancel_shielded_checkpoint()
        self._metrics.in_flight.inc()

    def _release(self, borrower: object) -> None:
        self._limiter.release_on_behalf_of(borrower)
        self._metrics.in_flight.dec()

    async def _wait(self, borrower: object) -> None:
        if self._max_queue is not None and self._queued >= self._max_queue:
            raise RunFailed(
                ErrorCode.OVERLOADED,
                f"the server is busy: {self._queued} requests are already waiting",
            )
        started = time.perf_counter()
        self._queued += 1
        self._metrics.queued.inc()
        try:
            with anyio.move_on_after(self._queue_timeout) as scope:
                await self._limiter.acquire_on_behalf_of(borrower)
        finally:
            self._queued -= 1
            self._metrics.queued.dec()
            self._metrics.queue_wait.observe(time.perf_counter() - started)
        if scope.cancelled_caught:
            raise RunFailed(
                ErrorCode.OVERLOADED,
                f"the server is busy: no capacity within {self._queue_timeout} s",
            )


class _Permit:
    """One run's permit, and the limiter's borrower of it.

    A small class rather than an ``@asynccontextmanager`` generator: one is alive for every
    running run, and a generator with its frame and its wrapper hold several times the memory.
    Releasing takes no ``await``, so a cancelled run cannot leave with its permit.
    """

    __slots__ = ("_gate",)

    def __init__(self, gate: ConcurrencyGate) -> None:
        self._gate = gate

    async def __aenter__(self) -> None:
        await self._gate._acquire(self)

    async def __aexit__(self, *exc_info: object) -> None:
        self._gate._release(self)
