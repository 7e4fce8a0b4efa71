"""Running one turn's tool calls: limits, hooks, validation, timeouts, events, records.

Every outcome a model can recover from (unknown tool, bad arguments, a refusal, a failure, a
timeout) becomes the call's result text, given back to the model; only cancellation escapes.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import anyio

from ._run import PendingCall, Run
from .errors import HookRejection
from .events import ToolEndEvent, ToolStartEvent
from .hooks import _HookChain
from .messages import ToolCall, ToolMessage
from .metrics import Metrics
from .results import ToolCallRecord, ToolStatus
from .tools import Tool, ToolArgumentsError, serialize_result

__all__ = ["Refusal", "ToolLimits", "ToolRunner"]

logger = logging.getLogger("agent_executor.tools")


@dataclass(frozen=True, slots=True)
class ToolLimits:
    """Per-run limits on tool calls."""

    timeout: float | None = 30.0
    max_parallel: int = 8
    max_result_chars: int = 100_000
    max_identical_calls: int = 2


@dataclass(frozen=True, slots=True)
class Refusal:
    """A call decided against before it runs, with the reason the model is given."""

    status: ToolStatus
    reason: str
    over_limit: bool = False


class ToolRunner:
    """Runs the tool calls of a turn concurrently and adds their results to the run."""

    def __init__(
        self, tools: Mapping[str, Tool], limits: ToolLimits, hooks: _HookChain, metrics: Metrics
    ) -> None:
        self._tools = tools
        self._limits = limits
        self._hooks = hooks
        self._metrics = metrics
        self._available = ", ".join(sorted(tools)) or "(none)"

    async def run_calls(
        self,
        run: Run,
        calls: Sequence[ToolCall],
        *,
        max_calls: int | None,
        refuse_all: Refusal | None = None,
    ) -> bool:
        """Run ``calls`` (results in call order); true if ``max_calls`` refused one of them."""
        refusals = [refuse_all or self._plan(run, call, max_calls) for call in calls]
        limit_hit = any(r is not None and r.over_limit for r in refusals)
        slots: list[ToolCallRecord | None] = [None] * len(calls)
        limiter = anyio.CapacityLimiter(self._limits.max_parallel)
        try:
            async with anyio.create_task_group() as tg:
                for index, (call, refusal) in enumerate(zip(calls, refusals, strict=True)):
                    tg.start_soon(self._one, run, call, refusal, limiter, slots, index)
        finally:
            # Calls that finished are recorded even if the turn was cut short (a timeout);
            # the unfinished ones are still in ``run.pending``.
            for call, record in zip(calls, slots, strict=True):
                if record is not None:
                    run.records.append(record)
                    run.add(
                        ToolMessage(tool_call_id=call.id, name=call.name, content=record.result)
                    )
        return limit_hit

    def _plan(self, run: Run, call: ToolCall, max_calls: int | None) -> Refusal | None:
        """Refuse a call past ``max_calls`` or repeated identically too many times in a row."""
        key = (call.name, _canonical(call.arguments))
        run.identical_streak = run.identical_streak + 1 if key == run.last_call_key else 1
        run.last_call_key = key
        limit = self._limits.max_identical_calls
        if limit and run.identical_streak > limit:
            return Refusal(
                "rejected",
                f"refused: {call.name} was already called {limit} times in a row "
                "with the same arguments; use the result you already have",
            )
        if max_calls is not None and run.tool_calls_made >= max_calls:
            return Refusal(
                "rejected",
                f"max_tool_calls ({max_calls}) reached: this call was not "
                "run; answer with the information you have",
                over_limit=True,
            )
        run.tool_calls_made += 1
        return None

    async def _one(
        self,
        run: Run,
        call: ToolCall,
        refusal: Refusal | None,
        limiter: anyio.CapacityLimiter,
        slots: list[ToolCallRecord | None],
        index: int,
    ) -> None:
        arguments = _loose_arguments(call.arguments)
        run.emit(ToolStartEvent(tool=call.name, call_id=call.id, arguments=arguments))
        started = time.perf_counter()
        run.pending[call.id] = PendingCall(call.name, arguments, started)
        if refusal is not None:
            status, result = refusal.status, refusal.reason
        else:
            async with limiter:
                status, result = await self._execute(run, call)
        record = ToolCallRecord(
            call_id=call.id,
            tool=call.name,
            arguments=arguments,
            status=status,
            duration_ms=round((time.perf_counter() - started) * 1000, 3),
            result=self._truncate(result),
        )
        if self._hooks:
            record = await self._after_hooks(run, call, record)
        del run.pending[call.id]
        slots[index] = record
        self.count(record, time.perf_counter() - started)
        run.emit(
            ToolEndEvent(
                tool=call.name,
                call_id=call.id,
                status=record.status,
                duration_ms=record.duration_ms,
            )
        )

    async def _execute(self, run: Run, call: ToolCall) -> tuple[ToolStatus, str]:
        tool = self._tools.get(call.name)
        if tool is None:
            return "not_found", (f"unknown tool {call.name!r}; available tools: {self._available}")
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
                value = await tool.invoke(arguments)
            except Exception as exc:
                logger.warning("tool %s raised %s", call.name, exc, exc_info=exc)
                return "error", f"{type(exc).__name__}: {exc}"
        if scope.cancelled_caught:
            return "timeout", f"{call.name} did not finish within {timeout} s"
        return "success", serialize_result(value)

    async def _after_hooks(
        self, run: Run, call: ToolCall, record: ToolCallRecord
    ) -> ToolCallRecord:
        try:
            return await self._hooks.after_tool_call(run.ctx, call, record)
        except HookRejection as exc:
            return record.model_copy(
                update={"status": "rejected", "result": f"the result was refused: {exc.reason}"}
            )

    def count(self, record: ToolCallRecord, seconds: float) -> None:
        """Record a finished (or cancelled) call in the metrics."""
        label = self._metrics.tool_label(record.tool)
        self._metrics.tool_calls.labels(label, record.status).inc()
        self._metrics.tool_duration.labels(label).observe(seconds)

    def _truncate(self, text: str) -> str:
        limit = self._limits.max_result_chars
        if len(text) <= limit:
            return text
        return (
            f"{text[:limit]}\n[truncated: the result had {len(text)} characters; "
            f"only the first {limit} are shown]"
        )


def _loose_arguments(raw: str) -> dict[str, object]:
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
