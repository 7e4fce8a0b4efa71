"""Running one turn's tool calls: limits, hooks, validation, timeouts, events, records.

Every outcome a model can recover from (unknown tool, bad arguments, a decision, a failure, a
timeout) becomes the call's result text, given back to the model; only cancellation escapes.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
from anyio.abc import TaskGroup

from ..errors import HookRejection
from ..events import ToolCallEvent, ToolEndEvent, ToolStartEvent
from ..guards import ToolResultScreen
from ..hooks import HookChain
from ..messages import ToolCall, ToolMessage
from ..results import ToolCallRecord, ToolStatus
from ..tools import (
    ClientToolError,
    FrontendTool,
    Tool,
    ToolArgumentsError,
    ToolResults,
    serialize_result,
)
from .state import PendingCall, RunState
from .telemetry import RunTelemetry
from .tool_scope import tool_scope

__all__ = ["Decision", "ToolBatch", "ToolLimits", "ToolRunner", "loose_arguments"]

logger = logging.getLogger("agent_executor.tools")


@dataclass(frozen=True, slots=True)
class ToolLimits:
    """Per-run limits on tool calls."""

    timeout: float | None = 30.0
    max_parallel: int = 8
    max_result_chars: int = 100_000
    max_identical_calls: int = 2


@dataclass(frozen=True, slots=True)
class Decision:
    """A call decided before it runs: refused (with the reason the model is given), or settled
    otherwise (an ``ask_user`` answer is a ``success`` whose ``reason`` is the answer)."""

    status: ToolStatus
    reason: str
    over_limit: bool = False


class ToolRunner:
    """Runs tool calls: plans refusals, applies hooks and timeouts, emits events, records."""

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
        self._tool_results = tool_results
        self._screens = tuple(screens)
        self._telemetry = telemetry
        self.has_eager = any(tool.eager for tool in tools.values())
        self._limits = limits
        self._hooks = hooks

    def tools_changed(self) -> None:
        """Tools were added to the registry (``AgentExecutor.add_tools``)."""
        self.has_eager = any(tool.eager for tool in self.tools.values())

    def batch(
        self, run: RunState, task_group: TaskGroup | None, max_calls: int | None
    ) -> ToolBatch:
        """A batch for one model turn's calls, run as tasks of ``task_group`` (with ``None``,
        only :meth:`ToolBatch.run_now` may be used)."""
        return ToolBatch(self, run, task_group, max_calls, self._limits.max_parallel)

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

    def plan(
        self,
        run: RunState,
        call: ToolCall,
        max_calls: int | None,
        decision: Decision | None = None,
    ) -> Decision | None:
        """Count ``call`` against ``max_calls`` and decide it (``None``: run it).

        Every call the model asks for counts, whatever becomes of it (run, failed, refused by
        a hook, unknown, an identical repeat, already ``decision``-ed: cut off, denied), so a
        model repeating a refused call cannot go on until ``max_turns``. A call past the limit
        is refused as such (``over_limit``: the model is then asked for its final answer),
        whatever else was decided for it. Otherwise ``decision`` stands, or a call repeated
        identically too many times in a row is refused.
        """
        if run.budget.spent(max_calls):
            return Decision(
                "rejected",
                f"max_tool_calls ({max_calls}) reached: this call was not "
                "run; answer with the information you have",
                over_limit=True,
            )
        if decision is not None:
            run.budget.count(None)
            return decision
        streak = run.budget.count((call.name, _canonical(call.arguments)))
        limit = self._limits.max_identical_calls
        if limit and streak > limit:
            return Decision(
                "rejected",
                f"refused: {call.name} was already called {limit} times in a row "
                "with the same arguments; use the result you already have",
            )
        return None

    async def run_one(
        self,
        run: RunState,
        call: ToolCall,
        decision: Decision | None,
        limiter: anyio.CapacityLimiter | None,
        records: dict[str, ToolCallRecord],
    ) -> None:
        """Run (or refuse) one call between its ``tool_start`` and ``tool_end`` events."""
        with self._telemetry.tool_span(call) as span:
            record = await self._run_one(run, call, decision, limiter, records)
            self._telemetry.tool_finished(span, record)

    async def _run_one(
        self,
        run: RunState,
        call: ToolCall,
        decision: Decision | None,
        limiter: anyio.CapacityLimiter | None,
        records: dict[str, ToolCallRecord],
    ) -> ToolCallRecord:
        arguments = loose_arguments(call.arguments)
        run.emit(ToolStartEvent(tool=call.name, call_id=call.id, arguments=arguments))
        started = time.perf_counter()
        run.pending[call.id] = PendingCall(call.name, arguments, started)
        if decision is not None:
            status, result = decision.status, decision.reason
        elif limiter is None:
            status, result = await self._execute(run, call)
        else:
            async with limiter:
                status, result = await self._execute(run, call)
        result = self._truncate(result)
        if self._screens and status in ("success", "error"):
            status, result = await self._screen(call.name, status, result)
        record = ToolCallRecord(
            call_id=call.id,
            tool=call.name,
            arguments=arguments,
            status=status,
            duration_ms=round((time.perf_counter() - started) * 1000, 3),
            result=result,
        )
        if self._hooks:
            record = await self._after_hooks(run, call, record)
        del run.pending[call.id]
        records[call.id] = record
        self._telemetry.tool_counted(record, time.perf_counter() - started)
        run.emit(
            ToolEndEvent(
                tool=call.name,
                call_id=call.id,
                status=record.status,
                duration_ms=record.duration_ms,
                result=record.result,
            )
        )
        return record

    async def _execute(self, run: RunState, call: ToolCall) -> tuple[ToolStatus, str]:
        tool = run.tools.get(call.name)
        if tool is None:
            available = ", ".join(sorted(run.tools)) or "(none)"
            return "not_found", f"unknown tool {call.name!r}; available tools: {available}"
        try:
            arguments = tool.parse_arguments(call.arguments)
            if self._hooks:
                changed = await self._hooks.before_tool_call(run.ctx, call)
                if changed.arguments != call.arguments:
                    arguments = tool.parse_arguments(changed.arguments)
        except ToolArgumentsError as exc:
            return "invalid_arguments", f"{exc}; fix the arguments and call {call.name} again"
        except HookRejection as exc:
            return "rejected", f"the call was refused: {exc.reason}"
        timeout = tool.timeout if tool.timeout is not None else self._limits.timeout
        with anyio.move_on_after(timeout) as scope:
            try:
                if isinstance(tool, FrontendTool):
                    value = await self._from_client(run, call, arguments, timeout)
                else:
                    with tool_scope(run, call):
                        value = await tool.invoke(arguments)
            except (Exception, SystemExit) as exc:  # SystemExit: sys.exit(), argparse errors
                description = _describe(exc)
                logger.warning("tool %s raised %s", call.name, description, exc_info=exc)
                return "error", description
            except anyio.get_cancelled_exc_class():
                if scope.cancel_called or _cancel_requested():
                    raise  # the tool's timeout (reported below), or the run is cancelled
                # The tool raised CancelledError on its own: its failure, not the run's.
                logger.warning("tool %s raised CancelledError without being cancelled", call.name)
                return "error", "CancelledError: the tool was cancelled from inside"
        if scope.cancelled_caught:
            return "timeout", f"{call.name} did not finish within {timeout} s"
        try:
            return "success", serialize_result(value)
        except Exception as exc:
            logger.warning("the result of tool %s cannot be serialised: %s", call.name, exc)
            return "error", f"the result of {call.name} could not be serialised: {_describe(exc)}"

    async def _from_client(
        self, run: RunState, call: ToolCall, arguments: dict[str, Any], limit: float | None
    ) -> Any:
        """Ask the client to run a frontend tool (a ``tool_call`` event) and wait for it."""
        user = run.ctx.user_id
        results = self._tool_results
        answer = results.expect(call.id, user)
        try:
            await results.announce(call.id, user, 3600.0 if limit is None else limit + 5)
            run.emit(ToolCallEvent(tool=call.name, call_id=call.id, arguments=arguments))
            result, error = await answer
        finally:
            results.forget(call.id, user, answer)
            if results.relay is not None:
                with anyio.CancelScope(shield=True), anyio.move_on_after(2):
                    await results.withdraw(call.id, user)
        if error is not None:
            raise ClientToolError(error)
        return result

    async def _screen(self, tool: str, status: ToolStatus, result: str) -> tuple[ToolStatus, str]:
        """Let guards check the result for injected instructions before the model sees it."""
        for screen in self._screens:
            verdict = await screen.screen_tool_result(tool, result)
            if verdict is not None:
                result = verdict.text
                if verdict.blocked:
                    return "rejected", result
        return status, result

    async def _after_hooks(
        self, run: RunState, call: ToolCall, record: ToolCallRecord
    ) -> ToolCallRecord:
        """The record after the ``after_tool_call`` hooks.

        The hooks get the screened result; text a hook puts in its place is screened again
        (whatever the status), as it may carry what the tool returned or came from elsewhere.
        A result the hooks leave as it is was screened already and is not screened twice.
        """
        try:
            changed = await self._hooks.after_tool_call(run.ctx, call, record)
        except HookRejection as exc:
            return record.model_copy(
                update={"status": "rejected", "result": f"the result was refused: {exc.reason}"}
            )
        if self._screens and changed.result != record.result:
            status, result = await self._screen(call.name, changed.status, changed.result)
            if result is not changed.result or status != changed.status:
                changed = changed.model_copy(update={"status": status, "result": result})
        return changed

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
            run.records.append(record)
            self._telemetry.tool_counted(record, now - pending.started)
            run.emit(
                ToolEndEvent(
                    tool=pending.tool,
                    call_id=call_id,
                    status="cancelled",
                    duration_ms=record.duration_ms,
                    result=record.result,
                )
            )
        run.pending.clear()

    def _truncate(self, text: str) -> str:
        limit = self._limits.max_result_chars
        if len(text) <= limit:
            return text
        return (
            f"{text[:limit]}\n[truncated: the result had {len(text)} characters; "
            f"only the first {limit} are shown]"
        )


class ToolBatch:
    """The tool calls of one model turn: started as they become known (eager tools while the
    model still streams, the rest when its turn ends), results collected in call order."""

    __slots__ = (
        "_ids",
        "_limiter",
        "_max_calls",
        "_run",
        "_runner",
        "_started",
        "_tg",
        "limit_hit",
        "records",
    )

    def __init__(
        self,
        runner: ToolRunner,
        run: RunState,
        task_group: TaskGroup | None,
        max_calls: int | None,
        max_parallel: int,
    ) -> None:
        self._runner = runner
        self._run = run
        self._tg = task_group
        self._max_calls = max_calls
        self._limiter = anyio.CapacityLimiter(max_parallel) if task_group is not None else None
        self._ids: set[str] = set()
        self._started: list[ToolCall] = []
        self.records: dict[str, ToolCallRecord] = {}
        self.limit_hit = False

    def start(
        self, call: ToolCall, decision: Decision | None = None, *, approved: bool = False
    ) -> None:
        """Start ``call`` (once), settled by ``decision`` or else by the limits.

        A call of a tool that needs a person's approval is not started but kept in
        ``run.approvals``, unless it is ``approved`` already (a resumed run).
        """
        admitted, decision = self._admit(call, decision, approved)
        if admitted:
            assert self._tg is not None, "a batch without a task group runs calls with run_now"
            self._tg.start_soon(
                self._runner.run_one, self._run, call, decision, self._limiter, self.records
            )

    async def run_now(
        self, call: ToolCall, decision: Decision | None = None, *, approved: bool = False
    ) -> None:
        """Like :meth:`start`, but run ``call`` in the current task and wait for it."""
        admitted, decision = self._admit(call, decision, approved)
        if admitted:
            await self._runner.run_one(self._run, call, decision, None, self.records)

    def _admit(
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
        self._started.append(call)
        decision = self._runner.plan(run, call, self._max_calls, decision)
        if decision is not None and decision.over_limit:
            self.limit_hit = True
        return True, decision

    def start_eager(self, call: ToolCall) -> None:
        """Start ``call`` now if its tool is eager; called when its arguments are complete."""
        tool = self._run.tools.get(call.name)
        if tool is not None and tool.eager and not tool.requires_approval:
            self.start(call)

    def collect(self, calls: Sequence[ToolCall]) -> None:
        """Add the finished calls' records and results to the run, in call order.

        Calls that did not finish (the turn was cut short) stay in ``run.pending``.
        """
        run = self._run
        ordered = list(calls)
        ordered += [c for c in self._started if c.id not in {call.id for call in calls}]
        for call in ordered:
            record = self.records.get(call.id)
            if record is not None:
                run.records.append(record)
                run.add(ToolMessage(tool_call_id=call.id, name=call.name, content=record.result))


def _cancel_requested() -> bool:
    """Whether someone asked to cancel the current task (always true before Python 3.11, which
    cannot tell: a cancellation is then never mistaken for a tool's own error)."""
    task = asyncio.current_task()
    cancelling = getattr(task, "cancelling", None)
    return cancelling is None or cancelling() > 0


def _describe(exc: BaseException) -> str:
    try:
        return f"{type(exc).__name__}: {exc}"
    except Exception:
        return f"{type(exc).__name__}: (its message cannot be shown)"


def loose_arguments(raw: str) -> dict[str, object]:
    try:
        value = json.loads(raw) if raw.strip() else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _canonical(raw: str) -> str:
    try:
        return json.dumps(json.loads(raw), sort_keys=True, separators=(",", ":"))
    except ValueError:
        return raw
