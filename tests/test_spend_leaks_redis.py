"""Spend that cannot leak (issue #30) on a real ``redis-server``: a user who hits the run's cap
again and again uses up a budget kept in Redis by exactly what each ``done`` reported, through
the public API (two executors standing for two replicas) and through the real service."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from prometheus_client import CollectorRegistry

from agent_executor import AgentCommand
from agent_executor.redis import RedisBudgetStore
from agent_executor.spend import UserBudget

from .fakes.openai_server import Stream, text_stream
from .redis_server import RedisServer
from .server_helpers import service_process
from .test_prometheus import fake_model, samples
from .test_spend_leaks import (
    BUDGETS,
    SERVED,
    WORDS,
    assert_charged_exactly,
    capped,
    cut_until_refused,
    sse_frames,
)

# This module still passes the keyword arguments the settings objects replaced (max_turns=...);
# they warn until 0.2.0 (tests/test_settings.py checks the warning itself).
pytestmark = pytest.mark.filterwarnings(
    "ignore:.*keyword arguments are deprecated:DeprecationWarning"
)


@pytest.mark.parametrize("unit", ["tokens", "usd"])
async def test_hitting_the_run_cap_on_two_replicas_uses_up_the_budget_by_what_done_said(
    redis_running: RedisServer, unit: str
) -> None:
    registry = CollectorRegistry()
    budgets = [
        UserBudget(BUDGETS[unit], store=RedisBudgetStore(redis_running.url), metrics=registry)
        for _ in range(2)
    ]
    replicas = [capped(budget, registry) for budget in budgets]
    command = AgentCommand(user_prompt="hi", user_id="ann")
    try:
        reported = await cut_until_refused(replicas[0], command)
        reported += await cut_until_refused(replicas[1], command)  # refused at once: no spend

        usages = [await budget.usage("ann") for budget in budgets]
        assert usages[0] == usages[1]
        assert_charged_exactly(reported, usages[0].spent, unit, registry)
    finally:
        for budget in budgets:
            await budget.aclose()


def test_through_the_service_a_token_budget_in_redis_adds_up_to_what_done_said(
    redis_running: RedisServer,
) -> None:
    streams = [Stream(text_stream(WORDS, usage=(900, 600))) for _ in range(12)]
    reported: list[dict[str, Any]] = []
    with fake_model(*streams) as fake:
        flags = ["--model", SERVED, "--api-base", fake.base_url, "--api-key", "unused"]
        flags += ["--max-output-tokens", "100", "--redis-url", redis_running.url]
        flags += ["--user-budget", "1000tokens/day"]  # ~270 tokens a cut run: four runs
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
                done = [data for event, data in sse_frames(response.text) if event == "done"]
                reported.append(json.loads(done[-1])["usage"])
            usage = client.get("/api/usage", headers=ann).json()
            metrics = samples(client.get("/metrics").text)

    assert response.status_code == 429 and len(reported) > 1
    tokens = sum(u["input_tokens"] + u["output_tokens"] for u in reported)
    assert (usage["spent"], usage["remaining"]) == (tokens, 0)
    counted = sum(
        metrics.get(
            ("agent_executor_llm_tokens_total", frozenset({"model": SERVED, "type": t}.items())),
            0.0,
        )
        for t in ("input", "output")
    )
    assert counted == tokens
