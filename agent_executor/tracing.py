"""Moved to :mod:`agent_executor.observability.tracing`; this path keeps working."""

from .observability.tracing import Span, Tracing

__all__ = ["Span", "Tracing"]
