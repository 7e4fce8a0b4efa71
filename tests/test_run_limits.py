"""What a run costs and the limits that stop it, through the public API on scripted models:
cost summed over turns at the executor's prices, an unknown price never guessed, and runs
stopped by ``max_output_tokens`` and ``max_cost_usd`` mid-stream and by ``max_input_tokens``
before the call, each ending ``budget`` with a ``budget_exceeded`` error and keeping only
whole turns in memory; the command's limits under the executor's; the OpenAI-compatible
endpoint's usage carrying the cost."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from agent_executor import (
    AgentCommand,
    AgentEvent,
    AgentExecutor,
    DoneEvent,
    ErrorEvent,
    MessageEvent,
    ScriptedModel,
    tool,
)
from agent_executor.models.scripted import call, text_turn, tool_turn
from agent_executor.spend import Price, PriceTable

from .helpers import sample
from .server_helpers import serve

# This module still passes the keyword arguments the settings objects replaced (max_turns=...);
# they warn until 0.2.0 (tests/test_settings.py checks the warning itself).
pytestmark = pytest.mark.filterwarnings(
    "ignore:.*keyword arguments are deprecated:DeprecationWarning"
)

PRICES = PriceTable({"priced": Price(input=10.0, output=30.0)}, defaults=False)
"""$10 per million input tokens, $30 per million output tokens."""

LONG = " ".join(f"word{i}" for i in range(200))  # about 1,400 characters: ~350 tokens


@tool
def lookup(city: str) -> str:
    """Look a city up."""
    return f"{city}: sunny"


def agent(turns: list[Any], name: str = "priced", **options: Any) -> AgentExecutor:
    return AgentExecutor(
        model=ScriptedModel(turns, name=name),
        tools=[lookup],
        prices=PRICES,
        metrics=CollectorRegistry(),
        **options,
    )


def two_turns(answer: str = "Sunny in Paris.") -> list[Any]:
    return [
        tool_turn(call("lookup", {"city": "Paris"}), usage=(1000, 20)),
        text_turn(answer, usage=(1100, 50)),
    ]


async def stream(executor: AgentExecutor, command: AgentCommand) -> list[AgentEvent]:
    return [event async for event in executor.execute_stream(command)]


def stopped(events: list[AgentEvent]) -> tuple[ErrorEvent, DoneEvent]:
    error, done = events[-2], events[-1]
    assert isinstance(error, ErrorEvent) and isinstance(done, DoneEvent), events[-3:]
    assert (error.code, done.finish_reason) == ("budget_exceeded", "budget")
    return error, done


# -- cost -----------------------------------------------------------------------------------------


async def test_the_cost_of_each_turn_adds_up_in_usage_and_the_metric() -> None:
    executor = agent(two_turns())

    result = await executor.execute(AgentCommand(user_prompt="Weather in Paris?"))

    assert result.usage is not None
    expected = (1000 * 10 + 20 * 30 + 1100 * 10 + 50 * 30) / 1_000_000
    assert result.usage.cost_usd == pytest.approx(expected)
    assert result.usage.model_dump() == {
        "input_tokens": 2100,
        "output_tokens": 70,
        "cost_usd": pytest.approx(expected),
    }
    assert sample(
        executor.metrics.registry, "agent_executor_llm_cost_usd_total", model="priced"
    ) == pytest.approx(expected)


async def test_cached_input_tokens_are_charged_at_the_cached_price() -> None:
    from agent_executor.messages import Usage
    from agent_executor.models.base import ModelChunk

    prices = PriceTable({"m": Price(input=10.0, output=30.0, cached_input=1.0)}, defaults=False)
    usage = Usage(input_tokens=1000, output_tokens=10, cached_input_tokens=800)
    executor = AgentExecutor(
        model=ScriptedModel([[ModelChunk(text="hi"), ModelChunk(usage=usage)]], name="m"),
        prices=prices,
        metrics=CollectorRegistry(),
    )

    result = await executor.execute(AgentCommand(user_prompt="hi"))

    assert result.usage is not None
    assert result.usage.cost_usd == pytest.approx((200 * 10 + 800 * 1 + 10 * 30) / 1_000_000)


async def test_an_unknown_price_leaves_the_cost_unknown_and_is_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    executor = agent(two_turns() * 2, name="homegrown-7b")

    with caplog.at_level(logging.INFO, logger="agent_executor.spend"):
        first = await executor.execute(AgentCommand(user_prompt="one"))
        await executor.execute(AgentCommand(user_prompt="two"))

    assert first.usage is not None and first.usage.cost_usd is None
    assert "cost_usd" not in first.usage.model_dump()
    unknown = [r for r in caplog.records if "homegrown-7b" in r.getMessage()]
    assert len(unknown) == 1
    assert "no price for model homegrown-7b" in unknown[0].getMessage()


def test_litellms_cost_map_gives_the_default_prices_without_importing_litellm() -> None:
    import subprocess
    import sys

    code = (
        "import sys; from agent_executor.spend import default_prices; "
        "p = default_prices().price('openai/gpt-4o-mini'); "
        "print(p.input, p.output, p.cached_input, 'litellm' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)

    input_price, output_price, cached, imported = out.stdout.split()
    assert float(input_price) > 0 and float(output_price) > float(input_price)
    assert cached != "None" and imported == "False"


def test_a_prices_file_is_checked() -> None:
    import json
    import tempfile
    from pathlib import Path

    from agent_executor import ConfigurationError

    with tempfile.TemporaryDirectory() as folder:
        good = Path(folder, "prices.json")
        good.write_text(json.dumps({"my-llama": {"input": 0.2, "output": 0.4}}))
        bad = Path(folder, "bad.json")
        bad.write_text(json.dumps({"my-llama": {"input": -1, "output": 0.4}}))

        table = PriceTable.from_file(good)
        assert table.price("my-llama") == Price(0.2, 0.4)
        with pytest.raises(ConfigurationError, match=r"bad.json: my-llama.input: "):
            PriceTable.from_file(bad)


# -- limits ---------------------------------------------------------------------------------------


async def test_max_output_tokens_stops_the_stream_and_keeps_only_whole_turns() -> None:
    executor = agent(two_turns(LONG), max_output_tokens=100)
    command = AgentCommand(user_prompt="Weather in Paris?", session_id="s")

    events = await stream(executor, command)

    error, done = stopped(events)
    assert "max_output_tokens 100" in error.message
    text = "".join(e.text for e in events if isinstance(e, MessageEvent))
    assert 0 < len(text) < len(LONG)  # some text went out, then the stream was cut
    assert LONG.startswith(text)
    assert done.usage is not None and done.usage.output_tokens <= 100 + 5
    history = await executor.memory.load(None, "s")
    assert [m.role for m in history] == ["user", "assistant", "tool"]  # the cut turn is not kept
    registry = executor.metrics.registry
    assert sample(registry, "agent_executor_budget_refusals_total", scope="run") == 1
    assert sample(
        registry, "agent_executor_requests_total", mode="stream", outcome="budget_exceeded"
    )


async def test_max_cost_usd_stops_the_stream_and_the_cost_stays_under_it() -> None:
    # The first turn costs $0.0106 (the provider's count); the second reads about 60 tokens
    # ($0.0006, estimated), which leaves the cap about 100 output tokens ($0.003) of the 350.
    cap = 0.0106 + 0.0005 + 0.003
    executor = agent(two_turns(LONG), max_cost_usd=cap)
    result = await executor.execute(AgentCommand(user_prompt="Weather?", session_id="s"))

    assert (result.finish_reason, result.error and result.error.code) == (
        "budget",
        "budget_exceeded",
    )
    assert result.usage is not None and result.usage.cost_usd is not None
    assert cap - 0.001 < result.usage.cost_usd <= cap + 0.0001  # within a token or two
    assert 0 < len(result.content) < len(LONG)
    assert [m.role for m in await executor.memory.load(None, "s")] == ["user", "assistant", "tool"]


async def test_max_input_tokens_refuses_the_call_before_it_is_made() -> None:
    executor = agent(two_turns(), max_input_tokens=50)
    long_question = "Tell me about the weather. " * 20  # ~540 characters: ~135 tokens

    events = await stream(executor, AgentCommand(user_prompt=long_question, session_id="s"))

    error, _ = stopped(events)
    assert "max_input_tokens 50" in error.message
    assert executor.model.requests == []  # type: ignore[attr-defined]
    assert await executor.memory.load(None, "s") == []  # no whole turn: nothing kept


async def test_the_commands_limits_apply_under_the_executors() -> None:
    executor = agent(two_turns(LONG) * 2, max_output_tokens=10_000)

    tight = await executor.execute(AgentCommand(user_prompt="a", max_output_tokens=40))
    loose = await executor.execute(AgentCommand(user_prompt="b", max_output_tokens=1_000_000))

    assert tight.finish_reason == "budget"
    assert loose.finish_reason == "stop" and loose.content == LONG


async def test_a_cost_limit_on_a_model_without_a_price_is_not_enforced() -> None:
    executor = agent(two_turns(LONG), name="homegrown-7b", max_cost_usd=0.000001)

    result = await executor.execute(AgentCommand(user_prompt="go"))

    assert result.success and result.content == LONG
    assert result.usage is not None and result.usage.cost_usd is None


async def test_the_openai_endpoint_reports_the_cost() -> None:
    async with serve(agent(two_turns())) as client:
        response = await client.post(
            "/v1/chat/completions",
            json={"model": "default", "messages": [{"role": "user", "content": "Weather?"}]},
        )

    usage = response.json()["usage"]
    assert usage["prompt_tokens"] == 2100 and usage["completion_tokens"] == 70
    assert usage["cost_usd"] == pytest.approx(0.0231)


async def test_a_groups_limits_bound_its_agents_together() -> None:
    from agent_executor import AgentGroup

    writer = agent([text_turn("Draft.", usage=(10, 60))], name="priced")
    editor = agent([text_turn(LONG, usage=(10, 400))], name="priced")
    team = AgentGroup(
        [_named(writer, "writer"), _named(editor, "editor")],
        name="team",
        metrics=CollectorRegistry(),
        max_output_tokens=100,
    )

    result = await team.execute(AgentCommand(user_prompt="go"))

    assert (result.finish_reason, result.error and result.error.code) == (
        "budget",
        "budget_exceeded",
    )
    assert result.usage is not None and result.usage.output_tokens <= 100 + 5
    assert result.content.startswith("Draft.\n\nword0")


async def test_an_agent_tool_may_spend_only_what_its_caller_has_left() -> None:
    worker = _named(agent([text_turn(LONG, usage=(10, 400))]), "worker")
    boss = AgentExecutor(
        model=ScriptedModel(
            [tool_turn(call("worker", {"input": "write"}), usage=(10, 20)), "never"],
            name="priced",
        ),
        tools=[worker.as_tool()],
        prices=PRICES,
        metrics=CollectorRegistry(),
        max_output_tokens=100,
    )

    result = await boss.execute(AgentCommand(user_prompt="go"))

    [record] = result.tool_calls
    assert record.status == "error" and "budget_exceeded" in record.result
    assert result.finish_reason == "budget"  # the boss's next call had nothing left
    assert result.usage is not None and result.usage.output_tokens <= 100 + 5


def _named(executor: AgentExecutor, name: str) -> AgentExecutor:
    executor.name = name
    return executor


async def test_a_run_refused_by_its_own_limit_is_422_without_retry_after() -> None:
    long_question = "Tell me about the weather. " * 20
    async with serve(agent(two_turns() * 3, max_input_tokens=50)) as client:
        chat = await client.post("/api/chat", json={"message": long_question})
        streamed = await client.post("/api/chat/stream", json={"message": long_question})
        openai = await client.post(
            "/v1/chat/completions",
            json={"model": "default", "messages": [{"role": "user", "content": long_question}]},
        )

    for response in (chat, streamed, openai):
        assert response.status_code == 422, response.text
        assert "Retry-After" not in response.headers
    assert chat.json()["error"]["code"] == "budget_exceeded"
    assert "max_input_tokens 50" in chat.json()["error"]["message"]
