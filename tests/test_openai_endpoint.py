"""The OpenAI-compatible endpoint, driven by the official ``openai`` SDK (sync and async)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest

from .server_helpers import service_process

WEATHER = [{"role": "user", "content": "What is the weather in Paris?"}]


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    with service_process() as (_, url):
        yield url


def client(url: str, **options: object) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{url}/v1", api_key="unused", **options)  # type: ignore[arg-type]


def test_a_completion_runs_the_agent_with_its_tools(base: str) -> None:
    completion = client(base).chat.completions.create(model="default", messages=WEATHER)

    assert completion.object == "chat.completion"
    answer = completion.choices[0].message.content or ""
    assert "In Paris it is" in answer
    assert completion.choices[0].finish_reason == "stop"
    assert completion.usage is not None and completion.usage.prompt_tokens > 0


def test_a_stream_of_chunks_with_usage(base: str) -> None:
    stream = client(base).chat.completions.create(
        model="default", messages=WEATHER, stream=True, stream_options={"include_usage": True}
    )

    chunks = list(stream)

    texts = [c.choices[0].delta.content or "" for c in chunks if c.choices]
    assert "In Paris it is" in "".join(texts)
    assert len([t for t in texts if t]) > 5
    assert chunks[0].choices[0].delta.role == "assistant"
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert chunks[-1].usage.total_tokens > 0


async def test_the_async_client_streams_and_completes(base: str) -> None:
    async_client = openai.AsyncOpenAI(base_url=f"{base}/v1", api_key="unused")

    completion = await async_client.chat.completions.create(model="default", messages=WEATHER)
    stream = await async_client.chat.completions.create(
        model="default", messages=WEATHER, stream=True
    )
    text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
    await async_client.close()

    assert "In Paris it is" in (completion.choices[0].message.content or "")
    assert "In Paris it is" in text


def test_models_lists_the_agents(base: str) -> None:
    assert [m.id for m in client(base).models.list()] == ["default"]


def test_an_unknown_model_is_a_404(base: str) -> None:
    with pytest.raises(openai.NotFoundError, match="does not exist"):
        client(base).chat.completions.create(model="gpt-99", messages=WEATHER)


UNKNOWN_CALL = [
    *WEATHER,
    {"role": "assistant", "content": None, "tool_calls": []},
    {"role": "tool", "tool_call_id": "call_nobody_made", "content": "42"},
]


@pytest.mark.parametrize(
    ("kwargs", "param", "message"),
    [
        (
            {"tools": [{"type": "function", "function": {"name": "get_weather"}}]},
            "tools",
            r"clash with the agent's own tools of the same name",
        ),
        (
            {"tools": [{"type": "function", "function": {"name": "bad name!"}}]},
            "tools",
            r"tools\[0\]\.name",
        ),
        ({"tools": [{"type": "web_search"}]}, "tools", "only function tools are supported"),
        (
            {"tools": [{"type": "function", "function": {"name": "f"}}], "tool_choice": "sing"},
            "tool_choice",
            "tool_choice must be",
        ),
        ({"messages": UNKNOWN_CALL}, "messages", "call_nobody_made"),
        (
            {"messages": [{"role": "assistant", "content": "hi"}]},
            "messages",
            "must end with a user message or tool results",
        ),
        ({"n": 2}, "n", "only n=1 is supported"),
        ({"response_format": {"type": "xml"}}, "response_format", "json_schema"),
        ({"functions": [{"name": "f"}]}, "functions", "use 'tools'"),
    ],
)
def test_bad_requests_are_400s_in_openai_shape(
    base: str, kwargs: dict[str, object], param: str, message: str
) -> None:
    arguments: dict[str, object] = {"model": "default", "messages": WEATHER, **kwargs}
    with pytest.raises(openai.BadRequestError, match=message) as caught:
        client(base).chat.completions.create(**arguments)  # type: ignore[call-overload]
    assert caught.value.param == param
    assert caught.value.code == "invalid_input"


def test_a_model_is_described_by_id(base: str) -> None:
    assert client(base).models.retrieve("default").id == "default"
    with pytest.raises(openai.NotFoundError, match="does not exist"):
        client(base).models.retrieve("gpt-99")


def test_api_keys_are_required_when_configured(tmp_path: Path) -> None:
    keys = tmp_path / "keys"
    keys.write_text("alice=sk-alice\n", encoding="utf-8")
    with service_process("--api-keys-file", str(keys)) as (_, url):
        with pytest.raises(openai.AuthenticationError, match="missing or invalid API key"):
            openai.OpenAI(base_url=f"{url}/v1", api_key="wrong").models.list()
        models = openai.OpenAI(base_url=f"{url}/v1", api_key="sk-alice").models.list()
    assert [m.id for m in models] == ["default"]


def rate_limited(metrics: str) -> float:
    line = next(
        line
        for line in metrics.splitlines()
        if line.startswith(
            'agent_executor_guard_rejections_total{code="rate_limited",guard="rate_limit"}'
        )
    )
    return float(line.split()[-1])


def test_a_short_rate_limit_is_waited_out_by_the_sdk() -> None:
    with service_process("--rate-limit", "1/2s") as (_, url):
        sdk = client(url)
        sdk.chat.completions.create(model="default", messages=WEATHER)
        started = time.monotonic()
        second = sdk.chat.completions.create(model="default", messages=WEATHER)
        waited = time.monotonic() - started
        metrics = httpx.get(f"{url}/metrics", timeout=5).text

    assert "In Paris it is" in (second.choices[0].message.content or "")
    assert waited >= 1.5  # the SDK slept for the Retry-After the 429 carried
    assert rate_limited(metrics) == 1


def test_a_long_rate_limit_is_surfaced_with_retry_after() -> None:
    with service_process("--rate-limit", "1/hour") as (_, url):
        sdk = client(url)
        sdk.chat.completions.create(model="default", messages=WEATHER)
        with pytest.raises(openai.RateLimitError) as caught:
            sdk.chat.completions.create(model="default", messages=WEATHER, stream=True)
        metrics = httpx.get(f"{url}/metrics", timeout=5).text

    assert caught.value.status_code == 429
    assert int(caught.value.response.headers["retry-after"]) > 3500
    assert caught.value.code == "rate_limited"
    assert rate_limited(metrics) == 1  # the SDK does not retry waits beyond its maximum


def test_in_stream_errors_reach_the_client_as_api_errors() -> None:
    with service_process("--tools", "tests/slow_tools.py", "--request-timeout", "0.5") as (_, url):
        stream = client(url).chat.completions.create(model="default", messages=WEATHER, stream=True)
        with pytest.raises(openai.APIError, match=r"did not finish within 0\.5 s"):
            for _ in stream:
                pass
