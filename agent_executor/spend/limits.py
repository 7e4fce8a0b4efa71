"""A run's spending limits: :class:`RunLimits` (enforced by the executor, see docs/spend.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from ..command import AgentCommand

__all__ = ["RunLimits"]


@dataclass(frozen=True, slots=True)
class RunLimits:
    """The most one run may spend; ``None``: no limit of that kind."""

    max_input_tokens: int | None = None
    max_output_tokens: int | None = None
    max_cost_usd: float | None = None

    def __bool__(self) -> bool:
        return not (
            self.max_input_tokens is None
            and self.max_output_tokens is None
            and self.max_cost_usd is None
        )

    def for_command(self, command: AgentCommand) -> RunLimits:
        """The limits of a run of ``command``: the lower of the executor's and the command's."""
        return RunLimits(
            _lower(self.max_input_tokens, command.max_input_tokens),
            _lower(self.max_output_tokens, command.max_output_tokens),
            _lower(self.max_cost_usd, command.max_cost_usd),
        )


_N = TypeVar("_N", int, float)


def _lower(mine: _N | None, theirs: _N | None) -> _N | None:
    if mine is None:
        return theirs
    return mine if theirs is None else min(mine, theirs)
