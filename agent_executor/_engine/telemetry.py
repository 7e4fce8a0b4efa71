"""``RunTelemetry``: the spans, metrics and outcome logs of runs, model calls and tool calls.

The run's steps call it at a few points (a run starts and ends, a guard refuses, a model call
opens and ends, a tool call opens and ends) and never per chunk: the per-chunk path touches only
:class:`TurnMetrics`' bound children at the end of a turn and :meth:`RunTelemetry.first_text`
once per run. Hooks are not telemetry and keep their own chain.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import TYPE_CHECKING, TypeVar

from prometheus_client.metrics import MetricWrapperBase

from ..errors import ErrorCode
from ..observability import Metrics, Span, Tracing

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from ..messages import ToolCall, Usage
    from ..models.base import ModelResponse
    from ..results import ToolCallRecord
    from .state import RunState

__all__ = ["RunTelemetry", "TurnMetrics"]

logger = logging.getLogger("agent_executor")

OUTPUT_GUARD = "output_guard"
"""The output guard's ``guard`` label in ``agent_executor_guard_rejections_total``."""

_NO_SPAN: AbstractContextManager[Span] = nullcontext(None)
"""The run's span when tracing is off: one shared, stateless context manager."""

_SERVER_SIDE_FAILURES = frozenset(
    code.value
    for code in (
        ErrorCode.TIMEOUT,
        ErrorCode.OVERLOADED,
        ErrorCode.LLM_ERROR,
        ErrorCode.INTERNAL_ERROR,
        ErrorCode.UNAVAILABLE,
    )
)
"""Outcomes logged as warnings; refusals of the caller's input are routine (info)."""

_Metric = TypeVar("_Metric", bound=MetricWrapperBase)


def _log(level: int, msg: str, *args: object) -> None:
    """``logger.log(level, msg, *args)``, for the line every run writes: the same record
    (the caller's file, line and function), without the logger's search for its caller.

    ``Logger.findCaller`` walks up the stack and compares each frame's file name with the
    logging module's; for this one line that search costs as much as a tenth of everything
    else a short run's logging costs. The caller here is known: the frame just above.
    """
    if logger.isEnabledFor(level):
        caller = sys._getframe(1)
        code = caller.f_code
        record = logger.makeRecord(
            logger.name, level, code.co_filename, caller.f_lineno, msg, args, None, code.co_name
        )
        logger.handle(record)


class TurnMetrics:
    """The model's labelled metric children, bound once.

    A model call gets its own view (:meth:`call`, the same children) to keep what its provider
    reported: :meth:`record` counts the call and keeps its usage, and the tokens and the cost
    are counted by :meth:`charge`, with the call's spend as
    :class:`~agent_executor._engine.budget.CallSpend` computes it (a call cut at the run's
    limit reports nothing; its estimate is counted instead).
    """

    __slots__ = (
        "cost",
        "duration",
        "errors",
        "input_tokens",
        "output_tokens",
        "reported",
        "retries",
        "successes",
    )

    def __init__(self, metrics: Metrics, model: str) -> None:
        metrics.register_model(model)
        self.successes = metrics.llm_requests.labels(model, "success")
        self.errors = metrics.llm_requests.labels(model, "error")
        self.duration = metrics.llm_duration.labels(model)
        self.retries = metrics.llm_retries.labels(model)
        self.input_tokens = metrics.llm_tokens.labels(model, "input")
        self.output_tokens = metrics.llm_tokens.labels(model, "output")
        self.cost = metrics.llm_cost.labels(model)
        self.reported: Usage | None = None
        """What the provider reported on the call this view records (its last usage chunk)."""

    def call(self) -> TurnMetrics:
        """A view for one model call: the same children, nothing reported yet. Copied slot by
        slot: ``copy.copy`` of a class with slots goes through the pickle protocol, several
        times the cost, and a run makes one view per model call."""
        view = object.__new__(TurnMetrics)
        view.successes, view.errors = self.successes, self.errors
        view.duration, view.retries, view.cost = self.duration, self.retries, self.cost
        view.input_tokens, view.output_tokens = self.input_tokens, self.output_tokens
        view.reported = None
        return view

    def record(self, started: float, usage: Usage | None, ok: bool) -> None:
        """The call started at ``started`` ended (``ok``: answered, or stopped on purpose);
        ``usage`` is what its provider reported, kept for its spend."""
        self.duration.observe(time.perf_counter() - started)
        (self.successes if ok else self.errors).inc()
        self.reported = usage

    def charge(self, spent: Usage) -> None:
        """Count a call's spend: its tokens, and its cost when known."""
        self.input_tokens.inc(spent.input_tokens)
        self.output_tokens.inc(spent.output_tokens)
        if spent.cost_usd is not None:
            self.cost.inc(spent.cost_usd)


class RunTelemetry:
    """What one executor records about its runs: spans, Prometheus metrics, outcome logs."""

    __slots__ = ("_agent", "_children", "_model", "metrics", "tracing", "turn_metrics")

    def __init__(
        self, metrics: Metrics, tracing: Tracing, agent: str, model: str, *, output_guard: bool
    ) -> None:
        self.metrics = metrics
        self.tracing = tracing
        self.turn_metrics = TurnMetrics(metrics, model)
        self._agent = agent
        self._model = model
        self._children: dict[tuple[MetricWrapperBase, tuple[str, ...]], MetricWrapperBase] = {}
        if output_guard:
            metrics.register_guard(OUTPUT_GUARD, (ErrorCode.OUTPUT_BLOCKED.value,))

    def _child(self, metric: _Metric, *labels: str) -> _Metric:
        """``metric.labels(*labels)``, looked up once per executor: prometheus-client checks,
        converts and locks at every ``labels`` call, and a run makes eight of them. The labels
        come from small sets (guards, targets, modes, outcomes, tools under ``tool_label``)."""
        key = (metric, labels)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*labels)
        return child  # type: ignore[return-value]

    # -- runs ---------------------------------------------------------------------------------

    def run_span(self, run: RunState) -> AbstractContextManager[Span]:
        """The span of the whole run (its trace id goes into the logging context); nothing is
        made per run when tracing is off."""
        if not self.tracing.enabled:
            return _NO_SPAN
        return self._run_span(run)

    @contextmanager
    def _run_span(self, run: RunState) -> Iterator[Span]:
        ctx = run.ctx
        attributes = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": self._agent,
            "gen_ai.request.model": self._model,
            "gen_ai.conversation.id": ctx.session_id,
            "agent_executor.request_id": ctx.request_id,
            "agent_executor.mode": ctx.mode,
        }
        with self.tracing.span(f"invoke_agent {self._agent}", attributes, trace_logs=True) as span:
            yield span

    def run_finished(self, span: Span, run: RunState) -> None:
        """Count and log the run's outcome; put its usage and outcome on its span."""
        self._count(run, run.error.code if run.error else "success")
        if span is None:
            return
        usage = run.usage
        self.tracing.set(
            span,
            {
                "gen_ai.usage.input_tokens": usage.input_tokens if usage else None,
                "gen_ai.usage.output_tokens": usage.output_tokens if usage else None,
                "gen_ai.response.finish_reasons": [run.finish_reason],
                "agent_executor.turns": run.turns,
                "agent_executor.tool_calls": len(run.records),
            },
        )
        if run.error is not None:
            self.tracing.fail(span, run.error.code, run.error.message)

    def run_cancelled(self, span: Span, run: RunState) -> None:
        self._count(run, "cancelled")
        logger.debug("run cancelled by the caller (user %s)", run.ctx.user_id)
        self.tracing.fail(span, "cancelled", "the run was cancelled")

    def guard_refused(self, guard: str, code: str, message: str, *, rewritten: bool) -> None:
        self._child(self.metrics.guard_rejections, guard, code).inc()
        logger.info(
            "guard %s refused the %s: %s",
            guard,
            "command rewritten by a before_agent_start hook" if rewritten else "run",
            message,
        )

    def guard_timed(self, guard: str, target: str, seconds: float) -> None:
        """How long a guard took to judge a request or screen a tool result (refusals too)."""
        self._child(self.metrics.guard_duration, guard, target).observe(seconds)

    def budget_stopped(self) -> None:
        """A run's own spending limit stopped it (before a model call or during one)."""
        self._child(self.metrics.budget_refusals, "run").inc()
        logger.info("run stopped at its spending limit")

    def handed_over(self, source: str, target: str) -> None:
        self._child(self.metrics.handoffs, target).inc()
        logger.info("run handed over from agent %s to agent %s", source, target)

    def _count(self, run: RunState, outcome: str) -> None:
        mode = run.ctx.mode
        seconds = time.perf_counter() - run.started
        self._child(self.metrics.requests, mode, outcome).inc()
        self._child(self.metrics.request_duration, mode).observe(seconds)
        self.metrics.react_turns.observe(run.turns)
        cost = run.usage.cost_usd if run.usage is not None else None
        if cost is not None and run.ctx.parent is None:  # a nested run's cost is its parent's
            self.metrics.run_cost.observe(cost)
        level = logging.WARNING if outcome in _SERVER_SIDE_FAILURES else logging.INFO
        _log(
            level,
            "run finished: outcome=%s turns=%d tool_calls=%d duration_ms=%.1f",
            outcome,
            run.turns,
            len(run.records),
            seconds * 1000,
        )

    # -- model calls --------------------------------------------------------------------------

    def model_span(self, run: RunState) -> AbstractContextManager[Span]:
        attributes = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": self._model,
            "agent_executor.turn": run.turns,
        }
        return self.tracing.span(f"chat {self._model}", attributes)

    def first_text(self, run: RunState) -> None:
        """The run's first text went out: its time to first token."""
        self._child(self.metrics.time_to_first_token, run.ctx.mode).observe(
            time.perf_counter() - run.started
        )

    def model_answered(self, span: Span, response: ModelResponse) -> None:
        usage = response.usage
        self.tracing.set(
            span,
            {
                "gen_ai.usage.input_tokens": usage.input_tokens if usage else None,
                "gen_ai.usage.output_tokens": usage.output_tokens if usage else None,
                "gen_ai.response.finish_reasons": [response.finish_reason or "unknown"],
            },
        )

    def model_failed(self, span: Span, code: ErrorCode, message: str) -> None:
        if code is ErrorCode.LLM_ERROR:
            logger.warning("model call failed: %s", message)
        self.tracing.fail(span, code.value, message)

    def output_blocked(self, span: Span, kind: str, message: str) -> None:
        """The output guard withheld the answer: a guard rejection, not a hook's."""
        self._child(
            self.metrics.guard_rejections, OUTPUT_GUARD, ErrorCode.OUTPUT_BLOCKED.value
        ).inc()
        logger.warning("output guard withheld the answer (%s)", kind)
        self.tracing.fail(span, ErrorCode.OUTPUT_BLOCKED.value, message)

    # -- tool calls ---------------------------------------------------------------------------

    def tool_span(self, call: ToolCall) -> AbstractContextManager[Span]:
        attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.name,
            "gen_ai.tool.call.id": call.id,
        }
        return self.tracing.span(f"execute_tool {call.name}", attributes)

    def tool_finished(self, span: Span, record: ToolCallRecord) -> None:
        status = record.status
        self.tracing.set(span, {"agent_executor.tool.status": status})
        if status != "success":
            self.tracing.fail(span, status, record.result[:200])

    def tool_counted(self, record: ToolCallRecord, seconds: float) -> None:
        """A finished (or cancelled) call in the metrics."""
        label = self.metrics.tool_label(record.tool)
        self._child(self.metrics.tool_calls, label, record.status).inc()
        self._child(self.metrics.tool_duration, label).observe(seconds)
