"""The offline DemoModel: streams word by word and calls the demo tools when asked."""

from __future__ import annotations

import pytest

from agent_executor import (
    AgentCommand,
    AgentEvent,
    AgentExecutor,
    DemoModel,
    DoneEvent,
    FrontendTool,
    MessageEvent,
    ToolCallEvent,
    ToolStartEvent,
    UserMessage,
)
from agent_executor.demo_tools import DEMO_TOOLS, get_time, get_weather
from agent_executor.models.base import ModelRequest

from .helpers import collect


def demo_executor(registry: object) -> AgentExecutor:
    return AgentExecutor(model=DemoModel(word_delay=0), tools=DEMO_TOOLS, metrics=registry)  # type: ignore[arg-type]


async def test_weather_question_calls_get_weather_then_answers(registry: object) -> None:
    events = await collect(demo_executor(registry), "What's the weather in Lisbon?")

    starts = [e for e in events if isinstance(e, ToolStartEvent)]
    assert [(e.tool, e.arguments) for e in starts] == [("get_weather", {"city": "Lisbon"})]
    text = "".join(e.text for e in events if isinstance(e, MessageEvent))
    assert "In Lisbon it is" in text and "°C" in text
    assert len([e for e in events if isinstance(e, MessageEvent)]) > 5


async def test_weather_and_time_are_called_together(registry: object) -> None:
    result = await demo_executor(registry).execute(
        AgentCommand(user_prompt="What is the weather and the time in Tokyo?")
    )

    assert [(r.tool, r.status) for r in result.tool_calls] == [
        ("get_weather", "success"),
        ("get_time", "success"),
    ]
    assert result.tool_calls[1].arguments == {"timezone": "Asia/Tokyo"}
    assert "(Asia/Tokyo)" in result.content
    assert result.usage is not None and result.usage.input_tokens > 0


async def test_small_talk_needs_no_tools(registry: object) -> None:
    result = await demo_executor(registry).execute(AgentCommand(user_prompt="Hello!"))

    assert result.success and result.tool_calls == []
    assert "demo model" in result.content


async def test_without_the_demo_tools_it_does_not_call_them(registry: object) -> None:
    executor = AgentExecutor(model=DemoModel(word_delay=0), metrics=registry)  # type: ignore[arg-type]

    result = await executor.execute(AgentCommand(user_prompt="weather in Paris?"))

    assert result.tool_calls == [] and result.success


def test_demo_tools_are_deterministic_and_validate_zones() -> None:
    assert get_weather("paris") == get_weather(" Paris ")
    assert get_time("UTC")["timezone"] == "UTC"
    with pytest.raises(ValueError, match="unknown time zone"):
        get_time("Mars/Olympus")


def test_the_model_string_demo_selects_the_demo_model(registry: object) -> None:
    executor = AgentExecutor(model="demo", metrics=registry)  # type: ignore[arg-type]
    assert isinstance(executor.model, DemoModel)


# ---- "what is my time zone?": the browser's get_browser_timezone, answered by the client ----

BROWSER_TZ_SPEC = {
    "name": "get_browser_timezone",
    "description": "The time zone of the user's browser (IANA name).",
    "parameters": {"type": "object", "properties": {}},
}


async def ask_the_browser(
    executor: AgentExecutor, command: AgentCommand, answer: dict[str, object] | None
) -> list[AgentEvent]:
    """Stream a run; answer its frontend calls as the chat page would (``None``: never)."""
    events: list[AgentEvent] = []
    async for event in executor.execute_stream(command):
        events.append(event)
        if isinstance(event, ToolCallEvent) and answer is not None:
            outcome = executor.tool_results.deliver(event.call_id, command.user_id, **answer)
            assert outcome == "delivered"
    return events


def final(events: list[AgentEvent]) -> DoneEvent:
    done = events[-1]
    assert isinstance(done, DoneEvent)
    return done


def streamed_text(events: list[AgentEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, MessageEvent))


async def test_my_time_zone_asks_the_browser_through_a_client_tool(registry: object) -> None:
    executor = demo_executor(registry)  # get_time is on offer too, and is not called
    command = AgentCommand(
        user_prompt="What is my time zone?", user_id="u", client_tools=[BROWSER_TZ_SPEC]
    )

    events = await ask_the_browser(executor, command, {"result": "Europe/Paris"})

    calls = [e for e in events if isinstance(e, ToolCallEvent)]
    assert [(e.tool, e.arguments) for e in calls] == [("get_browser_timezone", {})]
    done = final(events)
    assert done.finish_reason == "stop"
    assert [(r.tool, r.status, r.result) for r in done.tool_calls] == [
        ("get_browser_timezone", "success", "Europe/Paris")
    ]
    text = streamed_text(events)
    assert "Your browser says your time zone is Europe/Paris." in text
    assert text.startswith("Let me check that for you (get_browser_timezone). ")


@pytest.mark.parametrize("prompt", ["which timezone is MY TIMEZONE", "my time-zone, please"])
async def test_a_frontend_tool_answer_as_json_is_read_too(registry: object, prompt: str) -> None:
    executor = AgentExecutor(
        model=DemoModel(word_delay=0),
        tools=[FrontendTool("get_browser_timezone", "The browser's time zone.", timeout=5)],
        metrics=registry,  # type: ignore[arg-type]
    )
    command = AgentCommand(user_prompt=prompt, user_id="u")

    events = await ask_the_browser(executor, command, {"result": {"timezone": "Asia/Tokyo"}})

    assert "Your browser says your time zone is Asia/Tokyo." in streamed_text(events)
    assert final(events).tool_calls[0].arguments == {}


async def test_the_browser_failing_is_said_plainly(registry: object) -> None:
    command = AgentCommand(
        user_prompt="what's my time zone?", user_id="u", client_tools=[BROWSER_TZ_SPEC]
    )

    events = await ask_the_browser(
        demo_executor(registry), command, {"error": "this page does not run it"}
    )

    text = streamed_text(events)
    assert "Your browser could not tell me your time zone: this page does not run it." in text
    assert "says your time zone is" not in text
    assert final(events).tool_calls[0].status == "error"


async def test_no_answer_from_the_browser_is_said_plainly(registry: object) -> None:
    executor = AgentExecutor(
        model=DemoModel(word_delay=0),
        tools=[FrontendTool("get_browser_timezone", "The browser's time zone.", timeout=0.05)],
        metrics=registry,  # type: ignore[arg-type]
    )

    events = await ask_the_browser(
        executor, AgentCommand(user_prompt="my time zone?", user_id="u"), None
    )

    text = streamed_text(events)
    assert "I could not get your time zone from your browser:" in text
    assert "did not finish within" in text
    assert final(events).tool_calls[0].status == "timeout"


@pytest.mark.parametrize("answer", [None, "", "not a zone!", 42, ["Asia/Tokyo"]])
async def test_a_result_that_is_no_zone_name_is_not_taken_for_one(
    registry: object, answer: object
) -> None:
    command = AgentCommand(user_prompt="my timezone?", user_id="u", client_tools=[BROWSER_TZ_SPEC])

    events = await ask_the_browser(demo_executor(registry), command, {"result": answer})

    text = streamed_text(events)
    assert "I could not get your time zone from your browser:" in text
    assert "says your time zone is" not in text


async def test_my_time_zone_without_the_browser_tool_behaves_as_before(registry: object) -> None:
    result = await demo_executor(registry).execute(
        AgentCommand(user_prompt="What is my time zone?")
    )

    assert [(r.tool, r.arguments) for r in result.tool_calls] == [("get_time", {"timezone": "UTC"})]
    assert "(UTC)" in result.content


async def test_other_questions_do_not_ask_the_browser(registry: object) -> None:
    command = AgentCommand(
        user_prompt="What's the weather and the time in Tokyo?", client_tools=[BROWSER_TZ_SPEC]
    )

    result = await demo_executor(registry).execute(command)

    assert [r.tool for r in result.tool_calls] == ["get_weather", "get_time"]


async def test_the_browser_call_streams_like_the_other_tool_calls() -> None:
    tools = [{"type": "function", "function": {**BROWSER_TZ_SPEC}}]
    request = ModelRequest([UserMessage(content="what is my time zone?")], tools)

    chunks = [chunk async for chunk in DemoModel(word_delay=0).stream(request)]
    again = [chunk async for chunk in DemoModel(word_delay=0).stream(request)]

    assert chunks == again  # deterministic
    deltas = [d for c in chunks if c.tool_calls for d in c.tool_calls]
    assert deltas[0].name == "get_browser_timezone" and deltas[0].index == 0
    assert "".join(d.arguments or "" for d in deltas) == "{}"
    assert [c.finish_reason for c in chunks if c.finish_reason] == ["tool_calls"]
