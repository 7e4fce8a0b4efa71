"""Timeouts, the concurrency queue and cancellation, through the public API."""

from __future__ import annotations

import threading
import time
from contextlib import aclosing

import anyio
import pytest
from prometheus_client import CollectorRegistry

from agent_executor import (
    AgentCommand,
    AgentExecutor,
    DoneEvent,
    ErrorEvent,
    MessageEvent,
    ModelChunk,
    ScriptedModel,
    ToolEndEvent,
    ToolStartEvent,
    tool,
)
from agent_executor._engine.gate import ConcurrencyGate
from agent_executor.models.scripted import Pause, call, text_turn, tool_turn
from agent_executor.observability import Metrics

from .helpers import collect, make_executor, sample, strip_timing

# This module still passes the keyword arguments the settings objects replaced (max_turns=...);
# they warn until 0.2.0 (tests/test_settings.py checks the warning itself).
pytestmark = pytest.mark.filterwarnings(
    "ignore:.*keyword arguments are deprecated:DeprecationWarning"
)


class Sleeper:
    """A tool that sleeps until cancelled and reports what happened to it."""

    def __init__(self) -> None:
        self.started = anyio.Event()
        self.cancelled = anyio.Event()
        self.release = anyio.Event()

        @tool
        async def sleep_tool() -> str:
            """Sleep until released."""
            self.started.set()
            try:
                await self.release.wait()
            except anyio.get_cancelled_exc_class():
                self.cancelled.set()
                raise
            return "released"

        self.tool = sleep_tool


def in_flight(executor: AgentExecutor) -> float:
    return sample(executor.metrics.registry, "agent_executor_in_flight_requests")


async def test_request_timeout_cancels_the_tool_and_reports_timeout() -> None:
    sleeper = Sleeper()
    executor = make_executor(
        [tool_turn(call("sleep_tool", id="c1"))], [sleeper.tool], request_timeout=0.2
    )

    events = strip_timing(await collect(executor, "go"))

    assert sleeper.cancelled.is_set()
    assert events[0] == ToolStartEvent(tool="sleep_tool", call_id="c1", arguments={})
    assert events[1] == ToolEndEvent(
        tool="sleep_tool",
        call_id="c1",
        status="cancelled",
        duration_ms=0,
        result="cancelled: the run ended before the tool finished",
    )
    assert events[2] == ErrorEvent(code="timeout", message="the run did not finish within 0.2 s")
    assert isinstance(events[3], DoneEvent) and events[3].finish_reason == "error"
    assert events[3].tool_calls[0].status == "cancelled"
    assert len(events) == 4
    registry = executor.metrics.registry
    assert sample(registry, "agent_executor_requests_total", mode="stream", outcome="timeout") == 1
    assert (
        sample(registry, "agent_executor_tool_calls_total", tool="sleep_tool", status="cancelled")
        == 1
    )
    assert in_flight(executor) == 0


async def test_overloaded_when_no_permit_frees_up_in_time(registry: CollectorRegistry) -> None:
    sleeper = Sleeper()
    model = ScriptedModel([tool_turn(call("sleep_tool")), "first done", "second done"])
    executor = AgentExecutor(
        model=model, tools=[sleeper.tool], max_concurrency=1, queue_timeout=0.05, metrics=registry
    )
    results = []

    async with anyio.create_task_group() as tg:

        async def first() -> None:
            results.append(await executor.execute(AgentCommand(user_prompt="1")))

        tg.start_soon(first)
        await sleeper.started.wait()
        second = await executor.execute(AgentCommand(user_prompt="2"))
        assert sample(executor.metrics.registry, "agent_executor_queued_requests") == 0
        sleeper.release.set()

    assert second.error is not None and second.error.code == "overloaded"
    assert "no capacity within 0.05 s" in second.error.message
    assert results[0].success
    assert (
        sample(
            executor.metrics.registry,
            "agent_executor_requests_total",
            mode="execute",
            outcome="overloaded",
        )
        == 1
    )


async def test_bounded_queue_refuses_at_once_and_queued_runs_are_served_in_order(
    registry: CollectorRegistry,
) -> None:
    sleeper = Sleeper()
    model = ScriptedModel([tool_turn(call("sleep_tool")), "a", "b", "c"])
    executor = AgentExecutor(
        model=model,
        tools=[sleeper.tool],
        max_concurrency=1,
        max_queue=2,
        queue_timeout=5,
        metrics=registry,
    )
    order: list[str] = []
    refused = []

    async def run(prompt: str) -> None:
        result = await executor.execute(AgentCommand(user_prompt=prompt))
        if result.success:
            order.append(prompt)
        else:
            refused.append((prompt, result.error.code if result.error else None))

    async with anyio.create_task_group() as tg:
        tg.start_soon(run, "holder")
        await sleeper.started.wait()
        for prompt in ("q1", "q2", "q3"):
            tg.start_soon(run, prompt)
            await anyio.wait_all_tasks_blocked()
        assert sample(executor.metrics.registry, "agent_executor_queued_requests") == 2
        sleeper.release.set()

    assert refused == [("q3", "overloaded")]
    assert order == ["holder", "q1", "q2"]


@pytest.mark.parametrize("how", ["break", "aclose", "cancel_task"])
async def test_leaving_the_stream_cancels_the_run(how: str) -> None:
    sleeper = Sleeper()
    executor = make_executor(
        [tool_turn(call("sleep_tool")), "follow-up"], [sleeper.tool], max_concurrency=1, max_queue=0
    )
    command = AgentCommand(user_prompt="go")

    if how == "break":
        async for event in executor.execute_stream(command):
            if isinstance(event, ToolStartEvent):
                break
    elif how == "aclose":
        stream = executor.execute_stream(command)
        async for event in stream:
            if isinstance(event, ToolStartEvent):
                break
        await stream.aclose()
    else:
        async with anyio.create_task_group() as tg:

            async def consume() -> None:
                async for _ in executor.execute_stream(command):
                    pass

            tg.start_soon(consume)
            await sleeper.started.wait()
            tg.cancel_scope.cancel()

    with anyio.fail_after(1):
        await sleeper.cancelled.wait()
        while in_flight(executor):
            await anyio.sleep(0.001)
    registry = executor.metrics.registry
    assert (
        sample(registry, "agent_executor_requests_total", mode="stream", outcome="cancelled") == 1
    )
    assert (
        sample(registry, "agent_executor_tool_calls_total", tool="sleep_tool", status="cancelled")
        == 1
    )
    # max_concurrency=1 and no queue: this fails with "overloaded" if the permit leaked.
    follow_up = await executor.execute(command)
    assert follow_up.success and follow_up.content == "follow-up"


async def test_cancelling_execute_cancels_the_run() -> None:
    sleeper = Sleeper()
    executor = make_executor([tool_turn(call("sleep_tool"))], [sleeper.tool])

    with anyio.move_on_after(0.1):
        await executor.execute(AgentCommand(user_prompt="go"))

    assert sleeper.cancelled.is_set()
    assert in_flight(executor) == 0
    assert (
        sample(
            executor.metrics.registry,
            "agent_executor_requests_total",
            mode="execute",
            outcome="cancelled",
        )
        == 1
    )


async def test_a_sync_tool_that_ignores_cancellation_does_not_hold_the_run() -> None:
    finished = threading.Event()

    @tool(timeout=0.1)
    def stubborn() -> str:
        """A blocking tool: threads cannot be interrupted."""
        time.sleep(0.5)
        finished.set()
        return "too late"

    executor = make_executor([tool_turn(call("stubborn")), "moved on"], [stubborn])
    started = time.perf_counter()

    result = await executor.execute(AgentCommand(user_prompt="go"))

    assert time.perf_counter() - started < 0.45
    assert result.success and result.tool_calls[0].status == "timeout"
    assert not finished.is_set()


async def test_first_token_timeout_is_an_llm_error_after_retries(
    caplog: pytest.LogCaptureFixture,
) -> None:
    executor = make_executor(
        [[Pause(5), ModelChunk(text="late")], [Pause(5), ModelChunk(text="late")]],
        first_token_timeout=0.05,
        model_retries=1,
        retry_backoff=0.001,
    )

    events = await collect(executor, "hi")

    assert isinstance(events[0], ErrorEvent)
    assert events[0].code == "llm_error"
    assert "first-token timeout" in caplog.text  # the reason is logged; callers get llm_error
    assert isinstance(events[1], DoneEvent)
    assert (
        sample(executor.metrics.registry, "agent_executor_llm_retries_total", model="scripted") == 1
    )


async def test_a_stalled_stream_hits_the_idle_timeout(caplog: pytest.LogCaptureFixture) -> None:
    executor = make_executor(
        [[ModelChunk(text="Hel"), Pause(5), ModelChunk(text="lo")]], stream_idle_timeout=0.1
    )
    started = time.perf_counter()

    events = await collect(executor, "hi")

    assert time.perf_counter() - started < 1
    assert events[0] == MessageEvent("Hel")
    assert isinstance(events[1], ErrorEvent) and events[1].code == "llm_error"
    assert "idle timeout" in caplog.text
    assert isinstance(events[2], DoneEvent) and len(events) == 3


async def test_a_slow_but_steady_stream_is_not_idle() -> None:
    chunks = [item for i in range(8) for item in (Pause(0.03), ModelChunk(text=f"{i}"))]
    executor = make_executor([chunks], stream_idle_timeout=0.1)

    result = await executor.execute(AgentCommand(user_prompt="hi"))

    assert result.success and result.content == "01234567"


async def test_text_arrives_before_the_turn_ends(registry: CollectorRegistry) -> None:
    """Deltas are yielded as they arrive, not buffered until the model finishes."""
    gate = anyio.Event()

    def gated(request: object) -> list[object]:
        return [ModelChunk(text="first"), Pause(0), ModelChunk(text=" second")]

    model = ScriptedModel([gated])
    original = model.stream

    async def stream(request):  # type: ignore[no-untyped-def]
        async for chunk in original(request):
            yield chunk
            if chunk.text == "first":
                await gate.wait()

    model.stream = stream  # type: ignore[method-assign]
    executor = AgentExecutor(model=model, metrics=registry)

    async with aclosing(executor.execute_stream(AgentCommand(user_prompt="hi"))) as events:
        first = await anext(events)
        assert first == MessageEvent("first")
        gate.set()
        rest = [event async for event in events]
    assert rest[0] == MessageEvent(" second")


async def test_text_turn_helper_usage_is_reported() -> None:
    executor = make_executor([text_turn("a b", usage=(1, 2))])
    result = await executor.execute(AgentCommand(user_prompt="x"))
    assert result.usage is not None and result.usage.total_tokens == 3


async def test_calls_finished_before_a_timeout_keep_their_records() -> None:
    @tool
    def quick() -> str:
        """Returns at once."""
        return "quick result"

    @tool
    async def stuck() -> str:
        """Never returns."""
        await anyio.sleep(10)
        return "never"

    executor = make_executor(
        [tool_turn(call("quick", id="q"), call("stuck", id="s"))],
        [quick, stuck],
        request_timeout=0.2,
    )

    result = await executor.execute(AgentCommand(user_prompt="go"))

    assert result.error is not None and result.error.code == "timeout"
    assert sorted((r.call_id, r.status) for r in result.tool_calls) == [
        ("q", "success"),
        ("s", "cancelled"),
    ]


async def test_a_model_that_breaks_is_counted_as_an_llm_error() -> None:
    executor = make_executor([RuntimeError("adapter bug")])

    result = await executor.execute(AgentCommand(user_prompt="hi"))

    assert result.error is not None and result.error.code == "internal_error"
    assert (
        sample(
            executor.metrics.registry,
            "agent_executor_llm_requests_total",
            model="scripted",
            outcome="error",
        )
        == 1
    )


def test_retry_delays_back_off_exponentially_and_honour_retry_after() -> None:
    from agent_executor import ModelError
    from agent_executor._engine.streaming import ModelPolicy, retry_delay

    policy = ModelPolicy(backoff=0.5, max_backoff=8.0)

    assert 0.5 <= retry_delay(policy, 1, None) <= 1.0
    assert 2.0 <= retry_delay(policy, 3, None) <= 2.5
    assert 8.0 <= retry_delay(policy, 10, None) <= 8.5
    assert retry_delay(policy, 1, ModelError("429", retry_after=5.0)) == 5.0
    assert retry_delay(policy, 1, ModelError("429", retry_after=60.0)) == 8.0


async def test_a_newcomer_starts_after_the_waiter_a_release_handed_its_permit(
    registry: CollectorRegistry,
) -> None:
    """Two permits come free in one step of the loop: the first goes to the run that waited,
    the second to a newcomer arriving in that same step. The newcomer must not start first:
    the waiter has its permit but has not run since it was handed over."""
    gate = ConcurrencyGate(2, max_queue=None, queue_timeout=None, metrics=Metrics(registry))
    holders = [gate.permit(), gate.permit()]
    for holder in holders:
        await holder.__aenter__()
    started: list[str] = []

    async def waiter() -> None:
        async with gate.permit():
            started.append("waited")

    async with anyio.create_task_group() as tg:
        tg.start_soon(waiter)
        await anyio.wait_all_tasks_blocked()
        assert sample(registry, "agent_executor_queued_requests") == 1
        for holder in holders:  # no await between these and the newcomer's permit
            await holder.__aexit__(None, None, None)
        async with gate.permit():
            started.append("newcomer")

    assert started == ["waited", "newcomer"]
    assert sample(registry, "agent_executor_in_flight_requests") == 0
