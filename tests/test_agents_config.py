"""``agent-executor serve --agents AGENTS.json``: several named agents in one service, built from
a JSON file and the flags, optionally behind a model router."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent_executor import AgentCommand, AgentRouter, DemoModel, ModelRouter
from server import Settings
from server.cli import CliError, ServeConfig, build_parser, build_service

from .fakes.openai_server import FakeOpenAIServer, Stream, text_stream
from .server_helpers import ROOT, service_process
from .test_mcp import stdio_server
from .test_server_tool_modes import parse

TOOLS = '''
from agent_executor import tool


@tool
def shout(text: str) -> str:
    """Upper-case a text."""
    return text.upper()
'''

BILLING_TOOLS = '''
from agent_executor import tool


@tool
def refund_status(invoice: str) -> str:
    """The state of an invoice's refund."""
    return f"The refund of {invoice} was sent on Monday."
'''


def write(path: Path, data: Any) -> str:
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return str(path)


def build(
    tmp_path: Path, config: Any, *flags: str, env: dict[str, str] | None = None
) -> tuple[Settings, AgentRouter]:
    path = write(tmp_path / "agents.json", config)
    args = build_parser().parse_args(["serve", "--agents", path, *flags])
    service = build_service(ServeConfig.from_args(args, env or {}))
    assert isinstance(service.agents, AgentRouter)
    return service.settings, service.agents


def test_the_file_and_the_flags_build_the_agents(tmp_path: Path) -> None:
    shout = write(tmp_path / "shout_tools.py", TOOLS)
    config = {
        "agents": {
            "support": {"description": "Questions about the product."},
            "billing": {
                "description": "Invoices and refunds.",
                "system_prompt": "You handle billing.",
                "model": "openai/billing-mini",
                "api_base": "http://127.0.0.1:1/v1",
                "tools": ["agent_executor.tools.demo"],
            },
        }
    }
    flags = ("--system-prompt", "Be brief.", "--tools", shout, "--rate-limit", "5/minute")

    settings, agents = build(tmp_path, config, *flags, "--port", "9005")

    assert settings.port == 9005
    assert list(agents.agents) == ["support", "billing"]
    assert agents.default == "support"  # the first, without "default"
    assert agents.router is None
    support, billing = agents.agents["support"], agents.agents["billing"]
    assert (support.name, billing.name) == ("support", "billing")
    assert agents.descriptions == {
        "support": "Questions about the product.",
        "billing": "Invoices and refunds.",
    }
    assert list(support.tools) == ["shout"]  # the --tools ones by default
    assert list(billing.tools) == ["get_weather", "get_time"]
    assert support._system_prompt == "Be brief."  # the flag by default
    assert billing._system_prompt == "You handle billing."
    assert isinstance(support.model, DemoModel)
    assert billing.model.name == "openai/billing-mini"
    assert len(support._guards) == 3  # rate limit, input validation, injection
    assert all(a is b for a, b in zip(support._guards, billing._guards, strict=True))


async def test_a_users_rate_limit_counts_across_agents(tmp_path: Path) -> None:
    config: dict[str, Any] = {"agents": {"support": {}, "billing": {}}}
    _, agents = build(tmp_path, config, "--rate-limit", "1/minute")

    first = await agents.execute(AgentCommand(user_prompt="hi", user_id="ann"), agent="support")
    second = await agents.execute(AgentCommand(user_prompt="hi", user_id="ann"), agent="billing")
    other = await agents.execute(AgentCommand(user_prompt="hi", user_id="bob"), agent="billing")
    await agents.aclose()

    assert first.error is None
    assert second.error is not None and second.error.code == "rate_limited"
    assert other.error is None


def test_the_router_default_and_keys_from_the_environment(tmp_path: Path) -> None:
    config = {
        "default": "billing",
        "router": {
            "model": "openai/router-mini",
            "api_base": "http://127.0.0.1:1/v1",
            "api_key_env": "ROUTER_KEY",
            "timeout": 5,
        },
        "agents": {"support": {"tools": []}, "billing": {"model": "demo"}},
    }

    _, agents = build(tmp_path, config, env={"ROUTER_KEY": "sk-router"})

    assert agents.default == "billing"
    assert isinstance(agents.router, ModelRouter)
    assert agents.router.model.name == "openai/router-mini"
    assert agents.route_timeout == 5
    assert list(agents.agents["support"].tools) == []  # [] means no tools, not the default
    assert list(agents.agents["billing"].tools) == ["get_weather", "get_time"]


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (
            '{"agents": {"support": {}',
            "agents.json: line 1, column 26: not valid JSON: Expecting ',' delimiter",
        ),
        ({"agents": {"support": {"tool": ["x"]}}}, "agents.support.tool: Extra inputs"),
        ({"agents": {"support": {}}, "routing": {}}, "routing: Extra inputs are not permitted"),
        (
            {"default": "sales", "agents": {"support": {}, "billing": {}}},
            "default agent 'sales' is not one of the agents: support, billing",
        ),
        (
            {"agents": {"customer support": {}}},
            "invalid agent name 'customer support': use 1 to 64 letters, digits, '_' or '-'",
        ),
        (
            {"agents": {"support": {"tools": ["no_such_module_xyz"]}}},
            "agent 'support': cannot import tools from 'no_such_module_xyz'",
        ),
        ({"agents": {}}, "agents: Dictionary should have at least 1 item"),
        ({"agents": {"a": {}, "b": {"mcp": True}}}, "agent 'b' has \"mcp\": true, but no --mcp"),
        ({"agents": {"a": {"mcp": "yes"}}}, "agents.a.mcp: Input should be a valid boolean"),
        ({"router": {"timeout": 3}, "agents": {"a": {}}}, "router.model: Field required"),
        (
            {"agents": {"a": {"api_key": "k", "api_key_env": "K"}}},
            "agents.a: give 'api_key' or 'api_key_env', not both",
        ),
        (
            {"agents": {"a": {"model": "openai/x", "api_key_env": "NOT_SET_KEY"}}},
            "agent 'a': api_key_env names NOT_SET_KEY, which is not set",
        ),
        ('{"agents": {"a": {}, "a": {}}}', "the key 'a' appears twice"),
    ],
)
def test_a_bad_file_is_a_cli_error_that_says_what_is_wrong(
    tmp_path: Path, config: Any, message: str
) -> None:
    with pytest.raises(CliError) as caught:
        build(tmp_path, config)

    assert message in str(caught.value)


def test_a_bad_file_exits_with_status_2_and_the_reason(tmp_path: Path) -> None:
    path = write(tmp_path / "agents.json", {"default": "sales", "agents": {"support": {}}})
    missing = str(tmp_path / "missing.json")
    for argv, message in [
        (["--agents", path], "default agent 'sales' is not one of the agents: support"),
        (["--agents", missing], f"--agents {missing}: cannot read it: No such file"),
    ]:
        result = subprocess.run(
            [sys.executable, "-m", "server", "--port", "0", *argv],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 2, result.stderr
        assert message in result.stderr


async def test_the_service_routes_between_the_agents_of_its_file(
    tmp_path: Path, server: FakeOpenAIServer
) -> None:
    billing_tools = write(tmp_path / "billing_tools.py", BILLING_TOOLS)
    config = write(
        tmp_path / "agents.json",
        {
            "router": {"model": "openai/router-mini", "api_key": "sk-router", "timeout": 5},
            "agents": {
                "support": {"description": "Questions about the product.", "model": "demo"},
                "billing": {
                    "description": "Invoices and refunds.",
                    "system_prompt": "You handle billing.",
                    "model": "openai/billing-mini",
                    "api_key_env": "BILLING_KEY",
                    "tools": [billing_tools],
                },
            },
        },
    )
    server.script(
        Stream(text_stream(["billing"])),  # the router's pick
        Stream(text_stream(["Your refund ", "is on its way."])),  # the billing agent
    )
    with service_process(
        "--agents", config, "--api-base", server.base_url, env={"BILLING_KEY": "sk-billing"}
    ) as (process, base):
        async with httpx.AsyncClient(base_url=base, timeout=20) as client:
            routed = await client.post(
                "/api/chat/stream", json={"message": "Where is my refund?", "events": "json"}
            )
            named = await client.post("/api/chat", json={"message": "hello", "agent": "support"})
            models = await client.get("/v1/models")
        process.send_signal(signal.SIGTERM)
        assert process.wait(20) == 0
        output = process.stdout.read() if process.stdout else ""

    assert routed.status_code == 200, routed.text
    events = parse(routed.text)
    assert events[0] == (
        "agent_selected",
        json.dumps(
            {"agent": "billing", "selected_by": "router", "detail": None}, separators=(",", ":")
        ),
    )
    answer = "".join(json.loads(data)["text"] for kind, data in events if kind == "message")
    assert answer == "Your refund is on its way."
    assert routed.headers["X-Agent"] == "billing"

    assert named.status_code == 200, named.text
    assert named.headers["X-Agent"] == "support"
    assert named.json()["content"]  # the demo model answered: no request reached the fake

    ids = [model["id"] for model in models.json()["data"]]
    assert {"support", "billing"} <= set(ids)

    route, run = server.requests
    assert len(server.requests) == 2
    assert route["model"] == "router-mini" and "tools" not in route
    assert "- billing: Invoices and refunds." in route["messages"][0]["content"]
    assert server.request_headers[0]["Authorization"] == "Bearer sk-router"
    assert run["model"] == "billing-mini"
    assert run["messages"][0] == {"role": "system", "content": "You handle billing."}
    assert [t["function"]["name"] for t in run["tools"]] == ["refund_status"]
    assert server.request_headers[1]["Authorization"] == "Bearer sk-billing"

    assert "with 2 agents (default: support; router: model openai/router-mini" in output
    assert "agent support (model: demo (offline DemoModel" in output
    assert "tools: get_weather, get_time" in output
    assert "agent billing (model: openai/billing-mini; tools: refund_status)" in output
    assert "sk-billing" not in output and "sk-router" not in output


def test_mcp_tools_go_to_the_agents_that_ask_for_them(tmp_path: Path) -> None:
    mcp = write(tmp_path / "mcp.json", {"mcpServers": {"calc": stdio_server()}})
    config = write(
        tmp_path / "agents.json",
        {"agents": {"support": {}, "maths": {"mcp": True}}},
    )
    with service_process("--agents", config, "--mcp", mcp) as (process, _):
        process.send_signal(signal.SIGTERM)
        assert process.wait(20) == 0
        output = process.stdout.read() if process.stdout else ""

    lines = {line.split(" agent ", 1)[1] for line in output.splitlines() if " agent " in line}
    support = next(line for line in lines if line.startswith("support "))
    maths = next(line for line in lines if line.startswith("maths "))
    assert support.endswith("tools: get_weather, get_time)")  # no MCP: the demo tools
    assert "add" in maths and "get_weather" not in maths  # MCP only, as with --mcp alone
