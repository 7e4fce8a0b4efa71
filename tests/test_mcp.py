"""MCP tools against a real MCP server (tests/mcp_server.py), on stdio and on streamable HTTP.

The server runs as a subprocess: started by the toolset itself for stdio, and once per module on
a free 127.0.0.1 port for HTTP. Calls go through an AgentExecutor with a ScriptedModel, so they
take the same path as every other tool: hooks, timeouts, metrics, records.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from agent_executor import (
    AgentCommand,
    ConfigurationError,
    Hook,
    HookRejection,
    RunContext,
    ToolCall,
)
from agent_executor.models.scripted import call, text_turn, tool_turn
from agent_executor.results import AgentResult
from agent_executor.tools.mcp import (
    MCPConfig,
    MCPConnectionError,
    MCPServerConfig,
    MCPTool,
    MCPToolset,
    load_config,
)

from .helpers import make_executor, sample
from .server_helpers import free_port, serve

# This module still passes the keyword arguments the settings objects replaced (max_turns=...);
# they warn until 0.2.0 (tests/test_settings.py checks the warning itself).
pytestmark = pytest.mark.filterwarnings(
    "ignore:.*keyword arguments are deprecated:DeprecationWarning"
)

SERVER = Path(__file__).with_name("mcp_server.py")
TOOL_NAMES = [
    "strict",
    "add",
    "echo",
    "text_upper",
    "fail",
    "slow",
    "slow_was_cancelled",
    "pid",
    "environment",
    "request_header",
]


def stdio_server(**options: Any) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(SERVER), "stdio"], **options}


@pytest.fixture(scope="module")
def http_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The test server on streamable HTTP at 127.0.0.1 (its log in a file, not a pipe that
    could fill up and block it)."""
    port = free_port()
    log_path = tmp_path_factory.mktemp("mcp") / "server.log"
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [sys.executable, str(SERVER), "http", str(port)], stdout=log, stderr=log
        )
    try:
        _wait_listening(process, port, log_path)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _wait_listening(process: subprocess.Popen[bytes], port: int, log: Path) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the MCP server exited early:\n{log.read_text()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"the MCP server did not listen within 20 s:\n{log.read_text()}")


@pytest.fixture(params=["stdio", "http"])
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def toolset(transport: str, http_url: str) -> AsyncIterator[MCPToolset]:
    """One connected server named ``test``, on the transport under test."""
    entry = stdio_server() if transport == "stdio" else {"url": http_url}
    async with MCPToolset.from_config({"mcpServers": {"test": entry}}) as connected:
        yield connected


async def run(toolset: MCPToolset, *calls: Any, **options: Any) -> tuple[AgentResult, Any]:
    """One run whose model makes ``calls`` in one turn, then answers "done"."""
    registry = CollectorRegistry()
    executor = make_executor(
        [tool_turn(*calls), text_turn("done")], toolset.tools, registry=registry, **options
    )
    result = await executor.execute(AgentCommand(user_prompt="go"))
    return result, registry


def outcomes(result: AgentResult) -> list[tuple[str, str, str]]:
    return [(r.tool, r.status, r.result) for r in result.tool_calls]


async def test_tools_are_listed_with_the_servers_schemas(toolset: MCPToolset) -> None:
    tools = {tool.name: tool for tool in toolset.tools}

    assert list(tools) == TOOL_NAMES
    add = tools["add"]
    assert isinstance(add, MCPTool)
    assert (add.server, add.remote_name) == ("test", "add")
    assert add.description == "Add two integers."
    assert add.parameters["required"] == ["a", "b"]
    assert add.parameters["properties"]["a"]["type"] == "integer"
    assert add.spec()["function"]["name"] == "add"
    assert tools["strict"].parameters["additionalProperties"] is False
    # "text.upper" is a valid MCP name but not a valid model tool name
    assert tools["text_upper"].remote_name == "text.upper"


async def test_the_executor_calls_mcp_tools(toolset: MCPToolset) -> None:
    result, registry = await run(
        toolset,
        call("add", {"a": 2, "b": 3}, id="c1"),
        call("echo", {"text": "héllo\nworld"}, id="c2"),
        call("text_upper", {"text": "shout"}, id="c3"),
    )

    assert result.success
    assert result.content == "done"
    assert outcomes(result) == [
        ("add", "success", '{"result":5}'),  # structured content, as JSON
        ("echo", "success", "héllo\nworld"),  # text content
        ("text_upper", "success", "SHOUT"),
    ]
    assert sample(registry, "agent_executor_tool_calls_total", tool="add", status="success") == 1
    assert sample(registry, "agent_executor_tool_duration_seconds_count", tool="echo") == 1


async def test_a_failing_mcp_tool_has_status_error(toolset: MCPToolset) -> None:
    result, registry = await run(toolset, call("fail", {"message": "disk full"}))

    [(tool, status, text)] = outcomes(result)
    assert (tool, status) == ("fail", "error")
    assert text.startswith("MCPToolError: ")
    assert "disk full" in text
    assert sample(registry, "agent_executor_tool_calls_total", tool="fail", status="error") == 1


async def test_invalid_arguments_are_refused_before_the_call(toolset: MCPToolset) -> None:
    result, registry = await run(
        toolset,
        call("add", {"a": 1}, id="missing"),
        call("add", {"a": "one", "b": 2}, id="wrong-type"),
        call("strict", {"x": 1, "y": 2}, id="unknown"),
        call("add", "{not json", id="not-json"),
    )

    records = {r.call_id: r for r in result.tool_calls}
    assert {r.status for r in records.values()} == {"invalid_arguments"}
    assert "b" in records["missing"].result
    assert "a" in records["wrong-type"].result
    assert "y" in records["unknown"].result
    assert "JSON" in records["not-json"].result
    assert (
        sample(registry, "agent_executor_tool_calls_total", tool="add", status="invalid_arguments")
        == 3
    )


async def test_a_slow_call_times_out_is_cancelled_on_the_server_and_the_server_stays_usable(
    toolset: MCPToolset,
) -> None:
    tag = uuid.uuid4().hex
    result, registry = await run(
        toolset, call("slow", {"seconds": 30, "tag": tag}), tool_timeout=0.3
    )

    [(tool, status, text)] = outcomes(result)
    assert (tool, status) == ("slow", "timeout")
    assert "0.3 s" in text
    assert sample(registry, "agent_executor_tool_calls_total", tool="slow", status="timeout") == 1
    result, _ = await run(
        toolset,
        call("slow_was_cancelled", {"tag": tag, "wait_seconds": 10}, id="c1"),
        call("add", {"a": 1, "b": 1}, id="c2"),
    )
    assert outcomes(result) == [
        ("slow_was_cancelled", "success", '{"result":true}'),
        ("add", "success", '{"result":2}'),
    ]


async def test_a_cancelled_run_cancels_the_mcp_call(toolset: MCPToolset) -> None:
    tag = uuid.uuid4().hex
    result, registry = await run(
        toolset, call("slow", {"seconds": 30, "tag": tag}), request_timeout=0.5
    )

    assert not result.success
    assert result.error is not None and result.error.code == "timeout"
    assert sample(registry, "agent_executor_tool_calls_total", tool="slow", status="cancelled") == 1
    result, _ = await run(toolset, call("slow_was_cancelled", {"tag": tag, "wait_seconds": 10}))
    assert outcomes(result) == [("slow_was_cancelled", "success", '{"result":true}')]


class NoArithmetic(Hook):
    async def before_tool_call(self, ctx: RunContext, call: ToolCall) -> None:
        if call.name == "add":
            raise HookRejection("no arithmetic today")


async def test_a_hook_can_reject_an_mcp_tool(toolset: MCPToolset) -> None:
    result, registry = await run(
        toolset,
        call("add", {"a": 1, "b": 2}, id="c1"),
        call("echo", {"text": "ok"}, id="c2"),
        hooks=[NoArithmetic()],
    )

    assert outcomes(result) == [
        ("add", "rejected", "the call was refused: no arithmetic today"),
        ("echo", "success", "ok"),
    ]
    assert sample(registry, "agent_executor_tool_calls_total", tool="add", status="rejected") == 1


async def test_the_service_runs_mcp_tools(toolset: MCPToolset) -> None:
    executor = make_executor(
        [tool_turn(call("add", {"a": 20, "b": 22})), text_turn("42")], toolset.tools
    )

    async with serve(executor) as client:
        response = await client.post("/api/chat", json={"message": "20 + 22?"})

    body = response.json()
    assert body["content"] == "42"
    [record] = body["tool_calls"]
    assert (record["tool"], record["status"], record["result"]) == (
        "add",
        "success",
        '{"result":42}',
    )


async def test_stdio_servers_get_their_env_and_are_stopped_on_close(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MCP_TEST_SECRET", "s3cret")
    monkeypatch.setenv("MCP_TEST_NOT_PASSED", "leak")
    config = {"mcpServers": {"test": stdio_server(env={"GREETING": "hi ${MCP_TEST_SECRET}"})}}
    toolset = await MCPToolset.start(config)
    try:
        result, _ = await run(
            toolset,
            call("environment", {"name": "GREETING"}, id="c1"),
            call("environment", {"name": "MCP_TEST_NOT_PASSED"}, id="c2"),
            call("pid", id="c3"),
        )
    finally:
        await toolset.aclose()

    greeting, not_passed, pid = (r.result for r in result.tool_calls)
    assert greeting == '{"result":"hi s3cret"}'
    assert not_passed == '{"result":""}'  # the SDK passes only a safe base environment
    with pytest.raises(ProcessLookupError):
        os.kill(json.loads(pid)["result"], 0)
    with pytest.raises(RuntimeError, match="not connected"):
        _ = toolset.tools
    await toolset.aclose()  # closing twice is harmless


async def test_a_crashed_server_gives_errors_not_hangs() -> None:
    async with MCPToolset.from_config({"mcpServers": {"test": stdio_server()}}) as toolset:
        result, _ = await run(toolset, call("pid"))
        os.kill(json.loads(result.tool_calls[0].result)["result"], signal.SIGKILL)
        result, _ = await run(toolset, call("add", {"a": 1, "b": 2}))

    [(tool, status, text)] = outcomes(result)
    assert (tool, status) == ("add", "error")
    assert text.startswith("MCPError: ")


async def test_http_servers_get_the_configured_headers(
    http_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCP_TEST_TOKEN", "t0ken")
    entry = {"url": http_url, "headers": {"Authorization": "Bearer ${MCP_TEST_TOKEN}"}}
    async with MCPToolset.from_config({"mcpServers": {"remote": entry}}) as toolset:
        result, _ = await run(toolset, call("request_header", {"name": "authorization"}))

    assert outcomes(result) == [("request_header", "success", '{"result":"Bearer t0ken"}')]


async def test_clashing_names_are_prefixed_with_the_server_name(http_url: str) -> None:
    config = {"mcpServers": {"local": stdio_server(), "remote.api": {"url": http_url}}}
    async with MCPToolset.from_config(config) as toolset:
        names = [tool.name for tool in toolset.tools]
        result, _ = await run(
            toolset,
            call("local__add", {"a": 1, "b": 2}, id="c1"),
            call("remote_api__add", {"a": 3, "b": 4}, id="c2"),
        )

    assert names == [f"local__{n}" for n in TOOL_NAMES] + [f"remote_api__{n}" for n in TOOL_NAMES]
    assert [r.result for r in result.tool_calls] == ['{"result":3}', '{"result":7}']


async def test_reserved_names_and_always_prefix(http_url: str) -> None:
    config = {"mcpServers": {"remote": {"url": http_url}}}
    async with MCPToolset.from_config(config, reserved_names=["add", "pid"]) as toolset:
        names = [tool.name for tool in toolset.tools]
    assert "remote__add" in names and "remote__pid" in names and "echo" in names

    long_name = "a-very-long-server-name-" * 3
    async with MCPToolset.from_config(
        {"mcpServers": {long_name: {"url": http_url}}}, always_prefix=True
    ) as toolset:
        names = [tool.name for tool in toolset.tools]
    assert all(len(name) <= 64 for name in names)
    assert len(set(names)) == len(TOOL_NAMES)


async def test_a_server_that_cannot_start_fails_the_toolset(http_url: str) -> None:
    config = {
        "mcpServers": {
            "fine": {"url": http_url},
            "broken": {"command": "/nonexistent/mcp-server"},
        }
    }
    toolset = MCPToolset.from_config(config)
    with pytest.raises(MCPConnectionError, match="'broken'"):
        await toolset.connect()
    with pytest.raises(RuntimeError, match="not connected"):
        _ = toolset.tools


async def test_a_server_that_never_answers_times_out() -> None:
    silent = {"command": sys.executable, "args": ["-c", "import sys; sys.stdin.read()"]}
    config = {"mcpServers": {"silent": {**silent, "connect_timeout_seconds": 0.5}}}
    started = time.monotonic()
    with pytest.raises(MCPConnectionError, match=r"did not answer within 0\.5 s"):
        await MCPToolset.start(config)
    assert time.monotonic() - started < 5


async def test_nothing_listens_at_the_url() -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"
    with pytest.raises(MCPConnectionError, match="cannot connect to MCP server 'gone'"):
        await MCPToolset.start({"mcpServers": {"gone": {"url": url, "connect_timeout_seconds": 5}}})


def test_load_config_reads_the_mcp_servers_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCP_TEST_TOKEN", "abc")
    path = tmp_path / "mcp.json"
    document = {
        "mcpServers": {
            "files": {"command": "npx", "args": ["-y", "server-files", "${HOME}"], "env": {}},
            "weather": {
                "type": "http",
                "url": "http://127.0.0.1:9/mcp",
                "headers": {"Authorization": "Bearer ${MCP_TEST_TOKEN}", "X-Env": "${NOPE:-dev}"},
                "autoApprove": ["get_forecast"],
            },
            "off": {"command": "false", "disabled": True},
        }
    }
    path.write_text(json.dumps(document))

    config = load_config(path)

    files, weather, off = config.servers.values()
    assert (files.transport, files.command, files.args) == (
        "stdio",
        "npx",
        ("-y", "server-files", os.environ["HOME"]),
    )
    assert weather.transport == "http"
    assert weather.headers == {"Authorization": "Bearer abc", "X-Env": "dev"}
    assert weather.ignored_keys == ["autoApprove"]
    assert off.disabled
    assert MCPToolset.from_config(path).config == config


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"command": "x", "url": "http://h/mcp"}, "not both"),
        ({}, "give a 'command'"),
        ({"type": "sse", "url": "http://h/sse"}, "SSE transport is not supported"),
        ({"type": "stdio", "url": "http://h/mcp"}, "needs a 'command'"),
        ({"url": "ftp://h/mcp"}, "http:// or https://"),
        ({"command": "x", "env": {"K": "${MCP_TEST_UNSET_VARIABLE}"}}, "is not set"),
        ({"command": "x", "args": "not-a-list"}, "args"),
    ],
)
def test_invalid_configs_are_refused(
    entry: dict[str, Any], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MCP_TEST_UNSET_VARIABLE", raising=False)
    with pytest.raises(ConfigurationError, match=message):
        MCPToolset.from_config({"mcpServers": {"s": entry}})
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"s": entry}}))
    with pytest.raises(ConfigurationError, match=message):
        load_config(path)


def test_unreadable_config_files_are_configuration_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="cannot read"):
        load_config(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(ConfigurationError, match="not JSON"):
        load_config(tmp_path / "bad.json")
    with pytest.raises(ConfigurationError, match="mcpServers"):
        MCPToolset.from_config({"mcpServer": {}})


def test_configs_can_be_built_in_python() -> None:
    config = MCPConfig(servers={"w": MCPServerConfig(url="https://example.com/mcp")})
    assert MCPToolset(config).config.servers["w"].transport == "http"
    # VS Code's mcp.json says "servers"
    vscode = {"servers": {"w": {"type": "http", "url": "https://example.com/mcp"}}}
    [(name, entry)] = MCPToolset.from_config(vscode).config.servers.items()
    assert (name, entry.transport, entry.url) == ("w", "http", "https://example.com/mcp")
