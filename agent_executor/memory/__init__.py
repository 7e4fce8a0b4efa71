"""Conversation memory: where histories live between runs, and how long ones are shortened.

- :mod:`~agent_executor.memory.store`: the :class:`ConversationStore` protocol and the
  process-local :class:`InMemoryConversationStore` (the Redis store is in
  :mod:`agent_executor.redis`).
- :mod:`~agent_executor.memory.compression`: :class:`HistoryCompressor`, which folds the older
  turns of a long history into one summary.
- :mod:`~agent_executor.memory.facts`: long-term memory, facts about a user kept across
  sessions (:class:`MemoryStore`, the ``remember``/``recall`` tools, :class:`MemoryRecallHook`;
  on PostgreSQL :mod:`~agent_executor.memory.postgres`, on Redis ``agent_executor.redis``).
"""

from .compression import (
    SUMMARY_PREFIX,
    Compression,
    HistoryCompressor,
    Summary,
    TokenCounter,
    compact_history,
    estimate_tokens,
    litellm_token_counter,
)
from .facts import Fact, InMemoryMemoryStore, MemoryRecallHook, MemoryStore, memory_tools
from .store import (
    CompactableStore,
    ConversationStore,
    InMemoryConversationStore,
    UserScopedStore,
)

__all__ = [
    "SUMMARY_PREFIX",
    "CompactableStore",
    "Compression",
    "ConversationStore",
    "Fact",
    "HistoryCompressor",
    "InMemoryConversationStore",
    "InMemoryMemoryStore",
    "MemoryRecallHook",
    "MemoryStore",
    "Summary",
    "TokenCounter",
    "UserScopedStore",
    "compact_history",
    "estimate_tokens",
    "litellm_token_counter",
    "memory_tools",
]
