"""``POST /api/ag-ui`` at the HTTP boundary: every SSE ``data`` line parsed by the AG-UI
protocol package's own event models (nothing unknown, nothing lost), the sequences compared
whole, on scripted models.

Covers a text answer, the agent's own tool call and its result, a client tool's call ending
the run and its result continuing it (the thread's memory is the history after that),
reasoning, errors before and after the stream began, a group's agents and a flow's nodes as
steps, an agent run as a tool as a subagent, a call waiting for approval as an interrupt and
its answer, picking the agent, what ``state``, ``context`` and ``forwardedProps`` become, a
thread the service has no memory of, the run kept by the run hub, and the endpoint without its
extra.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import httpx
import pytest
from ag_ui import core as agui
from prometheus_client import CollectorRegistry
from pydantic import TypeAdapter

import server.dialects
from agent_executor import (
    AgentExecutor,
    AgentGroup,
    AgentNode,
    AssistantMessage,
    Edge,
    Flow,
    FunctionNode,
    Hook,
    ModelChunk,
    ModelError,
    ModelRequest,
    RunContext,
    ScriptedModel,
    ToolCall,
    ToolMessage,
    UserMessage,
    tool,
)
from agent_executor.models.scripted import call, text_turn, tool_turn

from .helpers import model_of, named_agent
from .server_helpers import serve

EVENT: TypeAdapter[Any] = TypeAdapter(agui.Event)
PICTURE = {"type": "url", "value": "https://example.com/a.png"}
IMAGE = {"id": "u1", "role": "user", "content": [{"type": "image", "source": PICTURE}]}
REFUND = {
    "name": "refund",
    "description": "Refund an amount to the customer.",
    "parameters": {"type": "object", "properties": {"amount": {"type": "number"}}},
}


@tool
def lookup_order(order_id: str) -> str:
    """Look up an order."""
    return f"order {order_id} shipped"


@tool(requires_approval=True)
def cancel_order(order_id: str) -> str:
    """Cancel an order."""
    return f"order {order_id} cancelled"


def user(text: str, message_id: str = "u1") -> dict[str, Any]:
    return {"id": message_id, "role": "user", "content": text}


def run_input(*messages: dict[str, Any], run: str = "r1", **fields: Any) -> dict[str, Any]:
    """A ``RunAgentInput`` as ``HttpAgent`` sends it, on thread ``t1``."""
    base = {"threadId": "t1", "runId": run, "state": {}, "tools": [], "context": []}
    return {**base, "forwardedProps": {}, "messages": list(messages), **fields}


def wire(body: str) -> list[dict[str, Any]]:
    """Each event of an AG-UI SSE body, parsed by the protocol's models, as its JSON with the
    message ids renamed ``m1``, ``m2``... in order of appearance."""
    names: dict[str, str] = {}
    events = []
    for block in body.split("\n\n"):
        if not block or block.startswith(":"):
            continue
        assert block.startswith("data: ") and "\n" not in block, block
        event = EVENT.validate_json(block[6:])
        fields = event.model_dump(mode="json", by_alias=True)
        assert (fields, event.model_extra) == (json.loads(block[6:]), {})
        for key in ("messageId", "parentMessageId"):
            if key in fields:
                fields[key] = names.setdefault(fields[key], f"m{len(names) + 1}")
        events.append(fields)
    return events


async def stream(
    client: httpx.AsyncClient, body: dict[str, Any], path: str = "/api/ag-ui"
) -> list[dict[str, Any]]:
    response = await client.post(path, json=body, headers={"Accept": "text/event-stream"})
    assert response.status_code == 200, response.text
    assert response.headers["Content-Type"] == "text/event-stream"
    return wire(response.text)


def started(run: str = "r1") -> dict[str, Any]:
    return {"type": "RUN_STARTED", "threadId": "t1", "runId": run, "protocolVersion": "1.0"}


def finished(run: str = "r1", **fields: Any) -> dict[str, Any]:
    return {"type": "RUN_FINISHED", "threadId": "t1", "runId": run, **fields}


def text(
    message_id: str, *deltas: str, name: str | None = None, **tag: Any
) -> list[dict[str, Any]]:
    """A whole text message; ``name`` the agent speaking, ``tag`` on every event."""
    named = {} if name is None else {"name": name}
    return [
        {
            "type": "TEXT_MESSAGE_START",
            **tag,
            "messageId": message_id,
            "role": "assistant",
            **named,
        },
        *[
            {"type": "TEXT_MESSAGE_CONTENT", **tag, "messageId": message_id, "delta": d}
            for d in deltas
        ],
        {"type": "TEXT_MESSAGE_END", **tag, "messageId": message_id},
    ]


def tool_call(call_id: str, name: str, arguments: str, parent: str) -> list[dict[str, Any]]:
    return [
        {
            "type": "TOOL_CALL_START",
            "toolCallId": call_id,
            "toolCallName": name,
            "parentMessageId": parent,
        },
        {"type": "TOOL_CALL_ARGS", "toolCallId": call_id, "delta": arguments},
        {"type": "TOOL_CALL_END", "toolCallId": call_id},
    ]


def result(message_id: str, call_id: str, content: str) -> dict[str, Any]:
    return {
        "type": "TOOL_CALL_RESULT",
        "metadata": {"status": "success"},
        "messageId": message_id,
        "toolCallId": call_id,
        "content": content,
        "role": "tool",
    }


def steps(name: str, *inner: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"type": "STEP_STARTED", "stepName": name},
        *inner,
        {"type": "STEP_FINISHED", "stepName": name},
    ]


async def test_a_text_answer_is_one_message_in_the_run() -> None:
    model = ScriptedModel([text_turn("Hello there", usage=(3, 2))])

    async with serve(AgentExecutor(model=model)) as client:
        response = await client.post("/api/ag-ui", json=run_input(user("Hi")))

    assert wire(response.text) == [
        started(),
        *text("m1", "Hello ", "there"),
        finished(usage=[{"inputTokens": 3, "outputTokens": 2, "totalTokens": 5}]),
    ]
    assert response.headers["X-Agent"] == "default"
    assert response.headers["X-Run-Id"]
    assert model.requests[0].messages == [UserMessage(content="Hi")]


async def test_the_agents_own_call_comes_with_its_result_and_each_turn_is_a_message() -> None:
    model = ScriptedModel(
        [
            tool_turn(call("lookup_order", {"order_id": "7"}, id="s1"), text="Checking. "),
            "Order 7 shipped.",
        ]
    )

    async with serve(AgentExecutor(model=model, tools=[lookup_order])) as client:
        events = await stream(client, run_input(user("Where is order 7?")))

    assert events == [
        started(),
        *text("m1", "Checking. "),
        *tool_call("s1", "lookup_order", '{"order_id":"7"}', parent="m1"),
        result("m2", "s1", "order 7 shipped"),
        *text("m3", "Order ", "7 ", "shipped."),  # no paragraph break: a message of its own
        finished(),
    ]


async def test_a_client_tool_call_ends_the_run_and_its_result_continues_it() -> None:
    both = tool_turn(
        call("lookup_order", {"order_id": "7"}, id="s1"), call("refund", {"amount": 5}, id="c1")
    )
    model = ScriptedModel([both, "Refunded 5.", "You are welcome."])
    asked = user("Refund order 7")

    async with serve(AgentExecutor(model=model, tools=[lookup_order])) as client:
        first = await stream(client, run_input(asked, tools=[REFUND]))
        view = [
            asked,
            {"id": "a1", "role": "assistant", "toolCalls": [_call("s1", "lookup_order")]},
            {"id": "r1", "role": "tool", "toolCallId": "s1", "content": "order 7 shipped"},
            {"id": "a2", "role": "assistant", "toolCalls": [_call("c1", "refund")]},
            {"id": "r2", "role": "tool", "toolCallId": "c1", "content": "refunded 5"},
        ]
        second = await stream(client, run_input(*view, run="r2", tools=[REFUND]))
        again = [*view, {"id": "a3", "role": "assistant", "content": "Refunded 5."}]
        third = await stream(client, run_input(*again, user("Thanks", "u2"), run="r3"))

    assert first == [
        started(),
        *tool_call("s1", "lookup_order", '{"order_id":"7"}', parent="m1"),
        result("m2", "s1", "order 7 shipped"),
        *tool_call("c1", "refund", '{"amount":5}', parent="m3"),
        finished(outcome={"type": "success", "pendingToolCallIds": ["c1"]}),
    ]
    offered = [t["function"] for t in model.requests[0].tools]
    assert [f["name"] for f in offered] == ["lookup_order", "refund"]
    assert offered[1]["parameters"] == REFUND["parameters"]
    assert second == [started("r2"), *text("m1", "Refunded ", "5."), finished("r2")]
    exchange = [
        UserMessage(content="Refund order 7"),
        AssistantMessage(
            tool_calls=(
                ToolCall(id="s1", name="lookup_order", arguments='{"order_id": "7"}'),
                ToolCall(id="c1", name="refund", arguments='{"amount": 5}'),
            )
        ),
        ToolMessage(tool_call_id="s1", name="lookup_order", content="order 7 shipped"),
        ToolMessage(tool_call_id="c1", name="refund", content="refunded 5"),
    ]
    assert model.requests[1].messages == exchange
    assert third[1:-1] == text("m1", "You ", "are ", "welcome.")
    assert model.requests[2].messages == [  # the thread's memory, not the client's view
        *exchange,
        AssistantMessage(content="Refunded 5."),
        UserMessage(content="Thanks"),
    ]


def _call(call_id: str, name: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}


async def test_reasoning_is_a_reasoning_message_before_the_answer() -> None:
    turn = [
        ModelChunk(reasoning="Think"),
        ModelChunk(reasoning="ing."),
        ModelChunk(text="Yes."),
        ModelChunk(finish_reason="stop"),
    ]

    async with serve(AgentExecutor(model=ScriptedModel([turn]))) as client:
        events = await stream(client, run_input(user("Sure?")))

    thought = {"messageId": "m1"}
    assert events == [
        started(),
        {"type": "REASONING_START", **thought},
        {"type": "REASONING_MESSAGE_START", **thought, "role": "reasoning"},
        {"type": "REASONING_MESSAGE_CONTENT", **thought, "delta": "Think"},
        {"type": "REASONING_MESSAGE_CONTENT", **thought, "delta": "ing."},
        {"type": "REASONING_MESSAGE_END", **thought},
        {"type": "REASONING_END", **thought},
        *text("m2", "Yes."),
        finished(),
    ]


async def test_an_error_once_the_stream_began_closes_the_message_and_is_run_error() -> None:
    model = ScriptedModel([[ModelChunk(text="Hel"), ModelError("the provider went away")]])

    async with serve(AgentExecutor(model=model)) as client:
        events = await stream(client, run_input(user("Hi")))

    *rest, error = events
    assert rest == [started(), *text("m1", "Hel")]
    assert (error["type"], error["code"]) == ("RUN_ERROR", "llm_error")
    assert "the provider went away" not in error["message"]  # the provider's text is logged


async def test_a_run_refused_before_it_began_is_an_http_error_in_the_service_shape() -> None:
    model = ScriptedModel([ModelError("no", status_code=401)])

    async with serve(AgentExecutor(model=model)) as client:
        response = await client.post("/api/ag-ui", json=run_input(user("Hi")))

    assert response.status_code == 502
    assert response.json()["error"]["code"] == "llm_error"


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"threadId": "t1", "messages": []}, "runId: Field required"),
        (run_input(), "messages must end with the user's message"),
        (run_input({"id": "a", "role": "assistant", "content": "Hi"}), "must end with"),
        (run_input(user(" ")), "the user's, is empty"),
        (run_input(IMAGE), "messages[0].content: only text is supported"),
        (run_input(user("Hi"), tools=[{"name": "no spaces", "description": ""}]), "tools[0]"),
        (run_input(user("Hi"), forwardedProps={"agent": 7}), "forwardedProps.agent"),
        (run_input(user("Hi"), forwardedProps={"agent": "nobody"}), "unknown agent 'nobody'"),
        (run_input(user("Hi"), resume=[{"interruptId": "x", "status": "resolved"}]), "resume[0]"),
    ],
)
async def test_a_request_that_cannot_be_run_is_a_400(body: dict[str, Any], says: str) -> None:
    async with serve(AgentExecutor(model=ScriptedModel())) as client:
        response = await client.post("/api/ag-ui", json=body)

    assert response.status_code == 400
    assert says in response.json()["error"]["message"]


async def test_a_groups_agents_are_steps_each_speaking_in_its_own_message() -> None:
    writer = named_agent("writer", [text_turn("Draft.")])
    editor = named_agent("editor", [text_turn("Final.")])
    team = AgentGroup([writer, editor], name="team", metrics=CollectorRegistry())

    async with serve(team) as client:
        events = await stream(client, run_input(user("Write about cats")))

    assert events == [
        started(),
        *steps("writer", *text("m1", "Draft.", name="writer")),
        *steps("editor", *text("m2", "Final.", name="editor")),
        finished(),
    ]


async def test_a_flows_nodes_are_steps() -> None:
    writer = named_agent("writer", [text_turn("draft one")])
    pipeline = Flow(
        [AgentNode("write", writer), FunctionNode("shout", str.upper)],
        [Edge("write", "shout")],
        start="write",
        metrics=CollectorRegistry(),
    )

    async with serve(pipeline) as client:
        events = await stream(client, run_input(user("Go")))

    assert events == [
        started(),
        *steps("write", *text("m1", "draft ", "one", name="writer")),
        *steps("shout"),
        *text("m2", "DRAFT ONE"),
        finished(),
    ]


async def test_an_agent_run_as_a_tool_is_a_subagent() -> None:
    helper = named_agent(
        "helper",
        [tool_turn(call("lookup_order", {"order_id": "9"}, id="call_0")), "It shipped."],
        tools=[lookup_order],
    )
    asks = call("helper", {"input": "order 9?"}, id="call_0")
    lead = named_agent(
        "lead", [tool_turn(asks), "Shipped."], tools=[helper.as_tool("helper", "Finds orders.")]
    )

    async with serve(lead) as client:
        events = await stream(client, run_input(user("Order 9?")))

    inner = {"subagentRunId": "call_0"}
    assert events == [
        started(),
        *tool_call("call_0", "helper", '{"input":"order 9?"}', parent="m1"),
        {"type": "SUBAGENT_STARTED", **inner, "name": "helper", "parentToolCallId": "call_0"},
        *[
            {**event, **inner}
            for event in [
                *tool_call("call_0/call_0", "lookup_order", '{"order_id":"9"}', parent="m2"),
                result("m3", "call_0/call_0", "order 9 shipped"),
            ]
        ],
        *text("m4", "It ", "shipped.", **inner),
        {"type": "SUBAGENT_FINISHED", **inner},
        result("m5", "call_0", "It shipped."),
        *text("m6", "Shipped."),
        finished(),
    ]


async def test_a_call_waiting_for_approval_is_an_interrupt_its_answer_resumes() -> None:
    model = ScriptedModel([tool_turn(call("cancel_order", {"order_id": "3"}, id="k1")), "Done."])
    asked = user("Cancel order 3")

    async with serve(AgentExecutor(model=model, tools=[cancel_order])) as client:
        first = await stream(client, run_input(asked))
        (interrupt,) = first[-1]["outcome"]["interrupts"]
        answer = {"interruptId": interrupt["id"], "status": "resolved", "payload": True}
        second = await stream(client, run_input(asked, run="r2", resume=[answer]))

    assert first[:-1] == [started(), *tool_call("k1", "cancel_order", '{"order_id":"3"}', "m1")]
    assert interrupt == {
        "id": interrupt["id"],
        "reason": "approval_required",
        "message": "cancel_order needs your approval",
        "toolCallId": "k1",
        "metadata": {"tool": "cancel_order", "arguments": {"order_id": "3"}},
    }
    assert interrupt["id"].startswith("k1:")
    assert second == [
        started("r2"),
        result("m1", "k1", "order 3 cancelled"),
        *text("m2", "Done."),
        finished("r2"),
    ]


async def test_the_path_or_forwarded_props_picks_the_agent() -> None:
    agents = {
        "front": named_agent("front", []),
        "back": named_agent("back", [text_turn("From back."), text_turn("Again.")]),
    }

    async with serve(agents) as client:
        by_path = await client.post("/api/ag-ui/back", json=run_input(user("Hi")))
        by_props = await client.post(
            "/api/ag-ui", json=run_input(user("Hi"), forwardedProps={"agent": "back"})
        )
        both = await client.post(
            "/api/ag-ui/front", json=run_input(user("Hi"), forwardedProps={"agent": "back"})
        )

    assert [wire(r.text)[1:-1] for r in (by_path, by_props)] == [
        text("m1", "From ", "back."),
        text("m1", "Again."),
    ]
    assert by_path.headers["X-Agent"] == by_props.headers["X-Agent"] == "back"
    assert model_of(agents["front"]).requests == []
    assert both.status_code == 400


async def test_state_context_and_forwarded_props_reach_hooks_and_tools_as_metadata() -> None:
    seen: list[dict[str, Any]] = []

    class Recorder(Hook):
        async def before_model(self, ctx: RunContext, request: ModelRequest) -> None:
            seen.append(ctx.command.metadata)

    executor = AgentExecutor(model=ScriptedModel(["Ok."]), hooks=[Recorder()])
    body = run_input(
        user("Hi"),
        state={"cart": [1, 2]},
        context=[{"description": "page", "value": "checkout"}],
        forwardedProps={"locale": "fr"},
    )

    async with serve(executor) as client:
        await stream(client, body)

    assert seen == [
        {
            "ag_ui": {
                "thread_id": "t1",
                "run_id": "r1",
                "state": {"cart": [1, 2]},
                "context": [{"description": "page", "value": "checkout"}],
                "forwarded_props": {"locale": "fr"},
            }
        }
    ]


async def test_a_thread_the_service_has_no_memory_of_goes_on_from_the_clients_messages() -> None:
    model = ScriptedModel(["Blue, you said."])
    earlier = [user("My colour is blue", "u0"), {"id": "a0", "role": "assistant", "content": "Ok"}]

    async with serve(AgentExecutor(model=model)) as client:
        await stream(client, run_input(*earlier, user("What is my colour?")))

    assert model.requests[0].messages == [
        UserMessage(content="My colour is blue"),
        AssistantMessage(content="Ok"),
        UserMessage(content="What is my colour?"),
    ]


async def test_the_run_hub_keeps_the_run_and_a_client_can_read_it_again() -> None:
    async with serve(AgentExecutor(model=ScriptedModel(["Hello there"]))) as client:
        response = await client.post("/api/ag-ui", json=run_input(user("Hi")))
        stream_id = response.headers["X-Run-Id"]
        again = await client.get(f"/api/runs/{stream_id}/events")

    assert again.status_code == 200
    # Rebuilt from the run's id alone, the stream names the run by it.
    names = {"threadId": stream_id, "runId": stream_id}
    assert wire(again.text) == [
        {**started(), **names},
        *text("m1", "Hello ", "there"),
        {**finished(), **names},
    ]


async def test_without_the_extra_the_endpoint_is_a_404_naming_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delitem(sys.modules, "server.dialects.ag_ui", raising=False)
    monkeypatch.delattr(server.dialects, "ag_ui", raising=False)
    monkeypatch.setitem(sys.modules, "ag_ui", None)

    async with serve(AgentExecutor(model=ScriptedModel())) as client:
        response = await client.post("/api/ag-ui", json=run_input(user("Hi")))

    assert response.status_code == 404
    error = response.json()["error"]
    assert error["code"] == "not_found"
    assert 'pip install "agent-executor[ag-ui]"' in error["message"]
