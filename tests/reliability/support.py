"""Shared pieces of the reliability tests: process gauges, history checks, a phased model with
tools for load tests, a raw SSE client that can hang up at any point, and an app served from
a background thread for synchronous fuzzers."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import random
import threading
import time
import zlib
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
from aiohttp import web
from prometheus_client import CollectorRegistry

from agent_executor import (
    AgentExecutor,
    AssistantMessage,
    Message,
    ModelChunk,
    ModelRequest,
    SystemMessage,
    ToolMessage,
    UserMessage,
    tool,
)
from agent_executor.models.base import ToolCallDelta

from ..helpers import sample
from .sse_parser import EventStreamParser, SSEEvent

GAUGES = (
    "agent_executor_in_flight_requests",
    "agent_executor_queued_requests",
    "agent_executor_sse_streams_active",
)


# --------------------------------------------------------------------------- process figures


def fd_count() -> int:
    """Open file descriptors of this process."""
    return len(os.listdir("/proc/self/fd"))


def rss_kib() -> int:
    """Resident set size of this process (VmRSS), KiB."""
    return _status_field("VmRSS")


def thread_count() -> int:
    return threading.active_count()


def _status_field(name: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(name + ":"):
                return int(line.split()[1])
    raise LookupError(name)


class RSSSampler:
    """Samples VmRSS every ``interval`` seconds in the event loop; ``peak`` is the highest."""

    def __init__(self, interval: float = 0.02) -> None:
        self.interval = interval
        self.peak = rss_kib()
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> RSSSampler:
        self._task = asyncio.get_running_loop().create_task(self._run())
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        with anyio.CancelScope(shield=True):
            await asyncio.wait([self._task])
        self.peak = max(self.peak, rss_kib())

    async def _run(self) -> None:
        while True:
            self.peak = max(self.peak, rss_kib())
            await asyncio.sleep(self.interval)


def other_tasks() -> set[asyncio.Task[Any]]:
    """Every task of the running loop except the caller's."""
    return asyncio.all_tasks() - {asyncio.current_task()}  # type: ignore[operator]


async def settle(
    registry: CollectorRegistry,
    baseline_tasks: set[asyncio.Task[Any]] | None = None,
    baseline_fds: int | None = None,
    timeout: float = 10.0,
) -> dict[str, Any]:
    """Wait (bounded) until the gauges are 0 and tasks and fds are back to their baselines.

    Returns what was seen at the end, so the caller asserts with a readable message.
    """
    deadline = time.monotonic() + timeout
    while True:
        gc.collect()
        gauges = {name: sample(registry, name) for name in GAUGES}
        tasks = other_tasks() - (baseline_tasks or set()) if baseline_tasks is not None else set()
        fds = fd_count()
        fds_ok = baseline_fds is None or abs(fds - baseline_fds) <= 2
        if (not any(gauges.values()) and not tasks and fds_ok) or time.monotonic() > deadline:
            return {"gauges": gauges, "tasks": tasks, "fds": fds}
        await asyncio.sleep(0.05)


# --------------------------------------------------------------------------- histories


def history_problems(messages: Sequence[Message]) -> list[str]:
    """What is wrong with a stored conversation (empty if it is well formed).

    Well formed: it starts with a user message; every assistant message that calls tools is
    followed at once by exactly one result per call (no result is missing, none answers a call
    that was not made, none is repeated); an assistant message that calls no tool is followed
    by a user message (the next run) or ends the history; stored histories hold no system
    message (the system prompt is not memory).
    """
    problems: list[str] = []
    if not messages:
        return problems
    if not isinstance(messages[0], UserMessage):
        problems.append(f"starts with {messages[0].role}, not user")
    i = 0
    while i < len(messages):
        message = messages[i]
        if isinstance(message, SystemMessage):
            problems.append(f"[{i}] a system message was stored")
        elif isinstance(message, ToolMessage):
            problems.append(f"[{i}] tool result {message.tool_call_id} without its call")
        elif isinstance(message, UserMessage):
            following = messages[i + 1] if i + 1 < len(messages) else None
            if following is not None and not isinstance(following, AssistantMessage):
                problems.append(f"[{i}] user message followed by {following.role}")
        elif isinstance(message, AssistantMessage):
            if message.tool_calls:
                wanted = [call.id for call in message.tool_calls]
                got: list[str] = []
                j = i + 1
                while j < len(messages) and isinstance(messages[j], ToolMessage):
                    got.append(messages[j].tool_call_id)  # type: ignore[union-attr]
                    j += 1
                if sorted(got) != sorted(wanted):
                    problems.append(f"[{i}] calls {wanted} answered by results {got}")
                i = j
                continue
            following = messages[i + 1] if i + 1 < len(messages) else None
            if following is not None and not isinstance(following, UserMessage):
                problems.append(f"[{i}] final answer followed by {following.role}")
        i += 1
    return problems


# --------------------------------------------------------------------------- phased model


class InjectedToolFault(RuntimeError):
    """The failure a test asked a tool for."""


def make_lookup_tools(
    min_seconds: float = 0.05, max_seconds: float = 0.2
) -> tuple[Any, Any, dict[str, int]]:
    """An async and a sync tool that take ``min..max`` seconds and fail when asked to."""
    calls = {"lookup": 0, "compute": 0}

    @tool
    async def lookup(key: str) -> dict[str, str]:
        """Look a key up (slow-ish); fails when the key starts with 'fail'."""
        calls["lookup"] += 1
        await anyio.sleep(random.uniform(min_seconds, max_seconds))
        if key.startswith("fail"):
            raise InjectedToolFault(f"injected failure for {key}")
        return {"key": key, "value": key[::-1]}

    @tool
    def compute(key: str) -> str:
        """A blocking tool run in a worker thread; fails when the key starts with 'fail'."""
        calls["compute"] += 1
        time.sleep(random.uniform(min_seconds, max_seconds) / 4)
        if key.startswith("fail"):
            raise InjectedToolFault(f"injected failure for {key}")
        return f"computed {key}"

    return lookup, compute, calls


def prompt_for(index: int, *, tool: str = "lookup", fail: bool = False, words: int = 6) -> str:
    """A prompt the :class:`PhasedModel` understands."""
    return f"run {index} tool={tool} fail={'yes' if fail else 'no'} words={words}"


def _parse_prompt(prompt: str) -> dict[str, str]:
    return dict(part.split("=", 1) for part in prompt.split() if "=" in part)


class PhasedModel:
    """A deterministic model for load tests: text, then a tool call, then an answer.

    Turn 1 streams ``words`` words with a short pause before each, then calls the tool named
    in the prompt (``tool=none`` calls nothing) with arguments split over two chunks. Turn 2
    (after the tool result) streams ``words`` words and stops. It keeps no per-request state,
    so memory use stays flat however many requests it serves.
    """

    def __init__(self, *, pause: tuple[float, float] = (0.001, 0.006), name: str = "phased"):
        self._pause = pause
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        messages = request.messages
        prompt = next((m.content for m in reversed(messages) if isinstance(m, UserMessage)), "")
        spec = _parse_prompt(prompt)
        words = int(spec.get("words", "4"))
        low, high = self._pause
        answering = bool(messages) and isinstance(messages[-1], ToolMessage)
        label = "answer" if answering else "thinking"
        for k in range(words):
            await anyio.sleep(random.uniform(low, high))
            yield ModelChunk(text=f"{label}{k} ")
        tool_name = spec.get("tool", "none")
        if answering or tool_name == "none" or not request.tools:
            yield ModelChunk(finish_reason="stop")
            return
        key = ("fail-" if spec.get("fail") == "yes" else "ok-") + str(zlib.crc32(prompt.encode()))
        arguments = f'{{"key": "{key}"}}'
        half = len(arguments) // 2
        yield ModelChunk(tool_calls=(ToolCallDelta(index=0, id=None, name=tool_name),))
        await anyio.sleep(random.uniform(low, high))
        yield ModelChunk(tool_calls=(ToolCallDelta(index=0, arguments=arguments[:half]),))
        yield ModelChunk(tool_calls=(ToolCallDelta(index=0, arguments=arguments[half:]),))
        yield ModelChunk(finish_reason="tool_calls")


# --------------------------------------------------------------------------- raw SSE client


PHASES = ("connect_only", "request_only", "headers", "text", "tool", "answer", "done")
"""Where a raw client can be when it hangs up, in the order a stream passes through them:
connected but sent nothing; sent the request, read nothing; read the headers; inside the
first text; between ``tool_start`` and ``tool_end``; in the answer after the tool; after
``done`` (a complete stream)."""


class ChunkedBody:
    """Incremental chunked decoding that yields payload bytes only."""

    def __init__(self) -> None:
        self._buffer = b""
        self.finished = False

    def feed(self, data: bytes) -> bytes:
        self._buffer += data
        out = []
        while not self.finished:
            line_end = self._buffer.find(b"\r\n")
            if line_end < 0:
                break
            size = int(self._buffer[:line_end].split(b";")[0], 16)
            if size == 0:
                self.finished = True
                break
            end = line_end + 2 + size + 2
            if len(self._buffer) < end:
                break
            out.append(self._buffer[line_end + 2 : line_end + 2 + size])
            self._buffer = self._buffer[end:]
        return b"".join(out)


@dataclass
class StreamOutcome:
    """What a raw client saw before it hung up (or the stream ended)."""

    target: str
    reached: str = "connect_only"
    status: int | None = None
    events: list[SSEEvent] = field(default_factory=list)
    aborted: bool = False  # closed with RST rather than FIN

    @property
    def completed(self) -> bool:
        return self.reached == "done"


def request_bytes(
    method: str, target: str, body: bytes = b"", headers: Iterable[str] = ()
) -> bytes:
    lines = [f"{method} {target} HTTP/1.1", "Host: 127.0.0.1", *headers]
    if body or method == "POST":
        lines += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def _phase_after(event: SSEEvent, current: str) -> str:
    if event.type == "done":
        return "done"
    if event.type == "tool_start":
        return "tool"
    if event.type == "tool_end":
        return "answer"
    if event.type == "message" and current in ("headers", "text"):
        return "text"
    return current


async def raw_stream(
    port: int,
    body: bytes,
    target: str,
    *,
    abort: bool = False,
    linger: float = 0.0,
    read_timeout: float = 20.0,
) -> StreamOutcome:
    """POST ``body`` to ``/api/chat/stream`` and hang up once phase ``target`` is reached.

    ``abort`` closes with a TCP RST instead of a FIN; ``linger`` waits that long after
    reaching the target before hanging up.
    """
    outcome = StreamOutcome(target=target, aborted=abort)
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        if target == "connect_only":
            await asyncio.sleep(linger)
            return outcome
        writer.write(request_bytes("POST", "/api/chat/stream", body))
        await writer.drain()
        outcome.reached = "request_only"
        if target == "request_only":
            await asyncio.sleep(linger)
            return outcome
        with anyio.fail_after(read_timeout):
            head = await reader.readuntil(b"\r\n\r\n")
            outcome.status = int(head.split(b" ", 2)[1])
            outcome.reached = "headers"
            if target == "headers" or outcome.status != 200:
                return outcome
            body_decoder, parser = ChunkedBody(), EventStreamParser()
            while True:
                data = await reader.read(65536)
                if not data:
                    return outcome
                for event in parser.feed(body_decoder.feed(data)):
                    outcome.events.append(event)
                    outcome.reached = _phase_after(event, outcome.reached)
                if PHASES.index(outcome.reached) >= PHASES.index(target):
                    if linger:
                        await asyncio.sleep(linger)
                    return outcome
                if body_decoder.finished:
                    return outcome
    finally:
        if abort:
            writer.transport.abort()
        else:
            writer.close()
        with contextlib.suppress(ConnectionError, OSError):
            await writer.wait_closed()


# --------------------------------------------------------------------------- executors


def phased_executor(registry: CollectorRegistry | None = None, **options: Any) -> AgentExecutor:
    """An executor on a :class:`PhasedModel` with the ``lookup`` and ``compute`` tools."""
    lookup, compute, _ = make_lookup_tools()
    return AgentExecutor(
        model=PhasedModel(),
        tools=[lookup, compute],
        metrics=registry if registry is not None else CollectorRegistry(),
        **options,
    )


# --------------------------------------------------------------------------- threaded app


class ThreadedApp:
    """An aiohttp app served on 127.0.0.1 from a background thread's event loop, as the CLI
    serves it (``handler_cancellation=True``), for synchronous clients such as hypothesis
    tests or schemathesis."""

    def __init__(self, make_app: Callable[[], web.Application]) -> None:
        self._make_app = make_app
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._runner: web.AppRunner | None = None
        self.app: web.Application | None = None
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> ThreadedApp:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(20)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    def call(self, coroutine: Any, timeout: float = 30) -> Any:
        """Run a coroutine on the app's loop and return its result."""
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout)

    async def _start(self) -> None:
        self.app = self._make_app()
        runner = web.AppRunner(self.app, handler_cancellation=True, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        server = site._server
        assert server is not None
        self.port = server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self._runner = runner

    async def _stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
