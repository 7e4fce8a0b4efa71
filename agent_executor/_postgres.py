"""What the PostgreSQL parts share (the ``[postgres]`` extra): a connection pool opened at its
first use, and reciprocal rank fusion of several rankings.

Used by :class:`~agent_executor.retrieval.postgres.PostgresRetriever` and
:class:`~agent_executor.memory.postgres.PostgresMemoryStore`, which import psycopg (and say
which extra is missing) and hand the pool class over.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable, Iterable
from typing import Any, TypeVar

import anyio

__all__ = ["RRF_K", "LazyPool", "fused"]

T = TypeVar("T")

RRF_K = 60
"""Reciprocal rank fusion's constant (Cormack, Clarke and Buettcher, SIGIR 2009): an item's
fused score is the sum over the rankings of 1 / (60 + its rank)."""


class LazyPool:
    """A psycopg connection pool (``pools`` is ``psycopg_pool.AsyncConnectionPool``) opened at
    the first :meth:`get`, once however many callers wait for it, with ``setup`` run on one of
    its connections first (a schema). A pool that fails to open or to set up is closed, and
    the next call tries again. :meth:`aclose` closes it; a later :meth:`get` opens a new one."""

    def __init__(
        self,
        pools: Any,
        dsn: str,
        *,
        min_size: int,
        max_size: int,
        timeout: float,
        setup: Callable[[Any], Awaitable[object]] | None = None,
    ) -> None:
        self._pools, self._dsn, self._sizes = pools, dsn, (min_size, max_size)
        self._timeout, self._setup = timeout, setup
        self._pool: Any = None
        self._lock = anyio.Lock()

    async def get(self) -> Any:
        if self._pool is not None:
            return self._pool
        async with self._lock:
            if self._pool is None:
                pools = self._pools
                pool = pools(
                    self._dsn,
                    min_size=self._sizes[0],
                    max_size=self._sizes[1],
                    timeout=self._timeout,
                    kwargs={"autocommit": True},
                    # a connection the server dropped (a restart) is replaced, not handed out
                    check=pools.check_connection,
                    open=False,
                )
                try:
                    await pool.open(wait=True, timeout=self._timeout)
                    if self._setup is not None:
                        async with pool.connection() as conn:
                            await self._setup(conn)
                except BaseException:
                    await pool.close()
                    raise
                self._pool = pool
        return self._pool

    async def aclose(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()


def fused(
    rankings: Iterable[list[T]],
    key: Callable[[T], Hashable],
    limit: int,
    tie: Callable[[T], Any] | None = None,
) -> list[tuple[T, float]]:
    """Reciprocal rank fusion: the ``limit`` best items (the same item is the same ``key``,
    the first seen kept) with their fused scores, best first; equal scores in the order of
    ``tie``, else of first appearance."""
    scores: dict[Hashable, float] = {}
    first: dict[Hashable, T] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, 1):
            k = key(item)
            scores[k] = scores.get(k, 0.0) + 1.0 / (RRF_K + rank)
            first.setdefault(k, item)
    order = sorted(
        scores, key=lambda k: (-scores[k],) if tie is None else (-scores[k], tie(first[k]))
    )
    return [(first[k], scores[k]) for k in order[:limit]]
