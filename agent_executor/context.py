""":class:`RunContext`: what guards and hooks know about the run they are called for."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from .command import AgentCommand
from .results import ToolCallRecord

__all__ = ["RunContext"]


@dataclass(slots=True)
class RunContext:
    """The run in progress: its command, ids, current turn and the tool calls made so far.

    One context lives for the whole run; ``command`` is the command after
    ``before_agent_start`` hooks (they may replace it). ``client_address`` is the caller's
    network address when the service knows it (rate limits fall back to it).
    """

    command: AgentCommand
    request_id: str
    mode: Literal["stream", "execute"]
    client_address: str | None = None
    turn: int = 0
    tool_calls: list[ToolCallRecord] = field(default_factory=list)

    @property
    def user_id(self) -> str | None:
        """The user the run is for (``command.user_id``)."""
        return self.command.user_id

    @property
    def session_id(self) -> str | None:
        """The conversation the run belongs to (``command.session_id``)."""
        return self.command.session_id
