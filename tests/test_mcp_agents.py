"""The service's agents as MCP tools (docs/mcp-server.md), driven by the official MCP client.

Over streamable HTTP (``POST /mcp``) against the real service process on the offline demo
model, with both protocol eras the SDK speaks (the ``initialize`` handshake of
``ClientSession``, the 2026 single exchanges of ``Client``); over stdio against
``python -m server mcp``; and in-process where a test needs to hold a run (shutdown) or a
retrieval hook (sources).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from mcp import Client, ClientSession, MCPError, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from agent_executor import AgentExecutor, tool
from agent_executor.models.scripted import call, tool_turn
from agent_executor.retrieval import Passage, RetrievalHook
from server import Settings, create_app
from server.mcp.tools import INPUT_SCHEMA

from .helpers import make_executor
from .server_helpers import ROOT, service_process

WEATHER = {"message": "What is the weather in Paris?"}
ALICE, BOB = "key-of-alice", "key-of-bob"
AGENTS = {
    "default": "weather",
    "agents": {
        "weather": {"description": "Answers questions about the weather and the time."},
        "chat": {"tools": []},
    },
    "groups": {
        "team": {"agents": ["weather", "chat"], "description": "The weather agent, then chat."}
    },
}


@pytest.fixture(scope="module")
def agents_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("mcp-agents") / "agents.json"
    path.write_text(json.dumps(AGENTS), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def service(agents_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The service with two agents and a group, and API keys for alice and bob: its base URL."""
    keys = tmp_path_factory.mktemp("mcp-keys") / "keys"
    keys.write_text(f"alice={ALICE}\nbob={BOB}\n", encoding="utf-8")
    with service_process("--agents", str(agents_file), "--api-keys-file", str(keys)) as (_, base):
        yield base


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@asynccontextmanager
async def session(url: str, key: str | None = None) -> AsyncIterator[ClientSession]:
    """A ``ClientSession`` on ``url`` (the ``initialize`` handshake done), with ``key``."""
    headers = bearer(key) if key else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=60)) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as client,
    ):
        await client.initialize()
        yield client


@asynccontextmanager
async def in_process(
    executor: AgentExecutor, settings: Settings | None = None
) -> AsyncIterator[tuple[web.Application, str]]:
    """The app of ``executor`` on 127.0.0.1 in this process: the app and its ``/mcp`` URL."""
    app = create_app(executor, settings)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    try:
        yield app, str(server.make_url("/mcp"))
    finally:
        await server.close()


def text_of(result: Any) -> str:
    return "".join(block.text for block in result.content)


async def test_every_agent_and_group_is_a_tool(service: str) -> None:
    async with session(f"{service}/mcp", ALICE) as client:
        listed = await client.list_tools()

    tools = {t.name: t for t in listed.tools}
    assert list(tools) == ["weather", "chat", "team"]
    assert tools["weather"].description == "Answers questions about the weather and the time."
    assert tools["chat"].description == (
        "Ask the agent 'chat': it answers your message in text, using its own tools."
    )
    assert tools["team"].description == "The weather agent, then chat."
    assert all(t.input_schema == INPUT_SCHEMA for t in tools.values())
    assert INPUT_SCHEMA["required"] == ["message"]
    assert set(INPUT_SCHEMA["properties"]) == {"message", "session_id"}


async def test_a_call_answers_with_the_agents_text_and_progress_on_the_way(service: str) -> None:
    progress: list[tuple[float, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, message))

    async with session(f"{service}/mcp", ALICE) as client:
        result = await client.call_tool("weather", WEATHER, progress_callback=on_progress)

    assert not result.is_error
    answer = text_of(result)
    assert "In Paris it is" in answer
    structured = result.structured_content
    assert structured is not None
    assert structured["answer"] == answer
    assert structured["finish_reason"] == "stop"
    assert structured["sources"] == []
    assert structured["usage"]["input_tokens"] > 0
    assert len(structured["request_id"]) == 32
    messages = [message for _, message in progress]
    assert messages.index("calling get_weather") < messages.index("get_weather: success")
    assert any("Let" in (m or "") for m in messages[: messages.index("calling get_weather")])
    values = [value for value, _ in progress]
    assert values == sorted(set(values))  # progress only grows


async def test_session_id_continues_a_conversation_of_the_keys_user(service: str) -> None:
    said = {"message": "Remember the word teal."}
    async with session(f"{service}/mcp", ALICE) as client:
        first = await client.call_tool("chat", {**said, "session_id": "mcp-1"})
        second = await client.call_tool("chat", {**said, "session_id": "mcp-1"})
        alone = await client.call_tool("chat", said)
    async with httpx.AsyncClient(base_url=service, timeout=10) as http:
        bobs = await http.delete("/api/sessions/mcp-1", headers=bearer(BOB))
        alices = await http.delete("/api/sessions/mcp-1", headers=bearer(ALICE))

    tokens = [r.structured_content["usage"]["input_tokens"] for r in (first, second, alone)]
    assert tokens[1] > tokens[0] == tokens[2]  # the second call read the first exchange
    assert bobs.status_code == 404  # the session is alice's, the key's user
    assert alices.status_code == 200


async def test_without_a_valid_api_key_the_endpoint_answers_401(service: str) -> None:
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    accept = {"Accept": "application/json, text/event-stream"}
    async with httpx.AsyncClient(timeout=10) as http:
        response = await http.post(f"{service}/mcp", json=initialize, headers=accept)

    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"] == "Bearer"
    assert response.json()["error"]["code"] == "unauthorized"
    refused: MCPError | None = None
    async with (
        httpx2.AsyncClient(headers=bearer("not-a-key")) as http,
        streamable_http_client(f"{service}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as client,
    ):
        try:
            await client.initialize()
        except MCPError as exc:
            refused = exc
    assert refused is not None  # the SDK's client says the server refused


async def test_an_unknown_tool_is_a_protocol_error_and_bad_arguments_a_tool_error(
    service: str,
) -> None:
    async with session(f"{service}/mcp", ALICE) as client:
        with pytest.raises(MCPError, match="Unknown tool: nope"):
            await client.call_tool("nope", WEATHER)
        blank = await client.call_tool("chat", {"message": "  "})
        extra = await client.call_tool("chat", {"message": "hi", "agent": "weather"})

    assert blank.is_error and extra.is_error
    assert text_of(blank) == "invalid_input: message: must not be empty"
    assert text_of(extra) == "invalid_input: agent: Extra inputs are not permitted"
    assert blank.structured_content is not None
    assert blank.structured_content["error"]["code"] == "invalid_input"


async def test_get_is_405_the_endpoint_is_stateless(service: str) -> None:
    async with httpx.AsyncClient(timeout=10) as http:
        response = await http.get(f"{service}/mcp", headers=bearer(ALICE))

    assert response.status_code == 405
    assert response.headers["Allow"] == "POST"


async def test_a_client_of_the_2026_protocol_calls_the_same_tools(service: str) -> None:
    progress: list[str | None] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(message)

    async with (
        httpx2.AsyncClient(headers=bearer(BOB), timeout=httpx2.Timeout(30, read=60)) as http,
        Client(streamable_http_client(f"{service}/mcp", http_client=http)) as client,
    ):
        listed = await client.list_tools()
        result = await client.call_tool("weather", WEATHER, progress_callback=on_progress)
        version = client.session.protocol_version

    assert version == "2026-07-28"
    assert [t.name for t in listed.tools] == ["weather", "chat", "team"]
    assert "In Paris it is" in text_of(result)
    assert "calling get_weather" in progress


def test_the_python_snippet_of_the_guide_runs(service: str, tmp_path: Path) -> None:
    guide = (ROOT / "docs" / "mcp-server.md").read_text(encoding="utf-8")
    snippet = guide.split("```python\n", 1)[1].split("```", 1)[0]
    script = tmp_path / "mcp_client.py"
    script.write_text(
        snippet.replace("http://127.0.0.1:8080", service)
        .replace("my-key", ALICE)
        .replace('"default"', '"weather"'),
        encoding="utf-8",
    )

    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, encoding="utf-8", timeout=50
    )

    assert done.returncode == 0, done.stderr
    assert "weather: Answers questions about the weather and the time." in done.stdout
    assert "  ... calling get_weather" in done.stdout
    assert "In Paris it is" in done.stdout


async def test_a_run_error_is_a_tool_error_with_its_code() -> None:
    with service_process("--rate-limit", "1/minute") as (_, base):
        async with session(f"{base}/mcp") as client:
            first = await client.call_tool("default", {"message": "hello"})
            second = await client.call_tool("default", {"message": "hello again"})

    assert not first.is_error
    assert second.is_error
    assert text_of(second).startswith("rate_limited: ")
    assert second.structured_content is not None
    error = second.structured_content["error"]
    assert error["code"] == "rate_limited"
    assert error["retry_after"] >= 1
    assert len(error["request_id"]) == 32


async def test_a_client_that_goes_away_cancels_the_run() -> None:
    # One run at a time: the second call runs only once the first has let go of its permit,
    # and the slow tool would hold it for 20 s if the first run went on.
    with service_process(
        "--tools",
        "tests/slow_tools.py",
        "--max-concurrency",
        "1",
        env={"SLOW_TOOL_SECONDS": "20"},
    ) as (_, base):
        with anyio.CancelScope() as scope:
            async with session(f"{base}/mcp") as client:

                async def on_progress(value: float, total: float | None, text: str | None) -> None:
                    if text == "calling get_weather":
                        scope.cancel()  # leave while the tool runs

                await client.call_tool("default", WEATHER, progress_callback=on_progress)
        async with session(f"{base}/mcp") as client:
            after = await client.call_tool("default", {"message": "hello"})
        async with httpx.AsyncClient(timeout=10) as http:
            metrics = (await http.get(f"{base}/metrics")).text

    assert scope.cancelled_caught
    assert not after.is_error
    assert 'agent_executor_requests_total{mode="stream",outcome="cancelled"} 1.0' in metrics


async def test_at_shutdown_running_calls_end_and_new_ones_are_refused() -> None:
    started = anyio.Event()

    @tool
    async def sleepy() -> str:
        """Sleeps."""
        started.set()
        await anyio.sleep(30)
        return "never"

    executor = make_executor([tool_turn(call("sleepy"))], [sleepy])
    results: list[Any] = []
    async with (
        in_process(executor, Settings(shutdown_grace_seconds=0)) as (app, url),
        session(url) as client,
    ):

        async def first_call() -> None:
            results.append(await client.call_tool("default", {"message": "go"}))

        async with anyio.create_task_group() as group:
            group.start_soon(first_call)
            await started.wait()
            await app.shutdown()  # what SIGTERM does; the grace period is 0 s
        refused = await client.call_tool("default", {"message": "again"})

    (ended,) = results
    assert ended.is_error
    assert text_of(ended) == "overloaded: the server is shutting down"
    assert refused.is_error
    assert text_of(refused) == "unavailable: the server is shutting down"
    assert refused.structured_content["error"]["retry_after"] == 5


async def test_sources_follow_the_answer_when_retrieval_ran() -> None:
    class Docs:
        async def retrieve(self, query: str, *, k: int) -> list[Passage]:
            return [Passage(text="Paris is in France.", source="geo.md#paris", title="Paris")]

    executor = make_executor(["Paris is in France."], hooks=[RetrievalHook(Docs())])
    async with in_process(executor) as (_, url), Client(url) as client:
        result = await client.call_tool("default", {"message": "Where is Paris?"})

    assert text_of(result) == "Paris is in France.\n\nSources:\n- Paris (geo.md#paris)"
    assert result.structured_content is not None
    sources = result.structured_content["sources"]
    assert [(s["source"], s["title"]) for s in sources] == [("geo.md#paris", "Paris")]


async def test_agent_executor_mcp_serves_the_agents_over_stdio(
    agents_file: Path, tmp_path: Path
) -> None:
    command = ["-m", "server", "mcp", "--agents", str(agents_file)]
    params = StdioServerParameters(
        command=sys.executable, args=command, cwd=ROOT, env=dict(os.environ)
    )
    log = tmp_path / "stderr.log"
    with log.open("w", encoding="utf-8") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as client,
        ):
            await client.initialize()
            listed = await client.list_tools()
            result = await client.call_tool("weather", WEATHER)

    assert [t.name for t in listed.tools] == ["weather", "chat", "team"]
    assert not result.is_error
    assert "In Paris it is" in text_of(result)
    assert "serving the tools weather, chat, team over stdio" in log.read_text(encoding="utf-8")


def test_agent_executor_mcp_refuses_http_flags_and_bad_values() -> None:
    for flags, expected in (
        (["--port", "8080"], "unrecognized arguments: --port 8080"),
        (["--api-keys-file", "keys"], "unrecognized arguments: --api-keys-file keys"),
        (["--max-tool-calls", "-1"], "agent-executor: --max-tool-calls must be 0 or more, not -1"),
    ):
        done = subprocess.run(
            [sys.executable, "-m", "server", "mcp", *flags],
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert done.returncode == 2, done.stderr
        assert expected in done.stderr
        assert done.stdout == ""
    assert done.stderr.splitlines() == [expected]  # one line, as for serve
