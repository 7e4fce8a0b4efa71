"""``agent-executor serve --mcp CONFIG.json``: the service process connects to the MCP servers
of the file, the model calls their tools through the real OpenAI-compatible client, and the
server processes are gone when the service stops."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import httpx

from .fakes.openai_server import FakeOpenAIServer, Stream, text_stream, tool_call_stream
from .server_helpers import ROOT, service_process
from .test_mcp import stdio_server


def _processes_with(marker: str) -> list[int]:
    """Pids of the processes whose environment holds ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if marker.encode() in environ:
            found.append(int(entry.name))
    return found


async def test_the_service_runs_the_tools_of_its_mcp_config(
    tmp_path: Path, server: FakeOpenAIServer
) -> None:
    marker = f"MCP_SERVICE_TEST={uuid.uuid4().hex}"
    name, value = marker.split("=")
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps({"mcpServers": {"calc": stdio_server(env={name: value})}}), encoding="utf-8"
    )
    server.script(
        Stream(tool_call_stream([("c1", "add", {"a": 2, "b": 3})])),
        Stream(text_stream(["It is 5."])),
    )
    with service_process(
        "--mcp", str(config), "--model", "openai/test", "--api-base", server.base_url
    ) as (process, base):
        running = _processes_with(marker)
        async with httpx.AsyncClient(timeout=20) as client:
            response = await client.post(f"{base}/api/chat", json={"message": "2 + 3?"})
        process.send_signal(signal.SIGTERM)
        assert process.wait(20) == 0
        output = process.stdout.read() if process.stdout else ""

    assert response.status_code == 200, response.text
    body = response.json()
    assert body["content"] == "It is 5."
    assert [(c["tool"], c["status"]) for c in body["tool_calls"]] == [("add", "success")]
    offered = [tool["function"]["name"] for tool in server.requests[0]["tools"]]
    assert "add" in offered and "get_weather" not in offered  # no demo tools beside MCP
    tool_message = server.requests[1]["messages"][-1]
    assert tool_message["role"] == "tool" and "5" in tool_message["content"]
    assert "tools: " in output and "add" in output
    assert len(running) == 1  # the stdio server ran while the service did...
    assert _processes_with(marker) == []  # ...and stopped with it


def test_mcp_configuration_problems_exit_with_status_2(tmp_path: Path) -> None:
    missing = tmp_path / "missing.json"
    broken = tmp_path / "broken.json"
    broken.write_text(
        json.dumps({"mcpServers": {"bad": {"command": sys.executable, "args": ["-c", "pass"]}}}),
        encoding="utf-8",
    )
    for path, message in [
        (missing, "missing.json"),
        (broken, "'bad'"),
    ]:
        result = subprocess.run(
            [sys.executable, "-m", "server", "--port", "0", "--mcp", str(path)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 2, result.stderr
        assert message in result.stderr
