"""Pausing a run at the calls that need a person, and going on when they have decided.

The pause signs a token for each held call and announces it (``approval_required``); the run
then ends as ``waiting_for_approval`` and its state is kept as a :class:`PendingRun`, with the
agent speaking if a handoff gave it the run. A resumed run is given back to that agent (by the
driver), whose approval step checks every approval against its token (its signer made them),
settles the held calls with its tools (run, refused, or answered for ``ask_user``) and puts that
turn's results back in the order of the assistant's calls.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..approvals import Approval, ApprovalSigner, PendingRun
from ..errors import ErrorCode
from ..events import ApprovalRequiredEvent
from ..messages import AssistantMessage, ToolMessage
from ..results import PendingApproval
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
        """Stop at the held calls: sign a token for each and announce them."""
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
        """Go on with the session's ``paused`` run: check the approvals, settle the held
        calls (with the run's tools, which are this agent's)."""
        decided = self._decisions(run, paused, run.ctx.command.approvals or [])
        run.messages += paused.messages
        run.new_messages = list(paused.messages)
        run.turns, run.usage = paused.turns, paused.usage
        run.budget = ToolBudget(paused.tool_calls_made)
        run.handoffs = paused.handoffs
        await self._tool_runner.run_calls(run, paused.pending, max_calls, decided=decided)
        _reorder_results(run, paused.results)

    def _decisions(
        self, run: RunState, paused: PendingRun, approvals: Sequence[Approval]
    ) -> dict[str, Decision | None]:
        """Each held call's fate (``None``: approved, run it); refuses bad approvals."""
        command = run.ctx.command
        by_id = {approval.call_id: approval for approval in approvals}
        pending = {call.id: call for call in paused.pending}
        unknown, missing = sorted(set(by_id) - set(pending)), sorted(set(pending) - set(by_id))
        if unknown or missing:
            raise RunFailed(
                ErrorCode.INVALID_INPUT,
                "approve or reject exactly the pending "
                f"calls (pending: {sorted(pending)}; unknown: {unknown})",
            )
        decided: dict[str, Decision | None] = {}
        for call_id, call in pending.items():
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


def snapshot(run: RunState) -> PendingRun:
    """The paused run's state: messages up to the assistant turn, that turn's results apart."""
    cut = _after_last_assistant(run)
    results = [m for m in run.new_messages[cut:] if isinstance(m, ToolMessage)]
    return PendingRun(
        messages=run.new_messages[:cut],
        results=results,
        pending=list(run.approvals.held),
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
