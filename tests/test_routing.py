"""Agent routing: several named agents in one service, picked by name or by a router (a function
or a model call through the real OpenAI-compatible client), and the agent_selected event."""

from __future__ import annotations

import json
from collections.abc import Mapping

import anyio
import pytest
from prometheus_client import CollectorRegistry

from agent_executor import (
    AgentCommand,
    AgentExecutor,
    AgentRouter,
    AgentSelectedEvent,
    ConfigurationError,
    MessageEvent,
    ModelRouter,
    OpenAICompatModel,
    ScriptedModel,
    tool,
)
from agent_executor.models.scripted import call, tool_turn

from .fakes.openai_server import FakeOpenAIServer, Stream, text_stream
from .server_helpers import serve
from .test_server_tool_modes import parse


def agent(name: str, description: str, *answers: str) -> AgentExecutor:
    """An agent whose model answers each run with the next of ``answers``."""
    return AgentExecutor(
        model=ScriptedModel(list(answers)),
        name=name,
        description=description,
        metrics=CollectorRegistry(),
    )


def agents() -> dict[str, AgentExecutor]:
    return {
        "support": agent("support", "Questions about using the product.", *["support here"] * 3),
        "billing": agent("billing", "Invoices, payments and refunds.", *["billing here"] * 3),
    }


def by_keyword(message: str, names: Mapping[str, str]) -> str | None:
    calls.append((message, dict(names)))
    return "billing" if "invoice" in message.lower() else None


calls: list[tuple[str, dict[str, str]]] = []


@pytest.fixture(autouse=True)
def _clear_calls() -> None:
    calls.clear()


def events_of(text: str) -> list[tuple[str, str]]:
    return parse(text)


async def test_the_request_picks_an_agent_by_name() -> None:
    router = AgentRouter(agents(), router=by_keyword)
    async with serve(router) as client:
        named = await client.post("/api/chat", json={"message": "hello", "agent": "billing"})
        unknown = await client.post("/api/chat", json={"message": "hello", "agent": "sales"})
        streamed = await client.post(
            "/api/chat/stream", json={"message": "hello", "agent": "billing", "events": "json"}
        )

    assert named.status_code == 200
    assert named.json()["content"] == "billing here"
    assert named.headers["X-Agent"] == "billing"
    assert unknown.status_code == 400
    assert unknown.json()["error"]["message"] == (
        "unknown agent 'sales'; configured agents: billing, support"
    )
    kinds = [kind for kind, _ in events_of(streamed.text)]
    assert set(kinds) == {"message", "done"} and kinds[-1] == "done"
    assert streamed.headers["X-Agent"] == "billing"
    assert calls == []  # a named agent is never routed


async def test_a_function_router_picks_the_agent_and_the_stream_says_so() -> None:
    router = AgentRouter(agents(), router=by_keyword)
    async with serve(router) as client:
        routed = await client.post(
            "/api/chat/stream", json={"message": "Where is my INVOICE?", "events": "json"}
        )
        fallback = await client.post(
            "/api/chat/stream", json={"message": "how do I log in?", "events": "json"}
        )
        plain = await client.post("/api/chat", json={"message": "invoice please"})

    first, *rest = events_of(routed.text)
    assert first == (
        "agent_selected",
        json.dumps(
            {"agent": "billing", "selected_by": "router", "detail": None}, separators=(",", ":")
        ),
    )
    assert "".join(json.loads(data)["text"] for kind, data in rest if kind == "message") == (
        "billing here"
    )
    assert routed.headers["X-Agent"] == "billing"
    selected = json.loads(events_of(fallback.text)[0][1])
    assert selected == {
        "agent": "support",
        "selected_by": "default",
        "detail": "the router picked no agent",
    }
    assert plain.json()["content"] == "billing here"
    assert plain.headers["X-Agent"] == "billing"
    assert calls[0] == (
        "Where is my INVOICE?",
        {
            "support": "Questions about using the product.",
            "billing": "Invoices, payments and refunds.",
        },
    )


async def test_text_mode_streams_carry_no_routing_event() -> None:
    router = AgentRouter(agents(), router=by_keyword)
    async with serve(router) as client:
        response = await client.post("/api/chat/stream", json={"message": "invoice"})

    events = events_of(response.text)
    assert "".join(data for kind, data in events if kind == "message") == "billing here"
    assert [kind for kind, _ in events] == ["message", "message", "done"]
    ids = [line for line in response.text.splitlines() if line.startswith("id: ")]
    run = response.headers["x-run-id"]
    assert ids == [f"id: {run}:1", f"id: {run}:2", f"id: {run}:3"]  # 0, the pick, left out


async def test_a_model_router_asks_a_real_model_over_http(server: FakeOpenAIServer) -> None:
    server.script(Stream(text_stream(["Bill", "ing."])))
    model = OpenAICompatModel("openai/router-mini", base_url=server.base_url, api_key="sk-test")
    router = AgentRouter(agents(), router=ModelRouter(model))
    async with serve(router) as client:
        response = await client.post(
            "/api/chat/stream", json={"message": "I was charged twice", "events": "json"}
        )

    selected = json.loads(events_of(response.text)[0][1])
    assert selected["agent"] == "billing" and selected["selected_by"] == "router"
    [request] = server.requests
    system, user = request["messages"]
    assert "- billing: Invoices, payments and refunds." in system["content"]
    assert "- support: Questions about using the product." in system["content"]
    assert user == {"role": "user", "content": "I was charged twice"}
    assert "tools" not in request
    assert request["max_tokens"] == 16 and request["temperature"] == 0


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("billing", "billing"),
        ("`Support`", "support"),
        ("The best agent is billing.", "billing"),
        ("sales", None),
        ("", None),
    ],
)
async def test_a_model_routers_answer_is_matched_to_a_name(
    answer: str, expected: str | None
) -> None:
    router = ModelRouter(ScriptedModel([answer]))
    assert await router.route("msg", {"support": "", "billing": ""}) == expected


async def test_a_failing_or_slow_router_falls_back_to_the_default_agent() -> None:
    def broken(message: str, names: Mapping[str, str]) -> str:
        raise RuntimeError("classifier down")

    async def slow(message: str, names: Mapping[str, str]) -> str:
        await anyio.sleep(10)
        return "billing"

    failing = AgentRouter(agents(), router=broken, default="billing")
    stalled = AgentRouter(agents(), router=slow, route_timeout=0.1)
    unknown = AgentRouter(agents(), router=lambda message, names: "sales")

    assert await failing.select("x") == AgentSelectedEvent(
        "billing", "default", "the router failed: RuntimeError"
    )
    with anyio.fail_after(5):
        assert await stalled.select("x") == AgentSelectedEvent(
            "support", "default", "the router took longer than 0.1 s"
        )
    assert (await unknown.select("x")).detail == "the router picked an unknown agent 'sales'"


async def test_the_library_router_streams_the_pick_first() -> None:
    router = AgentRouter(agents().values(), router=by_keyword)
    events = [e async for e in router.execute_stream(AgentCommand(user_prompt="invoice 42"))]
    result = await router.execute(AgentCommand(user_prompt="hello"), agent="support")

    assert events[0] == AgentSelectedEvent("billing", "router")
    text = "".join(e.text for e in events if isinstance(e, MessageEvent))
    assert text == "billing here"
    assert result.content == "support here"
    with pytest.raises(ConfigurationError, match="unknown agent 'nope'"):
        await router.execute(AgentCommand(user_prompt="hello"), agent="nope")
    with pytest.raises(ConfigurationError, match="default agent 'nope'"):
        AgentRouter(agents(), default="nope")


@tool(requires_approval=True)
def refund(amount: int) -> str:
    """Refund an amount."""
    return f"refunded {amount}"


async def test_a_resume_goes_to_the_agent_whose_run_is_waiting() -> None:
    billing = AgentExecutor(
        model=ScriptedModel([tool_turn(call("refund", {"amount": 5}, id="r")), "Refunded."]),
        tools=[refund],
        name="billing",
        metrics=CollectorRegistry(),
    )
    support = agent("support", "", "support here")
    router = AgentRouter({"support": support, "billing": billing}, router=by_keyword)
    async with serve(router) as client:
        paused = await client.post(
            "/api/chat", json={"message": "refund my invoice", "session_id": "s"}
        )
        [pending] = paused.json()["pending_approvals"]
        resumed = await client.post(
            "/api/chat/stream",
            json={
                "session_id": "s",
                "events": "json",
                "approvals": [
                    {"call_id": "r", "approved": True, "approval_token": pending["approval_token"]}
                ],
            },
        )

    assert paused.json()["finish_reason"] == "waiting_for_approval"
    events = events_of(resumed.text)
    assert resumed.headers["X-Agent"] == "billing"
    assert "agent_selected" not in [kind for kind, _ in events]
    assert json.loads(events[-1][1])["finish_reason"] == "stop"
    assert [json.loads(d)["status"] for k, d in events if k == "tool_end"] == ["success"]
    assert len(calls) == 1  # only the first request was routed
