"""Agents that any agent may use: another agent as a tool, and handoffs to another agent.

``as_tool()`` (an :class:`AgentTool`) runs an agent, group or flow on a task the calling model
writes, as a run nested in the calling one: its events stream inside the caller's stream
(:class:`~agent_executor.events.NestedEvent`), its usage adds up, cancellation reaches it.
:func:`handoff` (a :class:`Handoff`) lets the model give the rest of the conversation to
another agent, whose prompt, model and tools take over the same run. Both are typed on the
:class:`~agent_executor.agent.Agent` protocol. Groups and flows, which build on agents, are in
:mod:`agent_executor.orchestration`; see ``docs/orchestration.md``.
"""

from .agent_tool import MAX_DEPTH, AgentTool, AgentToolError, SessionPolicy
from .handoff import MAX_HANDOFFS, Handoff, HandoffRefused, handoff

__all__ = [
    "MAX_DEPTH",
    "MAX_HANDOFFS",
    "AgentTool",
    "AgentToolError",
    "Handoff",
    "HandoffRefused",
    "SessionPolicy",
    "handoff",
]
