"""Budget storage on Redis, so a ``UserBudget`` holds across every replica."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .client import RedisPart, glob_escaped

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = ["RedisBudgetStore"]

# KEYS: the user's spend in the period. ARGV: units to add, the period's end (Unix seconds).
# INCRBY of whole units (nano-dollars, tokens): exact and independent of the order of adds.
_ADD = """
local total = redis.call('INCRBY', KEYS[1], ARGV[1])
redis.call('EXPIREAT', KEYS[1], ARGV[2])
return total
"""


class RedisBudgetStore(RedisPart):
    """``UserBudget`` storage on Redis: one counter per user and period, added to and given
    its expiry (the period's end) in one Lua script, so replicas never lose an increment."""

    def __init__(self, redis: Redis | str, *, prefix: str = "agent-executor:") -> None:
        super().__init__(redis, prefix=prefix)
        self._add = self.redis.register_script(_ADD)

    def _budget_key(self, user: str, window: str) -> str:
        return f"{self.prefix}budget:{window}:{user}"

    async def add(self, user: str, window: str, units: int, *, expires_at: float) -> int:
        """Add ``units`` to ``user``'s spend in ``window``; the total after it."""
        key = self._budget_key(user, window)
        async with self._calling("recording spend"):
            total = await self._add(keys=[key], args=[units, int(expires_at) + 1])
        return int(total)

    async def spent(self, user: str, window: str) -> int:
        """``user``'s spend in ``window``."""
        async with self._calling("reading spend"):
            value = await self.redis.get(self._budget_key(user, window))
        return int(value or 0)

    async def everyone(self, window: str) -> dict[str, int]:
        """Every user's spend in ``window`` (a SCAN of the period's keys, then one MGET)."""
        head = self._budget_key("", window)
        async with self._calling("reading spend"):
            keys = [
                k async for k in self.redis.scan_iter(match=glob_escaped(head) + "*", count=500)
            ]
            values = await self.redis.mget(keys) if keys else []
        return {
            key.decode()[len(head) :]: int(value)
            for key, value in zip(keys, values, strict=True)
            if value is not None
        }
