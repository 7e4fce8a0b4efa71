"""Moved to :mod:`agent_executor.memory.compression`; this path keeps working."""

from .memory.compression import (
    DEFAULT_INSTRUCTIONS,
    SUMMARY_PREFIX,
    Compression,
    HistoryCompressor,
    TokenCounter,
    compact_history,
    estimate_tokens,
    litellm_token_counter,
    transcript,
)

__all__ = [
    "DEFAULT_INSTRUCTIONS",
    "SUMMARY_PREFIX",
    "Compression",
    "HistoryCompressor",
    "TokenCounter",
    "compact_history",
    "estimate_tokens",
    "litellm_token_counter",
    "transcript",
]
