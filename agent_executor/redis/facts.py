"""Long-term memory on Redis: a user's facts in one hash, shared by every replica."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..memory.facts import Fact, best, new_fact
from .client import RedisPart

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = ["RedisMemoryStore"]


class RedisMemoryStore(RedisPart):
    """:class:`~agent_executor.memory.facts.MemoryStore` on Redis: one hash per user (fact id
    to its JSON). A recall reads the user's facts and ranks them here by the words they share
    with the query: a user's memory is a few hundred facts, not a corpus."""

    def __init__(self, redis: Redis | str, *, prefix: str = "agent-executor:") -> None:
        super().__init__(redis, prefix=prefix)

    def _facts_key(self, user_id: str) -> str:
        return self._key("facts", user_id, "all")

    async def remember(self, user_id: str, text: str) -> Fact:
        fact = new_fact(text)
        async with self._calling("saving a fact"):
            await self.redis.hset(self._facts_key(user_id), fact.id, fact.model_dump_json())
        return fact

    async def facts(self, user_id: str) -> list[Fact]:
        async with self._calling("reading facts"):
            stored = await self.redis.hvals(self._facts_key(user_id))
        facts = [Fact.model_validate_json(raw) for raw in stored]
        return sorted(facts, key=lambda fact: fact.created_at)

    async def recall(self, user_id: str, query: str, limit: int = 5) -> list[Fact]:
        return best(await self.facts(user_id), query, limit)

    async def forget(self, user_id: str, fact_id: str | None = None) -> int:
        """Forget one fact, or every fact of the user; how many were forgotten."""
        key = self._facts_key(user_id)
        async with self._calling("forgetting facts"):
            if fact_id is not None:
                return int(await self.redis.hdel(key, fact_id))
            count = int(await self.redis.hlen(key))
            await self.redis.delete(key)
        return count
