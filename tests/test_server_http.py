"""The JSON side of the service: bad input, auth, CORS, agents, health, metrics, OpenAPI."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from agent_executor import (
    AgentExecutor,
    AssistantMessage,
    ModelError,
    ScriptedModel,
    SystemMessage,
    UserMessage,
)
from server import Settings

from .helpers import make_executor
from .server_helpers import serve

BAD_BODIES: list[tuple[str, Any, str]] = [
    ("invalid JSON", b"{not json", "the body is not valid JSON"),
    ("array body", b"[1, 2]", "the body must be a JSON object"),
    ("string body", b'"hello"', "the body must be a JSON object"),
    ("null body", b"null", "the body must be a JSON object"),
    ("empty body", b"", "the body is not valid JSON"),
    ("no message", {"session_id": "s"}, "give 'message'"),
    ("empty message", {"message": ""}, "'message' must not be empty"),
    ("blank message", {"message": " \n\t"}, "'message' must not be empty"),
    ("message not a string", {"message": 5}, "message: Input should be a valid string"),
    (
        "session_id not a string",
        {"message": "hi", "session_id": 3},
        "session_id: Input should be a valid string",
    ),
    (
        "metadata not an object",
        {"message": "hi", "metadata": "x"},
        "metadata: Input should be a valid dictionary",
    ),
    ("unknown events mode", {"message": "hi", "events": "xml"}, "events: Input should be"),
    ("unknown field", {"message": "hi", "colour": "red"}, "colour: Extra inputs are not permitted"),
    ("empty messages", {"messages": []}, "give 'message'"),
    (
        "messages ending with the assistant",
        {"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]},
        "the last item of 'messages' must be a non-empty user message",
    ),
    ("message without role", {"messages": [{"content": "a"}]}, "exactly one of 'role' or 'type'"),
    ("unknown role", {"messages": [{"role": "robot", "content": "a"}]}, "messages.0.role"),
    ("unknown agent", {"message": "hi", "agent": "nobody"}, "unknown agent 'nobody'"),
]


@pytest.mark.parametrize("path", ["/api/chat/stream", "/api/chat"])
@pytest.mark.parametrize(("case", "body", "error"), BAD_BODIES, ids=[c[0] for c in BAD_BODIES])
async def test_bad_input_is_a_400_with_a_json_error(
    path: str, case: str, body: Any, error: str
) -> None:
    executor = make_executor([])

    async with serve(executor) as client:
        if isinstance(body, bytes):
            response = await client.post(
                path, content=body, headers={"Content-Type": "application/json"}
            )
        else:
            response = await client.post(path, json=body)

    assert response.status_code == 400, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"}
    assert body["error"]["code"] == "invalid_input"
    assert error in body["error"]["message"]
    assert body["error"]["request_id"] == response.headers["x-request-id"]
    assert executor.model.requests == []  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("query", "error"),
    [
        ({}, "give 'message'"),
        ({"message": ""}, "'message' must not be empty"),
        ({"message": "hi", "events": "yaml"}, "events: Input should be"),
        ({"message": "hi", "metadata": "{oops"}, "metadata: must be a JSON object"),
        ([("message", "a"), ("message", "b")], "given more than once: message"),
    ],
)
async def test_bad_query_strings_are_error_events_event_source_can_read(
    query: Any, error: str
) -> None:
    """An ``EventSource`` cannot read a 400: on GET, bad input is a stream of ``error`` (in
    ``json`` mode with its code) and ``done``."""
    params = list(query.items() if isinstance(query, dict) else query)
    as_json = all(name != "events" for name, _ in params)  # a bad "events" is text mode
    if as_json:
        params.append(("events", "json"))
    async with serve(make_executor([])) as client:
        response = await client.get("/api/chat/stream", params=params)

    assert response.status_code == 200
    assert response.headers["content-type"] == "text/event-stream"
    first, done = [b for b in response.text.split("\n\n") if b]
    assert "event: error" in first and "event: done" in done
    data = first.split("data: ", 1)[1]
    if as_json:
        fields = json.loads(data)
        assert fields["code"] == "invalid_input"
        data = fields["message"]
    assert error in data


@pytest.mark.parametrize("path", ["/api/chat", "/api/chat/stream"])
async def test_oversize_bodies_are_413(path: str) -> None:
    async with serve(make_executor([]), Settings(max_body_bytes=1000)) as client:
        response = await client.post(path, json={"message": "x" * 2000})

    assert response.status_code == 413
    error = response.json()["error"]
    assert error["code"] == "payload_too_large"
    assert "1000" in error["message"]


@pytest.mark.parametrize(
    ("method", "path", "status", "code"),
    [
        ("GET", "/nowhere", 404, "not_found"),
        ("GET", "/api/nowhere", 404, "not_found"),
        ("DELETE", "/api/chat", 405, "method_not_allowed"),
        ("PUT", "/api/chat/stream", 405, "method_not_allowed"),
        ("POST", "/api/health", 405, "method_not_allowed"),
    ],
)
async def test_unknown_routes_and_methods_answer_json(
    method: str, path: str, status: int, code: str
) -> None:
    async with serve(make_executor([])) as client:
        response = await client.request(method, path)

    assert response.status_code == status
    assert response.headers["content-type"].startswith("application/json")
    error = response.json()["error"]
    assert error["code"] == code
    assert path in error["message"]
    assert error["request_id"] == response.headers["x-request-id"]


async def test_chat_returns_the_agent_result() -> None:
    executor = make_executor(["Hello there."])

    async with serve(executor) as client:
        response = await client.post("/api/chat", json={"message": "hi"})

    assert response.status_code == 200
    body = response.json()
    assert body["success"] is True
    assert body["content"] == "Hello there."
    assert body["finish_reason"] == "stop"
    assert body["error"] is None


async def test_a_failed_run_maps_its_code_to_a_status() -> None:
    executor = make_executor([ModelError("provider down", status_code=401)])

    async with serve(executor) as client:
        response = await client.post(
            "/api/chat", json={"message": "hi"}, headers={"X-Request-Id": "req-7"}
        )

    assert response.status_code == 502
    assert response.json() == {
        "error": {
            "code": "llm_error",
            "message": "The model call failed; the server log has the details (request id req-7).",
            "request_id": "req-7",
        }
    }


async def test_messages_become_the_explicit_conversation() -> None:
    executor = make_executor(["ok"])

    async with serve(executor) as client:
        await client.post(
            "/api/chat",
            json={
                "session_id": "s",
                "messages": [
                    {"type": "system", "content": "Be terse."},
                    {"type": "human", "content": "Hi"},
                    {"role": "assistant", "content": "Hello"},
                    {"role": "user", "content": "How are you?"},
                ],
            },
        )

    assert executor.model.requests[0].messages == [  # type: ignore[attr-defined]
        SystemMessage(content="Be terse."),
        UserMessage(content="Hi"),
        AssistantMessage(content="Hello"),
        UserMessage(content="How are you?"),
    ]


async def test_session_memory_through_the_service() -> None:
    executor = make_executor(["first answer", "second answer"])

    async with serve(executor) as client:
        await client.post("/api/chat", json={"message": "one", "session_id": "s", "user_id": "u"})
        await client.post(
            "/api/chat/stream", json={"message": "two", "session_id": "s", "user_id": "u"}
        )

    assert executor.model.requests[1].messages == [  # type: ignore[attr-defined]
        UserMessage(content="one"),
        AssistantMessage(content="first answer"),
        UserMessage(content="two"),
    ]


async def test_the_agent_field_routes_to_a_named_agent() -> None:
    support = make_executor(["from support"], name="support")
    sales = AgentExecutor(
        model=ScriptedModel(["from sales"]), name="sales", metrics=support.metrics.registry
    )

    async with serve(
        {"support": support, "sales": sales}, Settings(default_agent="support")
    ) as client:
        default = await client.post("/api/chat", json={"message": "hi"})
        named = await client.post("/api/chat", json={"message": "hi", "agent": "sales"})
        unknown = await client.post("/api/chat", json={"message": "hi", "agent": "legal"})

    assert default.json()["content"] == "from support"
    assert named.json()["content"] == "from sales"
    assert unknown.status_code == 400
    assert unknown.json()["error"]["message"] == (
        "unknown agent 'legal'; configured agents: sales, support"
    )


KEYS = Settings(api_keys={"key-alice": "alice", "key-bob": "bob"})


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer wrong"},
        {"Authorization": "Basic key-alice"},
        {"Authorization": "key-alice"},
    ],
)
async def test_with_api_keys_requests_without_a_valid_key_are_401(headers: dict[str, str]) -> None:
    async with serve(make_executor([]), KEYS) as client:
        for path in ("/api/chat", "/api/chat/stream"):
            response = await client.post(path, json={"message": "hi"}, headers=headers)
            assert response.status_code == 401
            assert response.json() == {
                "error": {
                    "code": "unauthorized",
                    "message": "missing or invalid API key",
                    "request_id": response.headers["x-request-id"],
                }
            }
            assert response.headers["www-authenticate"] == "Bearer"


async def test_the_user_id_comes_from_the_key_not_the_request() -> None:
    executor = make_executor(["for alice", "again"])

    async with serve(executor, KEYS) as client:
        auth = {"Authorization": "Bearer key-alice", "X-User-Id": "mallory"}
        first = await client.post(
            "/api/chat", headers=auth, json={"message": "hi", "session_id": "s", "user_id": "bob"}
        )
        assert first.status_code == 200
        health = await client.get("/api/health")

    assert health.status_code == 200
    assert await executor.memory.load("alice", "s") != []
    assert await executor.memory.load("bob", "s") == []
    assert await executor.memory.load("mallory", "s") == []


async def test_without_keys_the_user_id_header_wins_over_the_body() -> None:
    executor = make_executor(["x"])

    async with serve(executor) as client:
        await client.post(
            "/api/chat",
            headers={"X-User-Id": "carol"},
            json={"message": "hi", "session_id": "s", "user_id": "dave"},
        )

    assert await executor.memory.load("carol", "s") != []


async def test_cors_is_off_by_default_and_configurable() -> None:
    async with serve(make_executor(["a"])) as client:
        closed = await client.get("/api/health", headers={"Origin": "https://app.example"})
    assert "access-control-allow-origin" not in closed.headers

    settings = Settings(cors_origins=("https://app.example",))
    async with serve(make_executor(["a"]), settings) as client:
        allowed = await client.get("/api/health", headers={"Origin": "https://app.example"})
        other = await client.get("/api/health", headers={"Origin": "https://evil.example"})
        preflight = await client.options(
            "/api/chat/stream",
            headers={"Origin": "https://app.example", "Access-Control-Request-Method": "POST"},
        )

    assert allowed.headers["access-control-allow-origin"] == "https://app.example"
    assert "access-control-allow-origin" not in other.headers
    assert preflight.status_code == 204
    assert "POST" in preflight.headers["access-control-allow-methods"]


async def test_health_has_the_documented_shape() -> None:
    async with serve(make_executor([])) as client:
        body = (await client.get("/api/health")).json()

    assert body["success"] is True
    assert set(body) == {"success", "data"}
    assert body["data"]["status"] == "healthy"
    assert body["data"]["timestamp"].endswith("+00:00")
    assert body["data"]["uptime"] >= 0
    assert body["data"]["checks"] == {"model": "ok"}


async def test_metrics_are_served_in_prometheus_format() -> None:
    executor = make_executor(["a"])

    async with serve(executor) as client:
        await client.post("/api/chat", json={"message": "hi"})
        response = await client.get("/metrics")

    assert response.headers["content-type"].startswith("text/plain")
    families = {f.name: f for f in text_string_to_metric_families(response.text)}
    assert "agent_executor_requests" in families
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for s in families["agent_executor_requests"].samples
    }
    assert (
        samples[("agent_executor_requests_total", (("mode", "execute"), ("outcome", "success")))]
        == 1
    )
    assert "agent_executor_sse_streams_active" in families
    assert "agent_executor_build_info" in families


async def test_openapi_describes_the_json_endpoints() -> None:
    async with serve(make_executor([])) as client:
        document = (await client.get("/openapi.json")).json()

    assert document["openapi"].startswith("3.")
    assert set(document["paths"]) >= {"/api/chat", "/api/chat/stream", "/api/health", "/metrics"}
    schemas = document["components"]["schemas"]
    assert schemas["ChatRequest"]["properties"]["events"]["enum"] == ["text", "json"]
    assert "AgentResult" in schemas and "ErrorResponse" in schemas
    post = document["paths"]["/api/chat"]["post"]
    assert post["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/ChatRequest"
    }


async def test_the_chat_page_is_served() -> None:
    async with serve(make_executor([])) as client:
        response = await client.get("/")

    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    assert "api/chat/stream" in response.text


async def test_the_service_works_mounted_under_a_prefix() -> None:
    from aiohttp import web
    from aiohttp.test_utils import TestServer

    from server import create_app

    async def own_route(request: web.Request) -> web.Response:
        return web.json_response({"mine": True})

    root = web.Application()
    root.router.add_get("/", own_route)
    root.add_subapp("/agent/", create_app(make_executor(["hello"]), KEYS))
    server = TestServer(root, host="127.0.0.1")
    await server.start_server()
    try:
        async with httpx.AsyncClient(base_url=str(server.make_url("")), timeout=10) as client:
            mine = await client.get("/")
            unauthenticated = await client.post("/agent/api/chat", json={"message": "hi"})
            answered = await client.post(
                "/agent/api/chat",
                json={"message": "hi"},
                headers={"Authorization": "Bearer key-alice"},
            )
            health = await client.get("/agent/api/health")
            page = await client.get("/agent/")
    finally:
        await server.close()

    assert mine.json() == {"mine": True}
    assert unauthenticated.status_code == 401
    assert answered.json()["content"] == "hello"
    assert health.status_code == 200
    assert page.status_code == 200 and '"api/chat/stream"' in page.text
