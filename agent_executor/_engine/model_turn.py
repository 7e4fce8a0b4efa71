"""One model turn of a run: the request, the model hooks, the streamed answer, its telemetry.

The streaming itself (retries, timeouts, one event per text delta) is :mod:`.streaming`; this
module builds the request from the run, lets the ``before_model``/``after_model`` hooks see it,
points the stream's output at the run (its events, text, reasoning, the output guard) and turns
the ways a turn can fail into the run's error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import ErrorCode, HookRejection, ModelError
from ..guards import OutputBlocked, OutputGuard
from ..hooks import HookChain
from ..messages import ToolCall
from ..models.base import ChatModel, ModelRequest, ModelResponse
from .state import RunFailed, RunState
from .streaming import ModelPolicy, TurnOutput, stream_turn
from .telemetry import RunTelemetry

__all__ = ["ModelTurns"]


class ModelTurns:
    """Runs a run's model turns with the executor's model, policy, hooks and output guard."""

    __slots__ = (
        "_hooks",
        "_model",
        "_output_guard",
        "_params",
        "_policy",
        "_reasoning_events",
        "_telemetry",
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
    ) -> None:
        self._model = model
        self._policy = policy
        self._params = params
        self._hooks = hooks
        self._telemetry = telemetry
        self._output_guard = output_guard
        self._reasoning_events = reasoning_events

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
        request = ModelRequest(list(run.messages), tools, params)
        telemetry = self._telemetry
        with telemetry.model_span(run) as span:
            try:
                response = await self._stream(run, request, on_call)
            except HookRejection as exc:
                telemetry.model_failed(span, ErrorCode.HOOK_REJECTED, exc.reason)
                raise RunFailed(ErrorCode.HOOK_REJECTED, exc.reason) from None
            except ModelError as exc:
                telemetry.model_failed(span, ErrorCode.LLM_ERROR, exc.message)
                raise RunFailed(ErrorCode.LLM_ERROR, exc.message) from None
            except OutputBlocked as exc:
                telemetry.output_blocked(span, exc.kind, str(exc))
                raise RunFailed(ErrorCode.OUTPUT_BLOCKED, str(exc)) from None
            telemetry.model_answered(span, response)
        return response

    async def _stream(
        self,
        run: RunState,
        request: ModelRequest,
        on_call: Callable[[ToolCall], None] | None,
    ) -> ModelResponse:
        hooks = self._hooks
        if hooks:
            request = await hooks.before_model(run.ctx, request)
        guard = self._output_guard
        reasoning = self._reasoning_events
        output = TurnOutput(
            run.emit,
            run.texts,
            lambda: self._telemetry.first_text(run),
            on_call,
            guard.start() if guard is not None else None,
            run.reasoning if reasoning else None,
            guard.start() if guard is not None and reasoning else None,
        )
        response = await stream_turn(
            self._model, request, self._policy, self._telemetry.turn_metrics, output
        )
        run.add_usage(response.usage)
        if hooks:
            await hooks.after_model(run.ctx, response)
        return response
