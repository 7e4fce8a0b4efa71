"""Per-user budgets through the service (issue #21): the real ``python -m server`` on the fake
OpenAI-compatible server, with ``--prices``, ``--user-budget`` and API keys; the refusal's 429
and ``Retry-After`` on every chat endpoint, and ``GET /api/usage`` for the user and an
operator."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from aiohttp.test_utils import TestClient, TestServer

from agent_executor import AgentExecutor
from server import create_app

from .fakes.openai_server import FakeOpenAIServer, Stream, text_stream
from .server_helpers import ROOT, service_process
from .test_prometheus import fake_model, samples

MODEL = "openai/budget-mini"
RUN_COST = 0.014
"""10 input tokens at $1,000 per million and 2 output at $2,000: $0.014 a run."""


@dataclass
class Service:
    base: str
    keys: dict[str, str]

    def headers(self, user: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.keys[user]}"}


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    tmp = tmp_path_factory.mktemp("usage")
    prices = tmp / "prices.json"
    prices.write_text(json.dumps({MODEL: {"input": 1000, "output": 2000}}), encoding="utf-8")
    keys = {"alice": "k-alice", "bob": "k-bob", "ops": "k-ops"}
    keys_file = tmp / "keys"
    keys_file.write_text("".join(f"{u}={k}\n" for u, k in keys.items()), encoding="utf-8")
    answers = [Stream(text_stream(["fine"], usage=(10, 2))) for _ in range(2)]
    with fake_model(*answers) as fake:
        flags = ["--model", MODEL, "--api-base", fake.base_url, "--api-key", "unused"]
        flags += ["--prices", str(prices), "--user-budget", f"{2 * RUN_COST}/day"]
        flags += ["--api-keys-file", str(keys_file), "--operator-users", "ops"]
        with service_process(*flags, env={"LOG_LEVEL": "WARNING"}) as (_, base):
            yield Service(base, keys)


def _seconds_to_midnight() -> float:
    now = dt.datetime.now(dt.timezone.utc)
    midnight = (now + dt.timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
    return (midnight - now).total_seconds()


def test_a_user_at_the_limit_gets_429_with_retry_after_on_every_chat_endpoint(
    service: Service,
) -> None:
    alice = service.headers("alice")
    with httpx.Client(base_url=service.base, timeout=20) as client:
        first = client.post("/api/chat", json={"message": "hi"}, headers=alice)
        assert first.status_code == 200, first.text
        assert first.json()["usage"]["cost_usd"] == pytest.approx(RUN_COST)
        second = client.post("/api/chat/stream", json={"message": "hi"}, headers=alice)
        assert second.status_code == 200 and "event: done" in second.text

        refusals = [
            client.post("/api/chat", json={"message": "hi"}, headers=alice),
            client.post("/api/chat/stream", json={"message": "hi"}, headers=alice),
            client.post(
                "/v1/chat/completions",
                json={"model": "default", "messages": [{"role": "user", "content": "hi"}]},
                headers=alice,
            ),
        ]
        usage = client.get("/api/usage", headers=alice)
        metrics = client.get("/metrics").text

    for response in refusals:
        assert response.status_code == 429, response.text
        retry_after = int(response.headers["Retry-After"])
        assert abs(retry_after - _seconds_to_midnight()) < 5
    for response in refusals[:2]:
        error = response.json()["error"]
        assert error["code"] == "budget_exceeded"
        assert error["retry_after"] == int(response.headers["Retry-After"])
    openai_error = refusals[2].json()["error"]
    assert openai_error["type"] == "rate_limit_error"
    assert "used up" in openai_error["message"]

    assert usage.status_code == 200
    body = usage.json()
    assert body.pop("spent") == pytest.approx(2 * RUN_COST)
    tomorrow = dt.datetime.now(dt.timezone.utc).date() + dt.timedelta(days=1)
    assert body == {
        "user_id": "alice",
        "period": "day",
        "unit": "usd",
        "limit": 2 * RUN_COST,
        "remaining": 0.0,
        "resets_at": f"{tomorrow.isoformat()}T00:00:00Z",
    }
    found = samples(metrics)
    assert found[("agent_executor_budget_refusals_total", frozenset({("scope", "user")}))] == 3
    cost = found[("agent_executor_llm_cost_usd_total", frozenset({("model", MODEL)}))]
    assert cost == pytest.approx(2 * RUN_COST)
    assert found[("agent_executor_run_cost_usd_count", frozenset())] == 2


def test_a_user_reads_only_their_own_spend_and_an_operator_reads_everyones(
    service: Service,
) -> None:
    with httpx.Client(base_url=service.base, timeout=20) as client:
        bob_own = client.get("/api/usage", headers=service.headers("bob"))
        bob_on_alice = client.get("/api/usage?user=alice", headers=service.headers("bob"))
        bob_on_all = client.get("/api/usage?all=1", headers=service.headers("bob"))
        bob_as_himself = client.get("/api/usage?user=bob", headers=service.headers("bob"))
        ops_on_bob = client.get("/api/usage?user=bob", headers=service.headers("ops"))
        ops_on_all = client.get("/api/usage?all=1", headers=service.headers("ops"))
        nobody = client.get("/api/usage")

    assert bob_own.status_code == 200 and bob_own.json()["spent"] == 0
    assert bob_as_himself.json() == bob_own.json()
    for refused in (bob_on_alice, bob_on_all):
        assert refused.status_code == 403
        error = refused.json()["error"]
        assert error["code"] == "forbidden"
        assert error["message"] == "only an operator's API key may read other users' spend"
        assert error["request_id"]
    assert ops_on_bob.json() == bob_own.json()
    users = ops_on_all.json()["users"]
    assert [u["user_id"] for u in users] == ["alice"]  # bob spent nothing this period
    assert nobody.status_code == 401


async def test_without_a_budget_usage_is_404() -> None:
    from prometheus_client import CollectorRegistry

    agent = AgentExecutor(model="demo", metrics=CollectorRegistry())
    async with TestClient(TestServer(create_app(agent))) as client:
        response = await client.get("/api/usage")
        body = await response.json()
    assert response.status == 404
    assert body["error"]["code"] == "not_found"
    assert "--user-budget" in body["error"]["message"]


def test_serving_with_prices_and_a_budget_does_not_import_litellm(tmp_path: Path) -> None:
    """Prices come from litellm's cost map read as a file: neither start-up nor pricing a
    call (even of a model with no price of its own) imports litellm."""
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"my-model": {"input": 1, "output": 2}}), encoding="utf-8")
    code = f"""
import sys, time, asyncio
started = time.perf_counter()
from server.cli import ServeConfig, build_parser, build_service
args = build_parser().parse_args(
    ["serve", "--prices", {str(prices)!r}, "--user-budget", "5/day", "--max-cost-usd", "1"]
)
service = build_service(ServeConfig.from_args(args, {{}}))
built = time.perf_counter() - started
from agent_executor import AgentCommand
result = asyncio.run(service.agents.execute(AgentCommand(user_prompt="hello", user_id="u")))
assert result.success, result
print(built, any(m == "litellm" or m.startswith("litellm.") for m in sys.modules))
"""
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    _, imported = out.stdout.split()
    assert imported == "False"  # (how long start-up takes is measured in benchmarks/, not here)


def test_the_openapi_document_describes_the_usage_endpoint() -> None:
    from server.openapi import openapi_document

    document = openapi_document()
    usage = document["paths"]["/api/usage"]["get"]
    assert set(usage["responses"]) == {"200", "401", "403", "404", "503"}
    assert set(document["components"]["schemas"]["BudgetUsage"]["properties"]) == {
        "user_id",
        "period",
        "unit",
        "spent",
        "limit",
        "remaining",
        "resets_at",
    }


async def test_two_replicas_on_one_redis_refuse_exactly_at_the_limit(
    tmp_path: Path, server: FakeOpenAIServer
) -> None:
    """Six concurrent runs of one user, three on each replica, each costing $0.014, under a
    $0.084/day budget: all six are admitted, the spend both replicas read is exactly $0.084,
    and the next run is refused on both."""
    from contextlib import ExitStack

    from .redis_server import redis_server

    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({MODEL: {"input": 1000, "output": 2000}}), encoding="utf-8")
    server.script(*[Stream(text_stream(["fine"], usage=(10, 2))) for _ in range(6)])
    with redis_server(tmp_path) as redis, ExitStack() as stack:
        flags = ["--model", MODEL, "--api-base", server.base_url, "--api-key", "unused"]
        flags += ["--prices", str(prices), "--user-budget", f"{6 * RUN_COST}/day"]
        flags += ["--redis-url", redis.url]
        replicas = [
            stack.enter_context(service_process(*flags, env={"LOG_LEVEL": "WARNING"}))[1]
            for _ in range(2)
        ]
        ann = {"X-User-Id": "ann"}
        async with httpx.AsyncClient(timeout=20) as client:
            runs = await asyncio.gather(
                *(
                    client.post(f"{base}/api/chat", json={"message": "hi"}, headers=ann)
                    for base in replicas * 3
                )
            )
            assert [r.status_code for r in runs] == [200] * 6, [r.text for r in runs]
            usages = [(await client.get(f"{b}/api/usage", headers=ann)).json() for b in replicas]
            refused = [
                await client.post(f"{base}/api/chat", json={"message": "hi"}, headers=ann)
                for base in replicas
            ]
    for usage in usages:
        assert (usage["spent"], usage["remaining"]) == (pytest.approx(6 * RUN_COST), 0.0)
    assert [r.status_code for r in refused] == [429, 429]
    assert {r.json()["error"]["code"] for r in refused} == {"budget_exceeded"}
    assert server.pending == 0
