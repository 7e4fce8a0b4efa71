"""A log sink that stops reading does not stop the service.

The service writes a line per request and two per run. Where those lines go (a pipe to a
container runtime, a log shipper) can fall behind or stop: Docker's default delivery mode
blocks a container's writes while its driver is busy. The service's handler hands its lines
to a thread of its own, so the event loop never waits on that write; a backlog past its bound
is dropped and counted, and the count is logged once the sink reads again.
"""

from __future__ import annotations

import io
import json
import logging
import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from server.cli.logs import configure_logging

from .server_helpers import service_process

_PIPE = 64 * 1024
"""What a Linux pipe holds before its writer blocks."""


@pytest.mark.timeout(60)
def test_a_sink_that_stops_reading_does_not_stall_the_service() -> None:
    """More access lines than the pipe holds, with nobody reading it: every request is still
    answered at once, and once the pipe is read every line arrives, in order."""
    with service_process() as (process, base):
        assert process.stdout is not None
        sent = 0
        started = time.monotonic()
        with httpx.Client(base_url=base, timeout=5) as client:
            while sent * 80 < 3 * _PIPE:  # an access line is longer than 80 characters
                assert client.get("/api/health", params={"n": sent}).status_code == 200
                sent += 1
        took = time.monotonic() - started

        seen: list[int] = []
        deadline = time.monotonic() + 20
        while len(seen) < sent and time.monotonic() < deadline:
            line = process.stdout.readline()
            if '"GET /api/health?n=' in line:
                seen.append(int(line.split("?n=")[1].split(" ")[0]))
    assert seen == list(range(sent)), (len(seen), sent, took)


class _Stalled(io.StringIO):
    """A stream whose writes wait until the test lets them through."""

    def __init__(self) -> None:
        super().__init__()
        self.open = threading.Event()
        self.entered = threading.Event()

    def write(self, text: str) -> int:
        self.entered.set()
        self.open.wait(10)
        return super().write(text)


@pytest.fixture
def root_logging() -> Iterator[logging.Logger]:
    """The service's logging configured on the root logger, put back afterwards."""
    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    try:
        yield root
    finally:
        for handler in root.handlers:
            if handler not in saved[0]:
                handler.close()
        root.handlers[:], root.level = saved


@pytest.mark.parametrize("log_format", ["text", "json"])
def test_a_backlog_past_its_bound_is_dropped_and_counted(
    root_logging: logging.Logger, log_format: str
) -> None:
    configure_logging(log_format, "INFO", backlog=50)
    handler = root_logging.handlers[0]
    stream = _Stalled()
    handler.setStream(stream)  # type: ignore[attr-defined]
    logger = logging.getLogger("tests.log_backpressure")

    logger.info("line 0")
    assert stream.entered.wait(5)  # the writer holds line 0, stuck in its write
    started = time.monotonic()
    for index in range(1, 200):
        logger.info("line %d", index)
    assert time.monotonic() - started < 5  # not one write waited for the stalled stream
    stream.open.set()
    handler.flush()
    lines = stream.getvalue().splitlines()

    if log_format == "json":
        messages = [json.loads(line)["message"] for line in lines]
        levels = [json.loads(line)["level"] for line in lines]
    else:
        messages = [line.split("] ", 1)[1] for line in lines]
        levels = [line.split(" ")[2] for line in lines]
    kept = [int(m.split()[1]) for m in messages if m.startswith("line ")]
    assert kept == list(range(51))  # the line being written, then the backlog, in order
    notices = [(m, lv) for m, lv in zip(messages, levels, strict=True) if "dropped" in m]
    assert notices == [
        (f"{200 - len(kept)} log lines dropped: the log's output did not keep up", "WARNING")
    ]
    assert messages[-1] == notices[0][0]  # after the lines written before it


def test_lines_logged_before_exit_are_written(root_logging: logging.Logger) -> None:
    """``logging.shutdown`` (which runs at exit) waits for the backlog to be written, and the
    writer thread ends with its handler."""
    configure_logging("text", "INFO")
    handler = root_logging.handlers[0]
    stream = io.StringIO()
    handler.setStream(stream)  # type: ignore[attr-defined]
    for index in range(1000):
        logging.getLogger("tests.log_backpressure").info("line %d", index)
    writer = handler._writer  # type: ignore[attr-defined]
    assert writer is not None and writer.is_alive()
    handler.close()
    assert len(stream.getvalue().splitlines()) == 1000
    writer.join(5)
    assert not writer.is_alive()  # a closed handler leaves no thread behind


def test_a_stuck_stream_delays_a_flush_once(
    root_logging: logging.Logger, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A flush waits a bounded time for a stream that takes nothing, and the next ones do not
    wait again until it has taken a line (at exit ``logging.shutdown`` flushes, then closes)."""
    monkeypatch.setattr("server.cli.logs._FLUSH_SECONDS", 0.3)
    configure_logging("text", "INFO")
    handler = root_logging.handlers[0]
    stream = _Stalled()
    handler.setStream(stream)  # type: ignore[attr-defined]
    logging.getLogger("tests.log_backpressure").info("waiting")

    waits = []
    for _ in range(3):
        started = time.monotonic()
        handler.flush()
        waits.append(time.monotonic() - started)
    assert waits[0] >= 0.3 and max(waits[1:]) < 0.3, waits
    assert stream.getvalue() == ""

    stream.open.set()
    logging.getLogger("tests.log_backpressure").info("written")
    for _ in range(20):  # once the writer is past its stuck write, flushes wait again
        handler.flush()
        if stream.getvalue().endswith("written\n"):
            break
        time.sleep(0.05)
    assert stream.getvalue().splitlines()[-2:][0].endswith("waiting")
    assert stream.getvalue().endswith("written\n")


class _Broken(io.StringIO):
    """A stream whose writes fail until it is mended."""

    broken = True

    def write(self, text: str) -> int:
        if self.broken:
            raise OSError("broken pipe")
        return super().write(text)


def test_lines_a_broken_stream_lost_are_counted(root_logging: logging.Logger) -> None:
    configure_logging("text", "INFO")
    handler = root_logging.handlers[0]
    stream = _Broken()
    handler.setStream(stream)  # type: ignore[attr-defined]
    logger = logging.getLogger("tests.log_backpressure")
    for index in range(3):
        logger.info("lost %d", index)
    handler.flush()
    stream.broken = False
    logger.info("written")
    handler.flush()
    lines = stream.getvalue().splitlines()
    assert [line.split("] ", 1)[1] for line in lines] == [
        "written",
        "3 log lines dropped: the log's output did not keep up",
    ]


def test_a_line_logged_where_no_thread_can_start_is_written_at_once(
    root_logging: logging.Logger, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the interpreter shuts down no thread can be started (``RuntimeError``); a record
    logged then (a task destroyed pending, say) is written where it is logged."""
    configure_logging("text", "INFO")
    handler = root_logging.handlers[0]
    stream = io.StringIO()
    handler.setStream(stream)  # type: ignore[attr-defined]

    def no_thread(self: threading.Thread) -> None:
        raise RuntimeError("can't create new thread at interpreter shutdown")

    monkeypatch.setattr(threading.Thread, "start", no_thread)
    logging.getLogger("tests.log_backpressure").warning("late")
    assert stream.getvalue().endswith("late\n")
