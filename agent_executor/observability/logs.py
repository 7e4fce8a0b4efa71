"""Logging context: ``request_id``, ``user_id`` and ``session_id`` on every log record of a run.

The ids live in context variables set for the duration of a run; they follow the run into its
tool tasks and worker threads (anyio copies the context into both). :func:`install_log_context`
wraps the log record factory once (importing ``agent_executor`` does it), so records from any
logger, tools' included, carry the ids as attributes (``"-"`` outside a run) and a format
string can use ``%(request_id)s``.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar, Token
from typing import Any

__all__ = [
    "LOG_FIELDS",
    "JsonLogFormatter",
    "LogContextFilter",
    "SecondStamp",
    "current_log_context",
    "install_log_context",
    "log_context",
    "set_trace_id",
]

LOG_FIELDS = ("request_id", "user_id", "session_id", "trace_id")
_UNSET = "-"

_request_id: ContextVar[str] = ContextVar("agent_executor_request_id", default=_UNSET)
_user_id: ContextVar[str] = ContextVar("agent_executor_user_id", default=_UNSET)
_session_id: ContextVar[str] = ContextVar("agent_executor_session_id", default=_UNSET)
_trace_id: ContextVar[str] = ContextVar("agent_executor_trace_id", default=_UNSET)
_installed = False


class log_context:
    """Set the logging ids for the code inside the ``with`` block.

    A small class rather than a ``@contextmanager`` generator: one is alive for every running
    run, and a generator with its frame costs several times the memory.
    """

    __slots__ = ("_ids", "_tokens")

    def __init__(
        self, *, request_id: str, user_id: str | None = None, session_id: str | None = None
    ) -> None:
        self._ids = (request_id, user_id or _UNSET, session_id or _UNSET)
        self._tokens: tuple[Token[str], Token[str], Token[str]] | None = None

    def __enter__(self) -> None:
        request_id, user_id, session_id = self._ids
        self._tokens = (
            _request_id.set(request_id),
            _user_id.set(user_id),
            _session_id.set(session_id),
        )

    def __exit__(self, *exc_info: object) -> None:
        tokens = self._tokens
        assert tokens is not None
        _session_id.reset(tokens[2])
        _user_id.reset(tokens[1])
        _request_id.reset(tokens[0])


@contextmanager
def set_trace_id(trace_id: str) -> Iterator[None]:
    """Put an OpenTelemetry trace id in the logging context (done by the run's span)."""
    token = _trace_id.set(trace_id)
    try:
        yield
    finally:
        _trace_id.reset(token)


def current_log_context() -> dict[str, str]:
    """The ids in effect now (``"-"`` for unset ones)."""
    return {
        "request_id": _request_id.get(),
        "user_id": _user_id.get(),
        "session_id": _session_id.get(),
        "trace_id": _trace_id.get(),
    }


class LogContextFilter(logging.Filter):
    """A handler filter that adds the ids to records (for setups that replace the factory)."""

    def filter(self, record: logging.LogRecord) -> bool:
        _stamp(record)
        return True


def install_log_context() -> None:
    """Make every new log record carry the ids; safe to call more than once."""
    global _installed
    if _installed:
        return
    previous = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        _stamp(record)
        return record

    logging.setLogRecordFactory(factory)
    _installed = True


def _stamp(record: logging.LogRecord) -> None:
    record.request_id = _request_id.get()
    record.user_id = _user_id.get()
    record.session_id = _session_id.get()
    record.trace_id = _trace_id.get()


class SecondStamp:
    """``time.strftime(form, convert(t))`` for the whole second of a timestamp ``t``, formatted
    once a second: a service writes a line or two per request, many to a second."""

    __slots__ = ("_convert", "_form", "_last")

    def __init__(
        self, form: str, convert: Callable[[float | None], time.struct_time] = time.gmtime
    ) -> None:
        self._form = form
        self._convert = convert
        self._last: tuple[int, str] = (-1, "")

    def __call__(self, timestamp: float) -> str:
        second = int(timestamp)
        last, text = self._last
        if second != last:
            text = time.strftime(self._form, self._convert(second))
            self._last = (second, text)  # one assignment: threads see one pair or the other
        return text


class JsonLogFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message and the run's ids.

    The date and time of a second are formatted once, and one encoder serves every record.
    """

    _ENCODER = json.JSONEncoder(ensure_ascii=False, default=str)
    _STAMP = SecondStamp("%Y-%m-%dT%H:%M:%S")

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": f"{self._STAMP(record.created)}.{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in LOG_FIELDS:
            entry[name] = getattr(record, name, _UNSET)
        audit = getattr(record, "audit", None)
        if audit is not None:
            entry["audit"] = audit
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return self._ENCODER.encode(entry)
