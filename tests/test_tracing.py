"""OpenTelemetry spans for a tool-calling run, with GenAI attribute names."""

from __future__ import annotations

import logging

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from agent_executor import AgentCommand, ModelError, tool
from agent_executor.models.scripted import call, text_turn, tool_turn

from .helpers import make_executor


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


def tracer_for(exporter: InMemorySpanExporter) -> object:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider.get_tracer("tests")


log = logging.getLogger("tests.tracing")


def only(attributes: object, expected: dict[str, object]) -> dict[str, object]:
    """The span's attributes restricted to the keys of ``expected``."""
    items = dict(attributes or {})  # type: ignore[call-overload]
    return {key: items.get(key) for key in expected}


@tool
def get_weather(city: str) -> str:
    """Weather."""
    log.info("looking up %s", city)
    return f"sunny in {city}"


@tool
def broken() -> str:
    """Fails."""
    raise RuntimeError("nope")


async def test_a_tool_calling_run_makes_a_span_tree(
    exporter: InMemorySpanExporter, caplog: pytest.LogCaptureFixture
) -> None:
    executor = make_executor(
        [
            tool_turn(
                call("get_weather", {"city": "Oslo"}, id="c1"),
                call("broken", id="c2"),
                usage=(10, 5),
            ),
            text_turn("Sunny.", usage=(20, 2)),
        ],
        [get_weather, broken],
        tracer=tracer_for(exporter),
        name="weather-agent",
    )
    caplog.set_level(logging.INFO, logger="tests.tracing")

    await executor.execute(AgentCommand(user_prompt="weather?", session_id="s1"))

    spans = {span.name: span for span in exporter.get_finished_spans()}
    assert set(spans) == {
        "invoke_agent weather-agent",
        "chat scripted",
        "execute_tool get_weather",
        "execute_tool broken",
    }
    run = spans["invoke_agent weather-agent"]
    assert run.parent is None
    expected_run = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "weather-agent",
        "gen_ai.request.model": "scripted",
        "gen_ai.conversation.id": "s1",
        "gen_ai.usage.input_tokens": 30,
        "gen_ai.usage.output_tokens": 7,
        "agent_executor.turns": 2,
        "agent_executor.tool_calls": 2,
    }
    assert only(run.attributes, expected_run) == expected_run
    chats = [s for s in exporter.get_finished_spans() if s.name == "chat scripted"]
    assert len(chats) == 2
    assert all(c.parent is not None and c.parent.span_id == run.context.span_id for c in chats)
    assert chats[0].attributes["gen_ai.usage.input_tokens"] == 10  # type: ignore[index]
    assert chats[0].attributes["gen_ai.response.finish_reasons"] == ("tool_calls",)  # type: ignore[index]
    weather = spans["execute_tool get_weather"]
    assert weather.parent is not None and weather.parent.trace_id == run.context.trace_id
    expected_tool = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "get_weather",
        "gen_ai.tool.call.id": "c1",
        "agent_executor.tool.status": "success",
    }
    assert only(weather.attributes, expected_tool) == expected_tool
    failed = spans["execute_tool broken"]
    assert failed.status.status_code is StatusCode.ERROR
    assert failed.attributes["error.type"] == "error"  # type: ignore[index]
    assert run.status.status_code is StatusCode.UNSET
    [record] = [r for r in caplog.records if r.name == "tests.tracing"]
    assert record.trace_id == format(run.context.trace_id, "032x")  # type: ignore[attr-defined]


async def test_a_failed_run_records_its_error_code(exporter: InMemorySpanExporter) -> None:
    executor = make_executor([ModelError("provider down")], tracer=tracer_for(exporter))

    await executor.execute(AgentCommand(user_prompt="hi"))

    spans = {span.name: span for span in exporter.get_finished_spans()}
    for name in ("invoke_agent default", "chat scripted"):
        assert spans[name].status.status_code is StatusCode.ERROR
        assert spans[name].attributes["error.type"] == "llm_error"  # type: ignore[index]


async def test_without_a_tracer_nothing_is_traced(exporter: InMemorySpanExporter) -> None:
    executor = make_executor(["hi"])

    result = await executor.execute(AgentCommand(user_prompt="x"))

    assert result.success
    assert exporter.get_finished_spans() == ()
