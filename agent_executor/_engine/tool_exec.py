"""Running one decided tool call between its ``tool_start`` and ``tool_end`` events: the
``before_tool_call`` hooks, the tool under its timeout (or the client, for a frontend tool),
the result truncated and screened, the ``after_tool_call`` hooks.

Every outcome a model can recover from (unknown tool, bad arguments, a decision, a failure, a
timeout) becomes the call's result text, given back to the model; only cancellation escapes.
A call's record goes to the turn's ``finished`` mapping, for the turn to collect.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Sequence
from typing import Any

import anyio

from ..errors import HookRejection
from ..events import ToolCallEvent, ToolEndEvent, ToolStartEvent
from ..guards import ToolResultScreen
from ..hooks import HookChain
from ..messages import ToolCall
from ..results import ToolCallRecord, ToolStatus
from ..settings import ToolLimits
from ..tools import (
    ClientToolError,
    FrontendTool,
    ToolArgumentsError,
    ToolResults,
    serialize_result,
)
from .state import PendingCall, RunState
from .telemetry import RunTelemetry
from .tool_plan import Decision
from .tool_scope import tool_scope

__all__ = ["ToolExecutor", "loose_arguments"]

logger = logging.getLogger("agent_executor.tools")


class ToolExecutor:
    """Runs (or settles, when decided) one call at a time: hooks, timeout, screens, events."""

    __slots__ = ("_hooks", "_limits", "_screens", "_telemetry", "_tool_results")

    def __init__(
        self,
        limits: ToolLimits,
        hooks: HookChain,
        telemetry: RunTelemetry,
        screens: Sequence[ToolResultScreen],
        tool_results: ToolResults,
    ) -> None:
        self._limits = limits
        self._hooks = hooks
        self._telemetry = telemetry
        # A screen is a guard (screens_among), named for the duration metric like one.
        self._screens = tuple((getattr(s, "name", type(s).__name__), s) for s in screens)
        self._tool_results = tool_results

    async def run(
        self,
        run: RunState,
        call: ToolCall,
        decision: Decision | None,
        limiter: anyio.CapacityLimiter | None,
        finished: dict[str, ToolCallRecord],
    ) -> None:
        """Run (or settle) ``call`` in its span; its record goes to ``finished``."""
        with self._telemetry.tool_span(call) as span:
            record = await self._run(run, call, decision, limiter, finished)
            self._telemetry.tool_finished(span, record)

    async def _run(
        self,
        run: RunState,
        call: ToolCall,
        decision: Decision | None,
        limiter: anyio.CapacityLimiter | None,
        finished: dict[str, ToolCallRecord],
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
        # No await from here on: a call out of run.pending is in finished, never lost.
        del run.pending[call.id]
        finished[call.id] = record
        self.ended(run, call.name, call.id, record, time.perf_counter() - started)
        return record

    def ended(
        self, run: RunState, tool: str, call_id: str, record: ToolCallRecord, seconds: float
    ) -> None:
        """A call is over (finished, or cut short by the run's end): metrics, ``tool_end``."""
        self._telemetry.tool_counted(record, seconds)
        run.emit(
            ToolEndEvent(
                tool=tool,
                call_id=call_id,
                status=record.status,
                duration_ms=record.duration_ms,
                result=record.result,
            )
        )

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
        for name, screen in self._screens:
            started = time.perf_counter()
            try:
                verdict = await screen.screen_tool_result(tool, result)
            finally:
                self._telemetry.guard_timed(name, "tool_result", time.perf_counter() - started)
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

    def _truncate(self, text: str) -> str:
        limit = self._limits.max_result_chars
        if len(text) <= limit:
            return text
        return (
            f"{text[:limit]}\n[truncated: the result had {len(text)} characters; "
            f"only the first {limit} are shown]"
        )


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
    """The call's arguments as the events show them: ``{}`` if they are not a JSON object."""
    try:
        value = json.loads(raw) if raw.strip() else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
