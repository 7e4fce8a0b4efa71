"""What agent groups and flows share: an executor whose runs are conducted, not one model's loop.

A group or flow is served, streamed, limited, guarded, remembered and measured like an agent
(it is an :class:`~agent_executor.AgentExecutor`); only the part of the run under the permit
differs. It has no model of its own (:class:`_NoModel` stands in and is never called) and no
tools: its agents have theirs.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from typing import TYPE_CHECKING, Any

from .._engine.orchestrator import RunAgent
from ..errors import ConfigurationError, ModelError
from ..executor import AgentExecutor
from ..guards import Guard
from ..hooks import Hook
from ..memory import ConversationStore
from ..models.base import ModelChunk, ModelRequest
from ..spend import PriceTable
from ..tools import Tool, ToolResults

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

__all__ = ["Orchestrated", "agent_runner"]


class _NoModel:
    """Stands in for the model a group or flow does not have; never called."""

    def __init__(self, name: str) -> None:
        self.name = name

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        raise ModelError(f"{self.name} has no model of its own; its agents do")


class Orchestrated(AgentExecutor):
    """The executor options that mean something for a group or flow (the rest belong to its
    agents): name, description, guards (judging the user's message before any agent runs),
    hooks (``before_agent_start``, ``after_agent_complete``, ``on_agent_failed``), memory,
    concurrency, queue and time limits, metrics, tracing, spending limits for the whole run
    (its agents together may spend no more; see docs/spend.md), and the prices of the model
    calls it makes itself (a flow's model nodes; its hooks run around those calls too)."""

    def __init__(
        self,
        *,
        name: str,
        description: str = "",
        guards: Sequence[Guard] = (),
        hooks: Sequence[Hook] = (),
        memory: ConversationStore | None = None,
        metrics: CollectorRegistry | None = None,
        max_concurrency: int = 16,
        max_queue: int | None = None,
        queue_timeout: float | None = 30.0,
        request_timeout: float | None = 600.0,
        tracer: object | bool | None = None,
        tool_results: ToolResults | None = None,
        max_input_tokens: int | None = None,
        max_output_tokens: int | None = None,
        max_cost_usd: float | None = None,
        prices: PriceTable | None = None,
    ) -> None:
        self.prices = prices
        """The prices of the model calls the group or flow makes itself (a flow's model nodes,
        a moderator built from a model string)."""
        self.own_hooks: tuple[Hook, ...] = tuple(hooks)
        """Its hooks, which those calls run too (a budget's recording hook, say)."""
        super().__init__(
            model=_NoModel(name),
            name=name,
            description=description,
            guards=guards,
            hooks=hooks,
            memory=memory,
            metrics=metrics,
            max_concurrency=max_concurrency,
            max_queue=max_queue,
            queue_timeout=queue_timeout,
            request_timeout=request_timeout,
            tracer=tracer,
            tool_results=tool_results,
            max_input_tokens=max_input_tokens,
            max_output_tokens=max_output_tokens,
            max_cost_usd=max_cost_usd,
            prices=prices,
        )

    def add_tools(self, *tools: Tool | Callable[..., Any]) -> None:
        raise ConfigurationError(
            f"{self.name} runs agents and has no tools of its own: give the tools to its agents"
        )


def agent_runner(agent: AgentExecutor) -> RunAgent:
    """How a group or flow runs one of its agents: on that agent's own driver (its guards,
    hooks, limits, permit, memory and metrics)."""
    return agent._driver.run
