"""Two service processes (replicas) against one real Redis, as behind a load balancer.

Each test starts ``python -m server --redis-url ...`` twice and sends requests to both: rate
limits hold across them, a conversation moves between them, a frontend tool's answer posted to
one reaches the stream held by the other, a replica killed mid-stream leaves a well-formed
history, and a Redis restart is survived without restarting the replicas.
"""

from __future__ import annotations

import json
import signal
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from httpx_sse import EventSource, aconnect_sse

from agent_executor import AssistantMessage, ToolMessage, UserMessage
from agent_executor.redis import RedisConversationStore

from .fakes.openai_server import FakeOpenAIServer, Stream, text_stream, tool_call_stream
from .redis_server import RedisServer, redis_server
from .server_helpers import service_process

BROWSER_TZ = {
    "name": "get_browser_timezone",
    "description": "The time zone of the user's browser (IANA name).",
    "parameters": {"type": "object", "properties": {}},
}


@pytest.fixture
def redis_srv(tmp_path: Path) -> Iterator[RedisServer]:
    with redis_server(tmp_path) as server:
        yield server


@pytest.fixture
def replicas(redis_srv: RedisServer) -> Iterator[list[str]]:
    """Two replicas on the demo model, sharing Redis and a 3/minute rate limit."""
    args = ("--redis-url", redis_srv.url, "--rate-limit", "3/minute")
    with ExitStack() as stack:
        yield [stack.enter_context(service_process(*args))[1] for _ in range(2)]


def session() -> dict[str, str]:
    return {"user_id": f"user-{uuid.uuid4().hex[:8]}", "session_id": uuid.uuid4().hex}


@asynccontextmanager
async def chat_stream(
    client: httpx.AsyncClient, base: str, body: dict[str, Any]
) -> AsyncIterator[EventSource]:
    async with aconnect_sse(
        client, "POST", f"{base}/api/chat/stream", json={"events": "json", **body}
    ) as source:
        assert source.response.status_code == 200
        yield source


def data(event: Any) -> dict[str, Any]:
    parsed = json.loads(event.data)
    assert isinstance(parsed, dict)
    return parsed


async def test_a_rate_limit_of_3_per_minute_holds_across_both_replicas(
    replicas: list[str],
) -> None:
    a, b = replicas
    statuses = []
    async with httpx.AsyncClient(timeout=20) as client:
        for base in (a, b, a, b, a, b):
            response = await client.post(
                f"{base}/api/chat", json={"message": "hello", "user_id": "bob"}
            )
            statuses.append(response.status_code)
            if response.status_code == 429:
                assert 0 < int(response.headers["Retry-After"]) <= 20
                assert response.json()["error"]["code"] == "rate_limited"
        other = await client.post(f"{b}/api/chat", json={"message": "hi", "user_id": "carol"})

    assert statuses == [200, 200, 200, 429, 429, 429]
    assert other.status_code == 200


async def test_a_conversation_started_on_one_replica_continues_on_the_other(
    redis_srv: RedisServer, server: FakeOpenAIServer
) -> None:
    server.script(
        Stream(tool_call_stream([("c1", "get_weather", {"city": "Paris"})])),
        Stream(text_stream(["Ada, it is sunny in Paris."])),
        Stream(text_stream(["You are Ada and asked about Paris."])),
    )
    args = ("--redis-url", redis_srv.url, "--model", "openai/test", "--api-base", server.base_url)
    ids = session()
    with service_process(*args) as (_, a), service_process(*args) as (_, b):
        async with httpx.AsyncClient(timeout=20) as client:
            first = await client.post(
                f"{a}/api/chat", json={"message": "I am Ada. Weather in Paris?", **ids}
            )
            second = await client.post(f"{b}/api/chat", json={"message": "Who am I?", **ids})
            url = f"/api/sessions/{ids['session_id']}"
            owner = {"user_id": ids["user_id"]}
            forgotten = await client.delete(a + url, params=owner)
            forgotten_again = await client.delete(b + url, params=owner)

    assert first.status_code == 200 and second.status_code == 200, second.text
    assert second.json()["content"] == "You are Ada and asked about Paris."
    seen = server.requests[2]["messages"]
    assert [m["role"] for m in seen] == ["user", "assistant", "tool", "assistant", "user"]
    assert seen[0]["content"] == "I am Ada. Weather in Paris?"
    assert seen[1]["tool_calls"][0]["function"]["name"] == "get_weather"
    assert seen[2]["tool_call_id"] == seen[1]["tool_calls"][0]["id"]
    assert seen[3]["content"] == "Ada, it is sunny in Paris."
    assert forgotten.status_code == 200  # deleted on A...
    assert forgotten_again.status_code == 404  # ...is gone for B too


async def test_a_frontend_tool_answered_through_the_other_replica_reaches_the_stream(
    replicas: list[str],
) -> None:
    a, b = replicas
    ids = session()
    body = {"message": "What is my time zone?", "tools": [BROWSER_TZ], **ids}
    answers = []
    async with httpx.AsyncClient(timeout=20) as client, chat_stream(client, a, body) as source:
        texts, done = [], None
        async for event in source.aiter_sse():
            if event.event == "tool_call":
                call_id = data(event)["call_id"]
                for base, user, result in [
                    (b, "mallory", "UTC"),  # someone else: 404
                    (b, ids["user_id"], "Asia/Tokyo"),  # the run's user: delivered
                    (a, ids["user_id"], "UTC"),  # a replay, on either replica: 409
                ]:
                    response = await client.post(
                        f"{base}/api/chat/tool-result",
                        json={"call_id": call_id, "result": result, "user_id": user},
                    )
                    answers.append(response.status_code)
            elif event.event == "message":
                texts.append(data(event)["text"])
            elif event.event == "done":
                done = data(event)

    assert answers == [404, 200, 409]
    assert done is not None and done["finish_reason"] == "stop"
    assert "Your browser says your time zone is Asia/Tokyo." in "".join(texts)


async def test_killing_a_replica_mid_stream_leaves_the_last_complete_turn(
    redis_srv: RedisServer,
) -> None:
    ids = session()
    with (
        service_process("--redis-url", redis_srv.url) as (process_a, a),
        service_process("--redis-url", redis_srv.url) as (_, b),
    ):
        async with httpx.AsyncClient(timeout=20) as client:
            first = await client.post(f"{a}/api/chat", json={"message": "Weather in Paris?", **ids})
            assert first.status_code == 200
            body = {"message": "What is my time zone?", "tools": [BROWSER_TZ], **ids}
            async with chat_stream(client, a, body) as source:
                async for event in source.aiter_sse():
                    if event.event == "tool_call":
                        call_id = data(event)["call_id"]
                        process_a.send_signal(signal.SIGKILL)
                        process_a.wait(10)
                        break
            late = await client.post(
                f"{b}/api/chat/tool-result",
                json={"call_id": call_id, "result": "UTC", "user_id": ids["user_id"]},
            )
            store = RedisConversationStore(redis_srv.url)
            try:
                after_kill = await store.load(ids["user_id"], ids["session_id"])
                third = await client.post(
                    f"{b}/api/chat", json={"message": "And the time in Tokyo?", **ids}
                )
                after_b = await store.load(ids["user_id"], ids["session_id"])
            finally:
                await store.aclose()

    assert late.status_code == 404  # nobody waits for that call any more
    assert [type(m) for m in after_kill] == [
        UserMessage,
        AssistantMessage,
        ToolMessage,
        AssistantMessage,
    ]
    assert after_kill[0].content == "Weather in Paris?"
    assert third.status_code == 200
    assert after_b[:4] == after_kill
    assert [m.role for m in after_b[4:]] == ["user", "assistant", "tool", "assistant"]
    assert after_b[4].content == "And the time in Tokyo?"


async def test_redis_down_gives_clear_errors_and_its_return_needs_no_restart(
    redis_srv: RedisServer, replicas: list[str]
) -> None:
    a, b = replicas
    ids = session()
    async with httpx.AsyncClient(timeout=30) as client:
        assert (
            await client.post(f"{a}/api/chat", json={"message": "hi", **ids})
        ).status_code == 200

        redis_srv.stop()
        refused = await client.post(
            f"{a}/api/chat/stream", json={"message": "still there?", "events": "json", **ids}
        )
        assert refused.status_code == 503, refused.text  # refused before any stream started
        assert refused.headers["retry-after"] == "5"
        error = refused.json()["error"]
        assert error["code"] == "unavailable" and error["retry_after"] == 5
        assert "Redis is unavailable" in error["message"]
        assert str(redis_srv.port) not in refused.text  # the reason stays in the log
        answer = await client.post(
            f"{b}/api/chat/tool-result",
            json={"call_id": "x", "result": 1, "user_id": ids["user_id"]},
        )
        assert answer.status_code == 503
        assert answer.json()["error"]["code"] == "unavailable"
        assert "Redis" in answer.json()["error"]["message"]

        redis_srv.start()  # empty: it keeps nothing on disk
        again = await client.post(f"{b}/api/chat", json={"message": "hi", **ids})
        assert again.status_code == 200, again.text

        body = {"message": "What is my time zone?", "tools": [BROWSER_TZ], **ids}
        texts = []
        async with chat_stream(client, a, body) as source:
            async for event in source.aiter_sse():
                if event.event == "tool_call":
                    delivered = await client.post(
                        f"{b}/api/chat/tool-result",
                        json={
                            "call_id": data(event)["call_id"],
                            "result": "Europe/Oslo",
                            "user_id": ids["user_id"],
                        },
                    )
                    assert delivered.status_code == 200, delivered.text
                elif event.event == "message":
                    texts.append(data(event)["text"])
    assert "Your browser says your time zone is Europe/Oslo." in "".join(texts)


async def test_history_compression_on_redis_is_seen_by_every_replica(
    redis_srv: RedisServer, server: FakeOpenAIServer
) -> None:
    server.script(
        Stream(text_stream(["Noted: Ada, London, engines. " * 6])),
        Stream(text_stream(["Noted: green tea, no sugar. " * 6])),
        Stream(text_stream(["Ada lives in London and likes green tea."])),  # the summary
        Stream(text_stream(["Green tea for Ada."])),
    )
    args = (
        *("--redis-url", redis_srv.url, "--model", "openai/test", "--api-base", server.base_url),
        *("--history-max-tokens", "150", "--history-keep-tokens", "60"),
    )
    ids = session()
    prompts = [
        "I am Ada, I live in London and I write about the Analytical Engine. " * 3,
        "I prefer green tea to coffee and take it without sugar, thank you. " * 3,
        "What should you bring me?",
    ]
    with service_process(*args) as (_, a), service_process(*args) as (_, b):
        async with httpx.AsyncClient(timeout=20) as client:
            for base, prompt in zip((a, b, a), prompts, strict=True):
                response = await client.post(f"{base}/api/chat", json={"message": prompt, **ids})
                assert response.status_code == 200, response.text
            metrics = (await client.get(f"{a}/metrics")).text
        store = RedisConversationStore(redis_srv.url)
        try:
            stored = await store.load(ids["user_id"], ids["session_id"])
        finally:
            await store.aclose()

    assert len(server.requests) == 4
    summary_request = server.requests[2]
    assert "tools" not in summary_request or not summary_request["tools"]
    assert "Analytical Engine" in json.dumps(summary_request["messages"])
    seen = server.requests[3]["messages"]
    assert [m["role"] for m in seen] == ["system", "user", "assistant", "user"]
    assert "Ada lives in London and likes green tea." in seen[0]["content"]
    assert seen[1]["content"] == prompts[1]
    assert [m.role for m in stored] == ["system", "user", "assistant", "user", "assistant"]
    assert stored[0].content == seen[0]["content"]
    assert "agent_executor_history_compressions_total 1.0" in metrics


APPROVAL_TOOLS = '''
import os

from agent_executor import tool


@tool(requires_approval=True)
def delete_file(path: str) -> str:
    """Delete a file (a person approves each call)."""
    with open(os.environ["DELETED_LOG"], "a", encoding="utf-8") as log:
        log.write(path + "\\n")
    return f"deleted {path}"
'''


async def test_a_run_paused_on_one_replica_resumes_on_a_restarted_one(
    tmp_path: Path, redis_srv: RedisServer, server: FakeOpenAIServer
) -> None:
    tools = tmp_path / "approval_tools.py"
    tools.write_text(APPROVAL_TOOLS, encoding="utf-8")
    log = tmp_path / "deleted.log"
    server.script(
        Stream(tool_call_stream([("d1", "delete_file", {"path": "a.txt"})])),
        Stream(text_stream(["Deleted a.txt."])),
    )
    args = (
        *("--redis-url", redis_srv.url, "--model", "openai/test", "--api-base", server.base_url),
        *("--tools", str(tools)),
    )
    env = {"DELETED_LOG": str(log)}
    ids = session()
    async with httpx.AsyncClient(timeout=20) as client:
        with service_process(*args, env=env) as (_, a):
            paused = await client.post(f"{a}/api/chat", json={"message": "delete a.txt", **ids})
        # replica A is gone; B and a restarted A share nothing with it but Redis
        with service_process(*args, env=env) as (_, b), service_process(*args, env=env) as (_, c):
            [pending] = paused.json()["pending_approvals"]
            decision = {"call_id": "d1", "approved": True}
            forged = await client.post(
                f"{b}/api/chat",
                json={**ids, "approvals": [{**decision, "approval_token": "x" * 43}]},
            )
            resumed = await client.post(
                f"{c}/api/chat",
                json={
                    **ids,
                    "approvals": [{**decision, "approval_token": pending["approval_token"]}],
                },
            )
            replayed = await client.post(
                f"{b}/api/chat",
                json={
                    **ids,
                    "approvals": [{**decision, "approval_token": pending["approval_token"]}],
                },
            )

    assert paused.json()["finish_reason"] == "waiting_for_approval"
    assert pending["tool"] == "delete_file" and pending["arguments"] == {"path": "a.txt"}
    assert forged.status_code == 400, forged.text
    assert resumed.status_code == 200, resumed.text
    assert resumed.json()["content"] == "Deleted a.txt."
    assert replayed.status_code == 400  # nothing waits any more
    assert log.read_text(encoding="utf-8") == "a.txt\n"  # run once, after the approval
