"""A run's spending limits: checked before each model call, and counted while it streams.

Before a call, the request's input tokens are estimated (its text and tool specs, about four
characters a token) and added to what the run has used; a call that would pass
``max_input_tokens``, or whose input alone would pass ``max_cost_usd``, is not made. During
the call a :class:`Meter` counts the output as it arrives (text, reasoning and tool-call
arguments, again about four characters a token) against what is left of ``max_output_tokens``
and of ``max_cost_usd`` after the input; passing it stops the model stream at once. The
provider's final usage, when a call completes, replaces the estimates: it is the truth the next
check starts from. A stopped run ends ``budget``, and its whole turns are kept.
"""

from __future__ import annotations

import math

from ..errors import ErrorCode
from ..messages import Usage
from ..models.base import ModelRequest
from ..spend import Price, RunLimits
from .state import RunFailed

__all__ = [
    "BudgetStop",
    "Meter",
    "allowance",
    "estimate_input_tokens",
    "left_for_nested",
    "over_budget",
]

_CHARS_PER_TOKEN = 4
"""OpenAI's rule of thumb for English text; an estimate, and said so in docs/spend.md."""


class BudgetStop(Exception):  # noqa: N818: a signal that ends the stream, not an error
    """Raised by a :class:`Meter` inside the model stream when the output passes the limit."""


class Meter:
    """Counts one model call's output against what the run may still write."""

    __slots__ = ("allowed", "chars")

    def __init__(self, allowed: float) -> None:
        self.allowed = allowed * _CHARS_PER_TOKEN
        self.chars = 0

    def feed(self, chars: int) -> None:
        """Count ``chars`` more characters of output; past the allowance the stream stops."""
        self.chars += chars
        if self.chars > self.allowed:
            raise BudgetStop

    @property
    def tokens(self) -> int:
        return math.ceil(self.chars / _CHARS_PER_TOKEN)


def estimate_input_tokens(request: ModelRequest) -> int:
    """About how many tokens a request reads: its messages' text and its tool specs."""
    chars = sum(len(str(getattr(m, "content", "") or "")) for m in request.messages)
    for message in request.messages:
        for call in getattr(message, "tool_calls", ()):
            chars += len(call.name) + len(call.arguments)
    chars += sum(len(str(spec)) for spec in request.tools)
    return math.ceil(chars / _CHARS_PER_TOKEN)


def over_budget(what: str) -> RunFailed:
    """The run's end when a limit is reached: ``budget_exceeded`` (``finish_reason`` budget)."""
    return RunFailed(ErrorCode.BUDGET_EXCEEDED, f"the run reached its spending limit: {what}")


def allowance(
    limits: RunLimits, used: Usage | None, input_tokens: int, price: Price | None
) -> float:
    """How many output tokens the next call may write; raises :func:`over_budget` when the
    call may not be made at all (its input alone passes a limit)."""
    used = used or Usage()
    left = math.inf
    cap = limits.max_input_tokens
    if cap is not None and used.input_tokens + input_tokens > cap:
        raise over_budget(
            f"the next model call would read about {input_tokens} input tokens, "
            f"{used.input_tokens} used of max_input_tokens {cap}"
        )
    if limits.max_output_tokens is not None:
        left = limits.max_output_tokens - used.output_tokens
        if left <= 0:
            raise over_budget(f"max_output_tokens {limits.max_output_tokens} written")
    if limits.max_cost_usd is not None and price is not None:
        spent = (used.cost_usd or 0.0) + input_tokens * price.input / 1_000_000
        if spent >= limits.max_cost_usd:
            raise over_budget(
                f"the next model call would bring the cost to about ${spent:.6f}, "
                f"max_cost_usd {limits.max_cost_usd}"
            )
        if price.output > 0:
            left = min(left, (limits.max_cost_usd - spent) * 1_000_000 / price.output)
    return left


def left_for_nested(limits: RunLimits, used: Usage | None) -> dict[str, int | float]:
    """The limits a run nested in one with ``limits`` gets (as command fields): what the outer
    run has left, so an agent tool, a group's round or a flow's node cannot spend past the run
    it serves; raises :func:`over_budget` when nothing is left."""
    if not limits:
        return {}
    used = used or Usage()
    left: dict[str, int | float] = {}
    if limits.max_input_tokens is not None:
        left["max_input_tokens"] = limits.max_input_tokens - used.input_tokens
    if limits.max_output_tokens is not None:
        left["max_output_tokens"] = limits.max_output_tokens - used.output_tokens
    if limits.max_cost_usd is not None:
        left["max_cost_usd"] = limits.max_cost_usd - (used.cost_usd or 0.0)
    spent = [name for name, value in left.items() if value <= 0]
    if spent:
        raise over_budget(f"{', '.join(spent)} used up before the next agent's run")
    return left
