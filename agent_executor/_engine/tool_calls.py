"""A model turn's tool calls, one way: planned (:mod:`.tool_plan`), each run
(:mod:`.tool_exec`), then collected here into the run's messages and records in call order.

:class:`ToolRunner` is what the rest of the engine holds; :class:`ToolBatch` is one turn's
calls on their way through. :func:`_record_call` is the one place a tool call becomes part of
``run.records``: a finished call when its turn is collected, a call cut short when the run ends.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

import anyio
from anyio.abc import TaskGroup

from ..guards import ToolResultScreen
from ..hooks import HookChain
from ..messages import ToolCall, ToolMessage
from ..results import ToolCallRecord
from ..settings import ToolLimits
from ..tools import Tool, ToolResults
from .state import RunState
from .telemetry import RunTelemetry
from .tool_exec import ToolExecutor, loose_arguments
from .tool_plan import Decision, TurnPlan

__all__ = ["Decision", "ToolBatch", "ToolRunner", "loose_arguments"]


class ToolRunner:
    """The executor's tool path: a batch per turn, and the calls a run's end cuts short."""

    def __init__(
        self,
        tools: Mapping[str, Tool],
        limits: ToolLimits,
        hooks: HookChain,
        telemetry: RunTelemetry,
        screens: Sequence[ToolResultScreen],
        tool_results: ToolResults,
    ) -> None:
        self.tools = tools
        self.has_eager = any(tool.eager for tool in tools.values())
        self._limits = limits
        self._executor = ToolExecutor(limits, hooks, telemetry, screens, tool_results)

    def tools_changed(self) -> None:
        """Tools were added to the registry (``AgentExecutor.add_tools``)."""
        self.has_eager = any(tool.eager for tool in self.tools.values())

    def batch(
        self, run: RunState, task_group: TaskGroup | None, max_calls: int | None
    ) -> ToolBatch:
        """A batch for one model turn's calls, run as tasks of ``task_group`` (with ``None``,
        only :meth:`ToolBatch.run_now` may be used)."""
        limits = self._limits
        plan = TurnPlan(run, max_calls, limits.max_identical_calls)
        return ToolBatch(self._executor, plan, run, task_group, limits.max_parallel)

    async def run_calls(
        self,
        run: RunState,
        calls: Sequence[ToolCall],
        max_calls: int | None,
        decision: Decision | None = None,
        *,
        decided: Mapping[str, Decision | None] | None = None,
    ) -> bool:
        """Run a finished turn's calls concurrently; true if ``max_calls`` refused one.

        ``decided`` settles calls of a resumed run by id: a :class:`Decision`, or ``None`` for
        an approved call, which then runs.
        """
        batch: ToolBatch | None = None
        if len(calls) == 1:
            # The common case runs in this task: no task group, no limiter, no task switch.
            call = calls[0]
            batch = self.batch(run, None, max_calls)
            try:
                if decided is None:
                    await batch.run_now(call, decision)
                else:
                    await batch.run_now(call, decided[call.id], approved=True)
            finally:
                batch.collect(calls)
            return batch.limit_hit
        try:
            async with anyio.create_task_group() as tg:
                batch = self.batch(run, tg, max_calls)
                for call in calls:
                    if decided is None:
                        batch.start(call, decision)
                    else:
                        batch.start(call, decided[call.id], approved=True)
        finally:
            # Calls that finished are recorded even when the turn is cut short (a timeout).
            if batch is not None:
                batch.collect(calls)
        assert batch is not None
        return batch.limit_hit

    def close_pending(self, run: RunState) -> None:
        """Tool calls cut short by a timeout or cancellation end as ``cancelled``."""
        now = time.perf_counter()
        for call_id, pending in run.pending.items():
            record = ToolCallRecord(
                call_id=call_id,
                tool=pending.tool,
                arguments=pending.arguments,
                status="cancelled",
                duration_ms=round((now - pending.started) * 1000, 3),
                result="cancelled: the run ended before the tool finished",
            )
            _record_call(run, record)
            self._executor.ended(run, pending.tool, call_id, record, now - pending.started)
        run.pending.clear()


class ToolBatch:
    """The tool calls of one model turn: admitted by its plan and started as they become known
    (eager tools while the model still streams, the rest when its turn ends), then collected
    in call order."""

    __slots__ = ("_executor", "_finished", "_limiter", "_plan", "_run", "_tg")

    def __init__(
        self,
        executor: ToolExecutor,
        plan: TurnPlan,
        run: RunState,
        task_group: TaskGroup | None,
        max_parallel: int,
    ) -> None:
        self._executor = executor
        self._plan = plan
        self._run = run
        self._tg = task_group
        self._limiter = anyio.CapacityLimiter(max_parallel) if task_group is not None else None
        self._finished: dict[str, ToolCallRecord] = {}

    @property
    def limit_hit(self) -> bool:
        """Whether ``max_tool_calls`` refused one of the turn's calls."""
        return self._plan.limit_hit

    def start(
        self, call: ToolCall, decision: Decision | None = None, *, approved: bool = False
    ) -> None:
        """Start ``call`` (once), settled by ``decision`` or else by the limits.

        A call of a tool that needs a person's approval is not started but kept in
        ``run.approvals``, unless it is ``approved`` already (a resumed run).
        """
        admitted, decision = self._plan.admit(call, decision, approved)
        if admitted:
            assert self._tg is not None, "a batch without a task group runs calls with run_now"
            self._tg.start_soon(
                self._executor.run, self._run, call, decision, self._limiter, self._finished
            )

    async def run_now(
        self, call: ToolCall, decision: Decision | None = None, *, approved: bool = False
    ) -> None:
        """Like :meth:`start`, but run ``call`` in the current task and wait for it."""
        admitted, decision = self._plan.admit(call, decision, approved)
        if admitted:
            await self._executor.run(self._run, call, decision, None, self._finished)

    def start_eager(self, call: ToolCall) -> None:
        """Start ``call`` now if its tool is eager; called when its arguments are complete."""
        tool = self._run.tools.get(call.name)
        if tool is not None and tool.eager and not tool.requires_approval:
            self.start(call)

    def collect(self, calls: Sequence[ToolCall]) -> None:
        """Add the finished calls' records and results to the run, in call order (then any
        call started early that the turn's final calls do not list).

        Calls that did not finish (the turn was cut short) stay in ``run.pending``.
        """
        run, finished = self._run, self._finished
        ordered = list(calls)
        listed = {call.id for call in calls}
        ordered += [c for c in self._plan.admitted if c.id not in listed]
        for call in ordered:
            record = finished.get(call.id)
            if record is not None:
                _record_call(run, record)
                run.add(ToolMessage(tool_call_id=call.id, name=call.name, content=record.result))


def _record_call(run: RunState, record: ToolCallRecord) -> None:
    """Make ``record`` one of the run's tool calls (``AgentResult.tool_calls``): the only
    place the tool path writes ``run.records``, so each call is recorded once, in order."""
    run.records.append(record)
