"""Agents as tools and handoffs through the real app: the nested agent's events arrive in a
``json``-mode SSE stream as ``nested`` events naming the agent; ``text``-mode streams, the JSON
result and the OpenAI-compatible endpoint carry only the answering agent's text."""

from __future__ import annotations

import json
from typing import Any

from prometheus_client import CollectorRegistry

from agent_executor import AgentExecutor, ScriptedModel, handoff
from agent_executor.models.scripted import call, text_turn, tool_turn

from .server_helpers import serve


def frames(body: str) -> list[dict[str, str]]:
    """The SSE frames of a response body: each frame's fields (id, event, data)."""
    out = []
    for frame in body.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in frame.split("\n") if ": " in line)
        if "event" in fields:
            out.append(fields)
    return out


def boss(runs: int = 1) -> AgentExecutor:
    """A boss that asks a researcher agent (as a tool) and then answers, ``runs`` times."""
    researcher = AgentExecutor(
        model=ScriptedModel([text_turn("Paris: 2.1 million.", usage=(10, 5))] * runs),
        name="researcher",
        metrics=CollectorRegistry(),
    )
    turns = [
        tool_turn(call("researcher", {"input": "population of Paris"}), usage=(20, 3)),
        text_turn("About 2.1 million.", usage=(30, 4)),
    ]
    return AgentExecutor(
        model=ScriptedModel(turns * runs),
        tools=[researcher.as_tool()],
        metrics=CollectorRegistry(),
    )


async def test_json_mode_streams_the_nested_agent_and_text_mode_only_the_answer() -> None:
    async with serve(boss(runs=4)) as client:
        json_mode = await client.post(
            "/api/chat/stream", json={"message": "How many?", "events": "json"}
        )
        text_mode = await client.post("/api/chat/stream", json={"message": "How many?"})
        result = await client.post("/api/chat", json={"message": "How many?"})
        openai = await client.post(
            "/v1/chat/completions",
            json={
                "model": "default",
                "stream": True,
                "messages": [{"role": "user", "content": "How many?"}],
            },
        )

    events = frames(json_mode.text)
    run = json_mode.headers["x-run-id"]
    assert [f["id"] for f in events] == [f"{run}:{i}" for i in range(len(events))]
    kinds = [f["event"] for f in events]
    assert kinds[0] == "tool_start" and kinds[-1] == "done"
    nested: list[dict[str, Any]] = [json.loads(f["data"]) for f in events if f["event"] == "nested"]
    assert nested and all((n["agent"], n["call_id"]) == ("researcher", "call_0") for n in nested)
    inner = [n["event"] for n in nested]
    assert "".join(e["text"] for e in inner if e["type"] == "message") == "Paris: 2.1 million."
    assert inner[-1]["type"] == "done"
    assert inner[-1]["usage"] == {"input_tokens": 10, "output_tokens": 5}
    assert kinds.index("tool_end") > max(i for i, k in enumerate(kinds) if k == "nested")
    answer = "".join(json.loads(f["data"])["text"] for f in events if f["event"] == "message")
    assert answer == "About 2.1 million."
    done = json.loads(events[-1]["data"])
    assert done["usage"] == {"input_tokens": 60, "output_tokens": 12}

    plain = frames(text_mode.text)
    assert "nested" not in {f["event"] for f in plain}
    positions = [int(f["id"].rsplit(":", 1)[1]) for f in plain]
    assert positions == sorted(positions) and len(set(positions)) == len(plain)  # gaps: nested
    assert "".join(f["data"] for f in plain if f["event"] == "message") == "About 2.1 million."

    assert result.json()["content"] == "About 2.1 million."
    assert result.json()["usage"] == {"input_tokens": 60, "output_tokens": 12}

    chunks = [
        json.loads(line.removeprefix("data: "))
        for line in openai.text.splitlines()
        if line.startswith("data: {")
    ]
    content = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"])
    assert content == "About 2.1 million."


async def test_a_handoff_is_announced_in_json_mode_only() -> None:
    def triage(runs: int) -> AgentExecutor:
        billing = AgentExecutor(
            model=ScriptedModel(["Billing: it is paid."] * runs),
            name="billing",
            metrics=CollectorRegistry(),
        )
        return AgentExecutor(
            model=ScriptedModel([tool_turn(call("transfer_to_billing"))] * runs),
            tools=[handoff(billing)],
            name="triage",
            metrics=CollectorRegistry(),
        )

    async with serve(triage(runs=2)) as client:
        json_mode = await client.post(
            "/api/chat/stream", json={"message": "invoice?", "events": "json"}
        )
        text_mode = await client.post("/api/chat/stream", json={"message": "invoice?"})

    events = frames(json_mode.text)
    assert [f["event"] for f in events] == [
        "tool_start",
        "tool_end",
        "agent_selected",
        "message",
        "message",
        "message",
        "message",
        "done",
    ]
    assert json.loads(events[2]["data"]) == {
        "agent": "billing",
        "selected_by": "handoff",
        "detail": "from triage",
    }
    plain = frames(text_mode.text)
    assert [f["event"] for f in plain] == [
        "tool_start",
        "tool_end",
        "message",
        "message",
        "message",
        "message",
        "done",
    ]
    assert "".join(f["data"] for f in plain if f["event"] == "message") == "Billing: it is paid."


async def test_slack_shows_the_answer_and_the_agent_tool_never_the_nested_text() -> None:
    from slack_sdk.web.async_client import AsyncWebClient

    from agent_executor import AgentCommand
    from agent_executor.integrations.slack import SlackStreamer, workspace_budget

    from .fakes.slack_api import FakeSlackAPI

    async with FakeSlackAPI() as slack:
        client = AsyncWebClient(token=slack.token, base_url=slack.base_url)
        workspace_budget(client).min_interval = 0.0
        streamer = SlackStreamer(client, "C1", interval=0.05)
        result = await streamer.stream(boss().execute_stream(AgentCommand(user_prompt="How?")))

    assert slack.messages[result.ts].text == result.text == "About 2.1 million."
    assert "Paris:" not in repr([call.params for call in slack.calls])


async def test_the_openapi_document_names_the_nested_event() -> None:
    async with serve(boss()) as client:
        document = (await client.get("/openapi.json")).json()

    def enums(node: Any) -> list[list[Any]]:
        if isinstance(node, dict):
            found = [node["enum"]] if isinstance(node.get("enum"), list) else []
            return found + [e for value in node.values() for e in enums(value)]
        if isinstance(node, list):
            return [e for value in node for e in enums(value)]
        return []

    (events,) = [e for e in enums(document) if "agent_selected" in e]
    assert "nested" in events
