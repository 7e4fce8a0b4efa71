"""Flows through the public API on ScriptedModels: nodes in order, routing, the graph checks,
max_steps, pausing and resuming with an agent node, cancellation, usage and content."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from prometheus_client import CollectorRegistry

from agent_executor import (
    AgentCommand,
    AgentEvent,
    AgentNode,
    AgentResult,
    AgentSelectedEvent,
    ConfigurationError,
    DoneEvent,
    Edge,
    ErrorEvent,
    FilterNode,
    Flow,
    FunctionNode,
    MessageEvent,
    ModelNode,
    NodeEndEvent,
    NodeStartEvent,
    ScriptedModel,
    Setting,
    ToolEndEvent,
    ToolNode,
    ToolStartEvent,
    tool,
)
from agent_executor.approvals import Approval
from agent_executor.models.scripted import call, text_turn, tool_turn

from .helpers import collect, model_of, named_agent, sample


def flow(*nodes: Any, edges: Any = (), start: str | None = None, **options: Any) -> Flow:
    return Flow(
        list(nodes),
        list(edges),
        start=start or nodes[0].name,
        metrics=CollectorRegistry(),
        **options,
    )


async def ask(executor: Flow, prompt: str) -> AgentResult:
    return await executor.execute(AgentCommand(user_prompt=prompt))


def upper(text: str) -> str:
    return text.upper()


def kinds(events: list[AgentEvent]) -> list[str]:
    return [e.type for e in events]


def text_of(events: list[AgentEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, MessageEvent))


async def test_a_linear_flow_runs_its_nodes_in_order_and_streams_their_events() -> None:
    writer = named_agent("writer", [text_turn("draft one", usage=(3, 2))])
    editor = named_agent("editor", [text_turn("Final.", usage=(5, 1))])
    pipeline = flow(
        AgentNode("write", writer),
        FunctionNode("shout", upper),
        AgentNode("edit", editor),
        edges=[Edge("write", "shout"), Edge("shout", "edit")],
    )

    events = await collect(pipeline, "Write something.")

    assert events[:-1] == [
        NodeStartEvent(node="write", kind="agent"),
        AgentSelectedEvent(agent="writer", selected_by="flow", detail="node write"),
        MessageEvent("draft "),
        MessageEvent("one"),
        NodeEndEvent(node="write", kind="agent", status="success", output="draft one"),
        NodeStartEvent(node="shout", kind="function"),
        NodeEndEvent(node="shout", kind="function", status="success", output="DRAFT ONE"),
        NodeStartEvent(node="edit", kind="agent"),
        AgentSelectedEvent(agent="editor", selected_by="flow", detail="node edit"),
        MessageEvent("\n\n"),
        MessageEvent("Final."),
        NodeEndEvent(node="edit", kind="agent", status="success", output="Final."),
    ]
    done = events[-1]
    assert isinstance(done, DoneEvent) and done.finish_reason == "stop"
    assert done.usage is not None and (done.usage.input_tokens, done.usage.output_tokens) == (8, 3)
    assert model_of(editor).requests[0].messages[-1].content == "DRAFT ONE"
    registry = pipeline.metrics.registry
    labels = {"flow": "flow", "status": "success"}
    assert sample(registry, "agent_executor_flow_node_runs_total", node="shout", **labels) == 1


async def test_execute_content_is_the_streamed_text_and_the_answer_is_the_last_output() -> None:
    writer = named_agent("writer", ["draft one"])
    pipeline = flow(
        AgentNode("write", writer),
        FunctionNode("shout", upper),
        edges=[Edge("write", "shout")],
    )

    result = await pipeline.execute(AgentCommand(user_prompt="go", session_id="s"))

    assert result.success and result.content == "draft one\n\nDRAFT ONE"
    history = await pipeline.memory.load(None, "s")
    assert [(m.role, m.content) for m in history] == [("user", "go"), ("assistant", "DRAFT ONE")]


def routed(text: str) -> tuple[Flow, Any, Any]:
    refunds = named_agent("refunds", ["Refund started."])
    general = named_agent("general", ["Happy to help."])
    router = flow(
        FilterNode("is_refund", lambda t: "refund" in t.lower()),
        AgentNode("refund", refunds),
        AgentNode("other", general),
        edges=[
            Edge("is_refund", "refund", when="TRUE "),
            Edge("is_refund", "other", default=True),
        ],
    )
    return router, refunds, general


@pytest.mark.parametrize(
    ("message", "answer"), [("I want a refund", "Refund started."), ("Hello", "Happy to help.")]
)
async def test_a_filter_routes_by_its_verdict_with_a_default_edge(
    message: str, answer: str
) -> None:
    router, _, _ = routed(message)

    events = await collect(router, message)

    assert text_of(events) == answer
    verdict = events[1]
    assert isinstance(verdict, NodeEndEvent) and verdict.output == message


async def test_a_callable_when_routes_and_async_functions_run() -> None:
    async def count(text: str) -> str:
        return str(len(text))

    pipeline = flow(
        FunctionNode("count", count),
        FunctionNode("long", lambda t: f"long ({t})"),
        FunctionNode("short", lambda t: f"short ({t})"),
        edges=[
            Edge("count", "long", when=lambda route: int(route) > 5),
            Edge("count", "short"),
        ],
    )

    assert (await ask(pipeline, "a long message")).content == "long (14)"
    assert (await ask(pipeline, "hi")).content == "short (2)"


async def test_no_matching_edge_ends_the_run_with_invalid_plan() -> None:
    pipeline = flow(
        FunctionNode("echo", lambda t: t),
        FunctionNode("yes", lambda t: "yes"),
        edges=[Edge("echo", "yes", when="yes")],
    )

    events = await collect(pipeline, "maybe")

    error = events[-2]
    assert isinstance(error, ErrorEvent) and error.code == "invalid_plan"
    assert "node echo" in error.message and "'maybe'" in error.message


@tool
def lookup_order(order_id: str) -> dict[str, str]:
    """Look an order up."""
    return {"order": order_id, "status": "shipped"}


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


async def test_a_tool_node_takes_a_json_object_or_its_single_string_parameter() -> None:
    single = flow(ToolNode("lookup", lookup_order))
    pair = flow(ToolNode("add", add))

    assert (await ask(single, "A-1")).content == '{"order": "A-1", "status": "shipped"}'
    assert (await ask(single, '{"order_id": "B-2"}')).content.startswith('{"order": "B-2"')
    assert (await ask(pair, json.dumps({"a": 2, "b": 3}))).content == "5"
    failed = await ask(pair, "two and three")
    assert failed.error is not None and "no single required string parameter" in (
        failed.error.message
    )


async def test_a_model_node_calls_its_model_with_the_prompt() -> None:
    model = ScriptedModel([text_turn("A summary.", usage=(4, 2))])
    pipeline = flow(
        FunctionNode("clean", str.strip),
        ModelNode("summary", model, prompt="Summarise: {input} {braces}", system_prompt="Brief."),
        edges=[Edge("clean", "summary")],
    )

    events = await collect(pipeline, "  long text  ")

    assert text_of(events) == "A summary."
    assert [e.type for e in events if not isinstance(e, MessageEvent)] == [
        "node_start",
        "node_end",
        "node_start",
        "node_end",
        "done",
    ]
    request = model.requests[0]
    assert [m.content for m in request.messages] == ["Brief.", "Summarise: long text {braces}"]
    assert request.tools == []


async def test_a_setting_gives_a_tool_to_an_agent_node() -> None:
    clerk = named_agent("clerk", [tool_turn(call("lookup_order", {"order_id": "7"})), "Shipped."])
    pipeline = flow(
        AgentNode("clerk", clerk),
        ToolNode("lookup", lookup_order),
        settings=[Setting("clerk", "lookup")],
    )

    result = await ask(pipeline, "Where is order 7?")

    assert result.content == "Shipped."
    assert [c.tool for c in result.tool_calls] == ["lookup_order"]


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: flow(FunctionNode("a", upper), FunctionNode("a", upper)), "called 'a'"),
        (lambda: flow(FunctionNode("a", upper), start="b"), "start node 'b'"),
        (
            lambda: flow(FunctionNode("a", upper), edges=[Edge("a", "b")]),
            "edge a -> b names an unknown node 'b'",
        ),
        (
            lambda: flow(FunctionNode("a", upper), FunctionNode("b", upper)),
            "not reachable from the start node a: b",
        ),
        (
            lambda: flow(
                FunctionNode("a", upper),
                FunctionNode("b", upper),
                FunctionNode("c", upper),
                edges=[Edge("a", "b"), Edge("a", "c", default=True)],
            ),
            "node a has 2 default (unconditional) edges, to b, c",
        ),
        (
            lambda: flow(
                FunctionNode("a", upper),
                FunctionNode("b", upper),
                edges=[Edge("a", "b"), Edge("b", "a", when="again")],
            ),
            "cycle (a -> b -> a): give max_steps",
        ),
        (
            lambda: flow(
                FunctionNode("a", upper),
                ToolNode("t", lookup_order),
                settings=[Setting("a", "t")],
            ),
            "'a' is a function node",
        ),
    ],
)
def test_the_graph_is_checked_when_the_flow_is_built(build: Any, message: str) -> None:
    with pytest.raises(ConfigurationError, match=None) as caught:
        build()
    assert message in str(caught.value)


async def test_max_steps_bounds_a_cycle_and_the_last_output_is_the_answer() -> None:
    pipeline = flow(
        FunctionNode("grow", lambda t: t + "+"),
        edges=[Edge("grow", "grow")],
        max_steps=3,
    )

    events = await collect(pipeline, "x")

    done = events[-1]
    assert isinstance(done, DoneEvent) and done.finish_reason == "max_turns"
    assert text_of(events) == "x+++"
    assert kinds(events).count("node_start") == 3


@tool(requires_approval=True)
def refund(amount: int) -> str:
    """Refund an amount."""
    return f"refunded {amount}"


async def test_a_waiting_agent_node_pauses_the_flow_and_the_flow_resumes_after_it() -> None:
    billing = named_agent(
        "billing",
        [
            tool_turn(call("lookup_order", {"order_id": "9"}), usage=(3, 1)),
            tool_turn(call("refund", {"amount": 5}), usage=(7, 2)),
            text_turn("Done: 5."),
        ],
        tools=[refund, lookup_order],
    )
    pipeline = flow(
        AgentNode("billing", billing),
        FunctionNode("receipt", lambda t: f"Receipt: {t}"),
        edges=[Edge("billing", "receipt")],
    )

    paused = await collect(pipeline, AgentCommand(user_prompt="Refund 5", session_id="s"))
    done = paused[-1]
    assert isinstance(done, DoneEvent) and done.finish_reason == "waiting_for_approval"
    assert paused[-2] == NodeEndEvent(node="billing", kind="agent", status="waiting", output="")
    (pending,) = done.pending_approvals
    approval = Approval(
        call_id=pending.call_id, approved=True, approval_token=pending.approval_token
    )

    resumed = await collect(
        pipeline, AgentCommand(user_prompt="", session_id="s", approvals=[approval])
    )

    assert resumed[:2] == [
        NodeStartEvent(node="billing", kind="agent"),
        AgentSelectedEvent(agent="billing", selected_by="flow", detail="node billing, resumed"),
    ]
    assert [e.status for e in resumed if isinstance(e, ToolEndEvent)] == ["success"]
    assert text_of(resumed) == "Done: 5.\n\nReceipt: Done: 5."
    end = resumed[-1]
    assert isinstance(end, DoneEvent) and end.finish_reason == "stop"
    assert [c.tool for c in end.tool_calls] == ["lookup_order", "refund"]
    assert end.usage is not None and end.usage.input_tokens == 10
    registry = pipeline.metrics.registry
    waiting = {"flow": "flow", "node": "billing", "status": "waiting"}
    assert sample(registry, "agent_executor_flow_node_runs_total", **waiting) == 1


async def test_closing_the_stream_cancels_the_running_node() -> None:
    started, cancelled = anyio.Event(), anyio.Event()

    @tool
    async def wait_forever() -> str:
        """Wait."""
        started.set()
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            cancelled.set()
            raise
        return "never"

    worker = named_agent("worker", [tool_turn(call("wait_forever"))], tools=[wait_forever])
    pipeline = flow(
        FunctionNode("prepare", upper),
        AgentNode("work", worker),
        edges=[Edge("prepare", "work")],
    )

    events = pipeline.execute_stream(AgentCommand(user_prompt="go"))
    with anyio.fail_after(5):
        async for event in events:
            if isinstance(event, ToolStartEvent):
                await started.wait()
                break
    with anyio.fail_after(2):
        await events.aclose()

    assert cancelled.is_set()
