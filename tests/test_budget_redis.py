"""Per-user budgets shared by replicas on a real ``redis-server``: two executors, each with its
own ``UserBudget`` and Redis client, stand for two replicas of the service."""

from __future__ import annotations

import anyio
import pytest
from prometheus_client import CollectorRegistry

from agent_executor import AgentCommand, AgentExecutor, AgentResult, ErrorEvent, ScriptedModel
from agent_executor.models.scripted import text_turn
from agent_executor.redis import RedisBudgetStore
from agent_executor.spend import Price, PriceTable, UserBudget

from .redis_server import RedisServer

PRICES = PriceTable({"scripted": Price(input=1.0, output=2.0)}, defaults=False)
"""1,000 input and 500 output tokens cost $0.002."""


@pytest.fixture
def server(redis_running: RedisServer) -> RedisServer:
    return redis_running


def _replica(url: str, budget: str, runs: int) -> tuple[AgentExecutor, UserBudget]:
    registry = CollectorRegistry()
    guard = UserBudget(budget, store=RedisBudgetStore(url), metrics=registry)
    executor = AgentExecutor(
        model=ScriptedModel([text_turn("ok", usage=(1000, 500)) for _ in range(runs)], delay=0.01),
        guards=[guard],
        hooks=[guard],
        prices=PRICES,
        metrics=registry,
    )
    return executor, guard


async def test_two_replicas_refuse_exactly_at_the_limit_after_concurrent_runs(
    server: RedisServer,
) -> None:
    a, budget_a = _replica(server.url, "0.04/day", 11)
    b, budget_b = _replica(server.url, "0.04/day", 11)
    command = AgentCommand(user_prompt="hi", user_id="ann")
    results: list[AgentResult] = []

    async def run(executor: AgentExecutor) -> None:
        results.append(await executor.execute(command))

    try:
        async with anyio.create_task_group() as tg:
            for _ in range(10):
                tg.start_soon(run, a)
                tg.start_soon(run, b)
        assert [r.success for r in results] == [True] * 20
        for budget in (budget_a, budget_b):
            usage = await budget.usage("ann")
            assert (usage.spent, usage.remaining) == (0.04, 0.0)  # 20 x $0.002, exactly
        for executor in (a, b):
            refused = await executor.execute(command)
            assert refused.error is not None and refused.error.code == "budget_exceeded"
            assert refused.error.retry_after is not None and refused.error.retry_after >= 1
        assert (await budget_a.usage("bob")).spent == 0
    finally:
        await budget_a.aclose()
        await budget_b.aclose()


async def test_concurrent_adds_from_two_clients_sum_exactly(server: RedisServer) -> None:
    one, two = RedisBudgetStore(server.url), RedisBudgetStore(server.url)
    try:
        async with anyio.create_task_group() as tg:
            for index in range(200):
                store = one if index % 2 else two
                tg.start_soon(lambda s=store: s.add("ann", "day:2026-11-24", 7, expires_at=2e9))
        assert await one.spent("ann", "day:2026-11-24") == 1400
        ttl = await one.redis.ttl("agent-executor:budget:day:2026-11-24:ann")
        assert ttl > 0
    finally:
        await one.aclose()
        await two.aclose()


async def test_an_operator_reads_everyone_through_scan(server: RedisServer) -> None:
    a, budget = _replica(server.url, "1000000tokens/month", 3)
    try:
        for user in ("ann", "b:o*b", "ann"):
            assert (await a.execute(AgentCommand(user_prompt="hi", user_id=user))).success
        assert [(u.user_id, u.spent) for u in await budget.everyone()] == [
            ("ann", 3000),
            ("b:o*b", 1500),
        ]
    finally:
        await budget.aclose()


async def test_redis_down_refuses_runs_as_unavailable_and_recovers(server: RedisServer) -> None:
    executor, budget = _replica(server.url, "1/day", 2)
    command = AgentCommand(user_prompt="hi", user_id="ann")
    try:
        server.stop()
        events = [e async for e in executor.execute_stream(command)]
        error = events[-2]
        assert isinstance(error, ErrorEvent) and error.code == "unavailable"
        server.start()
        assert (await executor.execute(command)).success
        assert (await budget.usage("ann")).spent == pytest.approx(0.002)
    finally:
        await budget.aclose()
