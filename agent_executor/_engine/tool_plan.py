"""Planning a model turn's tool calls before any of them runs.

A turn's :class:`TurnPlan` admits each call once, as the calls become known (eager ones while
the model still streams): it holds a call that waits for a person or the client, counts every
other one against the run's limits and decides it (refused, settled already, or to be run).
It runs nothing, so whatever runs a call gets it decided, and whatever collects the results
gets them in the order the plan admitted the calls.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ..messages import ToolCall
from ..results import ToolStatus
from ..tools import FrontendTool
from .state import RunState

__all__ = ["Decision", "TurnPlan"]


@dataclass(frozen=True, slots=True)
class Decision:
    """A call decided before it runs: refused (with the reason the model is given), or settled
    otherwise (an ``ask_user`` answer is a ``success`` whose ``reason`` is the answer)."""

    status: ToolStatus
    reason: str
    over_limit: bool = False


class TurnPlan:
    """The admission of one model turn's calls: each once, kept in the order admitted."""

    __slots__ = ("_ids", "_max_calls", "_max_identical", "_run", "admitted", "limit_hit")

    def __init__(self, run: RunState, max_calls: int | None, max_identical: int) -> None:
        self._run = run
        self._max_calls = max_calls
        self._max_identical = max_identical
        self._ids: set[str] = set()
        self.admitted: list[ToolCall] = []
        self.limit_hit = False
        """Whether ``max_calls`` refused one of the turn's calls."""

    def admit(
        self, call: ToolCall, decision: Decision | None, approved: bool
    ) -> tuple[bool, Decision | None]:
        """Whether ``call`` is to run now, and the decision that settles it (if any).

        A call that needs a person's approval, or a client tool's call in a run that hands
        those back, is held instead (counted when settled, on resume), unless it is settled
        already (``decision``, ``approved``) or no call is left under the limit.
        """
        if call.id in self._ids:
            return False, decision
        run = self._run
        tool = run.tools.get(call.name)
        if (
            decision is None
            and not approved
            and tool is not None
            and not run.budget.spent(self._max_calls)  # no one is asked
        ):
            if tool.requires_approval:
                run.approvals.hold(call)
                return False, decision
            if isinstance(tool, FrontendTool) and run.ctx.command.client_tool_mode == "return":
                run.approvals.hand_back(call)
                return False, decision
        self._ids.add(call.id)
        self.admitted.append(call)
        decision = self._decide(call, decision)
        if decision is not None and decision.over_limit:
            self.limit_hit = True
        return True, decision

    def _decide(self, call: ToolCall, decision: Decision | None) -> Decision | None:
        """Count ``call`` against ``max_calls`` and decide it (``None``: run it).

        Every call the model asks for counts, whatever becomes of it (run, failed, refused by
        a hook, unknown, an identical repeat, already ``decision``-ed: cut off, denied), so a
        model repeating a refused call cannot go on until ``max_turns``. A call past the limit
        is refused as such (``over_limit``: the model is then asked for its final answer),
        whatever else was decided for it. Otherwise ``decision`` stands, or a call repeated
        identically too many times in a row is refused.
        """
        budget, max_calls = self._run.budget, self._max_calls
        if budget.spent(max_calls):
            return Decision(
                "rejected",
                f"max_tool_calls ({max_calls}) reached: this call was not "
                "run; answer with the information you have",
                over_limit=True,
            )
        if decision is not None:
            budget.count(None)
            return decision
        streak = budget.count((call.name, _canonical(call.arguments)))
        limit = self._max_identical
        if limit and streak > limit:
            return Decision(
                "rejected",
                f"refused: {call.name} was already called {limit} times in a row "
                "with the same arguments; use the result you already have",
            )
        return None


def _canonical(raw: str) -> str:
    try:
        return json.dumps(json.loads(raw), sort_keys=True, separators=(",", ":"))
    except ValueError:
        return raw
