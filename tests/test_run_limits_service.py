"""A run's cost and its limits through the service, on the local OpenAI-compatible server:
the cost of two turns summed in ``done`` and on the OpenAI-compatible endpoint, and a run
stopped mid-stream by ``max_output_tokens`` and by ``max_cost_usd`` over SSE, keeping only its
whole turns in the session."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from agent_executor import AgentExecutor, OpenAICompatModel, tool
from agent_executor.spend import Price, PriceTable

from .fakes.openai_server import FakeOpenAIServer, Stream, text_stream, tool_call_stream
from .server_helpers import serve
from .test_orchestration_service import frames

# This module still passes the keyword arguments the settings objects replaced (max_turns=...);
# they warn until 0.2.0 (tests/test_settings.py checks the warning itself).
pytestmark = pytest.mark.filterwarnings(
    "ignore:.*keyword arguments are deprecated:DeprecationWarning"
)

MODEL = "openai/limits-mini"
PRICES = PriceTable({MODEL: Price(input=100.0, output=300.0)}, defaults=False)
"""$100 per million input tokens, $300 per million output tokens."""

WORDS = [f"word{i} " for i in range(300)]  # streamed one word a chunk: ~2,100 characters


@tool
def lookup(city: str) -> str:
    """Look a city up."""
    return f"{city}: sunny"


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAIServer]:
    async with FakeOpenAIServer() as server:
        yield server


def script(fake: FakeOpenAIServer, answer: list[str]) -> None:
    fake.script(
        Stream(tool_call_stream([("c1", "lookup", {"city": "Paris"})], usage=(1000, 20))),
        Stream(text_stream(answer, usage=(1100, 50))),
    )


def executor(fake: FakeOpenAIServer, **limits: Any) -> AgentExecutor:
    return AgentExecutor(
        model=OpenAICompatModel(MODEL, base_url=fake.base_url, api_key="sk-test"),
        tools=[lookup],
        prices=PRICES,
        metrics=CollectorRegistry(),
        **limits,
    )


async def test_the_cost_of_two_turns_is_summed_in_done_and_on_the_openai_endpoint(
    fake: FakeOpenAIServer,
) -> None:
    script(fake, ["Sunny ", "in ", "Paris."])
    script(fake, ["Sunny ", "in ", "Paris."])
    expected = (1000 * 100 + 20 * 300 + 1100 * 100 + 50 * 300) / 1_000_000
    async with serve(executor(fake)) as client:
        streamed = await client.post(
            "/api/chat/stream", json={"message": "Weather?", "events": "json"}
        )
        openai = await client.post(
            "/v1/chat/completions",
            json={"model": "default", "messages": [{"role": "user", "content": "Weather?"}]},
        )

    done = json.loads(frames(streamed.text)[-1]["data"])
    assert done["usage"] == {
        "input_tokens": 2100,
        "output_tokens": 70,
        "cost_usd": pytest.approx(expected),
    }
    assert openai.json()["usage"]["cost_usd"] == pytest.approx(expected)


@pytest.mark.parametrize(
    "limits",
    [
        {"max_output_tokens": 150},
        # the first turn costs $0.106; the cap leaves the second about 130 output tokens
        {"max_cost_usd": 0.106 + 0.005 + 0.04},
    ],
)
async def test_a_run_stopped_mid_stream_keeps_only_its_whole_turns(
    fake: FakeOpenAIServer, limits: dict[str, Any]
) -> None:
    script(fake, WORDS)
    agent = executor(fake, **limits)
    async with serve(agent) as client:
        response = await client.post(
            "/api/chat/stream",
            json={"message": "Weather?", "session_id": "s", "events": "json"},
        )

    events = frames(response.text)
    kinds = [f["event"] for f in events]
    assert kinds[-2:] == ["error", "done"], kinds
    error, done = json.loads(events[-2]["data"]), json.loads(events[-1]["data"])
    assert error["code"] == "budget_exceeded"
    assert done["finish_reason"] == "budget"
    text = "".join(json.loads(f["data"])["text"] for f in events if f["event"] == "message")
    assert 0 < len(text) < len("".join(WORDS)) and "".join(WORDS).startswith(text)
    assert len(fake.requests) == 2  # no third call after the stop
    history = await agent.memory.load(None, "s")
    assert [m.role for m in history] == ["user", "assistant", "tool"]
    if "max_cost_usd" in limits:
        assert done["usage"]["cost_usd"] <= limits["max_cost_usd"] + 0.001
    else:
        assert done["usage"]["output_tokens"] <= 150 + 5
