"""What start-up says and reads once it succeeds (issue 19, item 1): the real address after the
bind, whether auth, rate limits, Redis and which guards are on, secrets from files, and tools
from the working directory with the console script.

The processes are the real ``python -m server`` / ``agent-executor`` an operator starts.
"""

from __future__ import annotations

import logging
import os
import queue
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from agent_executor import AgentCommand, AgentExecutor
from server.cli import ServeConfig, build_parser, build_service
from server.cli.announce import announce

from .fakes.openai_server import FakeOpenAIServer, Stream, text_stream
from .server_helpers import ROOT, stop

_LISTENING = re.compile(r"listening on (http://127\.0\.0\.1:(\d+))")


@contextmanager
def _started(
    *argv: str, cwd: Path = ROOT, command: tuple[str, ...] = (sys.executable, "-m", "server")
) -> Iterator[tuple[str, list[str]]]:
    """The service started with ``argv`` on ``--port 0``; yields its base URL (read from the
    log, the only place the port is said) and the log lines up to the protections."""
    process = subprocess.Popen(
        [*command, *argv, "--port", "0"],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "LLM_MODEL": "", "LLM_BASE_URL": ""},
    )
    assert process.stdout is not None
    said: queue.Queue[str] = queue.Queue()
    threading.Thread(
        target=lambda: [said.put(line) for line in process.stdout], daemon=True
    ).start()
    lines: list[str] = []
    base = None
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not any(line.startswith("state:") for line in lines):
            try:
                line = said.get(timeout=0.5)
            except queue.Empty:
                if process.poll() is not None:
                    break
                continue
            message = line.rstrip("\n").split("] ", 1)[-1]
            lines.append(message)
            if found := _LISTENING.search(message):
                base = found.group(1)
        assert base is not None, "\n".join(lines)
        yield base, lines
    finally:
        stop(process)


def test_port_0_is_announced_with_the_port_the_kernel_gave_after_the_bind() -> None:
    with _started() as (base, lines):
        port = int(base.rsplit(":", 1)[1])
        health = httpx.get(f"{base}/api/health", timeout=5)

    assert port > 0
    assert health.status_code == 200
    assert "auth: OFF (anyone who reaches this address can run the agents; " in "\n".join(lines)
    assert "rate limit: off (give --rate-limit N/PERIOD)" in lines
    assert "user budget: off (give --user-budget AMOUNT/PERIOD); per run: no limit" in lines
    assert "guards: InputValidationGuard, InjectionGuard" in lines
    assert "state: this process's memory (not shared; lost on restart)" in lines


def test_the_log_says_which_protections_are_on(tmp_path: Path) -> None:
    keys = tmp_path / "keys"
    keys.write_text("alice=k-alice\nbob=k-bob\nbob=k-bob-laptop\n", encoding="utf-8")

    with _started(
        "--api-keys-file",
        str(keys),
        "--rate-limit",
        "20/minute",
        "--rate-limit-burst",
        "5",
        "--no-injection-guard",
        "--output-guard",
        "--user-budget",
        "5/day",
        "--max-output-tokens",
        "2000",
        "--max-cost-usd",
        "0.5",
    ) as (base, lines):
        anonymous = httpx.post(f"{base}/api/chat", json={"message": "hi"}, timeout=5)

    assert anonymous.status_code == 401
    assert "auth: on (3 API keys of 2 users; /api and /v1 need a Bearer key)" in lines
    assert "rate limit: 20/minute per user or client address, burst 5" in lines
    assert (
        "user budget: 5.00/day per user (in this process; periods in UTC); "
        "per run: 2000 output tokens, $0.5"
    ) in lines
    assert "guards: RateLimitGuard, UserBudget, InputValidationGuard, OutputGuard" in lines


def test_tools_of_the_working_directory_load_with_the_console_script(tmp_path: Path) -> None:
    (tmp_path / "shop_tools.py").write_text(
        "from agent_executor import tool\n\n\n"
        "@tool\ndef price(item: str) -> str:\n    '''The price of an item.'''\n"
        "    return '3 EUR'\n",
        encoding="utf-8",
    )
    script = Path(sys.executable).with_name("agent-executor")
    if not script.exists():
        pytest.skip("the console script is not installed in this environment")

    with _started("--tools", "shop_tools", cwd=tmp_path, command=(str(script), "serve")) as (
        _,
        lines,
    ):
        pass

    assert any("tools: price)" in line for line in lines), lines


async def test_the_provider_key_is_read_from_a_file(
    tmp_path: Path, server: FakeOpenAIServer
) -> None:
    key = tmp_path / "provider-key"
    key.write_text("\nsk-from-the-file\n", encoding="utf-8")
    server.script(Stream(text_stream("hello")))
    args = build_parser().parse_args(
        [
            "serve",
            "--model",
            "openai/gpt-4o-mini",
            "--api-base",
            server.base_url,
            "--api-key-file",
            str(key),
        ]
    )
    service = build_service(ServeConfig.from_args(args, {"LLM_API_KEY": "sk-from-the-env"}))
    assert isinstance(service.agents, AgentExecutor)

    result = await service.agents.execute(AgentCommand(user_prompt="hi"))
    await service.agents.aclose()

    assert result.content == "hello"
    assert server.request_headers[0]["Authorization"] == "Bearer sk-from-the-file"


@pytest.mark.parametrize(
    ("prices", "said"),
    [
        ("{}", "; prices: none of your own (--prices is empty), litellm's cost map only"),
        (
            '{"my-llama": {"input": 0.2, "output": 0.4}}',
            "; prices: 1 model from --prices, then litellm's cost map",
        ),
        ("FILE", "; prices: 2 models from --prices, then litellm's cost map"),
    ],
)
async def test_the_spend_line_says_where_prices_come_from_with_prices(
    prices: str, said: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An empty ``--prices`` is easy to give by mistake: the log says it leaves every price to
    litellm's cost map."""
    if prices == "FILE":
        table = tmp_path / "prices.json"
        table.write_text('{"a": {"input": 1, "output": 2}, "b": {"input": 1, "output": 2}}')
        prices = str(table)
    config = ServeConfig.from_args(build_parser().parse_args(["serve", "--prices", prices]), {})
    service = build_service(config)

    with caplog.at_level(logging.INFO, logger="server"):
        announce(service, config, [("127.0.0.1", 8080)])
    await service.agents.aclose()

    (line,) = [r.getMessage() for r in caplog.records if r.getMessage().startswith("user budget")]
    assert line.startswith("user budget: off (give --user-budget AMOUNT/PERIOD); ")
    assert line.endswith(f"per run: no limit{said}")


def test_agents_groups_and_flows_are_counted_and_listed_by_kind(tmp_path: Path) -> None:
    pytest.importorskip("bm25s")
    (tmp_path / "kb").mkdir()
    (tmp_path / "kb" / "faq.md").write_text("# Refunds\n\nThey take 30 days.\n", encoding="utf-8")
    agents = tmp_path / "agents.yaml"
    agents.write_text(
        "agents:\n  a: {tools: []}\n  b: {tools: [], retrieval: false}\n"
        "groups:\n  team: {agents: [a, b]}\n",
        encoding="utf-8",
    )
    flows = tmp_path / "flows.yaml"
    flows.write_text(
        "flows:\n  support_flow:\n    start: first\n    nodes:\n      first: {agent: a}\n"
        "      second: {agent: b}\n    edges: [{from: first, to: second}]\n",
        encoding="utf-8",
    )

    with _started(
        "--agents", str(agents), "--flows", str(flows), "--retrieval", str(tmp_path / "kb")
    ) as (_, lines):
        pass

    said = "\n".join(lines)
    assert f"retrieval: {tmp_path / 'kb'} indexed (1 passage of 1 file)" in lines
    assert "with 2 agents, 1 group and 1 flow (default: a; " in said
    assert (
        "agent a (model: demo (offline DemoModel, no API key needed); tools: none; "
        f"retrieval: {tmp_path / 'kb'})"
    ) in lines
    assert "agent b (model: demo (offline DemoModel, no API key needed); tools: none)" in lines
    assert "group team (strategy: direct; agents: a, b; max rounds: 5)" in lines
    assert "flow support_flow (start: first; nodes: first, second)" in lines
    assert "Building index" not in said  # bm25s's own progress stays out of the log


def test_help_shows_the_limits_with_their_defaults_and_the_orchestration_guide(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "--help"])
    text = " ".join(capsys.readouterr().out.split())

    assert (
        "--max-body-bytes BYTES largest request body read; a larger one is answered 413 "
        "(default 1048576)"
    ) in text
    assert "more is refused with invalid_input (default 32000)" in text
    assert "--retrieval DIR" in text
    agents_help = text.split("--agents AGENTS.json", 2)[2].split("--flows", 1)[0]
    assert "docs/orchestration.md" in agents_help and "docs/tools.md" not in agents_help
