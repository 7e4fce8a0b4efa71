"""The service process's log lines are the ones the standard library and aiohttp write.

``server/cli/logs.py`` writes the per-request lines (aiohttp's access line, the ``run finished``
line) with less work than the standard classes; these tests hold its output to theirs: the
access line against aiohttp's own ``AccessLogger`` for the same requests, the text lines against
``logging.Formatter`` for the same records, and the JSON fields.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import re
import signal
import sys
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

import httpx
import pytest
from aiohttp.test_utils import TestServer
from aiohttp.web_log import AccessLogger
from aiohttp.web_request import BaseRequest
from aiohttp.web_response import StreamResponse

from agent_executor import log_context
from agent_executor.models.scripted import text_turn
from agent_executor.observability import JsonLogFormatter
from server import create_app
from server.cli.logs import AccessLog, configure_logging

from .helpers import make_executor
from .server_helpers import service_process

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"
"""The service's text format (docs/observability.md), as ``logging.Formatter`` takes it."""

JSON_FIELDS = {"time", "level", "logger", "message", "request_id", "user_id", "session_id"}
JSON_FIELDS |= {"trace_id"}

_START = re.compile(r"\[(\d\d/\w{3}/\d{4}:\d\d:\d\d:\d\d [+-]\d{4})\]")
_ASCTIME = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} ")

_theirs = logging.Logger("aiohttp.access")  # not in the hierarchy: the root does not see it
_theirs.setLevel(logging.INFO)


class _AlongsideAiohttp(AccessLog):
    """The service's access log, then aiohttp's own for the same request and response."""

    __slots__ = ()

    def log(self, request: BaseRequest, response: StreamResponse, elapsed: float) -> None:
        super().log(request, response, elapsed)
        AccessLogger(_theirs, AccessLogger.LOG_FORMAT).log(request, response, elapsed)


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
        for handler in root.handlers:
            if handler not in saved[0]:
                handler.close()  # and its writer thread
        root.handlers[:], root.level = saved
        for name, value in saved_flags.items():
            setattr(logging, name, value)


def _configured(log_format: str) -> Callable[[], str]:
    """The service's logging in ``log_format``; what its handler has written so far."""
    configure_logging(log_format, "INFO")
    stream = io.StringIO()
    handler = logging.getLogger().handlers[0]
    assert isinstance(handler, logging.StreamHandler)
    handler.setStream(stream)

    def written() -> str:
        handler.flush()  # its lines are written by a thread of its own
        return stream.getvalue()

    return written


def _reference(formatter: logging.Formatter) -> io.StringIO:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(formatter)
    _theirs.handlers[:] = [handler]
    return stream


class _Kept(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


_FIELDS = ("remote_address", "first_request_line", "response_status", "response_size")
_FIELDS += ("request_header", "levelno", "name", "request_id", "user_id", "session_id")


async def _requests() -> None:
    """A conversation, a query string with a referer, a 404, and an HTTP/1.0 request without
    those headers, through the app as the tests serve it."""
    executor = make_executor([text_turn("Hello there.")])
    server = TestServer(create_app(executor), host="127.0.0.1")
    await server.start_server(access_log_class=_AlongsideAiohttp)
    try:
        base = str(server.make_url(""))
        headers = {"User-Agent": "tests/1.0 (a test)", "Referer": "http://127.0.0.1/chat?x=1"}
        async with httpx.AsyncClient(base_url=base, timeout=10, headers=headers) as client:
            stream = await client.post("/api/chat/stream", json={"message": "hi"})
            assert stream.status_code == 200
            await client.get("/api/health?probe=1&x=%20y")
            await client.get("/nowhere")
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(b"GET /api/health HTTP/1.0\r\n\r\n")
        await reader.read()
        writer.close()
    finally:
        await server.close()


def _split_start(line: str) -> tuple[str, datetime]:
    """The line without its request start time, and that time."""
    found = _START.search(line)
    assert found is not None, line
    start = datetime.strptime(found.group(1), "%d/%b/%Y:%H:%M:%S %z")
    return line[: found.start()] + "[START]" + line[found.end() :], start


def _same_lines(ours: list[str], theirs: list[str]) -> None:
    """Equal but for the times, which are at most a second apart (both read the clock)."""
    assert len(ours) == len(theirs) == 4
    for mine, reference in zip(ours, theirs, strict=True):
        (mine, my_start), (reference, their_start) = _split_start(mine), _split_start(reference)
        assert mine == reference
        assert abs((my_start - their_start).total_seconds()) <= 1


@pytest.mark.usefixtures("service_logging")
async def test_the_access_line_is_aiohttps_own_in_text_mode() -> None:
    written = _configured("text")
    reference = _reference(logging.Formatter(TEXT_FORMAT))
    kept, kept_theirs = _Kept(), _Kept()
    logging.getLogger("aiohttp.access").addHandler(kept)
    _theirs.addHandler(kept_theirs)
    try:
        await _requests()
    finally:
        logging.getLogger("aiohttp.access").removeHandler(kept)

    for mine, reference_record in zip(kept.records, kept_theirs.records, strict=True):
        assert {name: getattr(mine, name) for name in _FIELDS} == {
            name: getattr(reference_record, name) for name in _FIELDS
        }
        assert _START.fullmatch(mine.request_start_time)  # type: ignore[attr-defined]

    ours = [line for line in written().splitlines() if " aiohttp.access " in line]
    theirs = reference.getvalue().splitlines()
    assert all(_ASCTIME.match(line) for line in ours + theirs)
    _same_lines([_ASCTIME.sub("", line) for line in ours], [_ASCTIME.sub("", t) for t in theirs])
    assert ours[0].split(" ", 2)[2].startswith("INFO aiohttp.access [-] 127.0.0.1 [")
    assert '"GET /api/health?probe=1&x=%20y HTTP/1.1" 200 ' in ours[1]
    assert re.search(r'"GET /api/health HTTP/1\.0" 200 \d+ "-" "-"$', ours[3])


@pytest.mark.usefixtures("service_logging")
async def test_the_access_line_has_the_same_json_fields() -> None:
    written = _configured("json")
    reference = _reference(JsonLogFormatter())

    await _requests()

    ours = [json.loads(line) for line in written().splitlines()]
    ours = [entry for entry in ours if entry["logger"] == "aiohttp.access"]
    theirs = [json.loads(line) for line in reference.getvalue().splitlines()]
    assert all(set(entry) == JSON_FIELDS for entry in ours + theirs)
    _same_lines([entry.pop("message") for entry in ours], [t.pop("message") for t in theirs])
    assert [{**entry, "time": ""} for entry in ours] == [{**t, "time": ""} for t in theirs]
    assert ours[0]["level"] == "INFO" and ours[0]["request_id"] == "-"


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


async def test_a_logger_above_info_gets_no_access_line() -> None:
    """Not even on a connection opened while the logger still took INFO."""
    logger = logging.getLogger("tests.service_logs.access")
    logger.propagate = False
    seen = io.StringIO()
    logger.handlers[:] = [logging.StreamHandler(seen)]
    logger.setLevel(logging.INFO)
    server = TestServer(create_app(make_executor([])), host="127.0.0.1")
    await server.start_server(access_log=logger, access_log_class=AccessLog)
    try:
        async with httpx.AsyncClient(base_url=str(server.make_url(""))) as client:
            await client.get("/api/health")
            logger.setLevel(logging.WARNING)
            await client.get("/api/health")  # the same connection
        async with httpx.AsyncClient(base_url=str(server.make_url(""))) as client:
            await client.get("/api/health")
    finally:
        await server.close()
        logger.setLevel(logging.NOTSET)

    assert len(seen.getvalue().splitlines()) == 1
    assert not AccessLog(logger, AccessLogger.LOG_FORMAT).enabled
    with pytest.raises(ValueError, match="default access log format only"):
        AccessLog(logger, "%a %t")


@pytest.mark.parametrize("log_format", ["text", "json"])
def test_the_service_process_writes_the_access_line(log_format: str) -> None:
    with service_process("--log-format", log_format) as (process, base):
        httpx.get(f"{base}/api/health?from=test", headers={"User-Agent": "probe/2"}, timeout=5)
        process.send_signal(signal.SIGTERM)
        assert process.wait(20) == 0
        output = process.stdout.read() if process.stdout else ""

    access = [line for line in output.splitlines() if "aiohttp.access" in line]
    assert access, output
    line = access[-1]
    if log_format == "json":
        entry = json.loads(line)
        assert set(entry) == JSON_FIELDS and entry["logger"] == "aiohttp.access"
        line = f"{entry['level']} {entry['logger']} [{entry['request_id']}] {entry['message']}"
    else:
        line = _ASCTIME.sub("", line)
    assert line.startswith("INFO aiohttp.access [-] 127.0.0.1 [")
    assert re.search(r'"GET /api/health\?from=test HTTP/1\.1" 200 \d+ "-" "probe/2"$', line)
