"""What a run leaves behind for operators: metrics, traces and logs.

- :mod:`~agent_executor.observability.metrics`: the Prometheus metrics (:class:`Metrics`).
- :mod:`~agent_executor.observability.tracing`: OpenTelemetry spans (:class:`Tracing`, off
  unless asked for; ``opentelemetry`` is imported only then).
- :mod:`~agent_executor.observability.logs`: the run's ids on every log record
  (:class:`log_context`, :func:`install_log_context`) and :class:`JsonLogFormatter`.
"""

from .logs import (
    LOG_FIELDS,
    JsonLogFormatter,
    LogContextFilter,
    current_log_context,
    install_log_context,
    log_context,
    set_trace_id,
)
from .metrics import OUTCOMES, TOOL_STATUSES, Metrics
from .tracing import Span, Tracing

__all__ = [
    "LOG_FIELDS",
    "OUTCOMES",
    "TOOL_STATUSES",
    "JsonLogFormatter",
    "LogContextFilter",
    "Metrics",
    "Span",
    "Tracing",
    "current_log_context",
    "install_log_context",
    "log_context",
    "set_trace_id",
]
