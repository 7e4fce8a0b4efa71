"""One model turn of a run: the request, the model hooks, the streamed answer, its telemetry.

The streaming itself (retries, timeouts, one event per text delta) is :mod:`.streaming`; this
module builds the request from the run, lets the ``before_model``/``after_model`` hooks see it,
points the stream's output at the run (its events, text, reasoning, the output guard) and turns
the ways a turn can fail into the run's error.

What a call spends is computed once, by :class:`~.budget.CallSpend`, and that one value goes
into the run's usage and to the ``after_model`` hooks (a ``UserBudget`` records it there). A
call cut at the run's spending limit spends too, and reaches ``after_model`` like any other:
its response has what it streamed before the cut, no tool calls, ``finish_reason``
``"budget"`` and its estimated usage; the run then ends ``budget`` whatever the hooks say.
A call that failed (or whose answer the output guard withheld) spends nothing here: its
provider's count, sent at the end of the stream, never came.

A model failure reaches the caller (and through the service, HTTP clients) as a generic
``llm_error`` naming the request id; the provider's own text (which may name keys, accounts or
internal hosts) goes to the log once, as a warning in the run's logging context.
:class:`ModelHealth` keeps what the last model calls said about the endpoint, for health checks.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ..errors import (
    OUT_OF_DESCRIPTORS,
    ErrorCode,
    HookRejection,
    ModelError,
    PlanRefused,
    ScriptExhaustedError,
    UnsupportedRequestError,
    out_of_descriptors,
)
from ..guards import OutputBlocked, OutputGuard
from ..hooks import HookChain
from ..messages import ToolCall, Usage
from ..models.base import ChatModel, ModelRequest, ModelResponse
from ..spend import PriceTable
from .budget import BudgetStop, CallSpend, Meter, allowance, estimate_input_tokens, over_budget
from .compaction import Compactor
from .state import RunFailed, RunState, error_detail
from .streaming import ModelPolicy, TurnOutput, stream_turn
from .telemetry import RunTelemetry
from .tool_choice import tool_params

__all__ = ["ModelHealth", "ModelTurns"]


class ModelHealth:
    """What the model's recent calls say about its endpoint: :attr:`down` after a call failed
    without an answer (connection error, timeout), with a 5xx, or because the endpoint refused
    the credentials (401, 403); a successful call clears it.

    A failure counts for ``hold_seconds`` only: a replica that a readiness probe took out of
    rotation gets no calls that could clear it, so it comes back after that time and the next
    call tells again. Setting it costs an attribute write per model call, nothing per chunk.
    """

    __slots__ = ("_failed_at", "hold_seconds", "reason")

    def __init__(self, hold_seconds: float = 30.0) -> None:
        self.hold_seconds = hold_seconds
        self._failed_at: float | None = None
        self.reason: str | None = None
        """Why the endpoint counts as down (for the log, never for clients)."""

    @property
    def down(self) -> bool:
        """Whether the last model call failed in a way that says the endpoint is down, and
        not longer than ``hold_seconds`` ago."""
        failed_at = self._failed_at
        return failed_at is not None and time.monotonic() - failed_at < self.hold_seconds

    def answered(self) -> None:
        """A model call succeeded."""
        self._failed_at = None

    def failed(self, error: ModelError) -> None:
        """A model call failed (after its retries) with ``error``."""
        if _says_down(error):
            self._failed_at, self.reason = time.monotonic(), error.message
        else:
            self._failed_at = None


def _says_down(error: ModelError) -> bool:
    """Whether a failed call says the endpoint is down: no answer at all (connection error,
    timeout), a 5xx, or the credentials refused; not a refusal of this one request (400, 404,
    429) nor a malformed or stalled stream."""
    status = error.status_code
    if status is None:
        return error.retryable
    return status >= 500 or status in (401, 403)


class ModelTurns:
    """Runs a run's model turns with the executor's model, policy, hooks and output guard."""

    __slots__ = (
        "_compactor",
        "_health",
        "_hooks",
        "_model",
        "_output_guard",
        "_params",
        "_policy",
        "_reasoning_events",
        "_spend",
        "_telemetry",
        "_unconstrained",
    )

    def __init__(
        self,
        model: ChatModel,
        policy: ModelPolicy,
        params: dict[str, Any],
        hooks: HookChain,
        telemetry: RunTelemetry,
        output_guard: OutputGuard | None,
        reasoning_events: bool,
        health: ModelHealth,
        prices: PriceTable,
        compactor: Compactor | None = None,
    ) -> None:
        self._model = model
        self._compactor = compactor
        self._spend = CallSpend(model.name, prices, telemetry.turn_metrics)
        self._policy = policy
        self._params = params
        self._hooks = hooks
        self._telemetry = telemetry
        self._output_guard = output_guard
        self._reasoning_events = reasoning_events
        self._health = health
        self._unconstrained = False
        """Set once the model said it cannot take a ``response_format``."""

    async def run(
        self,
        run: RunState,
        tools: list[dict[str, Any]],
        on_call: Callable[[ToolCall], None] | None,
    ) -> ModelResponse:
        """Stream the run's next turn; ``on_call`` gets each call complete before the end."""
        run.turns += 1
        run.ctx.turn = run.turns
        params = {**self._params, **run.ctx.command.model_params}
        if run.response_format is not None and not (
            run.response_format_optional and self._unconstrained
        ):
            params["response_format"] = run.response_format
        if tools:
            tool_params(run, params)
        if self._compactor is not None:
            await self._compactor.fit(run, tools, params)
        request = ModelRequest(list(run.messages), tools, params)
        telemetry = self._telemetry
        with telemetry.model_span(run) as span:
            try:
                response = await self._stream_in_format(run, request, on_call)
            except UnsupportedRequestError as exc:
                code = (
                    ErrorCode.UNSUPPORTED_FORMAT
                    if exc.feature == "response_format"
                    else ErrorCode.INVALID_INPUT
                )
                telemetry.model_failed(span, code, exc.message)
                raise RunFailed(code, exc.message) from None
            except HookRejection as exc:
                telemetry.model_failed(span, ErrorCode.HOOK_REJECTED, exc.reason)
                raise RunFailed(ErrorCode.HOOK_REJECTED, exc.reason) from None
            except ModelError as exc:
                if out_of_descriptors(exc):  # no socket for the call: the process is full
                    telemetry.model_failed(span, ErrorCode.OVERLOADED, exc.message)
                    raise RunFailed(ErrorCode.OVERLOADED, OUT_OF_DESCRIPTORS, 1.0) from None
                self._health.failed(exc)
                telemetry.model_failed(span, ErrorCode.LLM_ERROR, exc.message)
                raise RunFailed(
                    ErrorCode.LLM_ERROR,
                    model_failure(exc, run.ctx.request_id),
                    detail=error_detail(exc),
                ) from None
            except PlanRefused as exc:
                telemetry.model_failed(span, ErrorCode.INVALID_PLAN, str(exc))
                raise RunFailed(ErrorCode.INVALID_PLAN, str(exc)) from None
            except OutputBlocked as exc:
                telemetry.output_blocked(span, exc.kind, str(exc))
                raise RunFailed(ErrorCode.OUTPUT_BLOCKED, str(exc)) from None
            telemetry.model_answered(span, response)
        self._health.answered()
        return response

    async def _stream_in_format(
        self,
        run: RunState,
        request: ModelRequest,
        on_call: Callable[[ToolCall], None] | None,
    ) -> ModelResponse:
        """Stream the turn; a model that cannot constrain its output to the run's format is
        asked again without it when the run checks the answer itself (and from then on)."""
        try:
            return await self._stream(run, request, on_call)
        except UnsupportedRequestError as exc:
            if exc.feature != "response_format" or not run.response_format_optional:
                raise
            self._unconstrained = True
            params = {k: v for k, v in request.params.items() if k != "response_format"}
            return await self._stream(run, replace(request, params=params), on_call)

    async def _stream(
        self,
        run: RunState,
        request: ModelRequest,
        on_call: Callable[[ToolCall], None] | None,
    ) -> ModelResponse:
        hooks = self._hooks
        if hooks:
            request = await hooks.before_model(run.ctx, request)
        meter, input_tokens = self._meter(run, request) if run.limits.spending else (None, 0)
        guard = self._output_guard
        reasoning = self._reasoning_events
        text_from = len(run.texts)
        output = TurnOutput(
            run.emit,
            run.texts,
            lambda: self._telemetry.first_text(run),
            on_call,
            guard.start() if guard is not None else None,
            run.reasoning if reasoning else None,
            guard.start() if guard is not None and reasoning else None,
            meter,
        )
        call = self._telemetry.turn_metrics.call()
        try:
            response = await stream_turn(self._model, request, self._policy, call, output)
        except BudgetStop:
            assert meter is not None
            spent = self._spend.cut(call.reported, input_tokens, meter)
            raise await self._stopped(run, spent, _cut_text(run.texts, text_from)) from None
        usage = self._spend.answered(response.usage)
        if usage is not response.usage:  # priced: the same usage with its cost
            response = replace(response, usage=usage)
        run.add_usage(response.usage)
        if hooks:
            changed = await hooks.after_model(run.ctx, response)
            if changed.text != response.text:
                _replace_text(run.texts, text_from, changed.text)
            response = changed
        return response

    def _meter(self, run: RunState, request: ModelRequest) -> tuple[Meter | None, int]:
        """The output allowance of this call under the run's limits (and the estimate of its
        input); a call whose input alone passes a limit is not made."""
        input_tokens = estimate_input_tokens(request)
        try:
            left = allowance(run.limits, run.usage, input_tokens, self._spend.price)
        except RunFailed:
            self._telemetry.budget_stopped()
            raise
        return (None if left == math.inf else Meter(left)), input_tokens

    async def _stopped(self, run: RunState, spent: Usage, text: str) -> RunFailed:
        """The stream was cut at the run's limit: what the call spent (estimated: the provider
        never sent its count) goes into the run's usage and to the ``after_model`` hooks, and
        the run ends (a hook's refusal changes nothing: the run is over already)."""
        run.add_usage(spent)
        self._telemetry.budget_stopped()
        if self._hooks:
            response = ModelResponse(text=text, tool_calls=(), finish_reason="budget", usage=spent)
            with contextlib.suppress(HookRejection):
                await self._hooks.after_model(run.ctx, response)
        written, limits = (
            spent.output_tokens if run.usage is None else run.usage.output_tokens,
            run.limits,
        )
        what = f"the model's output was cut off at about {written} output tokens"
        if limits.max_output_tokens is not None:
            what += f" of max_output_tokens {limits.max_output_tokens}"
        if limits.max_cost_usd is not None:
            what += f" (max_cost_usd {limits.max_cost_usd})"
        return over_budget(what)


def _cut_text(texts: list[str], start: int) -> str:
    """The text a cut call streamed: the run's text deltas from ``start`` on, without the
    paragraph break that set it apart from an earlier turn's."""
    text = "".join(texts[start:])
    return text.lstrip("\n") if start else text


def model_failure(error: ModelError, request_id: str) -> str:
    """What a caller is told about a failed model call: nothing of the provider's text (that
    goes to the log), the request id under which the log has it. A ``ScriptedModel`` called
    past its script keeps its own words: a test's mistake, no provider's text, and loud. (The
    provider's text is the error's ``detail``: the library user's, never a client's.)"""
    if isinstance(error, ScriptExhaustedError):
        return error.message
    return f"The model call failed; the server log has the details (request id {request_id})."


def _replace_text(texts: list[str], start: int, text: str) -> None:
    """The turn's text (``texts`` from ``start``) replaced by ``text``, an ``after_model``
    hook's; the break that set it apart from the turn before stays."""
    if start < len(texts) and not texts[start].strip():
        start += 1
    texts[start:] = [text] if text else []
