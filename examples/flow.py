"""A flow, offline: an agent triages, a filter routes, then a refund agent or a model call.

The models are ScriptedModels (each plays the turns written below), so the example runs without
a provider and shows what a flow's stream carries: each node's start and end, the agent it
runs, the text its agents and models write, and where the filter sent the run. Run it:
``python examples/flow.py``.
"""

from __future__ import annotations

import asyncio

from agent_executor import (
    AgentCommand,
    AgentExecutor,
    AgentNode,
    AgentSelectedEvent,
    DoneEvent,
    Edge,
    FilterNode,
    Flow,
    MessageEvent,
    ModelNode,
    NodeEndEvent,
    NodeStartEvent,
    ScriptedModel,
)


def build() -> Flow:
    """triage -> is_refund -> refund (when "true") or reply (the default edge)."""
    triage = AgentExecutor(
        model=ScriptedModel(["The customer wants a refund for order 42."]),
        name="triage",
        system_prompt="Say in one sentence what the customer wants.",
    )
    refunds = AgentExecutor(
        model=ScriptedModel(["Refund for order 42 started."]),
        name="refunds",
    )
    return Flow(
        [
            AgentNode("triage", triage),
            FilterNode("is_refund", lambda text: "refund" in text.lower()),
            AgentNode("refund", refunds),
            ModelNode("reply", ScriptedModel(["Thanks, we will get back to you."])),
        ],
        [
            Edge("triage", "is_refund"),
            Edge("is_refund", "refund", when="true"),
            Edge("is_refund", "reply", default=True),
        ],
        start="triage",
        name="support",
    )


async def main() -> None:
    support = build()
    command = AgentCommand(user_prompt="My order 42 arrived broken, I want my money back.")
    said = ""
    async for event in support.execute_stream(command):
        if isinstance(event, NodeStartEvent):
            print(f"[node {event.node} ({event.kind})]")
        elif isinstance(event, AgentSelectedEvent):
            print(f"  agent: {event.agent}")
        elif isinstance(event, MessageEvent):
            said += event.text
        elif isinstance(event, NodeEndEvent):
            if said.strip():
                print(f"  streamed: {said.strip()}")
            said = ""
            print(f"  {event.status}, passes on: {event.output}")
        elif isinstance(event, DoneEvent):
            print(f"done: {event.finish_reason}")
    await support.aclose()


if __name__ == "__main__":
    asyncio.run(main())
