"""Runs conducted by something other than one agent's loop: a group's rounds, a flow's nodes.

An :class:`Orchestrator` takes the ReAct loop's place under the run's permit; everything around
it (guards, hooks, the permit, memory, telemetry, the closing events) is the driver's, as for
any run. Its steps are runs of other agents nested in this one (:func:`run_member`): their
events are this run's events (their text is this run's text, set apart from what was said
before), what they spend is this run's usage (also what one spent before it was cancelled),
their tool calls and sources are this run's, and an agent that stops to wait for a person
pauses this run, which keeps the orchestrator's own state (``PendingRun.orchestration``) while
the agent keeps its paused run in its own memory.
"""

from __future__ import annotations

from typing import Any, Protocol

from ..approvals import PendingRun
from ..command import AgentCommand
from ..context import RunContext
from ..errors import ErrorCode
from ..events import AgentEvent, DoneEvent, ErrorEvent, MessageEvent
from ..messages import UserMessage
from ..results import Source
from .budget import kept_if_cancelled, left_for_nested
from .history import Conversations
from .output_format import OutputFormat
from .state import Emit, RequestOrigin, RunCommand, RunFailed, RunState, drop
from .streaming import paragraph_break

__all__ = [
    "MAX_NESTING",
    "Orchestrator",
    "cite",
    "conduct",
    "member_failed",
    "member_session",
    "run_member",
    "say",
]

MAX_NESTING = 4
"""How deep runs may nest (a group in a flow in a group ...), as for agents used as tools."""


class Orchestrator(Protocol):
    """What conducts a run in place of one agent's ReAct loop.

    ``start`` is given the run with its history and the user's message; ``resume`` the run
    with the paused run's messages and usage restored, and the ``PendingRun`` it left (its
    ``orchestration`` is what this orchestrator wrote when it paused). Either ends the run by
    returning (having added the answer with ``run.add``), by pausing (``run.paused`` set,
    ``finish_reason`` ``waiting_for_approval``), or by raising ``RunFailed``.
    """

    async def start(self, run: RunState) -> None: ...

    async def resume(self, run: RunState, paused: PendingRun) -> None: ...


async def conduct(
    run: RunState,
    orchestrator: Orchestrator,
    conversations: Conversations,
    output: OutputFormat | None,
) -> None:
    """A group's or flow's run: its history and the user's message, or the paused run's
    messages and usage, then the orchestrator's steps."""
    command = run.ctx.command
    if output is not None:
        raise RunFailed(
            ErrorCode.UNSUPPORTED_FORMAT,
            f"{run.ctx.agent} answers in text: its agents' answers are its answer",
        )
    if command.tool_results is not None or (
        command.client_tools and command.client_tool_mode == "return"
    ):
        raise RunFailed(
            ErrorCode.INVALID_INPUT,
            f"{run.ctx.agent} runs its agents' tools itself: client tools that hand their calls "
            "back are for agents",
        )
    run.messages = await conversations.load(run, command)
    run.history = list(run.messages)
    if command.approvals is None:
        run.add(UserMessage(content=command.user_prompt))
        await orchestrator.start(run)
        return
    paused = await conversations.load_paused(command)
    if paused.orchestration is None:
        raise RunFailed(ErrorCode.INVALID_INPUT, "the paused run of this session is not this one's")
    run.messages += paused.messages
    run.new_messages = list(paused.messages)
    run.usage = paused.usage
    await orchestrator.resume(run, paused)


def member_session(run: RunState, owner: str, member: str) -> str | None:
    """The session an agent of a group or flow keeps its own conversation in, for the run's
    session: ``<session>/<owner>/<member>`` (none without a session)."""
    session = run.ctx.command.session_id
    return None if session is None else f"{session}/{owner}/{member}"


async def run_member(
    run: RunState, agent: RunCommand, command: AgentCommand, *, step: str, relay: bool = True
) -> RunState:
    """Run an agent on ``command`` inside ``run``, for the run's user (its id and metadata are
    the run's); the agent's run state is returned.

    ``step`` names the step in the nested run's request id (``<request id>/<step>``). With
    ``relay`` the agent's events go to the run's stream as they happen, except its ``error``
    and ``done`` (the caller decides what the agent's outcome means for the run), and the
    client's tools are offered to the agent; without, its events go nowhere (a moderator's
    plan is not the run's text) and it gets no client tools. Either way its usage, tool
    calls and sources become the run's, the approvals it asks for the run's, and it may spend
    what is left of the run's limits, no more. Cancelled half way (the run's deadline, the
    run's caller), it still leaves the run what its model calls spent until then.
    """
    ctx = run.ctx
    if ctx.depth >= MAX_NESTING:
        raise RunFailed(
            ErrorCode.INVALID_INPUT, f"runs are already nested {MAX_NESTING} deep; not going on"
        )
    update: dict[str, Any] = {
        "user_id": ctx.user_id,
        "metadata": dict(ctx.command.metadata),
        **left_for_nested(run.limits, run.usage),
    }
    if relay:
        update["client_tools"] = ctx.command.client_tools
    command = command.model_copy(update=update)
    origin = RequestOrigin(f"{ctx.request_id}/{step}", ctx.client_address, ctx.request_headers)
    emit: Emit = _Relay(run) if relay else drop
    member = await kept_if_cancelled(agent(command, ctx.mode, emit, origin), run.add_usage)
    run.add_usage(member.usage)
    run.records.extend(member.records)
    cite(run.ctx, member.ctx.sources)
    if member.finish_reason == "waiting_for_approval" and member.error is None:
        run.approvals.requested.extend(member.approvals.requested)
    return member


def say(run: RunState, text: str) -> None:
    """Text of the run's own (a flow's function output ending it) into its stream, set apart
    from the text before as a member's is."""
    if text:
        _Relay(run)(MessageEvent(text))


def member_failed(member: RunState, what: str) -> RunFailed:
    """The run's failure when the nested run of ``what`` (``agent editor``) failed: its code
    (one the run's caller knows; else ``internal_error``), message and wait."""
    assert member.error is not None
    try:
        code = ErrorCode(member.error.code)
    except ValueError:
        code = ErrorCode.INTERNAL_ERROR
    return RunFailed(code, f"{what} failed: {member.error.message}", member.error.retry_after)


class _Relay:
    """A nested run's events into the run's stream: its text counted as the run's text, the
    first of it set apart from the text before; its ``error`` and ``done`` kept back."""

    __slots__ = ("_fresh", "_run")

    def __init__(self, run: RunState) -> None:
        self._run = run
        self._fresh = True

    def __call__(self, event: AgentEvent) -> None:
        if isinstance(event, MessageEvent):
            if self._fresh:
                self._fresh = False
                self._set_apart()
            self._run.texts.append(event.text)
        elif isinstance(event, (DoneEvent, ErrorEvent)):
            return
        self._run.emit(event)

    def _set_apart(self) -> None:
        gap = paragraph_break(self._run.texts)
        if gap:
            self._run.texts.append(gap)
            self._run.emit(MessageEvent(gap))


def cite(ctx: RunContext, sources: list[Source]) -> None:
    """A nested run's sources are the run's too: its answer rests on them."""
    cited = {(s.source, s.title) for s in ctx.sources}
    for source in sources:
        if (source.source, source.title) not in cited:
            cited.add((source.source, source.title))
            ctx.sources.append(source)
