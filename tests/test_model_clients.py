"""Both model clients against a local OpenAI-compatible streaming server.

``LiteLLMModel`` (through real litellm) and ``OpenAICompatModel`` (the fast path) run the same
scenarios against a fake server speaking the real ``chat.completion.chunk`` SSE format on
127.0.0.1: streamed text, split and interleaved tool-call deltas, usage, retries before the
first chunk only, dropped and stalled streams. Both must behave the same.
"""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import AsyncIterator

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
    Usage,
    tool,
)

from .fakes.openai_server import (
    FakeOpenAIServer,
    Status,
    Stream,
    error_body,
    text_stream,
    tool_call_stream,
)
from .helpers import collect, sample, strip_timing

# This module still passes the keyword arguments the settings objects replaced (max_turns=...);
# they warn until 0.2.0 (tests/test_settings.py checks the warning itself).
pytestmark = pytest.mark.filterwarnings(
    "ignore:.*keyword arguments are deprecated:DeprecationWarning"
)

MODEL = "openai/test-model"


@tool
def get_weather(city: str) -> str:
    """Weather for a city."""
    return f"sunny in {city}"


@tool
def get_time(zone: str) -> str:
    """Time in a zone."""
    return f"noon in {zone}"


_open: list[AgentExecutor] = []


@pytest.fixture(autouse=True)
async def _close_executors() -> AsyncIterator[None]:
    yield
    while _open:
        await _open.pop().aclose()


def model_for(client: str, base_url: str) -> ChatModel:
    if client == "litellm":
        return LiteLLMModel(MODEL, api_base=base_url, api_key="sk-test")
    return OpenAICompatModel(MODEL, base_url=base_url, api_key="sk-test")


def executor_for(server: FakeOpenAIServer, client: str, **options: object) -> AgentExecutor:
    model = model_for(client, server.base_url)
    executor = AgentExecutor(
        model=model,
        tools=[get_weather, get_time],
        metrics=CollectorRegistry(),
        retry_backoff=0.01,
        **options,  # type: ignore[arg-type]
    )
    return _track(executor)


def _track(executor: AgentExecutor) -> AgentExecutor:
    _open.append(executor)
    return executor


async def test_text_streams_delta_by_delta_with_usage(
    server: FakeOpenAIServer, client: str
) -> None:
    server.script(Stream(text_stream(["Hel", "lo ", "world"], usage=(12, 3))))
    executor = executor_for(server, client)

    events = strip_timing(await collect(executor, "hi"))

    assert events == [
        MessageEvent("Hel"),
        MessageEvent("lo "),
        MessageEvent("world"),
        DoneEvent(
            finish_reason="stop",
            usage=Usage(input_tokens=12, output_tokens=3),
            tool_calls=[],
            duration_ms=0,
        ),
    ]
    body = server.requests[0]
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["messages"] == [{"role": "user", "content": "hi"}]
    assert [t["function"]["name"] for t in body["tools"]] == ["get_weather", "get_time"]


async def test_split_interleaved_tool_calls_and_the_follow_up_request(
    server: FakeOpenAIServer, client: str
) -> None:
    server.script(
        Stream(
            tool_call_stream(
                [
                    ("call_w", "get_weather", {"city": "Lyon"}),
                    ("call_t", "get_time", {"zone": "CET"}),
                ],
                fragment_size=1,
                interleave=True,
                text_before=["Checking"],
                usage=(20, 10),
            )
        ),
        Stream(text_stream(["Sunny ", "at noon."], usage=(40, 4))),
    )
    executor = executor_for(server, client)

    events = await collect(executor, "weather and time in Lyon?")

    starts = [(e.call_id, e.tool, e.arguments) for e in events if isinstance(e, ToolStartEvent)]
    assert sorted(starts) == [
        ("call_t", "get_time", {"zone": "CET"}),
        ("call_w", "get_weather", {"city": "Lyon"}),
    ]
    assert sorted(e.status for e in events if isinstance(e, ToolEndEvent)) == ["success"] * 2
    done = events[-1]
    assert isinstance(done, DoneEvent)
    assert done.usage == Usage(input_tokens=60, output_tokens=14)
    assert [r.result for r in done.tool_calls] == ["sunny in Lyon", "noon in CET"]
    text = "".join(e.text for e in events if isinstance(e, MessageEvent))
    assert text == "Checking\n\nSunny at noon."
    follow_up = server.requests[1]["messages"]
    assistant = follow_up[1]
    assert (assistant["role"], assistant["content"]) == ("assistant", "Checking")
    assert [
        (c["id"], c["type"], c["function"]["name"], json.loads(c["function"]["arguments"]))
        for c in assistant["tool_calls"]
    ] == [
        ("call_w", "function", "get_weather", {"city": "Lyon"}),
        ("call_t", "function", "get_time", {"zone": "CET"}),
    ]
    assert follow_up[2:] == [
        {"role": "tool", "tool_call_id": "call_w", "content": "sunny in Lyon"},
        {"role": "tool", "tool_call_id": "call_t", "content": "noon in CET"},
    ]


async def test_a_503_before_the_first_chunk_is_retried(
    server: FakeOpenAIServer, client: str
) -> None:
    server.script(Status(503), Stream(text_stream(["after retry"])))
    executor = executor_for(server, client)

    result = await executor.execute(AgentCommand(user_prompt="hi"))

    assert result.success and result.content == "after retry"
    assert len(server.requests) == 2
    registry = executor.metrics.registry
    assert sample(registry, "agent_executor_llm_retries_total", model=MODEL) == 1
    assert (
        sample(registry, "agent_executor_llm_requests_total", model=MODEL, outcome="success") == 1
    )


def logged_model_failure(caplog: pytest.LogCaptureFixture) -> str:
    """The provider's reason, which the log has (callers get a generic ``llm_error``)."""
    [record] = [r for r in caplog.records if r.getMessage().startswith("model call failed")]
    assert record.levelno == logging.WARNING
    return record.getMessage()


async def test_a_429_honours_retry_after_then_gives_up(
    server: FakeOpenAIServer, client: str, caplog: pytest.LogCaptureFixture
) -> None:
    server.script(*[Status(429, headers={"Retry-After": "0"})] * 3)
    executor = executor_for(server, client)

    result = await executor.execute(AgentCommand(user_prompt="hi"))

    assert result.error is not None and result.error.code == "llm_error"
    reason = logged_model_failure(caplog)
    assert ("RateLimitError" if client == "litellm" else "HTTP 429") in reason
    assert "HTTP 429" not in result.error.message and "RateLimit" not in result.error.message
    assert len(server.requests) == 3  # first try + model_retries=2


async def test_a_401_is_not_retried(
    server: FakeOpenAIServer, client: str, caplog: pytest.LogCaptureFixture
) -> None:
    server.script(Status(401))
    executor = executor_for(server, client)

    result = await executor.execute(AgentCommand(user_prompt="hi"))

    assert result.error is not None and result.error.code == "llm_error"
    assert "Incorrect API key" in logged_model_failure(caplog)
    assert "Incorrect API key" not in result.error.message
    assert len(server.requests) == 1
    assert (
        sample(
            executor.metrics.registry,
            "agent_executor_llm_requests_total",
            model=MODEL,
            outcome="error",
        )
        == 1
    )


async def test_a_connection_dropped_mid_stream_is_not_retried(
    server: FakeOpenAIServer, client: str
) -> None:
    server.script(Stream(text_stream(["one ", "two ", "three"]), drop_after=3))
    executor = executor_for(server, client)
    command = AgentCommand(user_prompt="hi", user_id="u", session_id="s")

    events = await collect(executor, command)

    texts = [e.text for e in events if isinstance(e, MessageEvent)]
    assert texts == ["one ", "two "]
    assert isinstance(events[-2], ErrorEvent) and events[-2].code == "llm_error"
    assert isinstance(events[-1], DoneEvent) and events[-1].finish_reason == "error"
    assert len(server.requests) == 1
    assert await executor.memory.load("u", "s") == []


async def test_a_stalled_stream_ends_with_an_idle_timeout(
    server: FakeOpenAIServer, client: str, caplog: pytest.LogCaptureFixture
) -> None:
    server.script(Stream(text_stream(["start"]), stall_after=2))
    executor = executor_for(server, client, stream_idle_timeout=0.2)

    events = await collect(executor, "hi")

    assert events[0] == MessageEvent("start")
    assert isinstance(events[1], ErrorEvent) and events[1].code == "llm_error"
    assert "idle timeout" in logged_model_failure(caplog)
    assert isinstance(events[2], DoneEvent)


async def test_connection_refused_is_an_llm_error_after_retries(client: str) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    model = model_for(client, f"http://127.0.0.1:{port}/v1")
    executor = _track(AgentExecutor(model=model, metrics=CollectorRegistry(), retry_backoff=0.01))

    result = await executor.execute(AgentCommand(user_prompt="hi"))

    assert result.error is not None and result.error.code == "llm_error"
    assert sample(executor.metrics.registry, "agent_executor_llm_retries_total", model=MODEL) == 2


async def test_the_fast_path_sends_azure_style_headers_and_query(
    server: FakeOpenAIServer,
) -> None:
    server.script(Stream(text_stream(["ok"])))
    model = OpenAICompatModel(
        "gpt-4o-mini",
        base_url=server.base_url,
        name="azure/gpt-4o-mini",
        headers={"api-key": "azure-key"},
        query={"api-version": "2024-10-21"},
        temperature=0.1,
    )
    executor = _track(AgentExecutor(model=model, metrics=CollectorRegistry()))

    result = await executor.execute(AgentCommand(user_prompt="hi"))

    assert result.content == "ok"
    assert server.request_headers[0]["api-key"] == "azure-key"
    assert "Authorization" not in server.request_headers[0]
    assert server.requests[0]["model"] == "gpt-4o-mini"
    assert server.requests[0]["temperature"] == 0.1
    assert server.request_paths[0].endswith("/chat/completions?api-version=2024-10-21")
    assert (
        sample(
            executor.metrics.registry,
            "agent_executor_llm_requests_total",
            model="azure/gpt-4o-mini",
            outcome="success",
        )
        == 1
    )


async def test_a_malformed_chunk_is_an_llm_error(server: FakeOpenAIServer, client: str) -> None:
    server.script(Stream([{"choices": [{"index": 0, "delta": {"content": "fine "}}]}, "{oops"]))
    executor = executor_for(server, client)

    events = await collect(executor, "hi")

    assert events[0] == MessageEvent("fine ")
    assert isinstance(events[1], ErrorEvent) and events[1].code == "llm_error"
    assert isinstance(events[2], DoneEvent)


@pytest.mark.parametrize(
    "bad",
    [
        {"choices": {"index": 0, "delta": {"content": "x"}}},  # an object, not a list
        {"choices": [{"index": 0, "delta": "x"}]},
        {"choices": ["x"]},
    ],
)
async def test_a_chunk_of_the_wrong_shape_is_an_llm_error_on_the_fast_path(
    server: FakeOpenAIServer, bad: dict[str, object], caplog: pytest.LogCaptureFixture
) -> None:
    """Valid JSON in a shape no provider sends: the turn fails as ``llm_error`` and says
    where in the log, never as ``internal_error`` (``choices`` as an object was a
    ``KeyError`` when the chunk was read as a dict)."""
    server.script(Stream([{"choices": [{"index": 0, "delta": {"content": "fine "}}]}, bad]))
    executor = _track(
        AgentExecutor(model=model_for("fast", server.base_url), metrics=CollectorRegistry())
    )

    events = await collect(executor, "hi")

    assert events[0] == MessageEvent("fine ")
    assert isinstance(events[1], ErrorEvent) and events[1].code == "llm_error"
    assert isinstance(events[2], DoneEvent)
    assert "malformed chunk" in caplog.text and "$.choices" in caplog.text


async def test_an_error_beside_a_text_delta_ends_the_turn_on_the_fast_path(
    server: FakeOpenAIServer,
) -> None:
    """A provider that reports a failure in the same chunk as a piece of text: the failure
    wins, and the piece is not streamed as if the turn went on."""
    failing = {
        "choices": [{"index": 0, "delta": {"content": "lost"}}],
        "error": {"message": "upstream overloaded", "code": 503},
    }
    server.script(Stream([{"choices": [{"index": 0, "delta": {"content": "fine "}}]}, failing]))
    executor = _track(
        AgentExecutor(model=model_for("fast", server.base_url), metrics=CollectorRegistry())
    )

    events = await collect(executor, "hi")

    assert MessageEvent("lost") not in events
    assert events[0] == MessageEvent("fine ")
    assert isinstance(events[1], ErrorEvent) and events[1].code == "llm_error"


@pytest.mark.parametrize(
    ("model", "api_base", "client", "expected"),
    [
        ("openai/gpt-4o-mini", None, "auto", OpenAICompatModel),
        ("llama3", "http://127.0.0.1:11434/v1", "auto", OpenAICompatModel),
        ("anthropic/claude-sonnet-4", None, "auto", LiteLLMModel),
        ("gpt-4o-mini", None, "auto", LiteLLMModel),
        ("openai/gpt-4o-mini", None, "litellm", LiteLLMModel),
        ("mistral-large", None, "fast", OpenAICompatModel),
    ],
)
def test_model_strings_choose_a_client(
    model: str, api_base: str | None, client: str, expected: type
) -> None:
    from agent_executor.models import resolve_model

    chosen = resolve_model(model, api_base=api_base, client=client)  # type: ignore[arg-type]

    assert isinstance(chosen, expected)
    assert chosen.name == model


async def test_the_fast_path_reuses_its_connection_for_the_next_turn(
    server: FakeOpenAIServer,
) -> None:
    server.script(
        Stream(tool_call_stream([("c1", "get_weather", {"city": "Oslo"})]), linger=0.05),
        Stream(text_stream(["Sunny."])),
    )
    executor = executor_for(server, "fast")

    result = await executor.execute(AgentCommand(user_prompt="weather?"))

    assert result.success
    assert len(server.client_ports) == 2
    assert server.client_ports[0] == server.client_ports[1]


def test_the_executor_sizes_the_fast_paths_pool_from_its_concurrency() -> None:
    sized = OpenAICompatModel("m", base_url="http://127.0.0.1:1/v1")
    fixed = OpenAICompatModel("m", base_url="http://127.0.0.1:1/v1", max_connections=7)

    AgentExecutor(model=sized, max_concurrency=1000, metrics=CollectorRegistry())
    AgentExecutor(model=sized, max_concurrency=10, metrics=CollectorRegistry())
    AgentExecutor(model=fixed, max_concurrency=1000, metrics=CollectorRegistry())

    assert sized._max_connections == 1000
    assert fixed._max_connections == 7


async def test_formats_and_tool_choices_reach_the_provider_as_given(
    server: FakeOpenAIServer, client: str
) -> None:
    """Both clients send what the command asks of the model: the provider's own
    ``response_format`` (the library's types and OpenAI objects alike), ``tool_choice`` and
    ``parallel_tool_calls`` (only with tools on offer)."""
    form = {"type": "json_schema", "json_schema": {"name": "city", "schema": {"type": "object"}}}
    server.script(
        Stream(tool_call_stream([("c1", "get_weather", {"city": "Oslo"})])),
        Stream(text_stream(['{"city": "Oslo"}'])),
    )
    executor = executor_for(server, client)

    result = await executor.execute(
        AgentCommand(
            user_prompt="weather?",
            response_format=form,
            tool_choice="required",
            parallel_tool_calls=False,
        )
    )

    assert result.content == '{"city": "Oslo"}'
    first, second = server.requests
    assert first["response_format"] == second["response_format"] == form
    assert (first["tool_choice"], first["parallel_tool_calls"]) == ("required", False)
    assert second["tool_choice"] == "auto"  # the run has called a tool: the model may answer


async def test_a_provider_refusing_the_format_is_unsupported_format_in_its_words(
    server: FakeOpenAIServer, client: str
) -> None:
    refusal = error_body(400, "Invalid parameter: 'response_format' of type 'json_schema' is "
                         "not supported with this model.")  # fmt: skip
    server.script(Status(400, refusal), Status(400, refusal), Stream(text_stream(['{"a": 1}'])))
    executor = executor_for(server, client)

    client_format = await executor.execute(
        AgentCommand(user_prompt="q", response_format={"type": "json_object"})
    )
    library_format = await executor.execute(AgentCommand(user_prompt="q", response_format="json"))

    assert client_format.error is not None
    assert client_format.error.code == "unsupported_format"
    assert "response_format" in client_format.error.message
    assert library_format.output == {"a": 1}  # asked again in words, without the field
    assert "response_format" not in server.requests[-1]
