"""State shared by several replicas of the service, in Redis (the ``[redis]`` extra).

Four parts, each usable alone:

- :class:`RedisConversationStore`: history per ``(user_id, session_id)`` and runs paused for
  approval, with a TTL refreshed on every use and a bound on messages per session. A run's
  messages are appended by one Lua script, so two replicas finishing turns of one session never
  interleave half turns, and trimming drops whole turns only.
- :class:`RedisRateLimitStorage`: the ``RateLimitGuard`` algorithm (GCRA) in one Lua script on
  Redis's clock, so a limit holds across every replica together.
- :class:`RedisBudgetStore`: a ``UserBudget``'s spend per user and period, added to in one
  Lua script (``INCRBY`` and the expiry at the period's end), exact across replicas.
- :class:`RedisToolResultRelay`: the answer to a frontend tool call may reach any replica; it is
  checked against Redis (unknown, already answered) and published to the replica whose run waits.

Every Redis failure is raised as :class:`~agent_executor.errors.StoreUnavailable`; the executor
turns it into an ``error`` event and the next request tries again (redis-py reconnects). The
client, key layout and failure translation the parts share are in
:mod:`~agent_executor.redis.client`.
"""

from .budget import RedisBudgetStore
from .client import connect, shared_secret
from .conversations import RedisConversationStore
from .facts import RedisMemoryStore
from .ratelimit import RedisRateLimitStorage
from .relay import RedisToolResultRelay

__all__ = [
    "RedisBudgetStore",
    "RedisConversationStore",
    "RedisMemoryStore",
    "RedisRateLimitStorage",
    "RedisToolResultRelay",
    "connect",
    "shared_secret",
]
