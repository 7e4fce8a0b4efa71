"""Conversation history and runs paused for approval, in Redis, shared by every replica."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pydantic import TypeAdapter

from ..approvals import PendingRun
from ..errors import ConfigurationError
from ..messages import Message
from .client import RedisPart, glob_escaped

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = ["RedisConversationStore"]

_MESSAGES: TypeAdapter[list[Message]] = TypeAdapter(list[Message])
_MESSAGE: TypeAdapter[Message] = TypeAdapter(Message)

# KEYS: history, pending. ARGV: ttl ms, max messages, messages... A turn starts at a user
# message, which pydantic serialises with ``role`` first (the trimming tests rely on it).
_APPEND = """
local n = redis.call('RPUSH', KEYS[1], unpack(ARGV, 3))
local limit = tonumber(ARGV[2])
if n > limit then
  local items = redis.call('LRANGE', KEYS[1], 0, -1)
  local cut, last = nil, nil
  for i, item in ipairs(items) do
    if string.sub(item, 1, 15) == '{"role":"user",' then
      last = i - 1
      if n - last <= limit then cut = last break end
    end
  end
  cut = cut or last or 0
  if cut > 0 then redis.call('LTRIM', KEYS[1], cut, -1) end
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('DEL', KEYS[2])
return n
"""

# KEYS: history. ARGV: ttl ms, number of old messages, old..., new...
_REPLACE_PREFIX = """
local count = tonumber(ARGV[2])
if count > 0 then
  local head = redis.call('LRANGE', KEYS[1], 0, count - 1)
  if #head ~= count then return 0 end
  for i = 1, count do
    if head[i] ~= ARGV[2 + i] then return 0 end
  end
  redis.call('LTRIM', KEYS[1], count, -1)
end
for i = #ARGV, 3 + count, -1 do
  redis.call('LPUSH', KEYS[1], ARGV[i])
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1
"""


class RedisConversationStore(RedisPart):
    """Conversation history and paused runs in Redis, shared by every replica.

    A session is a Redis list of JSON messages under ``{prefix}history:…``; its paused run (if
    any) is a string under ``{prefix}pending:…``. Both expire ``ttl_seconds`` after the last
    load or append. Past ``max_messages_per_session`` the oldest turns are dropped whole, in the
    same script as the append. ``redis`` is a ``redis.asyncio.Redis`` client or a URL.
    """

    def __init__(
        self,
        redis: Redis | str,
        *,
        prefix: str = "agent-executor:",
        ttl_seconds: float = 3600.0,
        max_messages_per_session: int = 200,
    ) -> None:
        if ttl_seconds <= 0 or max_messages_per_session < 1:
            raise ConfigurationError("ttl_seconds and max_messages_per_session must be positive")
        super().__init__(redis, prefix=prefix)
        self.ttl_seconds = ttl_seconds
        self.max_messages_per_session = max_messages_per_session
        self._ttl_ms = max(1, math.ceil(ttl_seconds * 1000))
        self._append = self.redis.register_script(_APPEND)
        self._replace = self.redis.register_script(_REPLACE_PREFIX)

    async def load(self, user_id: str | None, session_id: str) -> list[Message]:
        """The session's messages, refreshing its expiry."""
        key = self._key("history", user_id, session_id)
        pipe = self.redis.pipeline(transaction=True)
        async with self._calling("loading a conversation"), pipe:
            pipe.lrange(key, 0, -1)
            pipe.pexpire(key, self._ttl_ms)
            items, _ = await pipe.execute()
        if not items:
            return []
        return _MESSAGES.validate_json(b"[" + b",".join(items) + b"]")

    async def append(
        self, user_id: str | None, session_id: str, messages: Sequence[Message]
    ) -> None:
        """Add a completed run's messages in one script, then trim whole turns."""
        if not messages:
            return
        keys = [
            self._key("history", user_id, session_id),
            self._key("pending", user_id, session_id),
        ]
        args: list[bytes | int] = [self._ttl_ms, self.max_messages_per_session]
        args.extend(map(_dump, messages))
        async with self._calling("saving a conversation"):
            await self._append(keys=keys, args=args)

    async def delete(self, user_id: str | None, session_id: str) -> bool:
        """Forget the session and its paused run; true if the history existed."""
        history = self._key("history", user_id, session_id)
        pending = self._key("pending", user_id, session_id)
        pipe = self.redis.pipeline(transaction=True)
        async with self._calling("deleting a conversation"), pipe:
            pipe.delete(history)
            pipe.delete(pending)
            deleted, paused = await pipe.execute()
        return bool(deleted or paused)

    async def delete_user(self, user_id: str) -> int:
        """Forget every session of ``user_id`` (histories and paused runs, found with SCAN);
        how many sessions."""
        heads = [self._key(kind, user_id, "") for kind in ("history", "pending")]
        async with self._calling("deleting a user's conversations"):
            keys = [
                key
                for head in heads
                async for key in self.redis.scan_iter(match=glob_escaped(head) + "*", count=500)
            ]
            if keys:
                await self.redis.delete(*keys)
        return len({key.decode()[len(self.prefix) :].split(":", 1)[1] for key in keys})

    async def replace_prefix(
        self,
        user_id: str | None,
        session_id: str,
        old: Sequence[Message],
        new: Sequence[Message],
    ) -> bool:
        """Replace the first ``len(old)`` messages by ``new`` if the history still starts
        with ``old`` (compared as stored JSON); false, and nothing changed, otherwise."""
        args: list[bytes | int] = [self._ttl_ms, len(old), *map(_dump, old)]
        args.extend(map(_dump, new))
        async with self._calling("compacting a conversation"):
            done = await self._replace(keys=[self._key("history", user_id, session_id)], args=args)
        return bool(done)

    async def save_pending(self, user_id: str | None, session_id: str, run: PendingRun) -> None:
        """Keep the session's paused run (replacing an earlier one) for ``ttl_seconds``."""
        key = self._key("pending", user_id, session_id)
        async with self._calling("saving a paused run"):
            await self.redis.set(key, run.model_dump_json(), px=self._ttl_ms)

    async def load_pending(self, user_id: str | None, session_id: str) -> PendingRun | None:
        """The session's paused run, if it has one that has not expired."""
        key = self._key("pending", user_id, session_id)
        async with self._calling("loading a paused run"):
            data = await self.redis.get(key)
        return None if data is None else PendingRun.model_validate_json(data)

    async def delete_pending(self, user_id: str | None, session_id: str) -> None:
        """Forget the session's paused run."""
        async with self._calling("deleting a paused run"):
            await self.redis.delete(self._key("pending", user_id, session_id))


def _dump(message: Message) -> bytes:
    return _MESSAGE.dump_json(message)
