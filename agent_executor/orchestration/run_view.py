""":class:`RunView`: what a group's turn strategy and a flow's function see of the run they work
for, and how they run an agent inside it.

The run's own state belongs to the engine; a view shows its context, what it has spent and
what it has said, and runs other agents nested in it (their usage counts against the run's
limits, their text stays out of the run's stream). A strategy that cannot plan raises
:class:`~agent_executor.errors.PlanRefused`.
"""

from __future__ import annotations

from .._engine.orchestrator import run_member
from .._engine.state import RunState
from ..agent import Agent
from ..command import AgentCommand
from ..context import RunContext
from ..messages import Usage
from ..results import AgentResult
from ._orchestrated import agent_runner

__all__ = ["RunView"]


class RunView:
    """A read-mostly view of one run of a group or flow."""

    __slots__ = ("_run",)

    def __init__(self, run: RunState) -> None:
        self._run = run

    @property
    def context(self) -> RunContext:
        """The run's context: its command, ids, user, session and sources."""
        return self._run.ctx

    @property
    def usage(self) -> Usage | None:
        """What the run has spent so far (``None``: nothing yet)."""
        return self._run.usage

    @property
    def text(self) -> str:
        """What the run has said so far (its agents' text, as its stream showed it)."""
        return "".join(self._run.texts)

    async def ask(self, agent: Agent, command: AgentCommand | str, *, step: str) -> AgentResult:
        """Run ``agent`` on ``command`` (or a message) inside this run, for its user: what it
        spends is the run's (within what is left of the run's limits), its tool calls and
        sources are the run's, its text is not the run's text. ``step`` names the nested run
        in its request id (``<request id>/<step>``). Its result is returned; a failure is in
        ``result.error``, not raised."""
        if isinstance(command, str):
            command = AgentCommand(user_prompt=command)
        member = await run_member(self._run, agent_runner(agent), command, step=step, relay=False)
        return member.result()
