"""The Redis connection every part shares: a client with request-path timeouts, the key
layout, the translation of Redis failures into :class:`~agent_executor.errors.StoreUnavailable`,
and the approval secret all replicas sign with.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import time
from collections.abc import AsyncIterator
from typing import Any

from .._extras import requires_extra
from ..errors import StoreUnavailable

with requires_extra("redis", "agent_executor.redis"):
    from redis.asyncio import Redis

__all__ = ["RedisPart", "connect", "shared_secret"]

logger = logging.getLogger("agent_executor.redis")


def connect(url: str, **options: Any) -> Redis:
    """A ``redis.asyncio`` client for ``url`` with timeouts that suit a request path."""
    from redis.asyncio.retry import Retry
    from redis.backoff import ExponentialBackoff
    from redis.exceptions import ConnectionError, TimeoutError

    options.setdefault("socket_timeout", 5.0)
    options.setdefault("socket_connect_timeout", 2.0)
    options.setdefault("health_check_interval", 30)
    # A pooled connection from before a Redis restart fails once: retry it on a new one.
    options.setdefault("retry", Retry(ExponentialBackoff(cap=0.5, base=0.05), 2))
    options.setdefault("retry_on_error", [ConnectionError, TimeoutError])
    return Redis.from_url(url, **options)


def shared_secret(url: str, *, prefix: str = "agent-executor:", timeout: float = 10.0) -> bytes:
    """The approval secret every replica using this Redis shares (created by the first one).

    Synchronous, for start-up: replicas must sign approval tokens with one secret so that a
    run paused on one replica can be resumed on another.
    """
    from redis import Redis
    from redis.exceptions import RedisError

    client = Redis.from_url(url, socket_timeout=2.0, socket_connect_timeout=2.0)
    key = prefix + "approval-secret"
    stop = time.monotonic() + timeout
    try:
        while True:
            try:
                client.set(key, secrets.token_hex(32), nx=True)
                value = client.get(key)
                if isinstance(value, bytes):
                    return value
                raise StoreUnavailable("Redis did not keep the approval secret")
            except RedisError as exc:
                if time.monotonic() >= stop:
                    raise StoreUnavailable(f"Redis at {_safe(url)} is unavailable: {exc}") from None
                time.sleep(0.2)
    finally:
        client.close()


class RedisPart:
    """What every Redis part is built on: a client, a key prefix and the translation of Redis
    failures."""

    health_check = "redis"
    """The name the service's health check reports this part's :meth:`ping` under."""

    def __init__(self, redis: Redis | str, *, prefix: str) -> None:
        self.redis: Redis = connect(redis) if isinstance(redis, str) else redis
        self.prefix = prefix
        self._owns_client = isinstance(redis, str)

    def _key(self, kind: str, user_id: str | None, name: str) -> str:
        user = user_id or ""
        return f"{self.prefix}{kind}:{len(user)}:{user}:{name}"

    @contextlib.asynccontextmanager
    async def _calling(self, what: str) -> AsyncIterator[None]:
        from redis.exceptions import RedisError

        try:
            yield
        except RedisError as exc:
            # The reason (host, port, error) goes to the log only, not to clients.
            logger.warning("Redis failed while %s: %s", what, exc)
            raise StoreUnavailable(f"Redis is unavailable ({what})") from None

    async def ping(self) -> None:
        """Raise :class:`StoreUnavailable` unless Redis answers a PING (a health check; the
        reason is in the exception only, for the caller to log)."""
        from redis.exceptions import RedisError

        try:
            await self.redis.ping()
        except (RedisError, OSError) as exc:
            raise StoreUnavailable(f"Redis is unavailable: {exc}") from None

    async def aclose(self) -> None:
        """Close the client if it was made from a URL here (a client passed in is the
        caller's to close)."""
        if self._owns_client:
            await self.redis.aclose()


def _safe(url: str) -> str:
    """``url`` without its password, for messages and logs."""
    head, sep, tail = url.rpartition("@")
    if not sep:
        return url
    scheme, _, _ = head.partition("://")
    return f"{scheme}://***@{tail}"


def glob_escaped(text: str) -> str:
    """``text`` with the characters SCAN's MATCH treats as a pattern escaped."""
    return "".join("\\" + c if c in "*?[]\\" else c for c in text)
