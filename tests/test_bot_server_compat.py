"""The Bot Server's API under ``/compat/bot-server``, in process, on scripted models: the plain
text stream, the step lines of a multi-call turn, a failure after the stream began, steps sent
back becoming the conversation, ``agentName`` with a fallback to the default, nothing kept in
memory after a request, the prefix's error shape and its health answer without an API key.

(``tests/interop/test_bot_server.py`` drives the same API with a client written as that
service's README shows, under Node.)"""

from __future__ import annotations

import json
from typing import Any

from agent_executor import AgentExecutor, InMemoryConversationStore, ScriptedModel, tool
from agent_executor.models.scripted import call, tool_turn
from agent_executor.tools.ask_user import ASK_USER
from server import Settings

from .helpers import named_agent
from .server_helpers import serve

STREAM = "/compat/bot-server/api/chat/stream"


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


@tool
def clock() -> str:
    """The time."""
    return "noon"


def _lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


async def test_the_plain_stream_is_the_answer_and_nothing_is_kept() -> None:
    agent = AgentExecutor(model=ScriptedModel(["Hello there."]), name="solo")
    async with serve(agent) as client:
        response = await client.post(
            STREAM, json={"messages": [{"type": "human", "content": "hi"}]}
        )

    assert response.status_code == 200
    assert response.headers["content-type"] == "text/plain; charset=utf-8"
    assert response.text == "Hello there."
    assert isinstance(agent.memory, InMemoryConversationStore)
    assert len(agent.memory) == 0  # the run's session is dropped with the response


async def test_steps_of_a_turn_with_two_calls_then_the_answer() -> None:
    model = ScriptedModel(
        [
            tool_turn(
                call("weather", {"city": "Paris"}), call("clock"), text="Let me look both up."
            ),
            "It is noon and sunny.",
        ]
    )
    agent = AgentExecutor(model=model, tools=[weather, clock], name="solo")
    async with serve(agent) as client:
        response = await client.post(
            STREAM,
            json={"messages": [{"type": "human", "content": "weather?"}], "reactVerbose": True},
        )

    steps = _lines(response.text)
    assert [s["action"] for s in steps] == ["tool_call", "tool_call", "final_answer"]
    by_tool = {s["action_input"]["tool_name"]: s for s in steps[:2]}
    assert by_tool["weather"]["observation"] == "sunny in Paris"
    assert by_tool["weather"]["action_input"]["parameters"] == {"city": "Paris"}
    assert by_tool["clock"]["observation"] == "noon"
    assert [s["thought"] for s in steps[:2]].count("Let me look both up.") == 1  # once a turn
    assert steps[2] == {"thought": "", "action": "final_answer", "answer": "It is noon and sunny."}


async def test_a_failure_after_the_stream_began_is_an_error_line() -> None:
    model = ScriptedModel([tool_turn(call("weather", {"city": "Oslo"}))])  # then exhausted
    agent = AgentExecutor(model=model, tools=[weather], name="solo")
    async with serve(agent) as client:
        verbose = await client.post(
            STREAM, json={"messages": [{"type": "human", "content": "go"}], "reactVerbose": True}
        )

    steps = _lines(verbose.text)
    assert steps[0]["observation"] == "sunny in Oslo"
    assert list(steps[-1]) == ["error"] and steps[-1]["error"]
    assert len(steps) == 2  # no final answer after the error


async def test_steps_sent_back_become_the_conversation_and_no_tool_runs_again() -> None:
    runs: list[str] = []

    @tool
    def lookup(order_id: str) -> str:
        """Look an order up."""
        runs.append(order_id)
        return f"order {order_id} shipped"

    model = ScriptedModel(["Shipping to Paris."])
    agent = AgentExecutor(model=model, tools=[lookup, ASK_USER], name="solo")
    steps = [
        {
            "thought": "I look it up.",
            "action": "tool_call",
            "action_input": {"tool_name": "lookup", "parameters": {"order_id": "7"}},
        },  # the line before the observation, as that service also sent it: left out
        {
            "thought": "I look it up.",
            "action": "tool_call",
            "action_input": {"tool_name": "lookup", "parameters": {"order_id": "7"}},
            "observation": "order 7 shipped",
        },
        {
            "thought": "Which address?",
            "action": "user_input",
            "action_input": {"tool_name": "ask_user", "parameters": {"question": "Which?"}},
            "observation": "Paris",
        },
    ]
    body = {
        "messages": [
            {"type": "human", "content": "ship order 7"},
            {"type": "human", "content": "Paris"},
        ],
        "reactInitialSteps": steps,
    }
    async with serve(agent) as client:
        response = await client.post(STREAM, json=body)

    assert response.text == "Shipping to Paris."
    assert runs == []
    sent = model.requests[0].messages
    assert [m.role for m in sent] == ["user", "assistant", "tool", "assistant", "user"]
    assert sent[1].tool_calls[0].name == "lookup"
    assert sent[2].content == "order 7 shipped"
    assert (sent[3].content, sent[4].content) == ("Which address?", "Paris")


async def test_agent_name_picks_an_agent_and_an_unknown_one_falls_back() -> None:
    agents = {
        "front": named_agent("front", ["front here", "front again"]),
        "billing": named_agent("billing", ["billing here"]),
    }
    async with serve(agents) as client:
        named = await client.post(
            STREAM,
            json={"messages": [{"type": "human", "content": "x"}], "agentName": "billing"},
        )
        unknown = await client.post(
            STREAM,
            json={"messages": [{"type": "human", "content": "x"}], "agentName": "nobody"},
        )

    assert (named.text, named.headers["x-agent"]) == ("billing here", "billing")
    assert (unknown.text, unknown.headers["x-agent"]) == ("front here", "front")


async def test_errors_on_the_prefix_have_its_shape_and_health_is_public() -> None:
    agent = AgentExecutor(model=ScriptedModel(["ok"]), name="solo")
    settings = Settings(api_keys={"sk-1": "ann"})
    async with serve(agent, settings) as client:
        health = await client.get("/compat/bot-server/api/health")
        unauthorised = await client.post(STREAM, json={"messages": []})
        headers = {"Authorization": "Bearer sk-1"}
        empty = await client.post(STREAM, json={"messages": []}, headers=headers)
        not_last = await client.post(
            STREAM, json={"messages": [{"type": "ai", "content": "hi"}]}, headers=headers
        )
        missing = await client.get("/compat/bot-server/api/nothing", headers=headers)

    assert health.status_code == 200
    body = health.json()
    assert body["success"] is True and body["data"]["status"] == "healthy"
    assert set(body["data"]) == {"status", "timestamp", "uptime"}
    for response, status in ((unauthorised, 401), (empty, 400), (not_last, 400), (missing, 404)):
        assert response.status_code == status
        error = response.json()
        assert list(error) == ["error"] and isinstance(error["error"], str), error
