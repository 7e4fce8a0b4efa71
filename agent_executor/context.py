""":class:`RunContext`: what guards and hooks know about the run they are called for."""

from __future__ import annotations

from collections.abc import Mapping
from contextvars import ContextVar, Token
from dataclasses import dataclass, field
from typing import Literal

from .command import AgentCommand
from .results import Source, ToolCallRecord
from .screening import ToolResultScreen

__all__ = ["RunContext", "bind_run_context", "current_run_context"]


@dataclass(slots=True)
class RunContext:
    """The run in progress: its command, ids, current turn and the tool calls made so far.

    One context lives for the whole run; ``command`` is the command after
    ``before_agent_start`` hooks (they may replace it). ``client_address`` is the caller's
    network address when the service knows it (rate limits fall back to it);
    ``request_headers`` are the HTTP request's headers in the service (tools that call other
    services pass on the ones they allow, e.g. ``RestTool``). ``screens`` are the executor's
    guards that screen tool results, for hooks that bring other outside text to the model;
    ``sources`` is where such a hook records where that text came from (the ``done`` event
    and ``AgentResult`` list them). ``agent`` names the agent that has the conversation now
    (it changes when a handoff transfers the run); ``parent`` is the run whose tool started
    this one (an agent used as a tool), ``None`` for a top-level run.
    """

    command: AgentCommand
    request_id: str
    mode: Literal["stream", "execute"]
    client_address: str | None = None
    request_headers: Mapping[str, str] = field(default_factory=dict)
    turn: int = 0
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    screens: tuple[ToolResultScreen, ...] = ()
    sources: list[Source] = field(default_factory=list)
    agent: str = "default"
    parent: RunContext | None = None

    @property
    def user_id(self) -> str | None:
        """The user the run is for (``command.user_id``)."""
        return self.command.user_id

    @property
    def session_id(self) -> str | None:
        """The conversation the run belongs to (``command.session_id``)."""
        return self.command.session_id

    @property
    def parent_request_id(self) -> str | None:
        """The request id of the run that started this one (``None`` for a top-level run)."""
        return None if self.parent is None else self.parent.request_id

    @property
    def depth(self) -> int:
        """How deep this run is nested: 0 for a top-level run, 1 for a run its tool started."""
        depth, parent = 0, self.parent
        while parent is not None:
            depth, parent = depth + 1, parent.parent
        return depth


_current: ContextVar[RunContext | None] = ContextVar("agent_executor_run", default=None)


def current_run_context() -> RunContext | None:
    """The context of the run this code runs in (tools, hooks, guards), or ``None`` outside one."""
    return _current.get()


class bind_run_context:
    """Make ``ctx`` the current run's context for the code inside (the executor's driver).

    A small class rather than a ``@contextmanager`` generator: one is alive for every running
    run, and a generator with its frame and its wrapper hold several times the memory.
    """

    __slots__ = ("_ctx", "_token")

    def __init__(self, ctx: RunContext) -> None:
        self._ctx = ctx
        self._token: Token[RunContext | None] | None = None

    def __enter__(self) -> RunContext:
        self._token = _current.set(self._ctx)
        return self._ctx

    def __exit__(self, *exc_info: object) -> None:
        assert self._token is not None
        _current.reset(self._token)
