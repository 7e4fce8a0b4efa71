"""Spend that cannot leak (issue #30): a model call cut by the run's own limit is charged,
once, to the run's usage, the user's budget and the model metrics alike; the calls of a
``ModelRouter``, of a group's moderator and of the history summariser (on a long session and
inside a long run) are priced and charged; a cancelled nested run
leaves what it spent to its caller and a failed one's ``done`` says what it spent; an empty
``--prices`` is accepted. Through the public API on scripted models (memory store), and
through the real service on the fake OpenAI-compatible server."""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx
import pytest
from prometheus_client import CollectorRegistry

from agent_executor import (
    AgentCommand,
    AgentEvent,
    AgentExecutor,
    AgentGroup,
    AgentRouter,
    AutoTurns,
    DoneEvent,
    ErrorEvent,
    Hook,
    ModelError,
    ModelRouter,
    NestedEvent,
    RunContext,
    ScriptedModel,
    ToolEndEvent,
    ToolStartEvent,
    Usage,
    tool,
)
from agent_executor.models import ModelChunk, ModelResponse
from agent_executor.models.scripted import call, text_turn, tool_turn
from agent_executor.spend import Price, PriceTable, UserBudget

from .fakes.openai_server import Stream, text_stream
from .helpers import sample
from .server_helpers import service_process
from .test_prometheus import fake_model, samples

# This module still passes the keyword arguments the settings objects replaced (max_turns=...);
# they warn until 0.2.0 (tests/test_settings.py checks the warning itself).
pytestmark = pytest.mark.filterwarnings(
    "ignore:.*keyword arguments are deprecated:DeprecationWarning"
)

LEAKY = Price(input=100.0, output=300.0)
"""The price of the agents' model, ``leaky``: $100 per million input tokens, $300 output."""
PRICES = PriceTable(
    {
        "leaky": LEAKY,
        "router": Price(input=10.0, output=20.0),
        "moderator": Price(input=50.0, output=50.0),
    },
    defaults=False,
)
"""Dollars per million tokens of the test's models."""

LONG = " ".join(f"word{i}" for i in range(400))  # ~3,300 characters: ~800 tokens, never sent
BUDGETS = {"tokens": "1000tokens/day", "usd": "0.30/day"}
"""Each about ten runs cut at 100 output tokens (~102 tokens, ~$0.03 each)."""


class Seen(Hook):
    """A user's hook: what ``after_model`` is shown."""

    def __init__(self) -> None:
        self.responses: list[ModelResponse] = []

    async def after_model(self, ctx: RunContext, response: ModelResponse) -> None:
        self.responses.append(response)


def spent(usage: Usage | None) -> dict[str, Any]:
    """``usage`` as a dict, to compare with :func:`usage_of` (costs compared approximately)."""
    assert usage is not None
    return usage.model_dump()


def usage_of(input_tokens: int, output_tokens: int, price: Price, **more: int) -> dict[str, Any]:
    """What ``input_tokens`` and ``output_tokens`` at ``price`` make as a usage's dict."""
    cost = (input_tokens * price.input + output_tokens * price.output) / 1_000_000
    return {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        **more,
        "cost_usd": pytest.approx(cost),
    }


def capped(budget: UserBudget, registry: CollectorRegistry) -> AgentExecutor:
    """An agent whose every run writes past ``max_output_tokens`` 100 and is cut (the usage
    its model would report at the end never comes)."""
    turns = [text_turn(LONG, usage=(5000, 2000)) for _ in range(20)]
    return AgentExecutor(
        model=ScriptedModel(turns, name="leaky"),
        guards=[budget],
        hooks=[budget],
        prices=PRICES,
        metrics=registry,
        max_output_tokens=100,
    )


async def events_of(executor: AgentExecutor, command: AgentCommand | str) -> list[AgentEvent]:
    if isinstance(command, str):
        command = AgentCommand(user_prompt=command)
    return [event async for event in executor.execute_stream(command)]


async def cut_until_refused(executor: AgentExecutor, command: AgentCommand) -> list[Usage]:
    """Run ``command`` until the user's budget refuses it; the usage each cut run's ``done``
    reported."""
    reported: list[Usage] = []
    for _ in range(30):
        *_, error, done = await events_of(executor, command)
        assert isinstance(error, ErrorEvent) and isinstance(done, DoneEvent)
        assert (error.code, done.finish_reason) == ("budget_exceeded", "budget")
        if error.retry_after is not None:  # the user's budget, not the run's own limit
            assert done.usage is None
            return reported
        assert done.usage is not None and "max_output_tokens 100" in error.message
        reported.append(done.usage)
    raise AssertionError("the budget never refused a run")


def assert_charged_exactly(
    reported: list[Usage], charged: float, unit: str, registry: CollectorRegistry
) -> None:
    """The budget's spend, the model metrics and the run-cost histogram all equal the sum of
    what the runs' ``done`` reported."""
    tokens = sum(u.total_tokens for u in reported)
    cost = sum(u.cost_usd or 0.0 for u in reported)
    assert len(reported) > 1
    if unit == "tokens":
        assert charged == tokens
    else:  # kept in whole nano-dollars, each call's cost rounded once
        assert charged == pytest.approx(cost, abs=1e-9 * len(reported))
    metric = "agent_executor_llm_tokens_total"
    counted = sample(registry, metric, model="leaky", type="input")
    assert counted + sample(registry, metric, model="leaky", type="output") == tokens
    assert sample(registry, "agent_executor_llm_cost_usd_total", model="leaky") == pytest.approx(
        cost
    )
    assert sample(registry, "agent_executor_run_cost_usd_sum") == pytest.approx(cost)
    assert sample(registry, "agent_executor_run_cost_usd_count") == len(reported)


# -- a call cut by the run's own limit --------------------------------------------------------


@pytest.mark.parametrize("unit", ["tokens", "usd"])
async def test_hitting_the_run_cap_again_and_again_uses_up_the_budget_by_what_done_said(
    unit: str,
) -> None:
    registry = CollectorRegistry()
    budget = UserBudget(BUDGETS[unit], metrics=registry)
    executor = capped(budget, registry)

    reported = await cut_until_refused(executor, AgentCommand(user_prompt="hi", user_id="ann"))

    usage = await budget.usage("ann")
    assert_charged_exactly(reported, usage.spent, unit, registry)
    assert usage.remaining == 0
    assert (await budget.usage("bob")).spent == 0


async def test_the_cut_call_reaches_after_model_with_its_estimate() -> None:
    seen = Seen()
    executor = AgentExecutor(
        model=ScriptedModel(
            [tool_turn(call("lookup", {"city": "Paris"}), usage=(40, 10)), text_turn(LONG)],
            name="leaky",
        ),
        tools=[lookup],
        hooks=[seen],
        prices=PRICES,
        metrics=CollectorRegistry(),
        max_output_tokens=60,
    )

    events = await events_of(executor, "Weather?")

    done = events[-1]
    assert isinstance(done, DoneEvent) and done.finish_reason == "budget"
    answered, cut = seen.responses
    assert (answered.finish_reason, cut.finish_reason, cut.tool_calls) == (
        "tool_calls",
        "budget",
        (),
    )
    assert answered.usage is not None and cut.usage is not None
    assert answered.usage + cut.usage == done.usage
    assert 50 < cut.usage.output_tokens <= 52  # the 50 tokens left of 60, passed by a word
    assert LONG.startswith(cut.text) and 190 < len(cut.text) <= 200


@tool
def lookup(city: str) -> str:
    """Look a city up."""
    return f"{city}: sunny"


async def test_what_the_provider_said_before_the_cut_replaces_the_estimate() -> None:
    early = Usage(input_tokens=700, output_tokens=1, cached_input_tokens=600)
    turn = [ModelChunk(usage=early), *text_turn(LONG)]
    executor = AgentExecutor(
        model=ScriptedModel([turn], name="leaky"),
        prices=PRICES,
        metrics=CollectorRegistry(),
        max_output_tokens=20,
    )

    result = await executor.execute(AgentCommand(user_prompt="hi"))

    assert result.finish_reason == "budget"
    # the provider's input count (the estimate says 1), the estimated output (the provider's
    # says 1 so far): 14 words of 6 characters passed the 80 characters of 20 tokens
    assert spent(result.usage) == usage_of(700, 21, LEAKY, cached_input_tokens=600)


# -- router and moderator ---------------------------------------------------------------------


async def test_the_routers_call_is_priced_counted_and_charged_to_the_routed_user() -> None:
    registry, seen = CollectorRegistry(), Seen()
    budget = UserBudget("10000tokens/day", metrics=registry)
    answered = [
        ModelChunk(text="billing"),
        ModelChunk(usage=Usage(input_tokens=90, output_tokens=2)),
    ]
    rambling = "Let me think about which agent could answer that. " * 20
    router = ModelRouter(
        ScriptedModel([answered, rambling], name="router"),
        prices=PRICES,
        hooks=[budget, seen],
        metrics=registry,
    )
    agents = {
        name: AgentExecutor(
            model=ScriptedModel(["Done."], name="leaky"),
            name=name,
            guards=[budget],
            hooks=[budget],
            prices=PRICES,
            metrics=registry,
        )
        for name in ("support", "billing")
    }
    routed = AgentRouter(agents, router=router)

    result = await routed.execute(AgentCommand(user_prompt="refund?", user_id="ann"))
    assert result.success and result.usage is None  # the agent's model reported nothing
    assert (await budget.usage("ann")).spent == 92
    pick = await routed.select("help", command=AgentCommand(user_prompt="help", user_id="bob"))

    assert pick.selected_by == "default"  # the rambling answer names no agent
    first, cut = seen.responses
    assert (first.text, cut.finish_reason) == ("billing", "length")
    assert cut.usage is not None and 50 < cut.usage.output_tokens <= 53  # ~200 characters
    assert (await budget.usage("bob")).spent == cut.usage.total_tokens
    tokens = {
        kind: sample(registry, "agent_executor_llm_tokens_total", model="router", type=kind)
        for kind in ("input", "output")
    }
    assert tokens == {"input": 90 + cut.usage.input_tokens, "output": 2 + cut.usage.output_tokens}
    router_price = PRICES.price("router")
    assert router_price is not None
    assert sample(registry, "agent_executor_llm_cost_usd_total", model="router") == pytest.approx(
        router_price.cost(Usage(input_tokens=90, output_tokens=2)) + router_price.cost(cut.usage)
    )


async def test_a_moderator_built_from_a_model_is_priced_and_charged_with_the_groups_parts() -> None:
    registry = CollectorRegistry()
    budget = UserBudget("10000tokens/day", metrics=registry)
    plan = {"next_agent_name": "solo", "next_query": "go", "next_action": "TERMINATE"}
    moderator = ScriptedModel([text_turn(json.dumps(plan), usage=(300, 30))], name="moderator")
    solo = AgentExecutor(
        model=ScriptedModel([text_turn("Done.", usage=(5, 5))], name="leaky"),
        name="solo",
        hooks=[budget],
        prices=PRICES,
        metrics=registry,
    )
    team = AgentGroup(
        [solo], strategy=AutoTurns(moderator), prices=PRICES, hooks=[budget], metrics=registry
    )

    result = await team.execute(AgentCommand(user_prompt="work", user_id="ann"))

    moderation = (300 * 50 + 30 * 50) / 1_000_000
    assert spent(result.usage) == {
        "input_tokens": 305,
        "output_tokens": 35,
        "cost_usd": pytest.approx(moderation + (5 * 100 + 5 * 300) / 1_000_000),
    }
    assert result.usage is not None
    assert (await budget.usage("ann")).spent == 340
    assert sample(
        registry, "agent_executor_llm_cost_usd_total", model="moderator"
    ) == pytest.approx(moderation)
    assert sample(registry, "agent_executor_run_cost_usd_sum") == pytest.approx(
        result.usage.cost_usd
    )


# -- nested runs ------------------------------------------------------------------------------


class Blocker:
    """A tool that waits until cancelled, and says when it has started."""

    def __init__(self) -> None:
        self.started = anyio.Event()

        @tool
        async def wait_forever() -> str:
            """Wait."""
            self.started.set()
            await anyio.sleep_forever()
            return "never"

        self.tool = wait_forever


def worker_and_boss(
    registry: CollectorRegistry, timeout: float
) -> tuple[Blocker, AgentExecutor, AgentExecutor]:
    """A worker that spends (100, 10) on a turn, then waits in its tool until cancelled; a
    boss that spends (10, 5), asks the worker, then (20, 5) on its answer."""
    blocker = Blocker()
    worker = AgentExecutor(
        model=ScriptedModel([tool_turn(call("wait_forever"), usage=(100, 10))], name="leaky"),
        name="worker",
        tools=[blocker.tool],
        prices=PRICES,
        metrics=registry,
    )
    asking = tool_turn(call("worker", {"input": "work"}), usage=(10, 5))
    boss = AgentExecutor(
        model=ScriptedModel([asking, text_turn("Late.", usage=(20, 5))], name="leaky"),
        name="boss",
        tools=[worker.as_tool(timeout=timeout)],
        prices=PRICES,
        metrics=registry,
    )
    return blocker, worker, boss


async def test_a_nested_run_cut_by_the_tools_timeout_leaves_its_spend_to_the_caller() -> None:
    registry = CollectorRegistry()
    _, _, boss = worker_and_boss(registry, timeout=0.2)

    with anyio.fail_after(10):
        events = await events_of(boss, "go")

    assert [(e.tool, e.status) for e in events if isinstance(e, ToolEndEvent)] == [
        ("worker", "timeout")
    ]
    done = events[-1]
    assert isinstance(done, DoneEvent) and done.finish_reason == "stop"
    assert spent(done.usage) == usage_of(130, 20, LEAKY)
    assert sample(registry, "agent_executor_run_cost_usd_sum") == pytest.approx(
        sample(registry, "agent_executor_llm_cost_usd_total", model="leaky")
    )


async def test_a_cancelled_run_counts_what_its_cancelled_nested_run_spent() -> None:
    registry = CollectorRegistry()
    blocker, _, boss = worker_and_boss(registry, timeout=60)

    events = boss.execute_stream(AgentCommand(user_prompt="go"))
    with anyio.fail_after(10):
        async for event in events:
            if isinstance(event, NestedEvent) and isinstance(event.event, ToolStartEvent):
                await blocker.started.wait()
                break
        await events.aclose()

    cost = (110 * 100 + 15 * 300) / 1_000_000  # the boss's first turn, the worker's only one
    assert sample(registry, "agent_executor_requests_total", mode="stream", outcome="cancelled")
    cost_total = sample(registry, "agent_executor_llm_cost_usd_total", model="leaky")
    assert cost_total == pytest.approx(cost)
    assert sample(registry, "agent_executor_run_cost_usd_sum") == pytest.approx(cost)


async def test_a_group_round_cancelled_by_the_groups_deadline_keeps_its_spend() -> None:
    registry = CollectorRegistry()
    blocker, worker, _ = worker_and_boss(registry, timeout=60)
    team = AgentGroup([worker], metrics=registry, request_timeout=0.3)

    with anyio.fail_after(10):
        *_, error, done = await events_of(team, "work")

    assert blocker.started.is_set()
    assert isinstance(error, ErrorEvent) and error.code == "timeout"
    assert isinstance(done, DoneEvent)
    assert spent(done.usage) == usage_of(100, 10, LEAKY)
    assert sample(registry, "agent_executor_run_cost_usd_sum") == pytest.approx(
        sample(registry, "agent_executor_llm_cost_usd_total", model="leaky")
    )


@pytest.mark.parametrize(
    ("turns", "nested"),
    [
        ([ModelError("provider down", retryable=False)], (0, 0)),
        (
            [tool_turn(call("lookup", {"city": "Paris"}), usage=(40, 10)), ModelError("down")],
            (40, 10),
        ),
    ],
)
async def test_a_failed_nested_runs_done_says_what_it_spent(
    turns: list[Any], nested: tuple[int, int]
) -> None:
    researcher = AgentExecutor(
        model=ScriptedModel(turns, name="leaky"),
        name="researcher",
        tools=[lookup],
        prices=PRICES,
        metrics=CollectorRegistry(),
        model_retries=0,
    )
    asking = tool_turn(call("researcher", {"input": "look"}), usage=(10, 5))
    boss = AgentExecutor(
        model=ScriptedModel([asking, text_turn("No.", usage=(10, 5))], name="leaky"),
        tools=[researcher.as_tool()],
        prices=PRICES,
        metrics=CollectorRegistry(),
    )

    events = await events_of(boss, "go")

    [inner] = [
        e.event for e in events if isinstance(e, NestedEvent) and isinstance(e.event, DoneEvent)
    ]
    assert isinstance(inner, DoneEvent) and inner.finish_reason == "error"
    if nested == (0, 0):  # nothing spent: zero, not null
        assert spent(inner.usage) == {"input_tokens": 0, "output_tokens": 0}
    else:
        assert spent(inner.usage) == usage_of(*nested, LEAKY)
    assert [e.status for e in events if isinstance(e, ToolEndEvent)] == ["error"]
    done = events[-1]
    assert isinstance(done, DoneEvent)
    assert spent(done.usage) == usage_of(20 + nested[0], 10 + nested[1], LEAKY)


# -- prices ----------------------------------------------------------------------------------


def test_an_empty_price_table_is_accepted(tmp_path: Any) -> None:
    empty = tmp_path / "prices.json"
    empty.write_text("{}", encoding="utf-8")

    assert PriceTable.from_file(empty).models == ()
    assert PriceTable.from_json("{}", defaults=False).price("leaky") is None
    assert PriceTable.from_json('{"m": {"input": 1, "output": 2}}').models == ("m",)


# -- through the service ----------------------------------------------------------------------

SERVED = "openai/leak-mini"
WORDS = [f"word{i} " for i in range(300)]  # one word a chunk: ~2,100 characters


def test_through_the_service_the_budget_and_the_metrics_add_up_to_what_done_said(
    tmp_path: Any,
) -> None:
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({SERVED: {"input": 1000, "output": 2000}}), encoding="utf-8")
    streams = [Stream(text_stream(WORDS, usage=(900, 600))) for _ in range(12)]
    reported: list[dict[str, Any]] = []
    with fake_model(*streams) as fake:
        flags = ["--model", SERVED, "--api-base", fake.base_url, "--api-key", "unused"]
        flags += ["--prices", str(prices), "--max-output-tokens", "100"]
        flags += ["--user-budget", "2/day"]  # ~$0.37 a cut run: about six runs
        with (
            service_process(*flags, env={"LOG_LEVEL": "WARNING"}) as (_, base),
            httpx.Client(base_url=base, timeout=20) as client,
        ):
            ann = {"X-User-Id": "ann"}
            body = {"message": "Tell me everything.", "events": "json"}
            for _ in range(12):
                response = client.post("/api/chat/stream", json=body, headers=ann)
                if response.status_code == 429:
                    break
                done = [f for f in sse_frames(response.text) if f[0] == "done"][-1]
                reported.append(json.loads(done[1])["usage"])
            usage = client.get("/api/usage", headers=ann).json()
            metrics = samples(client.get("/metrics").text)

    assert response.status_code == 429 and len(reported) > 1
    cost = sum(u["cost_usd"] for u in reported)
    assert usage["spent"] == pytest.approx(cost, abs=1e-9 * len(reported))
    assert usage["remaining"] == 0

    def metric(name: str, **labels: str) -> float:
        return metrics.get((name, frozenset(labels.items())), 0.0)

    assert metric("agent_executor_llm_cost_usd_total", model=SERVED) == pytest.approx(cost)
    assert metric("agent_executor_run_cost_usd_sum") == pytest.approx(cost)
    assert metric("agent_executor_run_cost_usd_count") == len(reported)
    tokens = sum(u["input_tokens"] + u["output_tokens"] for u in reported)
    assert (
        sum(
            metric("agent_executor_llm_tokens_total", model=SERVED, type=kind)
            for kind in ("input", "output")
        )
        == tokens
    )


def test_the_service_starts_with_an_empty_price_table() -> None:
    with service_process("--prices", "{}", env={"LOG_LEVEL": "WARNING"}) as (_, base):
        assert httpx.get(f"{base}/api/health", timeout=5).status_code == 200


def sse_frames(text: str) -> list[tuple[str, str]]:
    """``(event, data)`` of each SSE frame."""
    frames = []
    for block in text.split("\n\n"):
        fields = dict(
            line.split(": ", 1) for line in block.splitlines() if ": " in line and line[0] != ":"
        )
        if "event" in fields:
            frames.append((fields["event"], fields.get("data", "")))
    return frames


def test_through_the_service_the_agents_files_router_is_priced_and_charged(
    tmp_path: Any,
) -> None:
    router_model, agent_model = "openai/router-mini", "openai/agent-mini"
    prices = tmp_path / "prices.json"
    prices.write_text(
        json.dumps(
            {
                router_model: {"input": 1000, "output": 1000},
                agent_model: {"input": 2000, "output": 2000},
            }
        ),
        encoding="utf-8",
    )
    picked = Stream(text_stream(["billing"], usage=(400, 1)))
    answer = Stream(text_stream(["Your ", "invoice."], usage=(100, 3)))
    with fake_model(picked, answer) as fake:
        agents = tmp_path / "agents.yaml"
        agents.write_text(
            f"router: {{model: {router_model}, api_base: '{fake.base_url}', api_key: k}}\n"
            f"agents:\n"
            f"  billing: {{description: invoices, model: {agent_model},"
            f" api_base: '{fake.base_url}', api_key: k, tools: []}}\n"
            f"  support: {{description: anything else, model: {agent_model},"
            f" api_base: '{fake.base_url}', api_key: k, tools: []}}\n",
            encoding="utf-8",
        )
        flags = ["--agents", str(agents), "--prices", str(prices), "--user-budget", "5/day"]
        with (
            service_process(*flags, env={"LOG_LEVEL": "WARNING"}) as (_, base),
            httpx.Client(base_url=base, timeout=20) as client,
        ):
            ann = {"X-User-Id": "ann"}
            body = {"message": "Where is my invoice?", "events": "json"}
            response = client.post("/api/chat/stream", json=body, headers=ann)
            usage = client.get("/api/usage", headers=ann).json()
            metrics = samples(client.get("/metrics").text)

    frames = sse_frames(response.text)
    assert [json.loads(data)["agent"] for kind, data in frames if kind == "agent_selected"] == [
        "billing"
    ]
    run_cost = json.loads([data for kind, data in frames if kind == "done"][-1])["usage"][
        "cost_usd"
    ]
    routing_cost = (400 + 1) * 1000 / 1e6
    assert run_cost == pytest.approx((100 + 3) * 2000 / 1e6)
    assert usage["spent"] == pytest.approx(run_cost + routing_cost)
    cost = {
        model: metrics.get(
            ("agent_executor_llm_cost_usd_total", frozenset({("model", model)})), 0.0
        )
        for model in (router_model, agent_model)
    }
    assert cost == pytest.approx({router_model: routing_cost, agent_model: run_cost})


# -- the summariser's calls -------------------------------------------------------------------

SUMMARY_PRICES = PriceTable(
    {"leaky": LEAKY, "summariser": Price(input=1.0, output=2.0)}, defaults=False
)


def long_history() -> list[Any]:
    """A stored conversation of about 2,400 tokens: past a compressor's 1,000."""
    from agent_executor import AssistantMessage, UserMessage

    return [
        message
        for i in range(6)
        for message in (UserMessage(content=f"question {i} {LONG}"), AssistantMessage(content="ok"))
    ]


async def test_a_history_summary_is_charged_to_the_run_the_budget_and_the_metrics() -> None:
    from agent_executor import HistoryCompressor

    registry = CollectorRegistry()
    budget = UserBudget("10000tokens/day", metrics=registry)
    seen = Seen()
    summariser = ScriptedModel([text_turn("They talked.", usage=(2400, 30))], name="summariser")
    executor = AgentExecutor(
        model=ScriptedModel([text_turn("Hello.", usage=(300, 5))], name="leaky"),
        guards=[budget],
        hooks=[budget, seen],
        prices=SUMMARY_PRICES,
        metrics=registry,
        history_compressor=HistoryCompressor(summariser, max_tokens=1000, keep_recent_tokens=500),
    )
    await executor.memory.append("ann", "s", long_history())

    *_, done = await events_of(
        executor, AgentCommand(user_prompt="hi", user_id="ann", session_id="s")
    )

    assert isinstance(done, DoneEvent) and done.finish_reason == "stop"
    summary_cost = (2400 * 1.0 + 30 * 2.0) / 1_000_000
    assert spent(done.usage) == usage_of(300 + 2400, 5 + 30, LEAKY) | {
        "cost_usd": pytest.approx((300 * 100.0 + 5 * 300.0) / 1_000_000 + summary_cost)
    }
    assert (await budget.usage("ann")).spent == 300 + 2400 + 5 + 30  # what done said
    assert (
        sample(registry, "agent_executor_llm_tokens_total", model="summariser", type="input")
        == 2400
    )
    assert sample(registry, "agent_executor_llm_cost_usd_total", model="summariser") == (
        pytest.approx(summary_cost)
    )
    assert (
        sample(registry, "agent_executor_llm_requests_total", model="summariser", outcome="success")
        == 1
    )
    assert [r.finish_reason for r in seen.responses] == ["summary", "stop"]


async def test_a_summary_inside_a_long_run_is_charged_too() -> None:
    from agent_executor import HistoryCompressor, ModelPolicy

    registry = CollectorRegistry()
    summariser = ScriptedModel([text_turn("Pages 1-3 read.", usage=(900, 20))], name="summariser")
    turns = [tool_turn(call("lookup", {"city": LONG}), usage=(100, 10)) for _ in range(3)]
    executor = AgentExecutor(
        model=ScriptedModel([*turns, text_turn("Done.", usage=(100, 3))], name="leaky"),
        tools=[lookup],
        prices=SUMMARY_PRICES,
        metrics=registry,
        model_policy=ModelPolicy(context_window=1500),
        history_compressor=HistoryCompressor(summariser, max_tokens=100_000),
    )

    events = await events_of(executor, "Read the pages.")

    done = events[-1]
    assert isinstance(done, DoneEvent) and done.finish_reason == "stop", done
    assert any(e.type == "compacted" for e in events)
    assert done.usage is not None and done.usage.input_tokens == 3 * 100 + 100 + 900
    assert (
        sample(registry, "agent_executor_llm_tokens_total", model="summariser", type="input") == 900
    )


async def test_a_failed_summary_spends_nothing_and_counts_as_a_failed_call() -> None:
    from agent_executor import HistoryCompressor

    registry = CollectorRegistry()
    seen = Seen()
    summariser = ScriptedModel([ModelError("the summariser is down")], name="summariser")
    executor = AgentExecutor(
        model=ScriptedModel([text_turn("Hello.", usage=(300, 5))], name="leaky"),
        hooks=[seen],
        prices=SUMMARY_PRICES,
        metrics=registry,
        history_compressor=HistoryCompressor(summariser, max_tokens=1000, keep_recent_tokens=500),
    )
    await executor.memory.append("ann", "s", long_history())

    *_, done = await events_of(
        executor, AgentCommand(user_prompt="hi", user_id="ann", session_id="s")
    )

    assert isinstance(done, DoneEvent) and done.finish_reason == "stop"  # the full history
    assert spent(done.usage) == usage_of(300, 5, LEAKY)
    requests = "agent_executor_llm_requests_total"
    assert sample(registry, requests, model="summariser", outcome="error") == 1
    assert sample(registry, requests, model="summariser", outcome="success") == 0
    assert sample(registry, "agent_executor_history_compression_failures_total") == 1
    assert [r.finish_reason for r in seen.responses] == ["stop"]
