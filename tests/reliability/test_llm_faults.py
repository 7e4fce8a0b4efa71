"""LLM faults through both model clients against the scripted fake OpenAI server.

Complements ``tests/test_model_clients.py`` (text, split tool calls, 503/429 retries, 401,
connection refused, a drop mid-text, a stall, a malformed chunk): here the faults are in the
tool calls a model sends (no id, no name, ``stop`` with calls, ``length`` cut in the middle of
the arguments, arguments that are not JSON), a 503 that never recovers, and drops after the
conversation already has history. Both clients must behave the same; no half-parsed call ever
runs, and a failed run never touches the stored history.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from agent_executor import (
    AgentCommand,
    AgentExecutor,
    ChatModel,
    DoneEvent,
    ErrorEvent,
    LiteLLMModel,
    MessageEvent,
    OpenAICompatModel,
    ToolEndEvent,
    ToolStartEvent,
    tool,
)

from ..fakes.openai_server import (
    FakeOpenAIServer,
    Status,
    Stream,
    chunk,
    text_stream,
    tool_call_stream,
)
from ..helpers import collect, sample
from .support import history_problems

# This module still passes the keyword arguments the settings objects replaced (max_turns=...);
# they warn until 0.2.0 (tests/test_settings.py checks the warning itself).
pytestmark = pytest.mark.filterwarnings(
    "ignore:.*keyword arguments are deprecated:DeprecationWarning"
)

MODEL = "openai/test-model"


class Recorder:
    """The tool the fake model calls; records every invocation."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

        @tool
        def get_weather(city: str) -> str:
            """Weather for a city."""
            self.calls.append({"city": city})
            return f"sunny in {city}"

        self.tool = get_weather


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
async def executors() -> AsyncIterator[list[AgentExecutor]]:
    opened: list[AgentExecutor] = []
    yield opened
    for executor in opened:
        await executor.aclose()


@pytest.fixture
def make(
    server: FakeOpenAIServer, client: str, recorder: Recorder, executors: list[AgentExecutor]
) -> Any:
    def build(**options: Any) -> AgentExecutor:
        model: ChatModel
        if client == "litellm":
            model = LiteLLMModel(MODEL, api_base=server.base_url, api_key="sk-test")
        else:
            model = OpenAICompatModel(MODEL, base_url=server.base_url, api_key="sk-test")
        executor = AgentExecutor(
            model=model,
            tools=[recorder.tool],
            metrics=CollectorRegistry(),
            retry_backoff=0.01,
            **options,
        )
        executors.append(executor)
        return executor

    return build


def without(chunks: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    """The chunks with ``id`` (``key="id"``) or the function ``name`` removed from every
    tool-call delta."""
    for item in chunks:
        for choice in item.get("choices", []):
            for delta in choice["delta"].get("tool_calls", []):
                if key == "id":
                    delta.pop("id", None)
                else:
                    delta.get("function", {}).pop("name", None)
    return chunks


def tool_messages(server: FakeOpenAIServer, request: int) -> list[dict[str, Any]]:
    return [m for m in server.requests[request]["messages"] if m["role"] == "tool"]


async def test_a_tool_call_without_an_id_gets_one_and_its_result_answers_it(
    server: FakeOpenAIServer, make: Any, recorder: Recorder
) -> None:
    server.script(
        Stream(without(tool_call_stream([("x", "get_weather", {"city": "Oslo"})]), "id")),
        Stream(text_stream(["Sunny."])),
    )
    executor = make()

    result = await executor.execute(AgentCommand(user_prompt="weather?"))

    assert result.success and result.content == "Sunny."
    assert recorder.calls == [{"city": "Oslo"}]
    [record] = result.tool_calls
    assert record.status == "success" and record.call_id.startswith("call_")
    assistant = server.requests[1]["messages"][1]
    assert [c["id"] for c in assistant["tool_calls"]] == [record.call_id]
    assert [m["tool_call_id"] for m in tool_messages(server, 1)] == [record.call_id]


async def test_a_tool_call_without_a_name_is_not_found_and_the_run_goes_on(
    server: FakeOpenAIServer, make: Any, recorder: Recorder
) -> None:
    server.script(
        Stream(without(tool_call_stream([("c1", "get_weather", {"city": "Oslo"})]), "name")),
        Stream(text_stream(["I could not look that up."])),
    )
    executor = make()

    events = await collect(executor, AgentCommand(user_prompt="weather?", session_id="s"))

    assert recorder.calls == []
    [end] = [e for e in events if isinstance(e, ToolEndEvent)]
    assert (end.call_id, end.tool, end.status) == ("c1", "", "not_found")
    done = events[-1]
    assert isinstance(done, DoneEvent) and done.finish_reason == "stop"
    [result] = tool_messages(server, 1)
    assert result["tool_call_id"] == "c1" and "unknown tool ''" in result["content"]
    assert history_problems(await executor.memory.load(None, "s")) == []


async def test_finish_reason_stop_with_tool_calls_still_runs_them(
    server: FakeOpenAIServer, make: Any, recorder: Recorder
) -> None:
    server.script(
        Stream(tool_call_stream([("c1", "get_weather", {"city": "Oslo"})], finish_reason="stop")),
        Stream(text_stream(["Sunny."])),
    )
    executor = make()

    result = await executor.execute(AgentCommand(user_prompt="weather?"))

    assert recorder.calls == [{"city": "Oslo"}]
    assert [r.status for r in result.tool_calls] == ["success"]
    assert result.content == "Sunny." and result.finish_reason == "stop"


async def test_length_cut_in_the_middle_of_the_arguments_never_runs_the_tool(
    server: FakeOpenAIServer, make: Any, recorder: Recorder
) -> None:
    server.script(
        Stream(
            tool_call_stream(
                [("c1", "get_weather", '{"city": "Os')], fragment_size=3, finish_reason="length"
            )
        ),
        Stream(text_stream(["Sorry, my answer was cut off."])),
    )
    executor = make()

    events = await collect(executor, "weather?")

    assert recorder.calls == []
    [start] = [e for e in events if isinstance(e, ToolStartEvent)]
    assert start.arguments == {}  # half-parsed arguments are not even shown as parsed
    [end] = [e for e in events if isinstance(e, ToolEndEvent)]
    assert end.status == "invalid_arguments"
    [result] = tool_messages(server, 1)
    assert "cut off (finish_reason=length)" in result["content"]
    assert isinstance(events[-1], DoneEvent) and events[-1].finish_reason == "stop"


async def test_length_cut_with_arguments_that_happen_to_parse_is_not_run_either(
    server: FakeOpenAIServer, make: Any, recorder: Recorder
) -> None:
    """``{"city": "Os"}`` is valid JSON, but the model was cut off: it may not be what it meant."""
    server.script(
        Stream(tool_call_stream([("c1", "get_weather", {"city": "Os"})], finish_reason="length")),
        Stream(text_stream(["Sorry."])),
    )
    executor = make()

    result = await executor.execute(AgentCommand(user_prompt="weather?"))

    assert recorder.calls == []
    assert [r.status for r in result.tool_calls] == ["invalid_arguments"]


@pytest.mark.parametrize(
    ("arguments", "explanation"),
    [
        ('{"city": "Os', "not valid JSON"),
        ("city=Oslo", "not valid JSON"),
        ('["Oslo"]', "must be a JSON object"),
        ('{"city": 5}', "city: Input should be a valid string"),
        ('{"town": "Oslo"}', "city: Field required"),
    ],
)
async def test_invalid_arguments_are_explained_to_the_model_and_the_tool_does_not_run(
    server: FakeOpenAIServer, make: Any, recorder: Recorder, arguments: str, explanation: str
) -> None:
    server.script(
        Stream(tool_call_stream([("c1", "get_weather", arguments)], fragment_size=4)),
        Stream(text_stream(["Let me fix that."])),
    )
    executor = make()

    result = await executor.execute(AgentCommand(user_prompt="weather?"))

    assert recorder.calls == []
    assert [r.status for r in result.tool_calls] == ["invalid_arguments"]
    [message] = tool_messages(server, 1)
    assert explanation in message["content"] and "call get_weather again" in message["content"]
    assert result.success and result.content == "Let me fix that."


async def test_a_503_that_never_recovers_is_an_llm_error_after_the_retries(
    server: FakeOpenAIServer, make: Any, client: str, caplog: pytest.LogCaptureFixture
) -> None:
    server.script(*[Status(503)] * 3)
    executor = make()

    events = await collect(executor, AgentCommand(user_prompt="hi", session_id="s"))

    assert len(server.requests) == 3  # the first try and model_retries=2
    assert len(events) == 2
    error, done = events
    assert isinstance(error, ErrorEvent) and error.code == "llm_error"
    [logged] = [r.getMessage() for r in caplog.records if "model call failed" in r.getMessage()]
    assert ("ServiceUnavailable" if client == "litellm" else "HTTP 503") in logged
    assert "Unavailable" not in error.message and "HTTP" not in error.message  # log only
    assert isinstance(done, DoneEvent) and done.finish_reason == "error"
    registry = executor.metrics.registry
    assert sample(registry, "agent_executor_llm_retries_total", model=MODEL) == 2
    assert sample(registry, "agent_executor_llm_requests_total", model=MODEL, outcome="error") == 1
    assert await executor.memory.load(None, "s") == []


async def test_a_drop_in_a_later_turn_leaves_the_stored_history_as_it_was(
    server: FakeOpenAIServer, make: Any, recorder: Recorder
) -> None:
    server.script(
        Stream(text_stream(["Hello."])),
        Stream(tool_call_stream([("c1", "get_weather", {"city": "Oslo"})])),
        Stream(text_stream(["It is ", "sunny ", "in Oslo."]), drop_after=3),
    )
    executor = make()
    first = await executor.execute(AgentCommand(user_prompt="hi", user_id="u", session_id="s"))
    assert first.success
    before = await executor.memory.load("u", "s")

    events = await collect(
        executor, AgentCommand(user_prompt="weather?", user_id="u", session_id="s")
    )

    assert recorder.calls == [{"city": "Oslo"}]  # the tool ran; the answer was then cut
    assert [e.text for e in events if isinstance(e, MessageEvent)] == ["It is ", "sunny "]
    assert isinstance(events[-2], ErrorEvent) and events[-2].code == "llm_error"
    assert isinstance(events[-1], DoneEvent) and events[-1].finish_reason == "error"
    assert len(server.requests) == 3  # not retried: text had been sent
    assert await executor.memory.load("u", "s") == before
    assert [m.role for m in before] == ["user", "assistant"]


async def test_a_drop_in_the_middle_of_the_arguments_runs_nothing(
    server: FakeOpenAIServer, make: Any, recorder: Recorder
) -> None:
    chunks = tool_call_stream(
        [("c1", "get_weather", {"city": "Oslo"})], fragment_size=2, text_before=["Checking"]
    )
    server.script(Stream(chunks, drop_after=len(chunks) // 2))
    executor = make()

    events = await collect(executor, AgentCommand(user_prompt="weather?", session_id="s"))

    assert recorder.calls == []
    assert not [e for e in events if isinstance(e, ToolStartEvent)]
    assert isinstance(events[-2], ErrorEvent) and events[-2].code == "llm_error"
    assert isinstance(events[-1], DoneEvent)
    assert len(server.requests) == 1
    assert await executor.memory.load(None, "s") == []


async def test_an_error_object_in_the_middle_of_the_stream_is_an_llm_error(
    server: FakeOpenAIServer, make: Any
) -> None:
    error = {"error": {"message": "upstream overloaded", "type": "server_error", "code": None}}
    server.script(Stream([chunk({"content": "Par"}), json.dumps(error)]))
    executor = make()

    events = await collect(executor, AgentCommand(user_prompt="hi", session_id="s"))

    assert events[0] == MessageEvent("Par")
    assert isinstance(events[1], ErrorEvent) and events[1].code == "llm_error"
    assert isinstance(events[2], DoneEvent) and len(events) == 3
    assert await executor.memory.load(None, "s") == []
