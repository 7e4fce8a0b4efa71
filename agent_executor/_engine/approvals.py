"""Pausing a run at the calls that need a person or the client, and going on when they have
decided or answered.

The pause signs a token for each held call and announces it (``approval_required``); the run
then ends as ``waiting_for_approval`` and its state is kept as a :class:`PendingRun`, with the
agent speaking if a handoff gave it the run. A resumed run is given back to that agent (by the
driver), whose approval step checks every approval against its token (its signer made them),
settles the held calls with its tools (run, refused, or answered for ``ask_user``) and puts that
turn's results back in the order of the assistant's calls.

Client tools' calls in a run that hands them back (``client_tool_mode="return"``) pause it the
same way: each is announced as ``tool_call``, the run ends as ``tool_calls`` (unless it also
waits for approval), and the command that resumes it gives their results, which are screened
like any tool result.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..approvals import Approval, ApprovalSigner, PendingRun
from ..client_tools import ClientToolResult
from ..errors import ErrorCode
from ..events import ApprovalRequiredEvent, ToolCallEvent
from ..messages import AssistantMessage, ToolCall, ToolMessage
from ..results import PendingApproval
from ..tools import serialize_result
from ..tools.ask_user import AskUserTool
from .state import RunFailed, RunState, ToolBudget
from .tool_calls import Decision, ToolRunner, loose_arguments

__all__ = ["Approvals", "snapshot"]


class Approvals:
    """The executor's approval step: pause, and resume with the person's decisions."""

    __slots__ = ("_signer", "_tool_runner")

    def __init__(self, signer: ApprovalSigner, tool_runner: ToolRunner) -> None:
        self._signer = signer
        self._tool_runner = tool_runner

    def pause(self, run: RunState) -> None:
        """Stop at the held calls: sign a token for each call waiting for a person and
        announce it, and hand each client tool's call back (``tool_call``)."""
        for call in run.approvals.client:
            arguments = loose_arguments(call.arguments)
            run.emit(ToolCallEvent(tool=call.name, call_id=call.id, arguments=arguments))
        run.finish_reason = "tool_calls"
        if not run.approvals.held:
            return
        command = run.ctx.command
        if command.session_id is None:
            raise RunFailed(
                ErrorCode.INVALID_INPUT,
                "a tool that needs approval needs a session_id to resume the run",
            )
        for call in run.approvals.held:
            token = self._signer.token(command.user_id, command.session_id, call)
            arguments = loose_arguments(call.arguments)
            run.approvals.request(
                PendingApproval(
                    call_id=call.id, tool=call.name, arguments=arguments, approval_token=token
                )
            )
            run.emit(
                ApprovalRequiredEvent(
                    tool=call.name, call_id=call.id, arguments=arguments, approval_token=token
                )
            )
        run.finish_reason = "waiting_for_approval"

    async def resume(self, run: RunState, max_calls: int, paused: PendingRun) -> None:
        """Go on with the session's ``paused`` run: check the approvals and the client's
        results, settle the held calls (with the run's tools, which are this agent's).

        A run that waited for a person goes on counting its turns, calls and usage; one that
        handed calls back to the client starts them afresh, as each of the client's requests
        is a run of its own to the client (and to its limits and usage).
        """
        decided = self._decisions(run, paused)
        run.messages += paused.messages
        run.new_messages = list(paused.messages)
        if paused.pending:
            run.turns, run.usage = paused.turns, paused.usage
            run.budget = ToolBudget(paused.tool_calls_made)
        run.handoffs = paused.handoffs
        calls = [*paused.pending, *paused.client_calls]
        await self._tool_runner.run_calls(run, calls, max_calls, decided=decided)
        _reorder_results(run, paused.results)

    def _decisions(self, run: RunState, paused: PendingRun) -> dict[str, Decision | None]:
        """Each held call's fate (``None``: approved, run it); refuses approvals and results
        that do not settle exactly the held calls."""
        command = run.ctx.command
        decided = self._approved(run, paused.pending, command.approvals or [])
        decided.update(_client_results(paused.client_calls, command.tool_results or []))
        return decided

    def _approved(
        self, run: RunState, pending: Sequence[ToolCall], approvals: Sequence[Approval]
    ) -> dict[str, Decision | None]:
        command = run.ctx.command
        by_id = {approval.call_id: approval for approval in approvals}
        held = {call.id: call for call in pending}
        _check_settles("approve or reject", held, by_id)
        decided: dict[str, Decision | None] = {}
        for call_id, call in held.items():
            approval = by_id[call_id]
            if not self._signer.verify(
                approval.approval_token, command.user_id, command.session_id or "", call
            ):
                raise RunFailed(
                    ErrorCode.INVALID_INPUT, f"the approval token of call {call_id} is not valid"
                )
            if not approval.approved:
                decided[call_id] = Decision("rejected", "the user did not approve this call")
            elif isinstance(run.tools.get(call.name), AskUserTool):
                decided[call_id] = Decision("success", approval.answer or "")
            else:
                decided[call_id] = None
        return decided


def _client_results(
    calls: Sequence[ToolCall], results: Sequence[ClientToolResult]
) -> dict[str, Decision | None]:
    """The client's results as the held client calls' outcomes."""
    by_id = {result.call_id: result for result in results}
    _check_settles("give the results of", {call.id: call for call in calls}, by_id)
    decided: dict[str, Decision | None] = {}
    for call in calls:
        result = by_id[call.id]
        if result.error is not None:
            decided[call.id] = Decision("error", f"ClientToolError: {result.error}")
        else:
            decided[call.id] = Decision("success", serialize_result(result.result))
    return decided


def _check_settles(what: str, held: Mapping[str, ToolCall], given: Mapping[str, object]) -> None:
    unknown, missing = sorted(set(given) - set(held)), sorted(set(held) - set(given))
    if unknown or missing:
        raise RunFailed(
            ErrorCode.INVALID_INPUT,
            f"{what} exactly the pending calls (pending: {sorted(held)}; unknown: {unknown})",
        )


def snapshot(run: RunState) -> PendingRun:
    """The paused run's state: messages up to the assistant turn, that turn's results apart."""
    cut = _after_last_assistant(run)
    results = [m for m in run.new_messages[cut:] if isinstance(m, ToolMessage)]
    return PendingRun(
        messages=run.new_messages[:cut],
        results=results,
        pending=list(run.approvals.held),
        client_calls=list(run.approvals.client),
        client_tools=list(run.ctx.command.client_tools),
        history_length=run.prefix_length,
        turns=run.turns,
        tool_calls_made=run.budget.made,
        usage=run.usage,
        agent=run.ctx.agent if run.handoffs else None,
        handoffs=run.handoffs,
    )


def _after_last_assistant(run: RunState) -> int:
    return max(i for i, m in enumerate(run.new_messages) if isinstance(m, AssistantMessage)) + 1


def _reorder_results(run: RunState, earlier: Sequence[ToolMessage]) -> None:
    """Put a resumed turn's results (those from before the pause and the new ones) in the
    order of the assistant's calls, right after it."""
    cut = _after_last_assistant(run)
    assistant = run.new_messages[cut - 1]
    assert isinstance(assistant, AssistantMessage)
    order = {call.id: i for i, call in enumerate(assistant.tool_calls)}
    tail = [*earlier, *(m for m in run.new_messages[cut:] if isinstance(m, ToolMessage))]
    tail.sort(key=lambda m: order.get(m.tool_call_id, len(order)))
    del run.messages[len(run.messages) - (len(run.new_messages) - cut) :]
    run.new_messages[cut:] = tail
    run.messages += tail
