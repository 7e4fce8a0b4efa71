"""The service process's log lines are the ones the standard library writes.

``server/cli/logs.py`` writes the per-request lines with less work than the standard classes;
these tests hold its output to theirs: the text lines against ``logging.Formatter`` for the same
records, and the JSON lines.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest

from agent_executor import log_context
from agent_executor.observability import JsonLogFormatter
from server.cli.logs import configure_logging

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"
"""The service's text format (docs/observability.md), as ``logging.Formatter`` takes it."""


@pytest.fixture
def service_logging() -> Iterator[None]:
    """Whatever ``configure_logging`` changes, put back after the test."""
    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    flags = ("logThreads", "logProcesses", "logMultiprocessing", "logAsyncioTasks")
    saved_flags = {name: getattr(logging, name) for name in flags if hasattr(logging, name)}
    try:
        yield
    finally:
        root.handlers[:], root.level = saved
        for name, value in saved_flags.items():
            setattr(logging, name, value)


def _records() -> list[logging.LogRecord]:
    """Records of every shape a line can take, from several seconds."""
    logger = logging.getLogger("tests.service_logs")

    def record(msg: object, *args: object, **kwargs: Any) -> logging.LogRecord:
        made = logger.makeRecord(logger.name, logging.INFO, __file__, 1, msg, args, None)
        for name, value in kwargs.items():
            setattr(made, name, value)
        return made

    try:
        raise ValueError("boom")
    except ValueError:
        failed = sys.exc_info()
    with log_context(request_id="req-1", user_id="u", session_id="s"):
        records = [
            record("run finished: outcome=%s duration_ms=%.1f", "completed", 12.345),
            record("plain, with a % sign"),
            record({"not": "a string"}),
            record("ünïcode ✓"),
            record("failed", exc_info=failed),
            record("cached", exc_text="Traceback (most recent call last):\n  earlier"),
            record("where", stack_info="Stack (most recent call last):\n  here"),
            record("ends in a newline\n", exc_info=failed),
        ]
    for step, msecs in ((1, 7), (1, 999), (2, 0)):
        later = record("a later second")
        later.created = int(records[-1].created) + step + msecs / 1000
        later.msecs = float(msecs)
        records.append(later)
    return records


@pytest.mark.usefixtures("service_logging")
def test_the_text_lines_are_the_standard_formatters() -> None:
    configure_logging("text", "INFO")
    formatter = logging.getLogger().handlers[0].formatter
    assert formatter is not None
    standard = logging.Formatter(TEXT_FORMAT)

    for record in _records():
        theirs = standard.format(logging.makeLogRecord(record.__dict__))
        assert formatter.format(record) == theirs
        assert formatter.format(record) == theirs  # the time formatted once a second, reused


def test_the_json_lines_are_unchanged() -> None:
    formatter = JsonLogFormatter()

    for record in _records():
        record.audit = {"when": datetime(2024, 5, 1)} if record.msg == "ünïcode ✓" else None
        entry = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": "INFO",
            "logger": "tests.service_logs",
            "message": record.getMessage(),
            **{name: getattr(record, name) for name in ("request_id", "user_id", "session_id")},
            "trace_id": "-",
        }
        if record.audit is not None:
            entry["audit"] = record.audit
        if record.exc_info:
            entry["exception"] = formatter.formatException(record.exc_info)
        assert formatter.format(record) == json.dumps(entry, ensure_ascii=False, default=str)
