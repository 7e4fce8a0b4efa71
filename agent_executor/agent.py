"""The :class:`Agent` protocol: what anything that runs like an agent offers to the parts that
use agents.

An :class:`~agent_executor.AgentExecutor`, an :class:`~agent_executor.AgentGroup` and a
:class:`~agent_executor.Flow` are agents: they have a name and a description, run a command
to its end (``execute``) or stream its events (``execute_stream``). Agent tools
(``as_tool()``), handoffs, groups, flows, routers and the service are typed on this protocol,
not on one class, so each works with all three.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from ._engine.stream import EventStream
    from .command import AgentCommand
    from .results import AgentResult
    from .tools import Tool

__all__ = ["Agent"]


@runtime_checkable
class Agent(Protocol):
    """Runs commands: to the end, or as a stream of events.

    ``tools`` are the agent's own tools by name (empty for a group or a flow, whose agents
    have theirs). ``request_id`` names the run in logs, ``client_address`` and
    ``request_headers`` say who asked (for rate limits, and for tools that pass headers on).
    """

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def tools(self) -> Mapping[str, Tool]: ...

    async def execute(
        self,
        command: AgentCommand,
        *,
        request_id: str | None = None,
        client_address: str | None = None,
        request_headers: Mapping[str, str] | None = None,
    ) -> AgentResult: ...

    def execute_stream(
        self,
        command: AgentCommand,
        *,
        request_id: str | None = None,
        client_address: str | None = None,
        request_headers: Mapping[str, str] | None = None,
    ) -> EventStream: ...
