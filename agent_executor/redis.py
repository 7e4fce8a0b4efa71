"""State shared by several replicas of the service, in Redis (the ``[redis]`` extra).

Three parts, each usable alone:

- :class:`RedisConversationStore`: history per ``(user_id, session_id)`` and runs paused for
  approval, with a TTL refreshed on every use and a bound on messages per session. A run's
  messages are appended by one Lua script, so two replicas finishing turns of one session never
  interleave half turns, and trimming drops whole turns only.
- :class:`RedisRateLimitStorage`: the ``RateLimitGuard`` algorithm (GCRA) in one Lua script on
  Redis's clock, so a limit holds across every replica together.
- :class:`RedisToolResultRelay`: the answer to a frontend tool call may reach any replica; it is
  checked against Redis (unknown, already answered) and published to the replica whose run waits.

Every Redis failure is raised as :class:`~agent_executor.errors.StoreUnavailable`; the executor
turns it into an ``error`` event and the next request tries again (redis-py reconnects).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import secrets
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any

import orjson
from pydantic import TypeAdapter

from .approvals import PendingRun
from .errors import ConfigurationError, StoreUnavailable
from .messages import Message
from .tool_results import Delivery, ToolResults

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = [
    "RedisConversationStore",
    "RedisRateLimitStorage",
    "RedisToolResultRelay",
    "connect",
    "shared_secret",
]

logger = logging.getLogger("agent_executor.redis")

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


def connect(url: str, **options: Any) -> Redis:
    """A ``redis.asyncio`` client for ``url`` with timeouts that suit a request path."""
    try:
        from redis.asyncio import Redis
        from redis.asyncio.retry import Retry
        from redis.backoff import ExponentialBackoff
        from redis.exceptions import ConnectionError, TimeoutError
    except ImportError:  # pragma: no cover - depends on the install
        raise ConfigurationError(
            "Redis support needs the redis package: pip install 'agent-executor[redis]'"
        ) from None
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


class _RedisPart:
    """A Redis client, a key prefix and the translation of Redis failures."""

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

    async def aclose(self) -> None:
        """Close the client if it was made from a URL here (a client passed in is the
        caller's to close)."""
        if self._owns_client:
            await self.redis.aclose()


class RedisConversationStore(_RedisPart):
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


class RedisRateLimitStorage(_RedisPart):
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


class RedisToolResultRelay(_RedisPart):
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


def _dump(message: Message) -> bytes:
    return _MESSAGE.dump_json(message)


def _safe(url: str) -> str:
    """``url`` without its password, for messages and logs."""
    head, sep, tail = url.rpartition("@")
    if not sep:
        return url
    scheme, _, _ = head.partition("://")
    return f"{scheme}://***@{tail}"
