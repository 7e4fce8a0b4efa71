"""A flow's settings give its agent nodes tools for that flow's runs only (issue #30): the shared
agent is never changed, so flows giving one agent the same tool coexist, and a real clash names
the flow, the node and the agent."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from agent_executor import (
    AgentCommand,
    AgentNode,
    ApprovalRequiredEvent,
    ConfigurationError,
    DoneEvent,
    Flow,
    ModelNode,
    ScriptedModel,
    Setting,
    Tool,
    ToolNode,
    tool,
)
from agent_executor.approvals import Approval
from agent_executor.models.scripted import call, tool_turn

from .helpers import collect, model_of, named_agent


@tool
def lookup_order(order_id: str) -> str:
    """Look an order up."""
    return f"order {order_id}: paid"


@tool(requires_approval=True)
def refund(amount: int) -> str:
    """Refund an amount."""
    return f"refunded {amount}"


def given(agent_node: Any, tool_node: ToolNode, name: str) -> Flow:
    """A flow of one agent or model node, given the tool node's tool by a setting."""
    return Flow(
        [agent_node, tool_node],
        settings=[Setting(agent_node.name, tool_node.name)],
        start=agent_node.name,
        name=name,
        metrics=CollectorRegistry(),
    )


def offered(request_tools: list[dict[str, Any]]) -> list[str]:
    return [spec["function"]["name"] for spec in request_tools]


async def test_two_flows_give_one_agent_the_same_tool_without_changing_it() -> None:
    lookup = ToolNode("lookup", lookup_order)
    clerk = named_agent(
        "clerk",
        [tool_turn(call("lookup_order", {"order_id": "7"})), "Paid.", "Hello.", "Paid too."],
    )
    refunds = given(AgentNode("clerk", clerk), lookup, "refunds")
    orders = given(AgentNode("desk", clerk), lookup, "orders")

    first = await refunds.execute(AgentCommand(user_prompt="Order 7?"))
    direct = await clerk.execute(AgentCommand(user_prompt="Hi"))
    second = await orders.execute(AgentCommand(user_prompt="Order 8?"))

    assert list(clerk.tools) == []
    assert (first.content, [c.status for c in first.tool_calls]) == ("Paid.", ["success"])
    assert (direct.content, second.content) == ("Hello.", "Paid too.")
    requests = model_of(clerk).requests
    assert [offered(r.tools) for r in requests] == [
        ["lookup_order"],
        ["lookup_order"],
        [],  # the agent on its own has no tools
        ["lookup_order"],
    ]


async def test_a_tool_the_agent_has_already_is_offered_once() -> None:
    clerk = named_agent("clerk", ["Paid."], tools=[lookup_order])
    pipeline = given(AgentNode("clerk", clerk), ToolNode("lookup", lookup_order), "support")

    result = await pipeline.execute(AgentCommand(user_prompt="Order 7?"))

    assert result.content == "Paid."
    assert offered(model_of(clerk).requests[0].tools) == ["lookup_order"]


def test_another_tool_of_a_name_the_agent_has_is_refused_naming_flow_node_and_agent() -> None:
    @tool(name="lookup_order")
    def other_lookup(order_id: str) -> str:
        """Look an order up in the archive."""
        return "archived"

    billing = named_agent("billing", [], tools=[other_lookup])

    with pytest.raises(ConfigurationError) as caught:
        given(AgentNode("refund", billing), ToolNode("lookup", lookup_order), "support")

    assert str(caught.value) == (
        "flow 'support': setting refund <- lookup: node 'refund' (agent 'billing') has "
        "another tool named 'lookup_order' already: rename one of them"
    )
    assert billing.tools == {"lookup_order": other_lookup}


def test_a_model_node_is_given_its_tools_without_being_changed() -> None:
    reply = ModelNode("reply", ScriptedModel(["Sure."]))
    lookup = ToolNode("lookup", lookup_order)

    first, second = given(reply, lookup, "one"), given(reply, lookup, "two")

    assert reply.tools == []
    assert list(first.runner_of(reply).tools) == ["lookup_order"]
    assert list(second.runner_of(reply).tools) == ["lookup_order"]


async def test_a_paused_agent_node_resumes_with_the_tool_its_setting_gave() -> None:
    clerk = named_agent("clerk", [tool_turn(call("refund", {"amount": 5})), "Refunded 5."])
    pipeline = given(AgentNode("clerk", clerk), ToolNode("refunds", refund), "support")

    paused = await collect(pipeline, AgentCommand(user_prompt="Refund 5", session_id="s"))
    (asked,) = [e for e in paused if isinstance(e, ApprovalRequiredEvent)]
    approval = Approval(call_id=asked.call_id, approved=True, approval_token=asked.approval_token)
    resumed = await collect(
        pipeline, AgentCommand(user_prompt="", session_id="s", approvals=[approval])
    )

    done = resumed[-1]
    assert isinstance(done, DoneEvent) and done.finish_reason == "stop"
    assert [(c.tool, c.status, c.result) for c in done.tool_calls] == [
        ("refund", "success", "refunded 5")
    ]
    assert list(clerk.tools) == []


class Archive(Tool):
    """A tool holding a connection, which the flow that holds it closes."""

    def __init__(self) -> None:
        super().__init__(name="archive", description="Look in the archive.", parameters={})
        self.closed = 0

    async def invoke(self, arguments: dict[str, Any]) -> str:
        return "archived"

    async def aclose(self) -> None:
        self.closed += 1


async def test_closing_a_flow_closes_its_tool_nodes_tools_and_leaves_its_agents_open() -> None:
    archive = Archive()
    clerk = named_agent("clerk", ["Archived."])
    pipeline = given(AgentNode("clerk", clerk), ToolNode("archive", archive), "support")

    await pipeline.aclose()

    assert archive.closed == 1
    assert (await clerk.execute(AgentCommand(user_prompt="Again?"))).content == "Archived."
