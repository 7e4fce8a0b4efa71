"""Health that tells the truth: ``/api/health`` (liveness, always 200) says ``degraded`` and
which part is down while Redis or the model endpoint is known down; ``/api/ready`` and
``/api/health?ready=1`` (readiness) answer 503 then; chat gets a clean error meanwhile; and
all of it comes back by itself.

The service runs as ``python -m server`` against a real ``redis-server`` the test stops and
starts, and against a local OpenAI-compatible server the test stops and starts on its port.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from agent_executor import InMemoryConversationStore, ModelError

from .fakes.openai_server import FakeOpenAIServer, Stream, text_stream
from .helpers import make_executor
from .redis_server import RedisServer, redis_server
from .server_helpers import serve, service_process

# This module still passes the keyword arguments the settings objects replaced (max_turns=...);
# they warn until 0.2.0 (tests/test_settings.py checks the warning itself).
pytestmark = pytest.mark.filterwarnings(
    "ignore:.*keyword arguments are deprecated:DeprecationWarning"
)


@pytest.fixture
def redis_srv(tmp_path: Path) -> Iterator[RedisServer]:
    with redis_server(tmp_path) as server:
        yield server


async def health_until(
    client: httpx.AsyncClient, base: str, status: str, timeout: float = 10.0
) -> dict[str, Any]:
    """The health answer once its status is ``status`` (the Redis check is cached for 1 s)."""
    deadline = time.monotonic() + timeout
    while True:
        response = await client.get(f"{base}/api/health")
        assert response.status_code == 200, response.text  # liveness never fails
        body: dict[str, Any] = response.json()
        if body["data"]["status"] == status or time.monotonic() > deadline:
            return body
        await anyio.sleep(0.1)


async def test_redis_down_degrades_health_fails_readiness_and_chat_cleanly(
    redis_srv: RedisServer,
) -> None:
    ids = {"user_id": "ada", "session_id": uuid.uuid4().hex}
    with service_process("--redis-url", redis_srv.url) as (_, base):
        async with httpx.AsyncClient(timeout=20) as client:
            healthy = await health_until(client, base, "healthy")
            ready = await client.get(f"{base}/api/ready")
            first = await client.post(f"{base}/api/chat", json={"message": "hi", **ids})

            redis_srv.stop()
            degraded = await health_until(client, base, "degraded")
            not_ready = await client.get(f"{base}/api/ready")
            not_ready_too = await client.get(f"{base}/api/health", params={"ready": "1"})
            chat = await client.post(f"{base}/api/chat", json={"message": "hi", **ids})
            stream = await client.post(f"{base}/api/chat/stream", json={"message": "hi", **ids})

            redis_srv.start()
            again = await health_until(client, base, "healthy")
            ready_again = await client.get(f"{base}/api/ready")
            chat_again = await client.post(f"{base}/api/chat", json={"message": "hi", **ids})

    assert healthy["success"] is True
    assert healthy["data"]["checks"] == {"model": "ok", "redis": "ok"}
    assert ready.status_code == 200 and ready.json()["data"]["status"] == "healthy"
    assert first.status_code == 200, first.text

    assert degraded["success"] is True  # liveness: the process is fine
    assert degraded["data"]["checks"] == {"model": "ok", "redis": "down"}
    for probe in (not_ready, not_ready_too):
        assert probe.status_code == 503
        assert probe.headers["retry-after"] == "5"
        body = probe.json()
        assert body["success"] is False
        assert body["data"]["status"] == "degraded"
        assert body["data"]["checks"]["redis"] == "down"
        assert body["error"]["code"] == "unavailable"
        assert body["error"]["message"] == "not ready: redis down"
        assert body["error"]["request_id"] == probe.headers["x-request-id"]
        assert str(redis_srv.port) not in probe.text  # the reason is in the log only
    for refused in (chat, stream):  # the same status on both chat endpoints, not a 500
        assert refused.status_code == 503, refused.text
        assert refused.headers["retry-after"] == "5"
        assert refused.json()["error"]["code"] == "unavailable"

    assert again["data"]["checks"] == {"model": "ok", "redis": "ok"}
    assert ready_again.status_code == 200
    assert chat_again.status_code == 200, chat_again.text


async def test_a_model_endpoint_that_went_away_degrades_health_until_it_answers_again(
    server: FakeOpenAIServer,
) -> None:
    server.script(Stream(text_stream(["Hello."])), Stream(text_stream(["Back again."])))
    args = ("--model", "openai/test", "--api-base", server.base_url, "--api-key", "sk-test")
    with service_process(*args) as (_, base):
        async with httpx.AsyncClient(timeout=30) as client:
            first = await client.post(f"{base}/api/chat", json={"message": "hi"})
            healthy = await health_until(client, base, "healthy")

            await server.stop()
            failed = await client.post(f"{base}/api/chat", json={"message": "hi"})
            failed_stream = await client.post(f"{base}/api/chat/stream", json={"message": "hi"})
            degraded = await health_until(client, base, "degraded")
            not_ready = await client.get(f"{base}/api/ready")

            await server.start()  # on the same port
            back = await client.post(f"{base}/api/chat", json={"message": "hi"})
            again = await health_until(client, base, "healthy")
            ready_again = await client.get(f"{base}/api/ready")

    assert first.status_code == 200 and first.json()["content"] == "Hello."
    assert healthy["data"]["checks"] == {"model": "ok"}

    for response in (failed, failed_stream):  # unreachable before any text: an HTTP status
        assert response.status_code == 502, response.text
        error = response.json()["error"]
        assert error["code"] == "llm_error"
        assert error["message"] == (
            "The model call failed; the server log has the details "
            f"(request id {response.headers['x-request-id']})."
        )
        assert str(server.port) not in response.text
    assert degraded["data"]["checks"] == {"model": "down"}
    assert not_ready.status_code == 503
    assert not_ready.json()["error"]["message"] == "not ready: model down"

    assert back.status_code == 200 and back.json()["content"] == "Back again."
    assert again["data"]["checks"] == {"model": "ok"}
    assert ready_again.status_code == 200


async def test_a_refusal_of_one_request_does_not_count_as_the_model_being_down() -> None:
    executor = make_executor(
        [
            ModelError("context too long", status_code=400),
            ModelError("rate limited by the provider", status_code=429, retryable=True),
        ],
        model_retries=0,
    )

    async with serve(executor) as client:
        for _ in range(2):
            failed = await client.post("/api/chat", json={"message": "hi"})
            assert failed.status_code == 502
            health = (await client.get("/api/health")).json()
            assert health["data"]["status"] == "healthy"
            assert health["data"]["checks"] == {"model": "ok"}
        ready = await client.get("/api/ready")

    assert ready.status_code == 200


@pytest.mark.parametrize(
    "failure",
    [
        ModelError("connection refused", retryable=True),
        ModelError("HTTP 503: overloaded", status_code=503, retryable=True),
        ModelError("HTTP 401: invalid key", status_code=401),
    ],
    ids=["unreachable", "5xx", "credentials refused"],
)
async def test_the_model_is_down_after_an_outage_like_failure_and_up_after_a_success(
    failure: ModelError,
) -> None:
    executor = make_executor([failure, "fine"], model_retries=0)

    async with serve(executor) as client:
        await client.post("/api/chat", json={"message": "hi"})
        down = await client.get("/api/health")
        not_ready = await client.get("/api/ready")
        await client.post("/api/chat", json={"message": "hi"})
        up = await client.get("/api/health")

    assert down.json()["data"]["status"] == "degraded"
    assert down.json()["data"]["checks"] == {"model": "down"}
    assert not_ready.status_code == 503
    assert up.json()["data"]["status"] == "healthy"


async def test_a_model_failure_counts_only_for_the_hold_time() -> None:
    executor = make_executor([ModelError("connection refused", retryable=True)], model_retries=0)
    executor.model_health.hold_seconds = 0.2

    async with serve(executor) as client:
        await client.post("/api/chat", json={"message": "hi"})
        down = (await client.get("/api/health")).json()["data"]["checks"]
        await anyio.sleep(0.3)
        later = (await client.get("/api/health")).json()["data"]["checks"]

    # a replica taken out of rotation gets no call that could clear the flag: it comes back
    assert (down, later) == ({"model": "down"}, {"model": "ok"})


async def test_health_and_readiness_need_no_api_key() -> None:
    from server import Settings

    async with serve(make_executor([]), Settings(api_keys={"k": "alice"})) as client:
        statuses = [(await client.get(path)).status_code for path in ("/api/health", "/api/ready")]

    assert statuses == [200, 200]


class ProbedStore(InMemoryConversationStore):
    """A conversation store with a health check, as the Redis parts have: ``ping()`` under the
    check name ``redis``; it can be made to hang, as a Redis that stopped answering would."""

    health_check = "redis"

    def __init__(self) -> None:
        super().__init__()
        self.pings = 0
        self.hang = False

    async def ping(self) -> None:
        self.pings += 1
        if self.hang:
            await anyio.sleep(30)


async def test_a_redis_that_hangs_is_down_after_half_a_second_and_probes_share_pings(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = ProbedStore()
    executor = make_executor([], memory=store)

    async with serve(executor) as client:
        first = await client.get("/api/health")
        store.hang = True
        await anyio.sleep(1.05)  # the last answer is reused for one second
        started = time.monotonic()
        probes = []

        async def probe() -> None:
            probes.append(await client.get("/api/ready"))

        async with anyio.create_task_group() as tg:
            for _ in range(10):
                tg.start_soon(probe)
        waited = time.monotonic() - started

    assert first.json()["data"]["checks"] == {"model": "ok", "redis": "ok"}
    assert [p.status_code for p in probes] == [503] * 10
    assert waited < 2  # one round of pings, bounded by its 0.5 s timeout
    assert store.pings == 2  # the first probe's and the one round the ten shared
    downs = [r for r in caplog.records if r.getMessage().startswith("health: redis is down")]
    assert len(downs) == 1 and "no answer within 0.5 s" in downs[0].getMessage()
