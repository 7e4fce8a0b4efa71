"""``agent-executor serve --flows FLOWS.yaml``: flows served by name next to the agents, in the
real service process, over SSE (``json`` and ``text`` mode) and ``/v1/chat/completions``; a
file that does not hold is refused at start-up."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from agent_executor import AgentRouter, Flow
from server.cli import CliError, ServeConfig, build_parser, build_service

from .server_helpers import ROOT, service_process
from .test_orchestration_service import frames

FLOWS = """\
flows:
  weather:
    description: "The weather of a city, summarised"
    start: city
    max_steps: 5
    nodes:
      city: {tool: get_weather}
      is_paris: {filter: {regex: '"city": "Paris"'}}
      summary: {model: demo, prompt: "Summarise: {input}"}
      answer: {agent: default}
    edges:
      - {from: city, to: is_paris}
      - {from: is_paris, to: summary, when: "true"}
      - {from: is_paris, to: answer, default: true}
"""


async def test_a_flow_of_the_file_streams_its_nodes_and_answers_as_a_model(
    tmp_path: Path,
) -> None:
    path = tmp_path / "flows.yaml"
    path.write_text(FLOWS, encoding="utf-8")
    with service_process("--flows", str(path)) as (_, base):
        async with httpx.AsyncClient(base_url=base, timeout=20) as client:
            json_mode = await client.post(
                "/api/chat/stream",
                json={"message": "Paris", "agent": "weather", "events": "json"},
            )
            text_mode = await client.post(
                "/api/chat/stream", json={"message": "Paris", "agent": "weather"}
            )
            openai = await client.post(
                "/v1/chat/completions",
                json={"model": "weather", "messages": [{"role": "user", "content": "Paris"}]},
            )

    assert json_mode.status_code == 200, json_mode.text
    events = frames(json_mode.text)
    nodes = [
        (f["event"], json.loads(f["data"])["node"])
        for f in events
        if f["event"] in ("node_start", "node_end")
    ]
    assert nodes == [
        ("node_start", "city"),
        ("node_end", "city"),
        ("node_start", "is_paris"),
        ("node_end", "is_paris"),
        ("node_start", "summary"),
        ("node_end", "summary"),
    ]
    city = json.loads(events[1]["data"])
    assert city["kind"] == "tool" and city["status"] == "success"
    assert json.loads(city["output"])["city"] == "Paris"
    answer = "".join(json.loads(f["data"])["text"] for f in events if f["event"] == "message")
    assert answer.startswith("I am the offline demo model") and "Summarise: {" in answer
    assert events[-1]["event"] == "done"
    assert json.loads(events[-1]["data"])["finish_reason"] == "stop"

    plain = frames(text_mode.text)
    assert [f["event"] for f in plain if f["event"] != "message"] == ["done"]
    positions = [int(f["id"].rsplit(":", 1)[1]) for f in plain]
    assert positions == sorted(positions)  # the run's positions: text mode leaves some out
    assert {f["id"].rsplit(":", 1)[0] for f in plain} == {text_mode.headers["x-run-id"]}
    assert "".join(f["data"] for f in plain if f["event"] == "message") == answer

    assert openai.status_code == 200, openai.text
    assert openai.json()["choices"][0]["message"]["content"] == answer


def test_a_flows_file_naming_an_unknown_agent_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "flows.json"
    flows = {"flows": {"f": {"start": "a", "nodes": {"a": {"agent": "nobody"}}}}}
    path.write_text(json.dumps(flows), encoding="utf-8")

    result = subprocess.run(
        [sys.executable, "-m", "server", "--port", "0", "--flows", str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
    )

    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line == (
        f"agent-executor: --flows {path}: flow 'f': node 'a' names the agent 'nobody', "
        "which is not served (agents: default)"
    )


def built(tmp_path: Path, flows: object, *flags: str) -> AgentRouter:
    path = tmp_path / "flows.json"
    path.write_text(json.dumps(flows), encoding="utf-8")
    args = build_parser().parse_args(["serve", "--flows", str(path), *flags])
    service = build_service(ServeConfig.from_args(args, {}))
    assert isinstance(service.agents, AgentRouter)
    return service.agents


def test_flows_are_served_next_to_the_agents(tmp_path: Path) -> None:
    flows = {"flows": {"f": {"start": "a", "nodes": {"a": {"agent": "default"}}}}}

    router = built(tmp_path, flows)

    assert list(router.agents) == ["default", "f"] and router.default == "default"
    assert isinstance(router.agents["f"], Flow)


@pytest.mark.parametrize(
    ("flows", "problem"),
    [
        (
            {"flows": {"f": {"start": "a", "nodes": {"a": {"agent": "default", "tool": "x"}}}}},
            "give exactly one of 'agent', 'model', 'tool' or 'filter'",
        ),
        (
            {"flows": {"f": {"start": "a", "nodes": {"a": {"tool": "nope"}}}}},
            "node 'a' names the tool 'nope', which no --tools module defines",
        ),
        (
            {"flows": {"default": {"start": "a", "nodes": {"a": {"agent": "default"}}}}},
            "flow 'default': an agent has that name",
        ),
        (
            {"flows": {"f": {"start": "b", "nodes": {"a": {"agent": "default"}}}}},
            "flow 'f': the start node 'b' is not a node of the flow",
        ),
        (
            {"flows": {"f": {"start": "a", "nodes": {"a": {"filter": {"regex": "("}}}}}},
            "invalid regex",
        ),
        ({"flows": {"f": {"start": "a", "nodes": {}, "edge": []}}}, "edge: Extra inputs"),
    ],
)
def test_a_flows_file_that_does_not_hold_is_one_cli_error(
    tmp_path: Path, flows: object, problem: str
) -> None:
    with pytest.raises(CliError) as caught:
        built(tmp_path, flows)

    message = str(caught.value)
    assert message.startswith(f"--flows {tmp_path / 'flows.json'}: ")
    assert problem in message and "\n" not in message
