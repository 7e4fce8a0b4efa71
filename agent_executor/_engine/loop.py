"""The ReAct loop: the model streams, its tool calls run, their results go back, until it answers.

:meth:`ReactLoop.run` is the loop on one screen. A turn either answers (no tool calls: checked
against the requested format, with one repair), or calls tools (run as a batch; with eager
tools the batch's task group spans the model stream so they start while it still streams), or
stops at calls a person must approve, or at a handoff (the driver goes on with the other
agent's loop). ``max_tool_calls`` refused a call: the next turn is offered no tools, so the
model answers with what it has.
"""

from __future__ import annotations

import anyio

from ..errors import ErrorCode
from ..messages import AssistantMessage, ToolCall, UserMessage
from ..models.base import ModelResponse
from .approvals import Approvals
from .model_turn import ModelTurns
from .output_format import OutputFormat
from .state import RunFailed, RunState
from .tool_calls import Decision, ToolRunner

__all__ = ["ReactLoop"]

Turn = tuple[ModelResponse, tuple[ToolCall, ...], bool]
"""A turn's response, the calls it made, and whether ``max_tool_calls`` refused one."""


class ReactLoop:
    """Runs a prepared run's turns until an answer, a pause or ``max_turns``."""

    __slots__ = ("_approvals", "_max_turns", "_model_turns", "_tool_runner")

    def __init__(
        self,
        model_turns: ModelTurns,
        tool_runner: ToolRunner,
        approvals: Approvals,
        max_turns: int,
    ) -> None:
        self._model_turns = model_turns
        self._tool_runner = tool_runner
        self._approvals = approvals
        self._max_turns = max_turns

    async def run(self, run: RunState, output: OutputFormat | None, max_calls: int) -> None:
        offer_tools, limit_hit = max_calls > 0, False
        while run.turns < self._max_turns:
            response, calls, turn_limit_hit = await self._turn(run, offer_tools, max_calls)
            if run.approvals:
                self._approvals.pause(run)
                return
            if run.handoff is not None:
                return  # the driver hands the conversation over to another agent's loop
            if not calls:
                if limit_hit:
                    run.finish_reason = "max_tool_calls"
                if output is None or self._accept(run, output, response.text):
                    return
                continue
            limit_hit = turn_limit_hit
            offer_tools = not limit_hit
        run.finish_reason = "max_turns"
        if output is not None:
            raise RunFailed(
                ErrorCode.UNSUPPORTED_FORMAT,
                f"max_turns ({self._max_turns}) was reached before an answer in the requested "
                "format",
            )

    async def _turn(self, run: RunState, offer_tools: bool, max_calls: int) -> Turn:
        """One model turn and its tool calls."""
        if offer_tools and self._tool_runner.has_eager:
            return await self._turn_with_eager_tools(run, max_calls)
        response = await self._model_turns.run(run, run.tool_specs if offer_tools else [], None)
        calls = response.tool_calls if offer_tools else ()
        run.add(_assistant(response, calls))
        if not calls:
            return response, calls, False
        decision = self._refusal(run, response)
        return response, calls, await self._tool_runner.run_calls(run, calls, max_calls, decision)

    async def _turn_with_eager_tools(self, run: RunState, max_calls: int) -> Turn:
        """A turn whose tools' task group spans the model stream, so eager tools start early."""
        calls: tuple[ToolCall, ...] = ()
        failure: RunFailed | None = None
        try:
            async with anyio.create_task_group() as tg:
                batch = self._tool_runner.batch(run, tg, max_calls)
                try:
                    response = await self._model_turns.run(run, run.tool_specs, batch.start_eager)
                    calls = response.tool_calls
                    run.add(_assistant(response, calls))
                    decision = self._refusal(run, response) if calls else None
                    for call in calls:
                        batch.start(call, decision)
                except RunFailed as exc:  # raised here, it would reach us in an ExceptionGroup
                    failure = exc
                    tg.cancel_scope.cancel()
        finally:
            batch.collect(calls)
        if failure is not None:
            raise failure
        return response, calls, batch.limit_hit

    def _refusal(self, run: RunState, response: ModelResponse) -> Decision | None:
        """Calls not to run at all: cut off mid-arguments, or with no turn left to use them."""
        if response.finish_reason in ("length", "content_filter"):
            return Decision(
                "invalid_arguments",
                "not run: the model's output was cut off "
                f"(finish_reason={response.finish_reason}) before the call was complete",
            )
        if run.turns >= self._max_turns:
            return Decision("rejected", f"not run: max_turns ({self._max_turns}) reached")
        return None

    @staticmethod
    def _accept(run: RunState, output: OutputFormat, text: str) -> bool:
        """Validate the final answer; on the first failure ask the model once to repair it."""
        try:
            run.output = output.parse(text)
            return True
        except ValueError as exc:
            if not output.repair:
                raise RunFailed(
                    ErrorCode.UNSUPPORTED_FORMAT,
                    f"the model did not answer in the requested response_format: {exc}",
                ) from None
            if run.repaired:
                raise RunFailed(
                    ErrorCode.UNSUPPORTED_FORMAT,
                    f"the answer did not match the requested format after one repair: {exc}",
                ) from None
            run.repaired = True
            run.add(
                UserMessage(
                    content=f"Your answer did not match the requested format: {exc}"
                    "\nReply again with only the corrected JSON."
                )
            )
            return False


def _assistant(response: ModelResponse, calls: tuple[ToolCall, ...]) -> AssistantMessage:
    """The turn as it is kept in the conversation, with what the provider needs back."""
    return AssistantMessage(
        content=response.text, tool_calls=calls, provider_fields=response.provider_fields
    )
