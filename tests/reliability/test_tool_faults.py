"""Tool faults: raising (in every way a tool can), hanging, ignoring cancellation, returning
values JSON cannot hold, returning 10 MB.

Already covered elsewhere: a ``RuntimeError``, a per-tool timeout, bad arguments and unknown
tools (``tests/test_executor_turns.py``:
``test_tool_failures_go_back_to_the_model_and_the_run_continues``), truncation of 1000
characters at ``max_tool_result_chars=100`` and a ``repr`` fallback
(``test_large_tool_results_are_truncated_with_a_marker``,
``test_non_json_results_are_serialised_anyway``), a blocking tool past its own ``timeout``
(``tests/test_executor_limits.py``:
``test_a_sync_tool_that_ignores_cancellation_does_not_hold_the_run``).

The rule checked throughout (see docs/sse-protocol.md): a tool's failure is the call's result,
given back to the model; the run goes on, ends with one ``done``, and the stored history stays
well formed.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import decimal
import json
import sys
import threading
import time
from typing import Any

import anyio
import httpx
import pytest

from agent_executor import (
    AgentCommand,
    DoneEvent,
    ErrorEvent,
    ToolEndEvent,
    ToolMessage,
    tool,
)
from agent_executor.models.scripted import call, tool_turn
from server import Settings

from ..helpers import collect, make_executor, sample
from ..server_helpers import serve, service_process
from .sse_parser import parse
from .support import history_problems

if sys.version_info < (3, 11):
    from exceptiongroup import ExceptionGroup

# This module still passes the keyword arguments the settings objects replaced (max_turns=...);
# they warn until 0.2.0 (tests/test_settings.py checks the warning itself).
pytestmark = pytest.mark.filterwarnings(
    "ignore:.*keyword arguments are deprecated:DeprecationWarning"
)


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("str() of this exception fails")


def raiser(exc: BaseException) -> Any:
    @tool
    async def flaky() -> str:
        """Fails."""
        raise exc

    return flaky


async def run_one_call(tool_: Any, **options: Any) -> tuple[list[Any], Any]:
    executor = make_executor(
        [tool_turn(call(tool_.name, id="c1")), "recovered"], [tool_], **options
    )
    events = await collect(executor, AgentCommand(user_prompt="go", session_id="s"))
    return events, executor


def assert_recovered(events: list[Any], executor: Any, status: str = "error") -> None:
    """The call ended with ``status``, the model was told, the run went on and was saved."""
    ends = [(e.call_id, e.status) for e in events if isinstance(e, ToolEndEvent)]
    assert ends == [("c1", status)]
    done = events[-1]
    assert isinstance(done, DoneEvent) and done.finish_reason == "stop", events
    assert sum(isinstance(e, DoneEvent) for e in events) == 1
    follow_up = executor.model.requests[1].messages
    assert isinstance(follow_up[-1], ToolMessage) and follow_up[-1].tool_call_id == "c1"


@pytest.mark.parametrize(
    "exc",
    [
        RuntimeError("kaput"),
        TimeoutError("the tool's own HTTP call timed out"),
        ExceptionGroup("several", [ValueError("a"), KeyError("b")]),
        NotImplementedError(),
        RecursionError("maximum recursion depth exceeded"),
        MemoryError(),
    ],
    ids=lambda e: type(e).__name__,
)
async def test_a_tool_that_raises_is_an_error_result_and_the_run_goes_on(
    exc: BaseException,
) -> None:
    events, executor = await run_one_call(raiser(exc))

    assert_recovered(events, executor)
    result = events[-1].tool_calls[0].result
    assert result.startswith(type(exc).__name__)
    assert history_problems(await executor.memory.load(None, "s")) == []


async def test_a_tool_exception_that_cannot_be_printed_is_still_an_error_result() -> None:
    events, executor = await run_one_call(raiser(Unprintable()))

    assert_recovered(events, executor)


async def test_a_tool_that_raises_cancelled_error_itself_still_gets_a_result() -> None:
    events, executor = await run_one_call(raiser(asyncio.CancelledError()))

    assert history_problems(await executor.memory.load(None, "s")) == []
    assert_recovered(events, executor)


@pytest.mark.timeout(60)
def test_a_tool_that_calls_sys_exit_does_not_stop_the_service() -> None:
    with service_process("--tools", "tests.reliability.exit_tools") as (process, base):
        try:
            with httpx.Client(base_url=base, timeout=10) as client:
                response = client.get(
                    "/api/chat/stream", params={"message": "weather in Paris?", "events": "json"}
                )
                events = parse(response.content)
                time.sleep(0.5)
                alive = process.poll() is None
                health = client.get("/api/health").status_code if alive else None
        except httpx.HTTPError as exc:
            pytest.fail(f"the service went away: {exc!r}")

    assert alive and health == 200
    assert [e.type for e in events][-2:] == ["message", "done"]
    assert json.loads(events[-1].data)["tool_calls"][0]["status"] == "error"


async def test_a_tool_that_hangs_past_its_timeout_is_cut_and_the_stream_goes_on() -> None:
    cancelled = anyio.Event()

    @tool
    async def hangs() -> str:
        """Never returns."""
        try:
            await anyio.sleep(3600)
        finally:
            cancelled.set()
        return "never"

    executor = make_executor(
        [tool_turn(call("hangs", id="c1")), "moved on"], [hangs], tool_timeout=0.2
    )
    started = time.perf_counter()

    async with serve(executor) as client:
        response = await client.post("/api/chat/stream", json={"message": "go", "events": "json"})

    elapsed = time.perf_counter() - started
    events = parse(response.content)
    assert [e.type for e in events] == ["tool_start", "tool_end", "message", "message", "done"]
    assert json.loads(events[1].data)["status"] == "timeout"
    assert json.loads(events[-1].data)["finish_reason"] == "stop"
    assert cancelled.is_set()
    assert elapsed < 2


async def test_an_async_tool_that_swallows_cancellation_delays_the_run_by_that_long() -> None:
    """asyncio cannot stop a coroutine that catches ``CancelledError``: the run waits for it.

    The tool's timeout (0.1 s) is delivered again at each of its awaits; it keeps swallowing
    for 0.5 s, then returns. The run ends as soon as the tool gives up, no later; the late
    value is taken as the result (documented in docs/reliability.md).
    """

    @tool(timeout=0.1)
    async def stubborn() -> str:
        """Swallows cancellation for half a second."""
        until = time.monotonic() + 0.5
        while time.monotonic() < until:
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.sleep(0.02)
        return "late"

    executor = make_executor([tool_turn(call("stubborn", id="c1")), "done"], [stubborn])
    started = time.perf_counter()

    result = await executor.execute(AgentCommand(user_prompt="go"))

    elapsed = time.perf_counter() - started
    assert 0.45 < elapsed < 1.5
    assert result.success and result.tool_calls[0].status in ("success", "timeout")
    assert sample(executor.metrics.registry, "agent_executor_in_flight_requests") == 0


async def test_a_blocking_sync_tool_does_not_hold_the_stream_past_the_request_timeout() -> None:
    """A sync tool runs in a worker thread, which cannot be interrupted: at the request
    timeout the run abandons the thread and ends on time; the thread finishes in the
    background and its result goes nowhere."""
    finished = threading.Event()

    @tool
    def blocks() -> str:
        """Blocks in time.sleep for 1.5 s."""
        time.sleep(1.5)
        finished.set()
        return "too late"

    executor = make_executor(
        [tool_turn(call("blocks", id="c1")), "never asked"],
        [blocks],
        request_timeout=0.3,
        tool_timeout=None,
    )
    registry = executor.metrics.registry
    started = time.perf_counter()

    async with serve(executor, Settings(heartbeat_seconds=0.1)) as client:
        response = await client.post(
            "/api/chat/stream", json={"message": "go", "session_id": "s", "events": "json"}
        )
        elapsed = time.perf_counter() - started
        in_flight_at_end = sample(registry, "agent_executor_in_flight_requests")
        thread_done_at_end = finished.is_set()
        with anyio.fail_after(5):
            while not finished.is_set():
                await anyio.sleep(0.05)
        await anyio.sleep(0.1)

    events = parse(response.content)
    assert [e.type for e in events] == ["tool_start", "tool_end", "error", "done"]
    assert json.loads(events[1].data)["status"] == "cancelled"
    assert json.loads(events[2].data)["code"] == "timeout"
    assert elapsed < 1.0
    assert in_flight_at_end == 0 and not thread_done_at_end
    assert await executor.memory.load(None, "s") == []
    assert executor.model.remaining == 1  # type: ignore[attr-defined]


class Opaque:
    def __repr__(self) -> str:
        return "<opaque>"


class ReprFails:
    def __repr__(self) -> str:
        raise RuntimeError("repr() fails")


def cyclic() -> dict[str, Any]:
    value: dict[str, Any] = {}
    value["self"] = value
    return value


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ({1, 2}, "[1,2]"),
        (float("nan"), "NaN"),
        (dt.datetime(2024, 5, 1, 12, 0), '"2024-05-01T12:00:00"'),
        (decimal.Decimal("1.10"), '"1.10"'),
        (1j, '"1j"'),
        ((Opaque(), b"bytes"), '["<opaque>","bytes"]'),
        ({(1, 2): "tuple key"}, '{"1,2":"tuple key"}'),
        (iter([1, 2]), "[1,2]"),
        (None, "null"),
    ],
    ids=[
        "set",
        "nan",
        "datetime",
        "decimal",
        "complex",
        "object+bytes",
        "tuple-key",
        "iter",
        "none",
    ],
)
async def test_results_json_cannot_hold_are_still_given_to_the_model(value: Any, text: str) -> None:
    @tool
    def odd() -> Any:
        """Returns an odd value."""
        return value

    events, executor = await run_one_call(odd)

    assert_recovered(events, executor, status="success")
    assert events[-1].tool_calls[0].result == text


@pytest.mark.parametrize(
    "make_value",
    [lambda: b"\xff\xfe", cyclic, lambda: [ReprFails()]],
    ids=["non-utf8-bytes", "cycle", "repr-fails"],
)
async def test_results_that_cannot_be_serialised_do_not_end_the_run(make_value: Any) -> None:
    @tool
    def odd() -> Any:
        """Returns something unserialisable."""
        return make_value()

    events, _ = await run_one_call(odd)

    assert not [e for e in events if isinstance(e, ErrorEvent)]
    ends = [e.status for e in events if isinstance(e, ToolEndEvent)]
    assert ends in (["error"], ["success"])
    assert isinstance(events[-1], DoneEvent) and events[-1].finish_reason == "stop"


TEN_MB = 10 * 1024 * 1024


@pytest.mark.parametrize("limit", [None, 5000])
@pytest.mark.parametrize("shape", ["str", "dict"])
async def test_a_10_mb_result_is_truncated_with_a_marker_before_the_model_sees_it(
    limit: int | None, shape: str
) -> None:
    @tool
    def huge() -> Any:
        """Returns 10 MB."""
        return "x" * TEN_MB if shape == "str" else {"rows": ["y" * 1000] * (TEN_MB // 1000)}

    options = {} if limit is None else {"max_tool_result_chars": limit}
    expected_limit = 100_000 if limit is None else limit
    executor = make_executor([tool_turn(call("huge", id="c1")), "summarised"], [huge], **options)

    async with serve(executor) as client:
        response = await client.post("/api/chat/stream", json={"message": "go", "events": "json"})

    events = parse(response.content)
    assert [e.type for e in events] == ["tool_start", "tool_end", "message", "done"]
    done = json.loads(events[-1].data)
    result = done["tool_calls"][0]["result"]
    assert done["tool_calls"][0]["status"] == "success"
    head, marker = result[:expected_limit], result[expected_limit:]
    assert len(head) == expected_limit
    assert marker.startswith("\n[truncated: the result had ")
    assert f"only the first {expected_limit} are shown]" in marker
    sent = executor.model.requests[1].messages[-1]  # type: ignore[attr-defined]
    assert isinstance(sent, ToolMessage) and sent.content == result
    assert json.loads(events[1].data)["result"] == result  # tool_end shows what the model saw
    # the truncated result twice (tool_end and done), never the 10 MB
    assert len(response.content) < 2 * expected_limit + 10_000
