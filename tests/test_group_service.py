"""An agent group through the real app: served by name beside an agent, streamed over SSE
(``json`` mode shows who speaks each round; ``text`` mode only the text), paused on an
agent's approval and resumed over HTTP, and answered by the OpenAI-compatible endpoint."""

from __future__ import annotations

import json
from typing import Any

from prometheus_client import CollectorRegistry

from agent_executor import AgentExecutor, AgentGroup, ScriptedModel, tool
from agent_executor.models.scripted import call, text_turn, tool_turn

from .server_helpers import resume_body, serve
from .test_orchestration_service import frames


def agent(name: str, turns: list[Any], **options: Any) -> AgentExecutor:
    return AgentExecutor(
        model=ScriptedModel(turns, name=f"{name}-model"),
        name=name,
        metrics=CollectorRegistry(),
        **options,
    )


@tool(requires_approval=True)
def publish(title: str) -> str:
    """Publish the article."""
    return f"published {title}"


def agents(runs: int) -> dict[str, AgentExecutor]:
    """A helpdesk agent, and a team of writer and editor served as ``team``."""
    writer = agent("writer", [text_turn("Draft.", usage=(3, 1))] * runs)
    editor = agent("editor", [text_turn("Final text.", usage=(4, 2))] * runs)
    team = AgentGroup([writer, editor], name="team", metrics=CollectorRegistry())
    return {"helpdesk": agent("helpdesk", []), "team": team}


async def test_a_group_streams_over_sse_naming_the_agent_of_each_round() -> None:
    async with serve(agents(runs=3)) as client:
        json_mode = await client.post(
            "/api/chat/stream", json={"message": "Write.", "agent": "team", "events": "json"}
        )
        text_mode = await client.post("/api/chat/stream", json={"message": "W", "agent": "team"})
        openai = await client.post(
            "/v1/chat/completions",
            json={"model": "team", "messages": [{"role": "user", "content": "Write."}]},
        )

    assert json_mode.status_code == 200 and json_mode.headers["X-Agent"] == "team"
    events = frames(json_mode.text)
    kinds = [f["event"] for f in events]
    assert kinds == ["agent_selected", "message", "agent_selected", *["message"] * 3, "done"]
    selected = [json.loads(f["data"]) for f in events if f["event"] == "agent_selected"]
    assert [(s["agent"], s["selected_by"]) for s in selected] == [
        ("writer", "group"),
        ("editor", "group"),
    ]
    texts = [json.loads(f["data"])["text"] for f in events if f["event"] == "message"]
    assert texts == ["Draft.", "\n\n", "Final ", "text."]
    done = json.loads(events[-1]["data"])
    assert done["finish_reason"] == "stop"
    assert done["usage"] == {"input_tokens": 7, "output_tokens": 3}

    plain = frames(text_mode.text)
    assert [f["event"] for f in plain] == [*["message"] * 4, "done"]

    assert openai.status_code == 200
    assert openai.json()["choices"][0]["message"]["content"] == "Draft.\n\nFinal text."


async def test_a_group_paused_on_an_approval_resumes_over_http() -> None:
    writer = agent("writer", ["Cats."])
    publisher = agent(
        "publisher",
        [tool_turn(call("publish", {"title": "Cats"})), "Published."],
        tools=[publish],
    )
    team = AgentGroup([writer, publisher], name="team", metrics=CollectorRegistry())

    async with serve({"team": team}) as client:
        first = await client.post(
            "/api/chat", json={"message": "Write and publish.", "session_id": "s"}
        )
        body = first.json()
        assert body["finish_reason"] == "waiting_for_approval", body
        (pending,) = body["pending_approvals"]
        resumed = await client.post(
            "/api/chat/stream",
            json=resume_body(pending),
        )

    assert resumed.status_code == 200, resumed.text
    events = frames(resumed.text)
    kinds = [f["event"] for f in events]
    assert kinds[0] == "agent_selected" and kinds[-1] == "done", kinds
    assert json.loads(events[0]["data"])["agent"] == "publisher"
    assert "tool_end" in kinds
    done = json.loads(events[-1]["data"])
    assert done["finish_reason"] == "stop"
    assert [c["tool"] for c in done["tool_calls"]] == ["publish"]
