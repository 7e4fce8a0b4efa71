"""What agent groups and flows share: a served agent whose runs are conducted, not one
model's loop.

A group or flow is served, streamed, limited, guarded, remembered and measured like an agent
(a :class:`~agent_executor.serving.ServedAgent`, as an ``AgentExecutor`` is); only the part of
the run under the permit differs: its driver's conductor is an orchestrator whose steps are
runs of its agents. It has no model and no tools of its own: its agents have theirs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .._engine import Orchestrator, RunCommand
from ..agent import Agent
from ..errors import ConfigurationError
from ..guards import Guard
from ..hooks import Hook
from ..memory import ConversationStore
from ..serving import ServedAgent, driver_of
from ..settings import Concurrency, RunLimits, Settings, from_keywords
from ..slash import SlashCommand
from ..spend import PriceTable
from ..tools import Tool, ToolResults

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

__all__ = ["Orchestrated", "agent_runner"]

GROUP_RUN_LIMITS = RunLimits(request_timeout=600.0)
"""A group's or flow's limits when none are given: its agents run one after another, so its
whole run may take longer than one agent's."""

_KEYWORDS = (
    "max_concurrency",
    "max_queue",
    "queue_timeout",
    "request_timeout",
    "max_input_tokens",
    "max_output_tokens",
    "max_cost_usd",
)
"""The old keyword arguments of a group or flow, now in its settings objects."""


class Orchestrated(ServedAgent):
    """The options that mean something for a group or flow (the rest belong to its agents):
    name, description, guards (judging the user's message before any agent runs), hooks
    (``before_agent_start``, ``after_agent_complete``, ``on_agent_failed``), memory,
    ``concurrency``, ``run_limits`` (the time of the whole run, 600 s unless they set
    ``request_timeout``, and what its agents together may spend; see docs/spend.md), metrics,
    tracing, and the prices of the model calls it makes itself (a flow's model nodes; its
    hooks run around those calls too).
    """

    def __init__(
        self,
        *,
        name: str,
        description: str = "",
        guards: Sequence[Guard] = (),
        hooks: Sequence[Hook] = (),
        memory: ConversationStore | None = None,
        concurrency: Concurrency | None = None,
        run_limits: RunLimits | None = None,
        metrics: CollectorRegistry | None = None,
        tracer: object | bool | None = None,
        tool_results: ToolResults | None = None,
        prices: PriceTable | None = None,
        commands: Sequence[SlashCommand] = (),
        **deprecated: Any,
    ) -> None:
        settings = Settings(
            run_limits=_with_group_timeout(run_limits), concurrency=concurrency or Concurrency()
        )
        owner = type(self).__name__
        settings = from_keywords(owner, settings, deprecated, allowed=_KEYWORDS, stacklevel=4)
        super().__init__(
            name=name,
            description=description,
            settings=settings,
            model_name=name,
            guards=guards,
            hooks=hooks,
            memory=memory,
            metrics=metrics,
            tracer=tracer,
            tool_results=tool_results,
            commands=commands,
        )
        self.prices = prices
        """The prices of the model calls the group or flow makes itself (a flow's model nodes,
        a moderator built from a model string)."""
        self.own_hooks: tuple[Hook, ...] = tuple(hooks)
        """Its hooks, which those calls run too (a budget's recording hook, say)."""

    def _conduct(self, orchestrator: Orchestrator) -> None:
        """Serve the runs through ``orchestrator`` (called once by the subclass, when the
        parts the orchestrator reads are in place)."""
        self._driver = self._driver_for(orchestrator)

    def add_tools(self, *tools: Tool | Callable[..., Any]) -> None:
        raise ConfigurationError(
            f"{self.name} runs agents and has no tools of its own: give the tools to its agents"
        )


def _with_group_timeout(limits: RunLimits | None) -> RunLimits:
    """``limits``, with the group's default time (600 s) unless they set one themselves."""
    if limits is None:
        return GROUP_RUN_LIMITS
    if "request_timeout" in limits.model_fields_set:
        return limits
    return limits.model_copy(update={"request_timeout": GROUP_RUN_LIMITS.request_timeout})


def agent_runner(agent: Agent) -> RunCommand:
    """How a group or flow runs one of its agents: on that agent's own driver (its guards,
    hooks, limits, permit, memory and metrics)."""
    return driver_of(agent).run
