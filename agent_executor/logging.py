"""Moved to :mod:`agent_executor.observability.logs`; this path keeps working until the modules
that import it switch, then it goes (its name shadows the standard library's ``logging``)."""

from .observability.logs import (
    LOG_FIELDS,
    JsonLogFormatter,
    LogContextFilter,
    current_log_context,
    install_log_context,
    log_context,
    set_trace_id,
)

__all__ = [
    "LOG_FIELDS",
    "JsonLogFormatter",
    "LogContextFilter",
    "current_log_context",
    "install_log_context",
    "log_context",
    "set_trace_id",
]
