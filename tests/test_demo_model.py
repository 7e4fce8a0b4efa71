"""The offline DemoModel: streams word by word and calls the demo tools when asked."""

from __future__ import annotations

import pytest

from agent_executor import AgentCommand, AgentExecutor, DemoModel, MessageEvent, ToolStartEvent
from agent_executor.demo_tools import DEMO_TOOLS, get_time, get_weather

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
