"""Per-user budgets (issue #21) through the public API: ``UserBudget`` as guard and hook on
executors of ScriptedModels with usage chunks, priced by a table of the test's own."""

from __future__ import annotations

import datetime as dt
import logging

import pytest
from prometheus_client import CollectorRegistry

from agent_executor import AgentCommand, ConfigurationError
from agent_executor.models.scripted import call, text_turn, tool_turn
from agent_executor.spend import BudgetLimit, Price, PriceTable, UserBudget, parse_budget
from agent_executor.tools.demo import DEMO_TOOLS

from .helpers import make_executor

PRICES = PriceTable({"scripted": Price(input=1.0, output=2.0)}, defaults=False)
"""$1 per million input tokens, $2 per million output: 1,000 in and 500 out cost $0.002."""

NOW = dt.datetime(2026, 11, 24, 20, 0, 0, tzinfo=dt.timezone.utc).timestamp()  # a Tuesday


class Clock:
    def __init__(self, now: float = NOW) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _agent(budget: UserBudget, turns: int, registry: CollectorRegistry, **options: object):
    return make_executor(
        [text_turn("ok", usage=(1000, 500)) for _ in range(turns)],
        guards=[budget],
        hooks=[budget],
        prices=PRICES,
        registry=registry,
        **options,
    )


async def test_a_dollar_budget_refuses_at_exactly_the_limit_until_the_day_ends() -> None:
    registry, clock = CollectorRegistry(), Clock()
    budget = UserBudget("0.004/day", clock=clock, metrics=registry)
    executor = _agent(budget, 3, registry)
    command = AgentCommand(user_prompt="hi", user_id="ann")

    first = await executor.execute(command)
    assert first.success and first.usage.cost_usd == pytest.approx(0.002)
    assert (await budget.usage("ann")).spent == pytest.approx(0.002)
    assert (await executor.execute(command)).success  # 0.002 < 0.004: admitted
    refused = await executor.execute(command)

    assert refused.error is not None and refused.error.code == "budget_exceeded"
    assert refused.error.retry_after == 4 * 3600  # until midnight UTC
    assert "0.004/day" in refused.error.message
    assert registry.get_sample_value("agent_executor_budget_refusals_total", {"scope": "user"}) == 1
    assert (
        registry.get_sample_value(
            "agent_executor_guard_rejections_total",
            {"guard": "user_budget", "code": "budget_exceeded"},
        )
        == 1
    )
    usage = await budget.usage("ann")
    assert usage.model_dump() == {
        "user_id": "ann",
        "period": "day",
        "unit": "usd",
        "spent": pytest.approx(0.004),
        "limit": 0.004,
        "remaining": 0.0,
        "resets_at": "2026-11-25T00:00:00Z",
    }
    assert (await budget.usage("bob")).spent == 0  # another user's budget is untouched

    clock.now += 4 * 3600  # the next day
    assert (await executor.execute(command)).success


async def test_a_token_budget_counts_input_and_output_of_every_model_call() -> None:
    registry, clock = CollectorRegistry(), Clock(NOW + 15 * 60)
    budget = UserBudget("3000tokens/hour", clock=clock, metrics=registry)
    turns = [
        tool_turn(call("add", {"a": 1, "b": 2}), usage=(1000, 500)),
        text_turn("3", usage=(1000, 500)),
    ]
    executor = make_executor(
        [*turns, "never"], DEMO_TOOLS, guards=[budget], hooks=[budget], registry=registry
    )
    command = AgentCommand(user_prompt="1+2?", user_id="ann")
    assert (await executor.execute(command)).success
    assert (await budget.usage("ann")).model_dump() == {
        "user_id": "ann",
        "period": "hour",
        "unit": "tokens",
        "spent": 3000,
        "limit": 3000,
        "remaining": 0,
        "resets_at": "2026-11-24T21:00:00Z",
    }
    refused = await executor.execute(command)
    assert refused.error is not None and refused.error.code == "budget_exceeded"
    assert refused.error.retry_after == 45 * 60


async def test_a_model_without_a_price_is_not_counted_and_is_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    registry = CollectorRegistry()
    budget = UserBudget("0.001/day", clock=Clock(), metrics=registry)
    executor = make_executor(
        [text_turn("ok", usage=(1000, 500)) for _ in range(3)],
        guards=[budget],
        hooks=[budget],
        prices=PriceTable({}, defaults=False),
        registry=registry,
    )
    command = AgentCommand(user_prompt="hi", user_id="ann")
    with caplog.at_level(logging.WARNING, logger="agent_executor.spend"):
        for _ in range(3):
            result = await executor.execute(command)
            assert result.success and result.usage.cost_usd is None
    assert (await budget.usage("ann")).spent == 0
    unknown = [r for r in caplog.records if "unknown cost" in r.getMessage()]
    assert len(unknown) == 1


async def test_runs_without_a_user_share_the_anonymous_budget() -> None:
    registry = CollectorRegistry()
    budget = UserBudget("0.002/week", clock=Clock(), metrics=registry)
    executor = _agent(budget, 2, registry)
    assert (await executor.execute(AgentCommand(user_prompt="hi"))).success
    refused = await executor.execute(AgentCommand(user_prompt="hi again"))
    assert refused.error is not None and refused.error.code == "budget_exceeded"
    assert refused.error.retry_after == 5 * 86400 + 4 * 3600  # Monday 00:00 UTC
    assert [u.user_id for u in await budget.everyone()] == ["anonymous"]
    assert (await budget.usage(None)).resets_at == "2026-11-30T00:00:00Z"


async def test_the_cost_of_a_run_is_observed_once_per_top_level_run() -> None:
    registry = CollectorRegistry()
    budget = UserBudget("1/month", clock=Clock(), metrics=registry)
    executor = _agent(budget, 2, registry)
    for _ in range(2):
        assert (await executor.execute(AgentCommand(user_prompt="hi", user_id="ann"))).success
    assert registry.get_sample_value("agent_executor_run_cost_usd_count") == 2
    assert registry.get_sample_value("agent_executor_run_cost_usd_sum") == pytest.approx(0.004)
    assert registry.get_sample_value("agent_executor_run_cost_usd_bucket", {"le": "0.005"}) == 2


@pytest.mark.parametrize(
    ("text", "limit"),
    [
        ("5.00/day", BudgetLimit(5.0, "usd", "day")),
        ("$0.50 / hour", BudgetLimit(0.5, "usd", "hour")),
        ("200000tokens/day", BudgetLimit(200_000, "tokens", "day")),
        ("1000 tokens/weeks", BudgetLimit(1000, "tokens", "week")),
        ("12usd/month", BudgetLimit(12, "usd", "month")),
    ],
)
def test_budgets_parse(text: str, limit: BudgetLimit) -> None:
    assert parse_budget(text) == limit


@pytest.mark.parametrize("text", ["", "5", "0/day", "5/fortnight", "1.5tokens/day", "-1/day"])
def test_bad_budgets_say_how_to_write_one(text: str) -> None:
    with pytest.raises(ConfigurationError, match="invalid budget"):
        parse_budget(text)


@pytest.mark.parametrize(
    ("period", "at", "start", "end"),
    [
        ("hour", "2026-11-24T20:59:59", "2026-11-24T20:00:00", "2026-11-24T21:00:00"),
        ("day", "2026-12-31T23:59:59", "2026-12-31T00:00:00", "2027-01-01T00:00:00"),
        ("week", "2026-11-30T00:00:00", "2026-11-30T00:00:00", "2026-12-07T00:00:00"),
        ("week", "2026-11-29T23:59:59", "2026-11-23T00:00:00", "2026-11-30T00:00:00"),
        ("month", "2026-12-15T12:00:00", "2026-12-01T00:00:00", "2027-01-01T00:00:00"),
        ("month", "2026-01-31T12:00:00", "2026-01-01T00:00:00", "2026-02-01T00:00:00"),
    ],
)
def test_periods_are_calendar_periods_in_utc(period: str, at: str, start: str, end: str) -> None:
    limit = parse_budget(f"1/{period}")
    moment = dt.datetime.fromisoformat(at).replace(tzinfo=dt.timezone.utc).timestamp()
    _, began, ends = limit.window(moment)
    assert (began.isoformat()[:19], ends.isoformat()[:19]) == (start, end)


async def test_a_flows_model_node_and_a_groups_moderator_record_their_spend() -> None:
    import json

    from agent_executor import AgentGroup, AutoTurns, Flow, ModelNode, ScriptedModel

    budget = UserBudget("1000tokens/day", clock=Clock(), metrics=CollectorRegistry())
    flow = Flow(
        [ModelNode("reply", ScriptedModel([text_turn("Hi.", usage=(100, 20))]))],
        [],
        start="reply",
        hooks=[budget],
        prices=PRICES,
        metrics=CollectorRegistry(),
    )
    plan = {"next_agent_name": "solo", "next_query": "go", "next_action": "TERMINATE"}
    moderator = ScriptedModel([text_turn(json.dumps(plan), usage=(300, 30))])
    solo = make_executor([text_turn("Done.", usage=(5, 5))], hooks=[budget])
    solo.name = "solo"
    team = AgentGroup(
        [solo],
        strategy=AutoTurns(moderator, prices=PRICES, hooks=[budget]),
        metrics=CollectorRegistry(),
    )

    await flow.execute(AgentCommand(user_prompt="hello", user_id="ann"))
    assert (await budget.usage("ann")).spent == 120
    await team.execute(AgentCommand(user_prompt="work", user_id="ann"))
    assert (await budget.usage("ann")).spent == 120 + 330 + 10
