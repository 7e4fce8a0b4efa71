"""Rate-limit storage on Redis, so a ``RateLimitGuard`` limit holds across every replica."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .client import RedisPart

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = ["RedisRateLimitStorage"]

# KEYS: the key's TAT. ARGV: interval s, burst. Returns nil (allowed) or the wait in seconds.
_GCRA = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local interval = tonumber(ARGV[1])
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then tat = now end
local new = tat + interval
local wait = new - now - tonumber(ARGV[2]) * interval
if wait > 1e-9 then return tostring(wait) end
redis.call('SET', KEYS[1], string.format('%.6f', new), 'PX', math.ceil((new - now) * 1000) + 1)
return false
"""


class RedisRateLimitStorage(RedisPart):
    """``RateLimitGuard`` storage on Redis: one GCRA step per request in one Lua script.

    The script reads Redis's own clock (``TIME``), so replicas whose clocks differ still share
    one limit; the ``now`` the guard passes is not used. Keys expire when their state no
    longer matters.
    """

    def __init__(self, redis: Redis | str, *, prefix: str = "agent-executor:") -> None:
        super().__init__(redis, prefix=prefix)
        self._gcra = self.redis.register_script(_GCRA)

    async def acquire(self, key: str, *, now: float, interval: float, burst: int) -> float | None:
        """``None`` if the request is allowed, else the seconds until it would be."""
        async with self._calling("checking a rate limit"):
            wait = await self._gcra(keys=[f"{self.prefix}rate:{key}"], args=[repr(interval), burst])
        return None if wait is None else float(wait)
