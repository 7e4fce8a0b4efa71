"""Handoffs: :func:`handoff` offers the model a tool that gives the conversation to another agent.

When the model calls it (``transfer_to_<agent>``), the call's result tells it the transfer
happened; after that turn the run goes on with the other agent's system prompt, model and tools,
over the same conversation (the messages so far, the handoff call and its result included), in
the same run: one stream, one ``done``, one usage and tool-call budget, one permit (the agent
the run was sent to holds it), saved to memory as one run of the agent it was sent to. The
stream says so with an ``AgentSelectedEvent(selected_by="handoff")``.

One handoff per turn (a second call in the same turn is refused), at most
:data:`MAX_HANDOFFS` per run. Agents that hand over to each other are wired after both exist:
``a.add_tools(handoff(b))``.
"""

from __future__ import annotations

import re
from typing import Any

from .._engine.tool_scope import MAX_HANDOFFS, current_tool_scope
from ..agent import Agent
from ..errors import AgentExecutorError
from ..tools import Tool

__all__ = ["MAX_HANDOFFS", "Handoff", "HandoffRefused", "handoff"]

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


class HandoffRefused(AgentExecutorError):
    """A handoff call that does not transfer the run (a second one in a turn, one past
    :data:`MAX_HANDOFFS`, or a call outside a run); the model gets this as the tool's error."""


class Handoff(Tool):
    """The tool of a handoff to ``agent``; build it with :func:`handoff`."""

    def __init__(
        self, agent: Agent, *, name: str | None = None, description: str | None = None
    ) -> None:
        super().__init__(
            name=name or f"transfer_to_{_UNSAFE.sub('_', agent.name)[:52]}",
            description=description or _description(agent.name, agent.description),
            parameters={"type": "object", "properties": {}, "additionalProperties": False},
        )
        self.agent = agent

    async def invoke(self, arguments: dict[str, Any]) -> str:
        scope = current_tool_scope()
        if scope is None:
            raise HandoffRefused("not transferred: a handoff works only inside a run")
        refusal = scope.hand_off()
        if refusal is not None:
            raise HandoffRefused(refusal)
        name = self.agent.name
        return f"Transferred to {name}: {name} answers from here."


def handoff(agent: Agent, *, name: str | None = None, description: str | None = None) -> Handoff:
    """A tool that hands the conversation over to ``agent``: give it to the agent that may
    hand over (``tools=[handoff(billing)]`` or ``add_tools``). ``name`` defaults to
    ``transfer_to_<agent name>``, ``description`` to one made from the agent's own."""
    return Handoff(agent, name=name, description=description)


def _description(name: str, about: str) -> str:
    text = f"Hand the conversation over to the {name} agent, which answers the user from then on"
    return f"{text}: {about}" if about else f"{text}."
