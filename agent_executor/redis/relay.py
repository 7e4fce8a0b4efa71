"""The tool-result relay: a frontend tool's answer, posted to any replica, reaches the
replica whose run waits for it."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import uuid
from typing import TYPE_CHECKING, Any

import orjson

from ..errors import StoreUnavailable
from ..tools.frontend import Delivery, ToolResults
from .client import RedisPart

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = ["RedisToolResultRelay"]

logger = logging.getLogger("agent_executor.redis")

# KEYS: the call. ARGV: channel prefix, payload, remember ms.
_DELIVER = """
local state = redis.call('GET', KEYS[1])
if not state then return 'unknown' end
if state == 'answered' then return 'answered' end
local owner = string.sub(state, 9)
if redis.call('PUBLISH', ARGV[1] .. owner, ARGV[2]) == 0 then
  redis.call('DEL', KEYS[1])
  return 'unknown'
end
redis.call('SET', KEYS[1], 'answered', 'PX', ARGV[3])
return 'delivered'
"""

# KEYS: the call. ARGV: the waiting state to remove.
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 0
"""


class RedisToolResultRelay(RedisPart):
    """Routes frontend tool results to the replica whose run waits for them.

    A replica registers each call it waits for (``{prefix}call:…`` holds ``waiting:<replica>``
    for as long as the call may wait) and listens on its own channel. An answer posted to any
    replica runs one script: unknown or expired → ``unknown``, already answered → ``answered``,
    else the answer is published to the owner and the call is marked answered. If the owner is
    gone (nobody listens on its channel) the call is forgotten and the answer is ``unknown``.
    The listener reconnects by itself after Redis comes back.
    """

    def __init__(
        self,
        redis: Redis | str,
        *,
        prefix: str = "agent-executor:",
        remember_seconds: float = 600.0,
    ) -> None:
        super().__init__(redis, prefix=prefix)
        self.replica = uuid.uuid4().hex
        self._channel_prefix = f"{prefix}replica:"
        self._remember_ms = max(1, math.ceil(remember_seconds * 1000))
        self._deliver = self.redis.register_script(_DELIVER)
        self._release = self.redis.register_script(_RELEASE)
        self._local: ToolResults | None = None
        self._listener: asyncio.Task[None] | None = None
        self._subscribed = asyncio.Event()

    async def start(self, local: ToolResults) -> None:
        """Start receiving answers for this replica's calls into ``local``."""
        self._local = local
        if self._listener is None:
            self._listener = asyncio.create_task(self._listen(), name="tool-result relay")

    async def aclose(self) -> None:
        """Stop listening (and close the client if it was made from a URL)."""
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._listener
            self._listener = None
        await super().aclose()

    async def register(self, call_id: str, user_id: str | None, ttl: float) -> None:
        """This replica waits for ``call_id`` (for at most ``ttl`` seconds)."""
        key = self._key("call", user_id, call_id)
        try:  # an answer published before this replica listens would be lost
            await asyncio.wait_for(self._subscribed.wait(), 5.0)
        except asyncio.TimeoutError:
            raise StoreUnavailable(
                "Redis is unavailable (the tool-result relay is not connected)"
            ) from None
        async with self._calling("registering a client tool call"):
            await self.redis.set(key, "waiting:" + self.replica, px=max(1, math.ceil(ttl * 1000)))

    async def release(self, call_id: str, user_id: str | None) -> None:
        """This replica no longer waits for ``call_id`` (a delivered answer stays recorded)."""
        key = self._key("call", user_id, call_id)
        async with self._calling("releasing a client tool call"):
            await self._release(keys=[key], args=["waiting:" + self.replica])

    async def deliver(
        self, call_id: str, user_id: str | None, result: Any, error: str | None
    ) -> Delivery:
        """Hand an answer to whichever replica waits for the call."""
        payload = orjson.dumps(
            {"call_id": call_id, "user_id": user_id, "result": result, "error": error},
            default=str,
        )
        key = self._key("call", user_id, call_id)
        async with self._calling("delivering a client tool result"):
            outcome = await self._deliver(
                keys=[key], args=[self._channel_prefix, payload, self._remember_ms]
            )
        text = outcome.decode() if isinstance(outcome, bytes) else str(outcome)
        return (
            "delivered" if text == "delivered" else "answered" if text == "answered" else "unknown"
        )

    async def _listen(self) -> None:
        from redis.exceptions import RedisError

        backoff = 0.1
        while True:
            pubsub = self.redis.pubsub(ignore_subscribe_messages=True)
            try:
                await pubsub.subscribe(self._channel_prefix + self.replica)
                self._subscribed.set()
                backoff = 0.1
                while True:
                    # A bounded wait returns None when idle, in every redis-py version (a
                    # blocking read times out after socket_timeout in some).
                    message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=1.0)
                    if message is not None:
                        self._receive(message.get("data"))
            except (RedisError, OSError) as exc:
                self._subscribed.clear()
                logger.warning("tool-result relay lost Redis (%s); retrying in %g s", exc, backoff)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 1.0)
            finally:
                with contextlib.suppress(Exception):
                    await asyncio.shield(pubsub.aclose())  # type: ignore[no-untyped-call]

    def _receive(self, data: object) -> None:
        if not isinstance(data, bytes | str) or self._local is None:
            return
        try:
            answer = orjson.loads(data)
            self._local.deliver(
                answer["call_id"], answer["user_id"], result=answer["result"], error=answer["error"]
            )
        except (ValueError, KeyError, TypeError):
            logger.warning("tool-result relay received a malformed message")
