"""Agents working together: agent groups that take turns, and flows of nodes along edges.

An :class:`AgentGroup` lets agents take turns on one task, round by round, as its
:class:`TurnStrategy` plans (:class:`DirectTurns`, :class:`AutoTurns`, :class:`HybridTurns`);
a :class:`Flow` runs nodes (agents, model calls, tools, filters, functions) along edges. Both
are served like agents and conduct each run as a series of nested agent runs; their strategies
and functions see the run through a :class:`RunView`. The parts any agent can use (another
agent as a tool, handoffs) are in :mod:`agent_executor.delegation` and are offered here too.
See ``docs/orchestration.md``.
"""

from .._deprecations import moved_names
from ..delegation import (
    MAX_DEPTH,
    MAX_HANDOFFS,
    AgentTool,
    AgentToolError,
    Handoff,
    HandoffRefused,
    SessionPolicy,
    handoff,
)
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
    AutoTurns,
    DirectTurns,
    GroupPlan,
    GroupView,
    HybridTurns,
    Said,
    TurnStrategy,
)
from .run_view import RunView

__getattr__ = moved_names(__name__)

__all__ = [
    "MAX_DEPTH",
    "MAX_HANDOFFS",
    "TERMINATE",
    "AgentGroup",
    "AgentNode",
    "AgentTool",
    "AgentToolError",
    "AutoTurns",
    "DirectTurns",
    "Edge",
    "FilterNode",
    "Flow",
    "FunctionNode",
    "GroupPlan",
    "GroupView",
    "Handoff",
    "HandoffRefused",
    "HybridTurns",
    "ModelNode",
    "Node",
    "RunView",
    "Said",
    "SessionPolicy",
    "Setting",
    "ToolNode",
    "TurnStrategy",
    "handoff",
]
