"""What a summary call spends, counted as the run's own model calls are.

Shortening a long history (:class:`~agent_executor.memory.HistoryCompressor`, when a run
starts) and compacting a long run within the model's window (:mod:`.compaction`) each call a
model. Those calls are made for the run, so they are spent like its turns
(:class:`~.budget.CallSpend`): priced, counted in the ``llm_*`` metrics under the summarising
model's name, added to the run's usage (so ``done`` and ``run_cost_usd`` include them, and a
per-run limit sees them), and given to the ``after_model`` hooks, so a ``UserBudget`` charges
them to the user (``finish_reason`` ``"summary"``, no text). A summary that failed spends
nothing and counts as a failed model call (``llm_requests_total{outcome="error"}``), as the
run's own failed calls do.
"""

from __future__ import annotations

import contextlib

from ..errors import HookRejection
from ..hooks import HookChain
from ..messages import Usage
from ..models.base import ModelResponse
from ..observability import Metrics
from ..spend import PriceTable
from .budget import CallSpend
from .state import RunState
from .telemetry import TurnMetrics

__all__ = ["SUMMARY_FINISH", "SummarySpend"]

SUMMARY_FINISH = "summary"
"""The ``finish_reason`` with which ``after_model`` hooks see a summary call."""


class SummarySpend:
    """Charges the summary calls of one summarising model to the runs they are made for."""

    __slots__ = ("_calls", "_hooks", "_spend")

    def __init__(self, model: str, prices: PriceTable, metrics: Metrics, hooks: HookChain) -> None:
        self._calls = TurnMetrics(metrics, model)
        self._spend = CallSpend(model, prices, self._calls)
        self._hooks = hooks

    async def charge(
        self, run: RunState, usage: Usage | None, started: float, *, ok: bool = True
    ) -> None:
        """A summary call that began at ``started`` (``perf_counter``) answered with ``usage``,
        or (``ok=False``) failed: counted as a failed model call, spending nothing."""
        self._calls.call().record(started, usage, ok=ok)
        if not ok:
            return
        spent = self._spend.answered(usage)
        if spent is None:
            return
        run.add_usage(spent)
        if self._hooks:
            response = ModelResponse("", (), SUMMARY_FINISH, spent)
            with contextlib.suppress(HookRejection):  # spent already: a refusal changes nothing
                await self._hooks.after_model(run.ctx, response)
