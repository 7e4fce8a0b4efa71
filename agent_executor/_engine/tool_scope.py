"""The tool call in progress, as the tool itself sees it: :class:`ToolScope`.

While a tool's ``invoke`` runs, :func:`current_tool_scope` gives it the call it answers and
the few things a tool may do to its run besides returning a result: show the events of a run
it started inside this run's stream (an agent used as a tool), add what that run spent to this
run's usage, and ask to hand the conversation over to another agent. The tool runner sets the
scope around each ``invoke`` (one context variable per call, nothing per chunk).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from ..events import AgentEvent, NestedEvent
from ..messages import ToolCall, Usage
from .budget import left_for_nested
from .state import HandoffRequest, RunState, drop

__all__ = ["MAX_HANDOFFS", "ToolScope", "current_tool_scope", "tool_scope"]

MAX_HANDOFFS = 5
"""How many times one run may be handed over; a further handoff is refused (a tool error the
model is told about), so two agents cannot pass a conversation back and forth for ever."""


class ToolScope:
    """One tool call of a run, for the tool that answers it."""

    __slots__ = ("_run", "call_id", "tool")

    def __init__(self, run: RunState, call: ToolCall) -> None:
        self._run = run
        self.call_id = call.id
        self.tool = call.name

    @property
    def listening(self) -> bool:
        """Whether the run's events go anywhere (``execute()`` drops them; so does a run that
        is being cancelled)."""
        return self._run.emit is not drop

    def emit_nested(self, agent: str, event: AgentEvent) -> None:
        """Show ``event`` of ``agent``'s nested run in this run's stream, tied to this call."""
        self._run.emit(NestedEvent(agent=agent, call_id=self.call_id, event=event))

    def add_usage(self, usage: Usage | None) -> None:
        """Count what a nested run spent in this run's usage."""
        self._run.add_usage(usage)

    def limits_left(self) -> dict[str, int | float]:
        """The spending limits a run this call starts gets: what this run has left (command
        fields); raises ``RunFailed`` (``budget_exceeded``) when nothing is left."""
        return left_for_nested(self._run.limits, self._run.usage)

    def hand_off(self) -> str | None:
        """Ask that the agent this call's tool names takes the conversation over after this
        turn; ``None`` if it will, else why not (one handoff per turn, none in a turn that
        pauses for approval, at most :data:`MAX_HANDOFFS` per run)."""
        run = self._run
        if run.handoff is not None:
            return (
                f"not transferred: this turn already hands the conversation over "
                f"({run.handoff.tool})"
            )
        if run.approvals:
            return (
                "not transferred: other calls of this turn wait for a person's approval or "
                "for the client; the run pauses first"
            )
        if run.handoffs >= MAX_HANDOFFS:
            return (
                f"not transferred: the conversation was handed over {MAX_HANDOFFS} times in "
                "this run, the most allowed; answer with what you have"
            )
        run.handoff = HandoffRequest(self.tool, self.call_id)
        return None


_current: ContextVar[ToolScope | None] = ContextVar("agent_executor_tool_call", default=None)


def current_tool_scope() -> ToolScope | None:
    """The tool call this code answers (inside a tool's ``invoke``), or ``None``."""
    return _current.get()


@contextmanager
def tool_scope(run: RunState, call: ToolCall) -> Iterator[ToolScope]:
    """Make ``call`` of ``run`` the current tool call for the code inside (the tool runner)."""
    token = _current.set(scope := ToolScope(run, call))
    try:
        yield scope
    finally:
        _current.reset(token)
