"""What a run spends: each model call's spend, counted in one place, and the run's limits.

**A call's spend** is computed by :class:`CallSpend`, once, and every counter reads what it
returns: the run's usage (so ``done``), the ``after_model`` hooks (so a ``UserBudget``),
``llm_tokens_total``, ``llm_cost_usd_total`` and, through the run's usage,
``run_cost_usd``. A call that completes spends what its provider reported. A call cut at the
run's limit (see below) spends its estimate: the model stream is closed at the cut, so the
provider's final usage chunk (sent after the last token) never arrives; what it reported
before the cut, if anything, replaces the estimate where it says more. The spend of calls made
inside a nested run is also kept in the :func:`kept_if_cancelled` ledgers around it, so a
nested run cancelled half way leaves what it spent to the run it served.

**The limits.** Before a call, the request's input tokens are estimated (its text and tool
specs, about four characters a token) and added to what the run has used; a call that would
pass ``max_input_tokens``, or whose input alone would pass ``max_cost_usd``, is not made.
During the call a :class:`Meter` counts the output as it arrives (text, reasoning and
tool-call arguments, again about four characters a token) against what is left of
``max_output_tokens`` and of ``max_cost_usd`` after the input; passing it stops the model
stream at once. The provider's final usage, when a call completes, replaces the estimates: it
is the truth the next check starts from. A stopped run ends ``budget``, and its whole turns
are kept.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

from ..errors import ErrorCode
from ..messages import Usage
from ..models.base import ModelRequest
from ..settings import RunLimits
from ..spend import Price, PriceTable
from .state import RunFailed
from .telemetry import TurnMetrics

__all__ = [
    "BudgetStop",
    "CallSpend",
    "Meter",
    "allowance",
    "estimate_input_tokens",
    "kept_if_cancelled",
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
    if not limits.spending:
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


class CallSpend:
    """What one model's calls spend: computed here, once, and counted everywhere.

    :meth:`answered` takes a completed call's usage (the provider's), :meth:`cut` a call
    stopped at the run's limit; both return the call's spend with its ``cost_usd`` at
    ``prices`` (left ``None`` when the model has no price), having counted it in
    ``llm_tokens_total`` and ``llm_cost_usd_total`` and in the ledgers of the nested runs the
    call is made in. The caller adds the same value to the run's usage and gives it to the
    ``after_model`` hooks, so no counter can differ from another.
    """

    __slots__ = ("_metrics", "_model", "_prices")

    def __init__(self, model: str, prices: PriceTable, metrics: TurnMetrics) -> None:
        self._model = model
        self._prices = prices
        self._metrics = metrics
        prices.preload()  # now, at construction: a run never reads the cost map's file

    @property
    def price(self) -> Price | None:
        """The model's price (``None``: unknown)."""
        return self._prices.price(self._model)

    def answered(self, usage: Usage | None) -> Usage | None:
        """A completed call: what its provider reported (``None``, nothing reported: nothing
        is counted)."""
        return None if usage is None else self._count(usage)

    def cut(self, reported: Usage | None, input_tokens: int, meter: Meter) -> Usage:
        """A call cut at the run's limit: the estimate of its input (``input_tokens``) and of
        the output read before the cut (``meter``), where what the provider reported before
        the cut (``reported``; providers send their count last, so mostly nothing) does not
        say more."""
        usage = Usage(input_tokens=input_tokens, output_tokens=meter.tokens)
        if reported is not None:
            usage = Usage(
                input_tokens=reported.input_tokens or input_tokens,
                output_tokens=max(reported.output_tokens, meter.tokens),
                cached_input_tokens=reported.cached_input_tokens,
            )
        return self._count(usage)

    def _count(self, usage: Usage) -> Usage:
        cost = self._prices.cost(self._model, usage)
        spent = usage if cost is None else usage.model_copy(update={"cost_usd": cost})
        self._metrics.charge(spent)
        for ledger in _ledgers.get():
            ledger.add(spent)
        return spent


class _Ledger:
    """What the model calls made while it is open spent, at any depth of nesting."""

    __slots__ = ("usage",)

    def __init__(self) -> None:
        self.usage: Usage | None = None

    def add(self, usage: Usage) -> None:
        self.usage = usage if self.usage is None else self.usage + usage


_ledgers: ContextVar[tuple[_Ledger, ...]] = ContextVar("agent_executor_ledgers", default=())

_T = TypeVar("_T")


async def kept_if_cancelled(nested: Awaitable[_T], keep: Callable[[Usage | None], None]) -> _T:
    """Await a nested run (an agent tool's, a group's round, a flow's node); should it end
    without returning (cancelled by the caller's deadline, the tool's timeout, or the caller's
    own cancellation), ``keep`` is given what its model calls spent until then, which would
    otherwise be lost with its state."""
    with _ledger() as ledger:
        try:
            return await nested
        except BaseException:
            keep(ledger.usage)
            raise


@contextmanager
def _ledger() -> Iterator[_Ledger]:
    """A ledger that every model call made inside (in this task and those it starts) adds to."""
    ledger = _Ledger()
    token = _ledgers.set((*_ledgers.get(), ledger))
    try:
        yield ledger
    finally:
        _ledgers.reset(token)
