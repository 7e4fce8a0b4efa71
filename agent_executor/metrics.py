"""Moved to :mod:`agent_executor.observability.metrics`; this path keeps working."""

from .observability.metrics import (
    HOOK_POINTS,
    MODES,
    OUTCOMES,
    TOOL_STATUSES,
    UNKNOWN_TOOL,
    Metrics,
)

__all__ = ["HOOK_POINTS", "MODES", "OUTCOMES", "TOOL_STATUSES", "UNKNOWN_TOOL", "Metrics"]
