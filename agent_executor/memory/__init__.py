"""Conversation memory: where histories live between runs, and how long ones are shortened.

- :mod:`~agent_executor.memory.store`: the :class:`ConversationStore` protocol and the
  process-local :class:`InMemoryConversationStore` (the Redis store is in
  :mod:`agent_executor.redis`).
- :mod:`~agent_executor.memory.compression`: :class:`HistoryCompressor`, which folds the older
  turns of a long history into one summary.
"""

from .compression import (
    SUMMARY_PREFIX,
    Compression,
    HistoryCompressor,
    TokenCounter,
    compact_history,
    estimate_tokens,
    litellm_token_counter,
)
from .store import CompactableStore, ConversationStore, InMemoryConversationStore

__all__ = [
    "SUMMARY_PREFIX",
    "CompactableStore",
    "Compression",
    "ConversationStore",
    "HistoryCompressor",
    "InMemoryConversationStore",
    "TokenCounter",
    "compact_history",
    "estimate_tokens",
    "litellm_token_counter",
]
