"""A flow's start node chosen per request, among the nodes declared as its entry points:
through the public API (``AgentCommand.start``), the service's ``start`` field and the
``--flows`` file; a node that is not an entry point is refused, and a graph is checked from
every entry point."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from agent_executor import (
    AgentCommand,
    ConfigurationError,
    Edge,
    Flow,
    FunctionNode,
)

from .server_helpers import serve


def pipeline() -> Flow:
    return Flow(
        [
            FunctionNode("clean", str.strip),
            FunctionNode("shout", str.upper),
            FunctionNode("sign", lambda text: f"{text} -- the desk"),
        ],
        [Edge("clean", "shout"), Edge("shout", "sign")],
        start="clean",
        entry_points=["sign"],
        name="desk",
        metrics=CollectorRegistry(),
    )


async def test_a_run_starts_at_the_entry_point_it_names() -> None:
    flow = pipeline()
    whole = await flow.execute(AgentCommand(user_prompt="  hello "))
    signed = await flow.execute(AgentCommand(user_prompt="hello", start="sign"))
    refused = await flow.execute(AgentCommand(user_prompt="hello", start="shout"))

    assert whole.content == "HELLO -- the desk"
    assert signed.content == "hello -- the desk"
    assert refused.error is not None and refused.error.code == "invalid_input"
    assert "entry points: clean, sign" in refused.error.message


def test_the_graph_is_checked_from_every_entry_point() -> None:
    with pytest.raises(ConfigurationError, match="not a node of the flow"):
        Flow([FunctionNode("a", str.strip)], start="a", entry_points=["b"])
    lonely = Flow(
        [FunctionNode("a", str.strip), FunctionNode("b", str.upper)],
        start="a",
        entry_points=["b"],
        metrics=CollectorRegistry(),
    )
    assert lonely.entry_points == ("a", "b")  # b is reachable as an entry point


async def test_the_service_and_the_flows_file_take_the_start(tmp_path: Path) -> None:
    async with serve({"desk": pipeline()}) as client:
        answer = await client.post(
            "/api/chat", json={"message": "hi", "agent": "desk", "start": "sign"}
        )
    assert answer.json()["content"] == "hi -- the desk"

    from server.cli.build import build_service
    from server.cli.config import ServeConfig
    from server.cli.parser import build_parser

    spec = {
        "flows": {
            "checker": {
                "start": "ask",
                "entry_points": ["again"],
                "nodes": {
                    "ask": {"agent": "default"},
                    "again": {"agent": "default"},
                },
                "edges": [{"source": "ask", "target": "again"}],
            }
        }
    }
    path = tmp_path / "flows.json"
    path.write_text(json.dumps(spec), encoding="utf-8")
    service = build_service(
        ServeConfig.from_args(build_parser().parse_args(["serve", "--flows", str(path)]), {})
    )
    flow = service.agents.agents["checker"]  # type: ignore[union-attr]
    assert isinstance(flow, Flow) and flow.entry_points == ("ask", "again")
