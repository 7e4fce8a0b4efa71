"""The service process's log lines: the text or JSON handler, and the access line.

Every request writes an access line and every run a ``run finished`` line, so at thousands of
short conversations a second what one log line costs is a visible share of the service's CPU
(docs/benchmarks.md). The lines here are the ones the standard library and aiohttp would write,
byte for byte; only the work behind them is less.
"""

from __future__ import annotations

import logging
import queue
import sys
import threading
import time

from aiohttp.abc import AbstractAccessLogger
from aiohttp.web_log import AccessLogger
from aiohttp.web_request import BaseRequest
from aiohttp.web_response import StreamResponse

from agent_executor.observability import JsonLogFormatter
from agent_executor.observability.logs import SecondStamp

__all__ = ["AccessLog", "configure_logging"]

_TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"


BACKLOG = 10_000
"""How many lines wait for a log sink that does not keep up (a few MiB) before new ones are
dropped and counted (besides the batch being written, at most 1,024)."""
_FLUSH_SECONDS = 5.0


def configure_logging(log_format: str, level: str, *, backlog: int = BACKLOG) -> None:
    """One handler on the root logger, writing ``log_format`` (``text`` or ``json``) to stderr
    from ``level`` on (INFO when the name is not a level), from a thread of its own with at
    most ``backlog`` lines waiting."""
    handler = _StreamHandler(backlog)
    if log_format == "json":
        handler.setFormatter(JsonLogFormatter())
    else:
        handler.setFormatter(_TextFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    known = isinstance(logging.getLevelName(level.upper()), int)
    root.setLevel(level.upper() if known else "INFO")
    _skip_unwritten_record_fields()


def _skip_unwritten_record_fields() -> None:
    """Stop every log record from looking up its thread, process and asyncio task.

    Neither of the process's formats writes them, and the lookups are a good part of what a
    record costs (the process name asks ``multiprocessing`` once it is imported). Only this
    process's records are concerned: the process owns its log format, a library does not.
    """
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False
    if sys.version_info >= (3, 12):
        logging.logAsyncioTasks = False


class _StreamHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """A ``StreamHandler`` that formats a record where it is logged and leaves the write to a
    thread of its own.

    A write to stderr blocks while nobody reads it: a pipe holds 64 KiB, and Docker's default
    delivery mode makes a container's writes wait for its log driver. Written on the event
    loop, that stopped every request of the process. Here the loop only queues the line; the
    writer writes what has gathered in one call. Past ``backlog`` waiting lines, new ones are
    dropped and counted, as are lines a failing stream did not take, and the count is logged
    (a ``WARNING``) once the stream takes lines again. :meth:`flush` (which ``setStream`` and,
    at exit, ``logging.shutdown`` call) waits for the lines queued before it. Where no thread
    can be started (a record logged while the interpreter shuts down), the line is written
    where it is logged, as before.
    """

    def __init__(self, backlog: int) -> None:
        super().__init__()
        self._backlog = backlog
        self._lines: queue.SimpleQueue[str | threading.Event | None] = queue.SimpleQueue()
        self._dropped = 0
        self._dropped_lock = threading.Lock()  # not the handler's: flush waits under that
        self._writer: threading.Thread | None = None
        self._stuck = False

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.format(record) + self.terminator
        except RecursionError:
            raise
        except Exception:
            self.handleError(record)
            return
        if self._lines.qsize() >= self._backlog:
            self._lose(1)
            return
        if self._writer is None:
            writer = threading.Thread(target=self._write, name="log-writer", daemon=True)
            try:
                writer.start()
            except RuntimeError:  # the interpreter is shutting down: written here, or lost
                self._put(line)
                return
            self._writer = writer
        self._lines.put(line)

    def _put(self, text: str) -> bool:
        """Write and flush ``text``: whether the stream took it (a closed or broken one does
        not)."""
        try:
            self.stream.write(text)
            self.stream.flush()
        except Exception:
            return False
        return True

    def _lose(self, lines: int) -> None:
        with self._dropped_lock:
            self._dropped += lines

    def flush(self) -> None:
        """Wait for the lines queued so far to be written: up to 5 s, and not at all while the
        stream has taken nothing since a wait ran out (so a stuck stream delays the process's
        exit once, not at every flush)."""
        if self._writer is None or not self._writer.is_alive():
            super().flush()
            return
        if self._stuck:
            return
        written = threading.Event()
        self._lines.put(written)
        self._stuck = not written.wait(_FLUSH_SECONDS)

    def close(self) -> None:
        """Flush, then let the writer thread end (a line logged after starts another)."""
        self.flush()
        if self._writer is not None:
            self._lines.put(None)
            self._writer = None
        super().close()

    def _write(self) -> None:
        lines = self._lines
        while True:
            batch = [lines.get()]
            while not lines.empty() and len(batch) < 1024:
                batch.append(lines.get_nowait())
            written = [item for item in batch if isinstance(item, str)]
            text = "".join(written)
            with self._dropped_lock:
                dropped, self._dropped = self._dropped, 0
            if dropped:
                text += self._notice(dropped)
            if text:
                if not self._put(text):  # counted, and said once the stream mends
                    self._lose(len(written) + dropped)
                self._stuck = False
            for item in batch:
                if isinstance(item, threading.Event):
                    item.set()
            if None in batch:
                return

    def _notice(self, dropped: int) -> str:
        record = logging.getLogger(__name__).makeRecord(
            __name__,
            logging.WARNING,
            __file__,
            0,
            "%d log lines dropped: the log's output did not keep up",
            (dropped,),
            None,
        )
        return self.format(record) + self.terminator


class _TextFormatter(logging.Formatter):
    """``logging.Formatter(_TEXT_FORMAT)``'s lines, with less work per record.

    A record without exception or stack text (nearly all) has its line put together directly
    rather than through the format's ``%`` template (which reads the record's attributes as a
    dictionary, which the record then has to make), and the date and time of a second are
    formatted once: records come many to a second under load. Other records take the base
    class's way.
    """

    def __init__(self) -> None:
        super().__init__(_TEXT_FORMAT)
        self._stamp = SecondStamp(self.default_time_format, self.converter)

    def format(self, record: logging.LogRecord) -> str:
        if record.exc_info or record.exc_text or record.stack_info:
            return super().format(record)
        record.message = message = record.getMessage()
        record.asctime = asctime = self.formatTime(record)
        request_id = record.request_id  # type: ignore[attr-defined]
        return f"{asctime} {record.levelname} {record.name} [{request_id}] {message}"

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        if datefmt is not None:
            return super().formatTime(record, datefmt)
        return f"{self._stamp(record.created)},{int(record.msecs):03d}"


class AccessLog(AbstractAccessLogger):
    """aiohttp's default access line (``AccessLogger.LOG_FORMAT``) on the same logger, with the
    same attributes on the record (``remote_address``, ``response_status``, ...), written with
    less work.

    aiohttp's class interprets its format for every request, converts the start time with
    ``datetime``, hands the attributes to the logger as ``extra`` (which copies them in one by
    one, checking each) and has the logger search the stack for its caller. This one writes the
    one format it knows directly, formats the start time once a second and makes the record
    itself (naming this module as where it was logged). A logger not enabled for INFO
    (``LOG_LEVEL=WARNING``) costs nothing per request: aiohttp asks :attr:`enabled` when a
    connection opens, and :meth:`log` asks again (the level can change meanwhile).
    """

    __slots__ = ()

    def __init__(self, logger: logging.Logger, log_format: str = AccessLogger.LOG_FORMAT) -> None:
        if log_format != AccessLogger.LOG_FORMAT:
            raise ValueError("AccessLog writes aiohttp's default access log format only")
        super().__init__(logger, log_format)

    @property
    def enabled(self) -> bool:
        """Whether the logger takes INFO records (aiohttp skips :meth:`log` otherwise)."""
        return self.logger.isEnabledFor(logging.INFO)

    def log(self, request: BaseRequest, response: StreamResponse, elapsed: float) -> None:
        logger = self.logger
        if not logger.isEnabledFor(logging.INFO):
            return
        try:
            remote = request.remote
            address = "-" if remote is None else remote
            started = _STARTED(time.time() - elapsed)
            version = request.version
            line = f"{request.method} {request.path_qs} HTTP/{version.major}.{version.minor}"
            status = response.status
            size = response.body_length
            headers = request.headers
            referer = headers.get("Referer", "-")
            agent = headers.get("User-Agent", "-")
            message = f'{address} {started} "{line}" {status} {size} "{referer}" "{agent}"'
            record = logger.makeRecord(
                logger.name, logging.INFO, __file__, 0, message, (), None, "log"
            )
            record.remote_address = address
            record.request_start_time = started
            record.first_request_line = line
            record.response_status = status
            record.response_size = size
            record.request_header = {"Referer": referer, "User-Agent": agent}
            logger.handle(record)
        except Exception:
            logger.exception("Error in logging")


_STARTED = SecondStamp("[%d/%b/%Y:%H:%M:%S %z]", time.localtime)
"""A request's start as aiohttp's ``%t`` writes it (``[10/Oct/2000:13:55:36 -0700]``, local
time)."""
