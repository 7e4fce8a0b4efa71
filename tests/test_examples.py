"""The runnable examples run offline, as a newcomer would start them, and print what they claim."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import httpx
import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def run_example(name: str) -> subprocess.CompletedProcess[str]:
    # Without LLM_MODEL the examples use the offline DemoModel, whatever the caller's shell has.
    env = {key: value for key, value in os.environ.items() if key != "LLM_MODEL"}
    env["PYTHONIOENCODING"] = "utf-8"  # the answers contain "°C", whatever the locale
    return subprocess.run(
        [sys.executable, str(EXAMPLES / name)],
        capture_output=True,
        encoding="utf-8",
        env=env,
        timeout=60,
        check=False,
    )


# Longer than the subprocess timeout, so a hang fails with TimeoutExpired, not a killed worker.
@pytest.mark.timeout(90)
def test_embedding_example_runs_offline() -> None:
    done = run_example("embedding.py")

    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "execute(): " in out and "(Europe/Paris)" in out
    streamed = out.split("execute_stream(): ", 1)[1]
    assert "[tool start] get_weather {'city': 'Paris'}" in streamed
    assert "[tool end] get_weather: success" in streamed
    assert "In Paris it is" in streamed and "°C" in streamed
    assert "[error]" not in out
    assert "session 'trip-1' holds 8 messages" in out


@pytest.mark.timeout(90)
def test_orchestration_example_shows_the_nested_agent_and_the_handoff() -> None:
    done = run_example("orchestration.py")

    assert done.returncode == 0, done.stderr
    tool_part, handoff_part = done.stdout.split("== a handoff", 1)
    assert (
        "[writer] tool start researcher {'input': 'How many people live in Paris?'}\n"
        "    [researcher] Paris has about 2.1 million people.\n"
        "    [researcher] done: stop, 12 in / 8 out\n"
        "[writer] tool end researcher: success\n"
        "[writer] Paris is home to some 2.1 million people.\n"
        "[writer] done: stop, 112 in / 28 out\n"
    ) in tool_part
    assert "execute(): 'Paris is home to some 2.1 million people.'" in tool_part
    assert "[triage] hands over to billing (handoff)\n" in handoff_part
    assert "[billing] Invoice 42 was paid on 3 March.\n" in handoff_part
    assert "session 'help-1' of triage holds 6 messages" in handoff_part


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def test_the_aiohttp_example_mounts_the_service_next_to_its_own_routes() -> None:
    from aiohttp.test_utils import TestServer

    server = TestServer(_load("aiohttp_mount").build_app(), host="127.0.0.1")
    await server.start_server()
    try:
        async with httpx.AsyncClient(base_url=str(server.make_url("")), timeout=10) as client:
            home = await client.get("/")
            answer = await client.post("/agent/api/chat", json={"message": "weather in Rome?"})
            page = await client.get("/agent/")
    finally:
        await server.close()

    assert home.text.startswith("My app.")
    assert "In Rome it is" in answer.json()["content"]
    assert page.status_code == 200


async def test_the_starlette_example_forwards_the_stream_as_sse() -> None:
    module = _load("starlette_sse")
    transport = httpx.ASGITransport(app=module.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://example") as client:
        response = await client.get("/chat", params={"message": "weather in Rome?"})

    body = response.text
    events = [
        line.removeprefix("event: ") for line in body.splitlines() if line.startswith("event: ")
    ]
    assert response.headers["content-type"].startswith("text/event-stream")
    assert events[-1] == "done"
    assert "tool_start" in events
    texts = [
        json.loads(line.removeprefix("data: ")).get("text", "")
        for line in body.splitlines()
        if line.startswith('data: {"text"')
    ]
    assert "In Rome it is" in "".join(texts)


@pytest.mark.timeout(90)
def test_the_readme_embed_snippet_runs_and_reports_a_failed_run(tmp_path: Path) -> None:
    readme = (EXAMPLES.parent / "README.md").read_text(encoding="utf-8")
    snippet = readme.split("```python\n", 1)[1].split("```", 1)[0]
    assert 'model="openai/gpt-4o-mini"' in snippet
    offline = tmp_path / "embed_demo.py"
    offline.write_text(snippet.replace('"openai/gpt-4o-mini"', '"demo"'), encoding="utf-8")
    # a real provider model pointed at a closed port: the run fails, and the snippet says so
    failing = tmp_path / "embed_failing.py"
    failing.write_text(
        snippet.replace(
            'model="openai/gpt-4o-mini"',
            'model=OpenAICompatModel("openai/gpt-4o-mini", base_url="http://127.0.0.1:9/v1", '
            'api_key="k")',
        ).replace(
            "from agent_executor import ",
            "from agent_executor import OpenAICompatModel, ",
        ),
        encoding="utf-8",
    )
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}

    demo = subprocess.run(
        [sys.executable, str(offline)], capture_output=True, encoding="utf-8", env=env, timeout=60
    )
    failed = subprocess.run(
        [sys.executable, str(failing)], capture_output=True, encoding="utf-8", env=env, timeout=60
    )

    assert demo.returncode == 0, demo.stderr
    assert "Sunny in Oslo" in demo.stdout
    assert failed.returncode == 0, failed.stderr
    assert failed.stderr.strip().splitlines()[-1].startswith("llm_error: ")


@pytest.mark.timeout(90)
def test_flow_example_routes_the_refund_to_the_refund_agent() -> None:
    done = run_example("flow.py")

    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "[node triage (agent)]",
        "  agent: triage",
        "  streamed: The customer wants a refund for order 42.",
        "  success, passes on: The customer wants a refund for order 42.",
        "[node is_refund (filter)]",
        "  success, passes on: The customer wants a refund for order 42.",
        "[node refund (agent)]",
        "  agent: refunds",
        "  streamed: Refund for order 42 started.",
        "  success, passes on: Refund for order 42 started.",
        "done: stop",
    ]
