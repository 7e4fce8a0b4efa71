"""Agents working together: one agent used as another's tool, and handoffs between agents.

``executor.as_tool()`` (an :class:`AgentTool`) runs an agent on a task the calling model
writes, as a run nested in the calling one: its events stream inside the caller's stream
(:class:`~agent_executor.events.NestedEvent`), its usage adds up, cancellation reaches it.
:func:`handoff` (a :class:`Handoff`) lets the model give the rest of the conversation to
another agent, whose prompt, model and tools take over the same run. An :class:`AgentGroup`
lets agents take turns on one task, round by round; a :class:`Flow` runs nodes (agents,
model calls, tools, filters, functions) along edges. See ``docs/orchestration.md``.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

from .agent_tool import MAX_DEPTH, AgentTool, AgentToolError, SessionPolicy
from .handoff import MAX_HANDOFFS, Handoff, HandoffRefused, handoff

if TYPE_CHECKING:
    from .flow import (
        AgentNode,
        Edge,
        FilterNode,
        Flow,
        FunctionNode,
        ModelNode,
        Node,
        Setting,
        ToolNode,
    )
    from .group import (
        TERMINATE,
        AgentGroup,
        AutoHandoff,
        DirectHandoff,
        GroupPlan,
        HandoffStrategy,
        HybridHandoff,
        Said,
    )

_GROUP_NAMES = (
    "TERMINATE",
    "AgentGroup",
    "AutoHandoff",
    "DirectHandoff",
    "GroupPlan",
    "HandoffStrategy",
    "HybridHandoff",
    "Said",
)
_FLOW_NAMES = (
    "AgentNode",
    "Edge",
    "FilterNode",
    "Flow",
    "FunctionNode",
    "ModelNode",
    "Node",
    "Setting",
    "ToolNode",
)
_LATER = dict.fromkeys(_GROUP_NAMES, "group") | dict.fromkeys(_FLOW_NAMES, "flow")
"""Names of the modules that build on ``AgentExecutor`` (groups, flows), loaded when first
asked for: ``AgentExecutor`` imports this package's tools, so they cannot load with it."""


def __getattr__(name: str) -> Any:
    module = _LATER.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f".{module}", __name__), name)


__all__ = [
    "MAX_DEPTH",
    "MAX_HANDOFFS",
    "TERMINATE",
    "AgentGroup",
    "AgentNode",
    "AgentTool",
    "AgentToolError",
    "AutoHandoff",
    "DirectHandoff",
    "Edge",
    "FilterNode",
    "Flow",
    "FunctionNode",
    "GroupPlan",
    "Handoff",
    "HandoffRefused",
    "HandoffStrategy",
    "HybridHandoff",
    "ModelNode",
    "Node",
    "Said",
    "SessionPolicy",
    "Setting",
    "ToolNode",
    "handoff",
]
