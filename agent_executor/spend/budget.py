"""Per-user budgets over a calendar period: :class:`UserBudget` refuses a user's run once the
user has spent the period's allowance, and records what each model call spends.

A budget is dollars (``"5.00/day"``, counted from ``usage.cost_usd``) or tokens
(``"200000tokens/day"``, input plus output) per ``hour``, ``day``, ``week`` (ISO: from Monday)
or ``month``, each a calendar period in UTC: a refused run is told to retry when the period
ends, and the spend starts again from 0 then.

Spend is kept in whole nano-dollars or whole tokens, so adding it up is exact and does not
depend on the order replicas add in (``INCRBY`` on Redis, not ``INCRBYFLOAT``).

What is exact and what is not (docs/spend.md): every recorded call is counted once, across
replicas too; a run is admitted while the spend is below the limit, so the runs admitted
before the limit was reached may together pass it by what they spend (bounded by their
number times the per-run ``max_cost_usd``/``max_*_tokens``). A model call whose cost is
unknown (no price) cannot count against a dollar budget: it is logged once per agent and
counted as nothing.
"""

from __future__ import annotations

import datetime as dt
import logging
import math
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

from ..context import RunContext
from ..errors import ConfigurationError, ErrorCode, GuardRejection, StoreUnavailable
from ..hooks import Hook
from ..resources import aclose_all

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

    from ..models.base import ModelResponse

__all__ = [
    "BudgetLimit",
    "BudgetStore",
    "BudgetUsage",
    "InMemoryBudgetStore",
    "UserBudget",
    "parse_budget",
]

logger = logging.getLogger("agent_executor.spend")

Unit = Literal["usd", "tokens"]
Period = Literal["hour", "day", "week", "month"]

_NANO = 1_000_000_000
_BUDGET_RE = re.compile(
    r"^\s*\$?\s*(\d+(?:\.\d+)?)\s*(tokens?|usd|\$)?\s*/\s*(hour|day|week|month)s?\s*$"
)
ANONYMOUS = "anonymous"
"""The budget key of runs without a user id: all anonymous callers share one budget."""


@dataclass(frozen=True, slots=True)
class BudgetLimit:
    """``amount`` dollars or tokens (``unit``) per calendar ``period`` in UTC."""

    amount: float
    unit: Unit
    period: Period

    def __str__(self) -> str:
        if self.unit == "tokens":
            return f"{self.amount:g}tokens/{self.period}"
        cents = round(self.amount, 2) == self.amount
        return f"{self.amount:.2f}/{self.period}" if cents else f"{self.amount:g}/{self.period}"

    @property
    def units(self) -> int:
        """The limit in the stored units (nano-dollars or tokens)."""
        return round(self.amount * _NANO) if self.unit == "usd" else int(self.amount)

    def window(self, now: float) -> tuple[str, dt.datetime, dt.datetime]:
        """The period that contains ``now`` (Unix seconds): its id, start and end."""
        at = dt.datetime.fromtimestamp(now, dt.timezone.utc)
        if self.period == "hour":
            start = at.replace(minute=0, second=0, microsecond=0)
            return f"hour:{start:%Y-%m-%dT%H}", start, start + dt.timedelta(hours=1)
        day = at.replace(hour=0, minute=0, second=0, microsecond=0)
        if self.period == "day":
            return f"day:{day:%Y-%m-%d}", day, day + dt.timedelta(days=1)
        if self.period == "week":
            start = day - dt.timedelta(days=day.weekday())
            year, week, _ = start.isocalendar()
            return f"week:{year}-W{week:02d}", start, start + dt.timedelta(days=7)
        start = day.replace(day=1)
        end = start.replace(year=start.year + start.month // 12, month=start.month % 12 + 1)
        return f"month:{start:%Y-%m}", start, end

    def to_units(self, value: float) -> float:
        """Stored units as dollars or tokens."""
        return value / _NANO if self.unit == "usd" else value


def parse_budget(text: str) -> BudgetLimit:
    """``"5.00/day"`` (dollars) or ``"200000tokens/day"`` (input plus output tokens); periods
    ``hour``, ``day``, ``week``, ``month``."""
    match = _BUDGET_RE.match(text.lower())
    amount = float(match.group(1)) if match else 0.0
    if match is None or amount <= 0:
        raise ConfigurationError(
            f"invalid budget {text!r}: use AMOUNT/PERIOD such as 5.00/day or "
            "200000tokens/day (periods: hour, day, week, month)"
        )
    unit: Unit = "tokens" if (match.group(2) or "").startswith("token") else "usd"
    period: Period = match.group(3)  # type: ignore[assignment]
    if unit == "tokens" and not amount.is_integer():
        raise ConfigurationError(f"invalid budget {text!r}: tokens are whole numbers")
    return BudgetLimit(amount, unit, period)


@runtime_checkable
class BudgetStore(Protocol):
    """Where spend per user and period lives; :meth:`add` must be atomic per key."""

    async def add(self, user: str, window: str, units: int, *, expires_at: float) -> int:
        """Add ``units`` to ``user``'s spend in ``window``; the total after it. The entry may
        be forgotten after ``expires_at`` (Unix seconds: the period's end)."""
        ...

    async def spent(self, user: str, window: str) -> int:
        """``user``'s spend in ``window`` (0 if none)."""
        ...

    async def everyone(self, window: str) -> dict[str, int]:
        """The spend of every user who spent something in ``window``."""
        ...


class InMemoryBudgetStore:
    """Spend in this process (one replica): a counter per user of the current periods;
    entries of ended periods are dropped as new ones are added."""

    def __init__(self) -> None:
        self._spend: dict[str, dict[str, int]] = {}
        self._ends: dict[str, float] = {}

    async def add(self, user: str, window: str, units: int, *, expires_at: float) -> int:
        """Add without an ``await`` between reading and writing (atomic on the event loop)."""
        if window not in self._spend:
            self._forget_ended(time.time())
            self._ends[window] = expires_at
        users = self._spend.setdefault(window, {})
        users[user] = users.get(user, 0) + units
        return users[user]

    async def spent(self, user: str, window: str) -> int:
        return self._spend.get(window, {}).get(user, 0)

    async def everyone(self, window: str) -> dict[str, int]:
        return dict(self._spend.get(window, {}))

    def _forget_ended(self, now: float) -> None:
        for window in [w for w, end in self._ends.items() if end <= now]:
            del self._ends[window]
            self._spend.pop(window, None)


class BudgetUsage(BaseModel):
    """One user's spend in the current period (what ``GET /api/usage`` answers)."""

    model_config = ConfigDict(frozen=True)

    user_id: str
    period: Period
    unit: Unit
    spent: float
    limit: float
    remaining: float
    resets_at: str


def _default_key(ctx: RunContext) -> str:
    return ctx.user_id or ANONYMOUS


class UserBudget(Hook):
    """A per-user budget: a guard (refuses with ``budget_exceeded`` and ``retry_after`` until
    the period ends, once the user's spend is at or over the limit) and a hook (records what
    each model call spent). Give the same object as a guard and as a hook to every agent.

    ``UserBudget("5.00/day")`` or ``UserBudget("200000tokens/day")``; ``store`` is where spend
    lives (default: this process; :class:`~agent_executor.redis.RedisBudgetStore` for all
    replicas). ``metrics`` is the registry whose ``budget_refusals_total{scope="user"}``
    counts refusals (default: prometheus-client's, as an executor's). The key is the user id,
    else ``"anonymous"`` (one budget shared by every run without a user id); ``key=``
    replaces that choice. ``clock`` (Unix seconds) is for tests. Like the rate limit it
    judges the user's request, not its text (``checks_content = False``): nested runs and
    rewritten commands are not checked again, but their model calls are recorded (by the
    hook of the agent that makes them).
    """

    name = "user_budget"
    codes: ClassVar[tuple[str, ...]] = (ErrorCode.BUDGET_EXCEEDED.value,)
    checks_content: ClassVar[bool] = False

    def __init__(
        self,
        budget: str | BudgetLimit,
        *,
        store: BudgetStore | None = None,
        key: Callable[[RunContext], str] = _default_key,
        clock: Callable[[], float] = time.time,
        metrics: CollectorRegistry | None = None,
    ) -> None:
        self.limit = parse_budget(budget) if isinstance(budget, str) else budget
        self.store: BudgetStore = InMemoryBudgetStore() if store is None else store
        self._key = key
        self._clock = clock
        self._registry = metrics
        self._unpriced: set[str] = set()
        self._lock = threading.Lock()

    async def check(self, ctx: RunContext) -> None:
        """Refuse the run if the user's spend in this period is at or over the limit."""
        now = self._clock()
        window, _, end = self.limit.window(now)
        spent = await self.store.spent(self._key(ctx), window)
        if spent < self.limit.units:
            return
        from ..observability import Metrics

        Metrics.for_registry(self._registry).budget_refusals.labels("user").inc()
        retry_after = max(1.0, math.ceil(end.timestamp() - now))
        raise GuardRejection(
            ErrorCode.BUDGET_EXCEEDED,
            f"budget of {self.limit} used up; it resets at {_iso(end)}",
            retry_after=retry_after,
        )

    async def after_model(self, ctx: RunContext, response: ModelResponse) -> None:
        """Record what the call spent; a failing store is logged and the run goes on (the
        next run's check fails closed while the store is down)."""
        units = self._units(ctx, response)
        if not units:
            return
        now = self._clock()
        window, _, end = self.limit.window(now)
        try:
            await self.store.add(self._key(ctx), window, units, expires_at=end.timestamp())
        except StoreUnavailable as exc:
            logger.warning("spend of %d %s not recorded: %s", units, self._unit_name, exc)

    async def usage(self, user_id: str | None) -> BudgetUsage:
        """``user_id``'s spend in the current period (``None``: the anonymous budget)."""
        window, _, end = self.limit.window(self._clock())
        user = user_id or ANONYMOUS
        return self._usage(user, await self.store.spent(user, window), end)

    async def everyone(self) -> list[BudgetUsage]:
        """The spend of every user who spent something in the current period, by user id."""
        window, _, end = self.limit.window(self._clock())
        spent = await self.store.everyone(window)
        return [self._usage(user, spent[user], end) for user in sorted(spent)]

    async def aclose(self) -> None:
        """Close the store's connections, if it has any (a Redis store)."""
        await aclose_all([self.store])

    @property
    def _unit_name(self) -> str:
        return "nano-dollars" if self.limit.unit == "usd" else "tokens"

    def _units(self, ctx: RunContext, response: ModelResponse) -> int:
        usage = response.usage
        if usage is None:
            return 0
        if self.limit.unit == "tokens":
            return usage.total_tokens
        if usage.cost_usd is None:
            if usage.total_tokens:
                self._unpriced_once(ctx.agent)
            return 0
        return round(usage.cost_usd * _NANO)

    def _unpriced_once(self, agent: str) -> None:
        with self._lock:
            first = agent not in self._unpriced
            self._unpriced.add(agent)
        if first:
            logger.warning(
                "agent %s: a model call of unknown cost is not counted in the budget of %s "
                "(give the model a price: --prices)",
                agent,
                self.limit,
            )

    def _usage(self, user: str, spent_units: int, end: dt.datetime) -> BudgetUsage:
        spent = self.limit.to_units(spent_units)
        return BudgetUsage(
            user_id=user,
            period=self.limit.period,
            unit=self.limit.unit,
            spent=spent,
            limit=self.limit.amount,
            remaining=max(0.0, self.limit.to_units(self.limit.units - spent_units)),
            resets_at=_iso(end),
        )


def _iso(at: dt.datetime) -> str:
    return at.isoformat().replace("+00:00", "Z")
