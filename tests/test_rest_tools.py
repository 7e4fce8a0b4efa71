"""REST tools against a local aiohttp API that records what it receives: placement, headers,
URL injection, errors, timeouts, session reuse and OpenAPI, through the executor and the service."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import pytest
from aiohttp import web

from agent_executor import AgentCommand, ConfigurationError
from agent_executor.models.scripted import call, text_turn, tool_turn
from agent_executor.results import ToolCallRecord
from agent_executor.tools.rest import RestConnectionError, RestTool
from server.settings import Settings

from .fakes.local import serve_locally
from .helpers import make_executor
from .server_helpers import free_port, serve

ORDERS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "user_id": {"type": "string"},
        "limit": {"type": "integer"},
        "tag": {"type": "array", "items": {"type": "string"}},
        "item": {"type": "string"},
        "quantity": {"type": "integer"},
    },
    "required": ["user_id"],
}
CALLER_HEADERS = {
    "Authorization": "Bearer downstream-token",
    "X-Tenant-Id": "acme",
    "Cookie": "session=secret",
    "X-Other": "no",
}


@dataclass
class Seen:
    """One request as the API received it."""

    method: str
    route: str | None
    raw_path: str
    match_info: dict[str, str]
    query: list[tuple[str, str]]
    headers: dict[str, str]
    body: bytes
    port: int


class FakeApi:
    """A small REST API on 127.0.0.1 that records every request, whatever its path."""

    def __init__(self) -> None:
        self.requests: list[Seen] = []
        self.release = asyncio.Event()  # lets /slow finish when the test ends
        self.base = ""

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._record])
        app.router.add_get("/users/{user_id}/orders", self._orders, name="orders")
        app.router.add_post("/users/{user_id}/orders", self._orders, name="orders_post")
        app.router.add_get("/text", self._text, name="text")
        app.router.add_get("/login", self._login, name="login")
        app.router.add_get("/missing", self._missing, name="missing")
        app.router.add_get("/boom", self._boom, name="boom")
        app.router.add_get("/slow", self._slow, name="slow")
        return app

    @web.middleware
    async def _record(self, request: web.Request, handler: Any) -> web.StreamResponse:
        peer = request.transport.get_extra_info("peername") if request.transport else None
        self.requests.append(
            Seen(
                method=request.method,
                route=request.match_info.route.name,
                raw_path=request.raw_path.partition("?")[0],
                match_info=dict(request.match_info),
                query=list(request.query.items()),
                headers=dict(request.headers),
                body=await request.read(),
                port=peer[1] if peer else 0,
            )
        )
        response: web.StreamResponse = await handler(request)
        return response

    async def _orders(self, request: web.Request) -> web.Response:
        return web.json_response({"user_id": request.match_info["user_id"], "orders": [1, 2]})

    async def _text(self, request: web.Request) -> web.Response:
        return web.Response(text="plain answer")

    async def _login(self, request: web.Request) -> web.Response:
        response = web.Response(text="logged in")
        response.set_cookie("api_session", "for-one-user-only")
        return response

    async def _missing(self, request: web.Request) -> web.Response:
        return web.Response(status=404, text="no such thing. " * 500)

    async def _boom(self, request: web.Request) -> web.Response:
        return web.json_response({"error": "database down"}, status=500)

    async def _slow(self, request: web.Request) -> web.Response:
        await self.release.wait()
        return web.Response(text="too late")


@pytest.fixture
async def api() -> AsyncIterator[FakeApi]:
    fake = FakeApi()
    runner, port = await serve_locally(fake.app())
    fake.base = f"http://127.0.0.1:{port}"
    try:
        yield fake
    finally:
        fake.release.set()
        await runner.cleanup()


def orders_tool(base: str, method: str = "GET", **options: Any) -> RestTool:
    return RestTool(
        "orders",
        "A user's orders.",
        method,
        f"{base}/users/{{user_id}}/orders",
        ORDERS_SCHEMA,
        **options,
    )


def simple_tool(base: str, path: str, **options: Any) -> RestTool:
    schema = {"type": "object", "properties": {}}
    return RestTool("fetch", "Fetch something.", "GET", f"{base}{path}", schema, **options)


async def run_tool(
    tool: RestTool,
    *arguments: dict[str, Any] | str,
    headers: Mapping[str, str] | None = None,
) -> list[ToolCallRecord]:
    """One run in which the model calls ``tool`` once per turn with each of ``arguments``."""
    turns = [tool_turn(call(tool.name, args, id=f"c{i}")) for i, args in enumerate(arguments)]
    executor = make_executor([*turns, text_turn("done")], [tool])
    result = await executor.execute(AgentCommand(user_prompt="go"), request_headers=headers)
    assert len(result.tool_calls) == len(arguments)
    return list(result.tool_calls)


# ---- headers ---------------------------------------------------------------------------------


async def test_the_service_passes_on_only_the_allowlisted_headers(api: FakeApi) -> None:
    async with orders_tool(api.base) as tool:
        executor = make_executor(
            [tool_turn(call("orders", {"user_id": "u1"})), text_turn("done")], [tool]
        )
        async with serve(executor) as client:
            response = await client.post(
                "/api/chat", json={"message": "my orders"}, headers=CALLER_HEADERS
            )

    assert response.status_code == 200
    assert response.json()["tool_calls"][0]["status"] == "success"
    [seen] = api.requests
    assert seen.headers["Authorization"] == "Bearer downstream-token"
    assert seen.headers["X-Tenant-Id"] == "acme"
    assert "Cookie" not in seen.headers
    assert "X-Other" not in seen.headers


async def test_the_services_own_api_key_is_never_passed_on(api: FakeApi) -> None:
    async with orders_tool(api.base) as tool:
        executor = make_executor(
            [tool_turn(call("orders", {"user_id": "u1"})), text_turn("done")], [tool]
        )
        settings = Settings(api_keys={"service-key": "alice"})
        async with serve(executor, settings) as client:
            response = await client.post(
                "/api/chat",
                json={"message": "my orders"},
                headers={**CALLER_HEADERS, "Authorization": "Bearer service-key"},
            )

    assert response.status_code == 200
    [seen] = api.requests
    assert "Authorization" not in seen.headers
    assert seen.headers["X-Tenant-Id"] == "acme"


async def test_a_custom_allowlist_passes_on_only_its_names(api: FakeApi) -> None:
    async with orders_tool(api.base, pass_headers=["X-OTHER", "cookie"]) as tool:
        executor = make_executor(
            [tool_turn(call("orders", {"user_id": "u1"})), text_turn("done")], [tool]
        )
        async with serve(executor) as client:
            await client.post("/api/chat", json={"message": "my orders"}, headers=CALLER_HEADERS)

    [seen] = api.requests
    assert seen.headers["X-Other"] == "no"
    assert seen.headers["Cookie"] == "session=secret"
    assert "Authorization" not in seen.headers
    assert "X-Tenant-Id" not in seen.headers


async def test_static_headers_are_sent_and_win_over_the_callers(api: FakeApi) -> None:
    headers = {"Authorization": "Bearer service-key", "X-Api-Version": "2"}
    async with orders_tool(api.base, headers=headers) as tool:
        await run_tool(tool, {"user_id": "u1"}, headers=CALLER_HEADERS)

    [seen] = api.requests
    assert seen.headers["Authorization"] == "Bearer service-key"
    assert seen.headers["X-Api-Version"] == "2"
    assert seen.headers["X-Tenant-Id"] == "acme"


async def test_outside_a_run_no_caller_header_is_passed(api: FakeApi) -> None:
    async with orders_tool(api.base) as tool:
        answer = await tool.invoke(tool.parse_arguments('{"user_id": "u1"}'))

    assert answer == {"user_id": "u1", "orders": [1, 2]}
    assert "Authorization" not in api.requests[0].headers


async def test_cookies_set_by_the_api_are_not_kept_for_the_next_call(api: FakeApi) -> None:
    # aiohttp's usual cookie jar ignores cookies from IP addresses, so only a host name can
    # show that the tool keeps none; "localhost" still reaches the API on 127.0.0.1.
    named = api.base.replace("127.0.0.1", "localhost")
    async with simple_tool(named, "/login") as login, orders_tool(named) as orders:
        await run_tool(login, {}, {})  # twice: the same tool does not send it back either
        await run_tool(orders, {"user_id": "u1"})

    assert len(api.requests) == 3
    assert all("Cookie" not in seen.headers for seen in api.requests)


# ---- URL injection ---------------------------------------------------------------------------

INJECTIONS = [
    "../admin",
    "x/../../etc",
    "a?b=c",
    "%2e%2e",
    "@evil.example",
    "http://evil.example/admin",
    "#top",
    "café au lait",
]


@pytest.mark.parametrize("value", INJECTIONS)
async def test_a_path_parameter_stays_one_segment_of_the_intended_route(
    api: FakeApi, value: str
) -> None:
    async with orders_tool(api.base) as tool:
        [record] = await run_tool(tool, {"user_id": value, "limit": 1})

    assert record.status == "success", record.result
    [seen] = api.requests
    assert seen.route == "orders"
    assert seen.raw_path == f"/users/{quote(value, safe='')}/orders"
    assert seen.match_info == {"user_id": value}
    assert seen.query == [("limit", "1")]
    assert seen.headers["Host"] == api.base.removeprefix("http://")
    assert json.loads(record.result)["user_id"] == value


@pytest.mark.parametrize("value", ["..", ".", "", None, ["a", "b"]])
async def test_path_values_that_would_move_the_path_are_invalid(
    api: FakeApi, value: object
) -> None:
    async with orders_tool(api.base) as tool:
        [record] = await run_tool(tool, {"user_id": value})

    assert record.status == "invalid_arguments"
    assert record.result.startswith("invalid arguments: user_id: ")
    assert api.requests == []


@pytest.mark.parametrize(
    ("url", "error"),
    [
        ("http://{host}/x", "placeholders are allowed in the URL's path only"),
        ("http://127.0.0.1:{port}/x", "placeholders are allowed in the URL's path only"),
        ("http://127.0.0.1/x?q={user_id}", "placeholders are allowed in the URL's path only"),
        ("http://127.0.0.1/{user_id}#{user_id}", "placeholders are allowed in the URL's path"),
        ("http://127.0.0.1/{nope}", "placeholder 'nope' is not a property"),
        ("http://127.0.0.1/{user-id}", "malformed placeholder"),
        ("/users/{user_id}", "absolute http(s) URL"),
        ("file:///etc/{user_id}", "absolute http(s) URL"),
    ],
)
def test_templates_that_could_move_the_host_are_refused(url: str, error: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        RestTool("t", "d", "GET", url, ORDERS_SCHEMA)
    assert error in str(caught.value)


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"pass_headers": ["Host"]}, "never passed on: ['host']"),
        ({"pass_headers": ["authorization", "Transfer-Encoding"]}, "['transfer-encoding']"),
        ({"pass_headers": "authorization"}, "must be a list of names"),
        ({"headers": {"Content-Length": "1"}}, "'Content-Length' cannot be set"),
        ({"query": ["nope"]}, "'nope' is not a property"),
    ],
)
def test_headers_that_must_never_be_sent_are_refused(options: dict[str, Any], error: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        RestTool("t", "d", "GET", "http://127.0.0.1/x", ORDERS_SCHEMA, **options)
    assert error in str(caught.value)


# ---- arguments -------------------------------------------------------------------------------


async def test_get_puts_the_arguments_in_the_query_string(api: FakeApi) -> None:
    async with orders_tool(api.base) as tool:
        [record] = await run_tool(tool, {"user_id": "u1", "limit": 3, "tag": ["a b", "c&d"]})

    assert record.status == "success"
    [seen] = api.requests
    assert seen.method == "GET"
    assert seen.query == [("limit", "3"), ("tag", "a b"), ("tag", "c&d")]
    assert seen.body == b""


async def test_post_puts_the_arguments_in_a_json_body(api: FakeApi) -> None:
    async with orders_tool(api.base, "POST") as tool:
        [record] = await run_tool(tool, {"user_id": "u1", "item": "book", "quantity": 2})

    assert record.status == "success"
    [seen] = api.requests
    assert (seen.method, seen.route, seen.query) == ("POST", "orders_post", [])
    assert seen.headers["Content-Type"] == "application/json"
    assert json.loads(seen.body) == {"item": "book", "quantity": 2}


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({}, "user_id: Field required"),
        ({"user_id": "u1", "limit": "3"}, "limit: expected integer, got str"),
        ({"user_id": "u1", "limit": True}, "limit: expected integer, got bool"),
        ({"user_id": "u1", "admin": True}, "admin: Extra inputs are not permitted"),
        ('{"user_id": ', "arguments are not valid JSON"),
        ("[1]", "arguments must be a JSON object"),
    ],
)
async def test_invalid_arguments_never_reach_the_api(
    api: FakeApi, arguments: dict[str, Any] | str, problem: str
) -> None:
    async with orders_tool(api.base) as tool:
        [record] = await run_tool(tool, arguments)

    assert record.status == "invalid_arguments"
    assert problem in record.result
    assert api.requests == []


async def test_null_for_an_optional_argument_means_not_given(api: FakeApi) -> None:
    async with orders_tool(api.base) as tool:
        [record] = await run_tool(tool, {"user_id": "u1", "limit": None})

    assert record.status == "success"
    assert api.requests[0].query == []


# ---- answers, errors, timeouts ---------------------------------------------------------------


async def test_a_text_answer_is_the_result(api: FakeApi) -> None:
    async with simple_tool(api.base, "/text") as tool:
        [record] = await run_tool(tool, {})

    assert (record.status, record.result) == ("success", "plain answer")


async def test_a_404_is_an_error_with_the_status_and_a_bounded_excerpt(api: FakeApi) -> None:
    async with simple_tool(api.base, "/missing", max_body_chars=100) as tool:
        [record] = await run_tool(tool, {})

    assert record.status == "error"
    prefix = "RestHTTPError: HTTP 404 Not Found: no such thing. no such thing."
    assert record.result.startswith(prefix)
    assert record.result.endswith("…")
    assert len(record.result) == len("RestHTTPError: HTTP 404 Not Found: ") + 100 + 1


async def test_a_500_is_an_error_with_its_body(api: FakeApi) -> None:
    async with simple_tool(api.base, "/boom") as tool:
        [record] = await run_tool(tool, {})

    assert record.status == "error"
    assert record.result == (
        'RestHTTPError: HTTP 500 Internal Server Error: {"error": "database down"}'
    )


async def test_a_refused_connection_is_an_error_saying_so() -> None:
    port = free_port()
    tool = RestTool("down", "d", "GET", f"http://127.0.0.1:{port}/x", {"type": "object"})
    async with tool:
        [record] = await run_tool(tool, {})

    assert record.status == "error"
    assert record.result.startswith(
        f"RestConnectionError: GET http://127.0.0.1:{port}/x failed: ClientConnectorError: "
    )


async def test_a_slow_endpoint_past_the_tool_timeout_is_a_timeout(api: FakeApi) -> None:
    started = time.perf_counter()
    async with simple_tool(api.base, "/slow", timeout=0.3) as tool:
        [record] = await run_tool(tool, {})

    assert (record.status, record.result) == ("timeout", "fetch did not finish within 0.3 s")
    assert time.perf_counter() - started < 2


async def test_outside_a_run_the_client_timeout_still_bounds_the_call(api: FakeApi) -> None:
    async with simple_tool(api.base, "/slow", timeout=0.2) as tool:
        with pytest.raises(RestConnectionError, match=r"GET .*/slow: no answer within 0.2 s"):
            await tool.invoke({})


# ---- the session -----------------------------------------------------------------------------


async def test_one_session_and_connection_serve_every_call_until_aclose(api: FakeApi) -> None:
    tool = orders_tool(api.base)
    await run_tool(tool, {"user_id": "a"}, {"user_id": "b"})
    await run_tool(tool, {"user_id": "c"})
    first_ports = {seen.port for seen in api.requests}
    await tool.aclose()
    await tool.aclose()  # closing twice is harmless
    await run_tool(tool, {"user_id": "d"})
    await tool.aclose()

    assert len(api.requests) == 4
    assert len(first_ports) == 1
    assert api.requests[-1].port not in first_ports  # a new session, a new connection


# ---- OpenAPI ---------------------------------------------------------------------------------

SPEC: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "Shop", "version": "1"},
    "servers": [{"url": "https://evil.example"}],
    "paths": {
        "/users/{user_id}/orders": {
            "parameters": [{"$ref": "#/components/parameters/UserId"}],
            "get": {
                "operationId": "listOrders",
                "summary": "List a user's orders.",
                "parameters": [
                    {"name": "limit", "in": "query", "schema": {"type": "integer"}},
                    {"name": "X-Trace", "in": "header", "schema": {"type": "string"}},
                ],
            },
            "post": {
                "operationId": "createOrder",
                "summary": "Create an order.",
                "description": "The order is paid later.",
                "parameters": [
                    {
                        "name": "dry_run",
                        "in": "query",
                        "description": "Only check the order.",
                        "schema": {"type": "boolean"},
                    }
                ],
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/NewOrder"}}
                    },
                },
            },
        },
        "/upload": {
            "post": {
                "operationId": "upload",
                "requestBody": {"content": {"multipart/form-data": {"schema": {}}}},
            }
        },
    },
    "components": {
        "parameters": {
            "UserId": {
                "name": "user_id",
                "in": "path",
                "required": True,
                "description": "The user.",
                "schema": {"type": "string"},
            }
        },
        "schemas": {
            "NewOrder": {
                "type": "object",
                "properties": {"item": {"type": "string"}, "quantity": {"type": "integer"}},
                "required": ["item"],
            }
        },
    },
}


async def test_from_openapi_builds_a_tool_from_one_operation(api: FakeApi) -> None:
    async with RestTool.from_openapi(SPEC, "createOrder", base_url=f"{api.base}/") as tool:
        assert (tool.name, tool.method) == ("createOrder", "POST")
        assert tool.url == f"{api.base}/users/{{user_id}}/orders"
        assert tool.description == "Create an order.\n\nThe order is paid later."
        assert tool.parameters == {
            "type": "object",
            "properties": {
                "user_id": {"type": "string", "description": "The user."},
                "dry_run": {"type": "boolean", "description": "Only check the order."},
                "item": {"type": "string"},
                "quantity": {"type": "integer"},
            },
            "required": ["user_id", "item"],
            "additionalProperties": False,
        }
        arguments = {"user_id": "../u1", "dry_run": True, "item": "book", "quantity": 2}
        [record] = await run_tool(tool, arguments, headers=CALLER_HEADERS)

    assert record.status == "success", record.result
    [seen] = api.requests
    assert (seen.route, seen.raw_path) == ("orders_post", "/users/..%2Fu1/orders")
    assert seen.query == [("dry_run", "true")]
    assert json.loads(seen.body) == {"item": "book", "quantity": 2}
    assert seen.headers["X-Tenant-Id"] == "acme"


async def test_from_openapi_get_leaves_out_optional_header_parameters(api: FakeApi) -> None:
    tool = RestTool.from_openapi(SPEC, "listOrders", base_url=api.base, timeout=2.0)
    async with tool:
        [record] = await run_tool(tool, {"user_id": "u1", "limit": 5})

    assert sorted(tool.parameters["properties"]) == ["limit", "user_id"]
    assert tool.timeout == 2.0
    assert record.status == "success"
    assert api.requests[0].query == [("limit", "5")]


@pytest.mark.parametrize(
    ("operation_id", "error"),
    [
        ("nope", "no operation 'nope' in the OpenAPI spec (it has: listOrders, createOrder"),
        ("upload", "upload: only a JSON object request body with properties is supported"),
    ],
)
def test_from_openapi_refuses_what_it_does_not_support(operation_id: str, error: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        RestTool.from_openapi(SPEC, operation_id, base_url="http://127.0.0.1")
    assert error in str(caught.value)
