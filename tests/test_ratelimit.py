"""RateLimitGuard: GCRA per key with retry_after, exact under concurrency, through the service."""

from __future__ import annotations

import anyio
import pytest

from agent_executor import (
    AgentCommand,
    ConfigurationError,
    GuardRejection,
    InMemoryRateLimitStorage,
    RateLimitGuard,
    RunContext,
)
from agent_executor.guards.ratelimit import parse_rate
from server import Settings

from .helpers import make_executor, sample
from .server_helpers import serve


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def ctx(user: str | None = "alice", address: str | None = None) -> RunContext:
    return RunContext(
        command=AgentCommand(user_prompt="hi", user_id=user),
        request_id="r",
        mode="execute",
        client_address=address,
    )


async def outcome(guard: RateLimitGuard, context: RunContext) -> float | None:
    try:
        await guard.check(context)
    except GuardRejection as exc:
        rejection = exc
    else:
        return None
    assert rejection.code.value == "rate_limited"
    return rejection.retry_after


@pytest.mark.parametrize(
    ("rate", "expected"),
    [
        ("20/minute", (20, 60.0)),
        ("5/s", (5, 1.0)),
        ("100/hour", (100, 3600.0)),
        ("1000/day", (1000, 86400.0)),
        ("10/30s", (10, 30.0)),
        (" 3 / Minutes ", (3, 60.0)),
        ("7/sec", (7, 1.0)),
    ],
)
def test_rates_parse(rate: str, expected: tuple[int, float]) -> None:
    assert parse_rate(rate) == expected


@pytest.mark.parametrize("rate", ["", "20", "20/fortnight", "0/minute", "x/minute", "-1/s"])
def test_bad_rates_are_refused(rate: str) -> None:
    with pytest.raises(ConfigurationError, match="invalid rate"):
        parse_rate(rate)


async def test_n_back_to_back_then_one_per_interval() -> None:
    clock = Clock()
    guard = RateLimitGuard("3/minute", clock=clock)

    first = [await outcome(guard, ctx()) for _ in range(4)]
    assert first == [None, None, None, 20.0]

    clock.now += 19.9
    assert await outcome(guard, ctx()) == pytest.approx(0.1)
    clock.now += 0.1
    assert await outcome(guard, ctx()) is None
    assert await outcome(guard, ctx()) == 20.0


async def test_a_smaller_burst_spaces_requests_out() -> None:
    clock = Clock()
    guard = RateLimitGuard("60/minute", burst=1, clock=clock)

    assert await outcome(guard, ctx()) is None
    assert await outcome(guard, ctx()) == 1.0
    clock.now += 1
    assert await outcome(guard, ctx()) is None


async def test_keys_are_independent_and_fall_back_to_the_client_address() -> None:
    clock = Clock()
    guard = RateLimitGuard("1/hour", clock=clock)

    assert await outcome(guard, ctx("alice")) is None
    assert await outcome(guard, ctx("alice")) == 3600.0
    assert await outcome(guard, ctx("bob")) is None
    assert await outcome(guard, ctx(None, "10.0.0.1")) is None
    assert await outcome(guard, ctx(None, "10.0.0.1")) == 3600.0
    assert await outcome(guard, ctx(None, "10.0.0.2")) is None
    assert await outcome(guard, ctx(None, None)) is None
    assert await outcome(guard, ctx(None, None)) == 3600.0


async def test_exactly_the_limit_passes_under_1000_concurrent_checks() -> None:
    guard = RateLimitGuard("100/hour")
    allowed = 0

    async def one() -> None:
        nonlocal allowed
        await anyio.sleep(0)
        if await outcome(guard, ctx()) is None:
            allowed += 1

    async with anyio.create_task_group() as tg:
        for _ in range(1000):
            tg.start_soon(one)

    assert allowed == 100


async def test_concurrent_runs_through_the_executor_are_limited_exactly() -> None:
    executor = make_executor(["ok"] * 10, guards=[RateLimitGuard("10/hour")])
    results = []

    async def run() -> None:
        results.append(await executor.execute(AgentCommand(user_prompt="hi", user_id="u")))

    async with anyio.create_task_group() as tg:
        for _ in range(50):
            tg.start_soon(run)

    assert sum(r.success for r in results) == 10
    refused = [r for r in results if not r.success]
    assert {r.error.code for r in refused if r.error} == {"rate_limited"}
    assert executor.model.remaining == 0  # type: ignore[attr-defined]
    assert (
        sample(
            executor.metrics.registry,
            "agent_executor_guard_rejections_total",
            guard="rate_limit",
            code="rate_limited",
        )
        == 40
    )


async def test_the_storage_forgets_keys_whose_allowance_is_full_again() -> None:
    clock = Clock()
    storage = InMemoryRateLimitStorage(sweep_every=1)
    guard = RateLimitGuard("10/second", storage=storage, clock=clock)
    for user in range(100):
        await outcome(guard, ctx(f"u{user}"))
    assert len(storage) == 100

    clock.now += 1
    await outcome(guard, ctx("last"))

    assert len(storage) == 1


async def test_the_service_answers_429_with_retry_after_per_user() -> None:
    executor = make_executor(["a", "b", "c", "d"], guards=[RateLimitGuard("2/minute")])

    async with serve(executor) as client:
        statuses = [
            (await client.post("/api/chat", json={"message": "hi"}, headers={"X-User-Id": "alice"}))
            for _ in range(3)
        ]
        other = await client.post("/api/chat", json={"message": "hi"}, headers={"X-User-Id": "bob"})
        stream = await client.post(
            "/api/chat/stream",
            json={"message": "hi", "events": "json"},
            headers={"X-User-Id": "alice"},
        )

    assert [r.status_code for r in statuses] == [200, 200, 429]
    limited = statuses[2]
    assert 29 <= int(limited.headers["retry-after"]) <= 30
    assert limited.json()["error"]["code"] == "rate_limited"
    assert other.status_code == 200
    assert stream.status_code == 429  # the same refusal, the same status, on the stream
    assert 29 <= int(stream.headers["retry-after"]) <= 30
    assert stream.json()["error"]["code"] == "rate_limited"
    assert stream.json()["error"]["retry_after"] == int(stream.headers["retry-after"])


@pytest.mark.parametrize(("trusted", "same_bucket"), [((), True), (("127.0.0.1/32",), False)])
async def test_x_forwarded_for_is_believed_only_from_trusted_proxies(
    trusted: tuple[str, ...], same_bucket: bool
) -> None:
    executor = make_executor(["a", "b", "c"], guards=[RateLimitGuard("1/hour")])

    async with serve(executor, Settings(trusted_proxies=trusted)) as client:
        first = await client.post(
            "/api/chat", json={"message": "hi"}, headers={"X-Forwarded-For": "203.0.113.7"}
        )
        second = await client.post(
            "/api/chat",
            json={"message": "hi"},
            headers={"X-Forwarded-For": "198.51.100.9, 127.0.0.1"},
        )

    assert first.status_code == 200
    assert second.status_code == (429 if same_bucket else 200)
