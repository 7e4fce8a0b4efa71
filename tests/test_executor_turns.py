"""The ReAct loop through the public API with a ScriptedModel: text, tools, failures, limits."""

from __future__ import annotations

import json

import anyio
import pytest
from prometheus_client import CollectorRegistry

from agent_executor import (
    AgentCommand,
    AgentExecutor,
    AssistantMessage,
    DoneEvent,
    ErrorEvent,
    InputValidationGuard,
    MessageEvent,
    ModelChunk,
    ToolCallDelta,
    ToolEndEvent,
    ToolMessage,
    ToolStartEvent,
    Usage,
    tool,
)
from agent_executor.models.scripted import ScriptedModel, call, text_turn, tool_turn
from agent_executor.results import ToolCallRecord

from .helpers import collect, make_executor, sample, strip_timing

# This module still passes the keyword arguments the settings objects replaced (max_turns=...);
# they warn until 0.2.0 (tests/test_settings.py checks the warning itself).
pytestmark = pytest.mark.filterwarnings(
    "ignore:.*keyword arguments are deprecated:DeprecationWarning"
)


@tool
def get_weather(city: str) -> dict[str, object]:
    """Weather for a city."""
    return {"city": city, "temperature_c": 21}


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def record(
    call_id: str, name: str, args: dict[str, object], status: str, result: str
) -> ToolCallRecord:
    return ToolCallRecord(
        call_id=call_id,
        tool=name,
        arguments=args,
        status=status,  # type: ignore[arg-type]
        duration_ms=0,
        result=result,
    )


async def test_text_only_streams_each_delta_then_done() -> None:
    executor = make_executor([text_turn("Hello there world", usage=(5, 3))])

    events = strip_timing(await collect(executor, "hi"))

    assert events == [
        MessageEvent("Hello "),
        MessageEvent("there "),
        MessageEvent("world"),
        DoneEvent(
            finish_reason="stop",
            usage=Usage(input_tokens=5, output_tokens=3),
            tool_calls=[],
            duration_ms=0,
        ),
    ]


async def test_text_tool_text() -> None:
    executor = make_executor(
        [
            tool_turn(call("get_weather", {"city": "Paris"}, id="c1"), text="Checking. "),
            text_turn("It is 21 degrees."),
        ],
        [get_weather],
    )

    events = strip_timing(await collect(executor, "weather in Paris?"))

    weather = record(
        "c1", "get_weather", {"city": "Paris"}, "success", '{"city":"Paris","temperature_c":21}'
    )
    assert events == [
        MessageEvent("Checking. "),
        ToolStartEvent(tool="get_weather", call_id="c1", arguments={"city": "Paris"}),
        ToolEndEvent(
            tool="get_weather",
            call_id="c1",
            status="success",
            duration_ms=0,
            result=weather.result,  # what the model was given
        ),
        MessageEvent("\n\n"),  # the paragraph break between the turns, a message of its own
        MessageEvent("It "),
        MessageEvent("is "),
        MessageEvent("21 "),
        MessageEvent("degrees."),
        DoneEvent(finish_reason="stop", usage=None, tool_calls=[weather], duration_ms=0),
    ]
    second = executor.model.requests[1]  # type: ignore[attr-defined]
    # the turn's own message, without the break the reader got
    assert second.messages[-2] == AssistantMessage(
        content="Checking. ", tool_calls=(second.messages[-2].tool_calls[0],)
    )
    assert second.messages[-1] == ToolMessage(
        tool_call_id="c1", name="get_weather", content='{"city":"Paris","temperature_c":21}'
    )
    assert [spec["function"]["name"] for spec in second.tools] == ["get_weather"]


async def test_arguments_split_one_character_per_chunk() -> None:
    arguments = {"city": "São Paulo", "note": 'a "quoted" {brace}'}

    @tool
    def echo(city: str, note: str) -> str:
        """Echo."""
        return f"{city}|{note}"

    executor = make_executor(
        [tool_turn(call("echo", arguments, id="c1"), fragment_size=1), "done"], [echo]
    )

    result = await executor.execute(AgentCommand(user_prompt="go"))

    assert result.tool_calls[0].arguments == arguments
    assert result.tool_calls[0].result == 'São Paulo|a "quoted" {brace}'
    assert result.content == "done"


async def test_two_interleaved_calls_run_concurrently() -> None:
    """Each tool waits until the other has started: this only finishes if they overlap."""
    started = {"a": anyio.Event(), "b": anyio.Event()}

    @tool
    async def wait_for(me: str, other: str) -> str:
        """Start, then wait for the other call to start."""
        started[me].set()
        with anyio.fail_after(5):
            await started[other].wait()
        return f"{me} saw {other}"

    executor = make_executor(
        [
            tool_turn(
                call("wait_for", {"me": "a", "other": "b"}, id="ca"),
                call("wait_for", {"me": "b", "other": "a"}, id="cb"),
                fragment_size=3,
                interleave=True,
            ),
            "both ran",
        ],
        [wait_for],
    )

    events = await collect(executor, "go")

    ends = [e for e in events if isinstance(e, ToolEndEvent)]
    assert sorted((e.call_id, e.status) for e in ends) == [("ca", "success"), ("cb", "success")]
    done = events[-1]
    assert isinstance(done, DoneEvent)
    assert [r.call_id for r in done.tool_calls] == ["ca", "cb"]
    assert [r.result for r in done.tool_calls] == ["a saw b", "b saw a"]
    tool_messages = executor.model.requests[1].messages[-2:]  # type: ignore[attr-defined]
    assert [m.tool_call_id for m in tool_messages] == ["ca", "cb"]


async def test_interleaved_fragments_without_index_or_id() -> None:
    chunks = [
        ModelChunk(tool_calls=(ToolCallDelta(name="add", arguments='{"a": 1'),)),
        ModelChunk(tool_calls=(ToolCallDelta(arguments=', "b": 2}'),)),
        ModelChunk(finish_reason="stop"),
    ]
    executor = make_executor([chunks, "3"], [add])

    result = await executor.execute(AgentCommand(user_prompt="1+2"))

    assert result.success
    [only] = result.tool_calls
    assert only.call_id.startswith("call_")
    assert (only.tool, only.arguments, only.status, only.result) == (
        "add",
        {"a": 1, "b": 2},
        "success",
        "3",
    )


@pytest.mark.parametrize(
    ("scripted_call", "status", "result_part"),
    [
        (call("add", '{"a": 1, "b": '), "invalid_arguments", "not valid JSON"),
        (call("add", {"a": "x", "b": 2}), "invalid_arguments", "a: Input should be a valid int"),
        (call("add", {"a": 1}), "invalid_arguments", "b: Field required"),
        (call("subtract", {"a": 1, "b": 2}), "not_found", "available tools: add, boom, slow"),
        (call("boom", {}), "error", "RuntimeError: kaput"),
        (call("slow", {}), "timeout", "did not finish within 0.05 s"),
    ],
)
async def test_tool_failures_go_back_to_the_model_and_the_run_continues(
    scripted_call: object, status: str, result_part: str
) -> None:
    @tool
    def boom() -> str:
        """Always fails."""
        raise RuntimeError("kaput")

    @tool(timeout=0.05)
    async def slow() -> str:
        """Never finishes in time."""
        await anyio.sleep(10)
        return "late"

    executor = make_executor(
        [tool_turn(scripted_call), "recovered"],  # type: ignore[arg-type]
        [add, boom, slow],
    )

    events = await collect(executor, "go")

    [end] = [e for e in events if isinstance(e, ToolEndEvent)]
    assert end.status == status
    done = events[-1]
    assert isinstance(done, DoneEvent) and done.finish_reason == "stop"
    assert result_part in done.tool_calls[0].result
    assert "".join(e.text for e in events if isinstance(e, MessageEvent)) == "recovered"
    tool_message = executor.model.requests[1].messages[-1]  # type: ignore[attr-defined]
    assert isinstance(tool_message, ToolMessage) and result_part in tool_message.content


async def test_max_tool_calls_refuses_further_calls_and_asks_for_a_final_answer() -> None:
    executor = make_executor(
        [
            tool_turn(call("add", {"a": 1, "b": 1}, id="c1")),
            tool_turn(
                call("add", {"a": 2, "b": 2}, id="c2"), call("add", {"a": 3, "b": 3}, id="c3")
            ),
            "final answer",
        ],
        [add],
        max_tool_calls=2,
    )

    events = await collect(executor, "go")

    ends = sorted((e.call_id, e.status) for e in events if isinstance(e, ToolEndEvent))
    assert ends == [("c1", "success"), ("c2", "success"), ("c3", "rejected")]
    done = events[-1]
    assert isinstance(done, DoneEvent)
    assert done.finish_reason == "max_tool_calls"
    assert "max_tool_calls (2) reached" in done.tool_calls[2].result
    final_request = executor.model.requests[2]  # type: ignore[attr-defined]
    assert final_request.tools == []
    assert "".join(e.text for e in events if isinstance(e, MessageEvent)) == "final answer"


async def test_command_max_tool_calls_overrides_the_executor() -> None:
    executor = make_executor(
        [tool_turn(call("add", {"a": 1, "b": 1}), call("add", {"a": 2, "b": 2})), "3 and 4"],
        [add],
        max_tool_calls=5,
    )

    result = await executor.execute(AgentCommand(user_prompt="go", max_tool_calls=1))

    assert result.finish_reason == "max_tool_calls"
    assert [r.status for r in result.tool_calls] == ["success", "rejected"]


async def test_max_tool_calls_zero_offers_no_tools() -> None:
    executor = make_executor(["plain answer"], [add])

    result = await executor.execute(AgentCommand(user_prompt="go", max_tool_calls=0))

    assert (result.finish_reason, result.content) == ("stop", "plain answer")
    assert executor.model.requests[0].tools == []  # type: ignore[attr-defined]


async def test_max_turns_ends_the_run_without_running_the_last_calls() -> None:
    executor = make_executor(
        [tool_turn(call("add", {"a": i, "b": 1})) for i in range(3)], [add], max_turns=2
    )

    result = await executor.execute(AgentCommand(user_prompt="go"))

    assert result.success
    assert result.finish_reason == "max_turns"
    assert [r.status for r in result.tool_calls] == ["success", "rejected"]
    assert "max_turns (2) reached" in result.tool_calls[1].result
    assert executor.model.remaining == 1  # type: ignore[attr-defined]


async def test_identical_calls_in_a_row_are_refused() -> None:
    same = {"a": 1, "b": 2}
    executor = make_executor(
        [
            tool_turn(call("add", same)),
            tool_turn(call("add", same)),
            tool_turn(call("add", same)),
            "ok, 3",
        ],
        [add],
    )

    result = await executor.execute(AgentCommand(user_prompt="go"))

    assert [r.status for r in result.tool_calls] == ["success", "success", "rejected"]
    assert "already called 2 times in a row" in result.tool_calls[2].result
    assert result.finish_reason == "stop"


async def test_finish_reason_stop_with_tool_calls_still_runs_them() -> None:
    executor = make_executor(
        [tool_turn(call("add", {"a": 2, "b": 2}), finish_reason="stop"), "4"], [add]
    )

    result = await executor.execute(AgentCommand(user_prompt="2+2"))

    assert [r.status for r in result.tool_calls] == ["success"]


async def test_calls_cut_off_by_length_are_not_run() -> None:
    ran = []

    @tool
    def dangerous(path: str) -> str:
        """Must never run with half-parsed arguments."""
        ran.append(path)
        return "deleted"

    executor = make_executor(
        [tool_turn(call("dangerous", '{"path": "/tmp/a'), finish_reason="length"), "sorry"],
        [dangerous],
    )

    result = await executor.execute(AgentCommand(user_prompt="go"))

    assert ran == []
    assert [r.status for r in result.tool_calls] == ["invalid_arguments"]
    assert "cut off (finish_reason=length)" in result.tool_calls[0].result


async def test_usage_is_summed_over_turns() -> None:
    executor = make_executor(
        [tool_turn(call("add", {"a": 1, "b": 1}), usage=(10, 4)), text_turn("2", usage=(20, 1))],
        [add],
    )

    result = await executor.execute(AgentCommand(user_prompt="go"))
    stream_executor = make_executor(
        [tool_turn(call("add", {"a": 1, "b": 1}), usage=(10, 4)), text_turn("2", usage=(20, 1))],
        [add],
    )
    done = (await collect(stream_executor, "go"))[-1]

    assert result.usage == Usage(input_tokens=30, output_tokens=5)
    assert isinstance(done, DoneEvent) and done.usage == result.usage


async def test_large_tool_results_are_truncated_with_a_marker() -> None:
    @tool
    def big() -> str:
        """Returns a lot."""
        return "x" * 1000

    executor = make_executor([tool_turn(call("big")), "ok"], [big], max_tool_result_chars=100)

    result = await executor.execute(AgentCommand(user_prompt="go"))

    text = result.tool_calls[0].result
    assert text.startswith("x" * 100)
    assert "[truncated: the result had 1000 characters" in text


async def test_non_json_results_are_serialised_anyway() -> None:
    class Opaque:
        def __repr__(self) -> str:
            return "<opaque>"

    @tool
    def odd() -> dict[str, object]:
        """Returns something JSON cannot hold."""
        return {"value": Opaque(), "n": 1}

    executor = make_executor([tool_turn(call("odd")), "ok"], [odd])

    result = await executor.execute(AgentCommand(user_prompt="go"))

    assert result.tool_calls[0].status == "success"
    assert json.loads(result.tool_calls[0].result) == {"value": "<opaque>", "n": 1}


async def test_model_failure_before_the_first_chunk_is_retried() -> None:
    from agent_executor import ModelError

    executor = make_executor([ModelError("503", retryable=True), "hello"], retry_backoff=0.001)

    result = await executor.execute(AgentCommand(user_prompt="hi"))

    assert result.success and result.content == "hello"
    assert (
        sample(executor.metrics.registry, "agent_executor_llm_retries_total", model="scripted") == 1
    )


async def test_model_failure_after_text_is_not_retried(caplog: pytest.LogCaptureFixture) -> None:
    from agent_executor import ModelError

    executor = make_executor(
        [
            [ModelChunk(text="partial "), ModelError("connection dropped", retryable=True)],
            "never played",
        ],
        retry_backoff=0.001,
    )

    events = [
        e async for e in executor.execute_stream(AgentCommand(user_prompt="hi"), request_id="r")
    ]

    assert events[:2] == [
        MessageEvent("partial "),
        ErrorEvent(
            code="llm_error",
            message="The model call failed; the server log has the details (request id r).",
        ),
    ]
    assert "model call failed: connection dropped" in caplog.text
    assert isinstance(events[2], DoneEvent) and events[2].finish_reason == "error"
    assert len(events) == 3
    assert executor.model.remaining == 1  # type: ignore[attr-defined]


async def test_non_retryable_model_failure_is_an_llm_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from agent_executor import ModelError

    executor = make_executor([ModelError("invalid api key", status_code=401), "unused"])

    result = await executor.execute(AgentCommand(user_prompt="hi"), request_id="r")

    assert not result.success
    assert result.error is not None
    assert (result.error.code, result.error.message) == (
        "llm_error",
        "The model call failed; the server log has the details (request id r).",
    )
    assert "model call failed: invalid api key" in caplog.text
    assert executor.model_health.down  # refused credentials: every call would fail
    assert result.finish_reason == "error"


async def test_script_exhaustion_fails_loudly() -> None:
    executor = make_executor(["only one"])
    await executor.execute(AgentCommand(user_prompt="1"))

    result = await executor.execute(AgentCommand(user_prompt="2"))

    assert result.error is not None and result.error.code == "llm_error"
    assert "called 2 times but only 1 turns were scripted" in result.error.message


@pytest.mark.parametrize("calls", [1, 2])
async def test_a_tool_raising_cancelled_error_by_itself_is_its_own_failure(calls: int) -> None:
    # One call runs in the run's own task, several in a task group: the same outcome.
    @tool
    async def flaky(n: int) -> str:
        """Raises CancelledError without being cancelled."""
        raise anyio.get_cancelled_exc_class()()

    turn = tool_turn(*(call("flaky", {"n": i}, id=f"c{i}") for i in range(calls)))
    executor = make_executor([turn, text_turn("sorry")], [flaky])

    events = await collect(executor, "go")

    ends = [e for e in events if isinstance(e, ToolEndEvent)]
    assert [e.status for e in ends] == ["error"] * calls
    assert isinstance(events[-1], DoneEvent) and events[-1].finish_reason == "stop"


async def test_start_begins_the_run_before_the_first_iteration() -> None:
    executor = make_executor([text_turn("Hello")])
    model = executor.model
    stream = executor.execute_stream(AgentCommand(user_prompt="hi"))

    stream.start()
    with anyio.fail_after(5):
        while not model.requests:  # type: ignore[attr-defined]
            await anyio.sleep(0.001)
    stream.start()  # a second call changes nothing

    events = [event async for event in stream]
    assert [type(e) for e in events] == [MessageEvent, DoneEvent]
    assert len(model.requests) == 1  # type: ignore[attr-defined]


async def test_peek_waits_for_the_first_event_and_leaves_it_in_the_stream() -> None:
    executor = make_executor([text_turn("Hello there")])
    stream = executor.execute_stream(AgentCommand(user_prompt="hi"))

    with anyio.fail_after(5):
        first = await stream.peek(5)  # starts the run
        assert first == MessageEvent("Hello ")
        assert await stream.peek(5) is first  # not taken
        events = [event async for event in stream]
    assert events[0] is first
    assert [type(e) for e in events] == [MessageEvent, MessageEvent, DoneEvent]
    assert await stream.peek(0.01) is None  # ended


async def test_peek_gives_up_after_its_timeout_and_the_run_goes_on() -> None:
    executor = AgentExecutor(
        model=ScriptedModel([text_turn("late")], delay=0.3), metrics=CollectorRegistry()
    )
    stream = executor.execute_stream(AgentCommand(user_prompt="hi"))
    with anyio.fail_after(5):
        assert await stream.peek(0.02) is None
        events = [event async for event in stream]
    assert [type(e) for e in events] == [MessageEvent, DoneEvent]


async def test_peek_shows_a_refusal_before_anything_else() -> None:
    executor = make_executor([], guards=[InputValidationGuard(max_chars=3)])
    stream = executor.execute_stream(AgentCommand(user_prompt="far too long"))
    with anyio.fail_after(5):
        refusal = await stream.peek(5)
        await stream.aclose()
    assert isinstance(refusal, ErrorEvent) and refusal.code == "invalid_input"


async def test_a_started_stream_closed_unread_cancels_its_run() -> None:
    started, cancelled = anyio.Event(), anyio.Event()

    @tool
    async def wait_forever() -> str:
        """Waits until cancelled."""
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()
        return "never"

    executor = make_executor([tool_turn(call("wait_forever", id="c1"))], [wait_forever])
    stream = executor.execute_stream(AgentCommand(user_prompt="go"))
    stream.start()
    with anyio.fail_after(5):
        await started.wait()
        await stream.aclose()
        await cancelled.wait()
