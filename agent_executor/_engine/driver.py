"""The driver: one run from its command to its ``done`` event, the same for both modes.

    command → guards → before_agent_start hooks → permit → the conductor:
              a ReAct loop: prepare (tools, history, prompt; or the paused run, given back
              to the agent it paused on), then the loop (then the loop of each agent a
              handoff gives the run to);
              or the orchestrator of a group or flow, whose steps are nested agent runs
            → finish (pending tools, memory, hooks, telemetry, closing events)

Every failure of the steps before ``finish`` is raised as :class:`RunFailed` and caught once,
here, which records it on the run; a ``request_timeout`` and an unexpected exception end there
too. ``finish`` runs outside the deadline. A cancelled run closes its pending tools, is counted
as ``cancelled`` and emits nothing more.
"""

from __future__ import annotations

import copy
import logging
import math
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import anyio

from ..approvals import PendingRun
from ..command import AgentCommand
from ..context import RunContext, bind_run_context, current_run_context
from ..errors import ErrorCode, HookRejection, StoreUnavailable, out_of_descriptors
from ..events import AgentSelectedEvent, MessageEvent
from ..guards import Guard, ToolResultScreen
from ..hooks import HookChain
from ..messages import AssistantMessage, Message, SystemMessage, UserMessage
from ..observability import Span, log_context
from ..results import ErrorInfo
from ..settings import RunLimits
from ..slash import SlashCall, SlashCommand, SlashCommands
from ..templates import TemplateError, render
from ..tools import FrontendTool, Tool
from .approvals import Approvals, snapshot
from .gate import ConcurrencyGate
from .guarding import check_guards
from .history import Conversations, before_paused
from .loop import ReactLoop
from .orchestrator import Orchestrator, conduct
from .output_format import OutputFormat
from .state import (
    Emit,
    Mode,
    RequestOrigin,
    RunFailed,
    RunState,
    drop,
    error_detail,
    error_event,
    overloaded,
)
from .telemetry import RunTelemetry
from .tool_calls import ToolRunner

__all__ = ["Conductor", "Driver", "Mode", "RunSettings"]

logger = logging.getLogger("agent_executor")


Conductor = ReactLoop | Orchestrator
"""What runs a command under the permit: one agent's ReAct loop, or a group's or flow's
orchestrator."""


@dataclass(frozen=True, slots=True)
class RunSettings:
    """The agent's settings a run's steps read (the others are in the parts)."""

    name: str
    system_prompt: str | None
    max_tool_calls: int
    limits: RunLimits


class Driver:
    """Drives the runs of one agent, group or flow through guards, hooks, the gate, its
    conductor and finish."""

    __slots__ = (
        "_approvals",
        "_commands",
        "_conductor",
        "_conversations",
        "_gate",
        "_guards",
        "_handoffs",
        "_hooks",
        "_screens",
        "_settings",
        "_telemetry",
        "_tool_runner",
        "_tool_specs",
        "_tools",
    )

    def __init__(
        self,
        *,
        conductor: Conductor,
        guards: Sequence[Guard],
        screens: Sequence[ToolResultScreen],
        hooks: HookChain,
        gate: ConcurrencyGate,
        conversations: Conversations,
        telemetry: RunTelemetry,
        settings: RunSettings,
        tools: Mapping[str, Tool] | None = None,
        tool_runner: ToolRunner | None = None,
        approvals: Approvals | None = None,
        handoffs: Mapping[str, Driver] | None = None,
        commands: SlashCommands | None = None,
    ) -> None:
        self._conductor = conductor
        self._commands = commands
        self._tools: Mapping[str, Tool] = {} if tools is None else tools
        self._handoffs: Mapping[str, Driver] = handoffs or {}
        self._tool_specs = [t.spec() for t in self._tools.values()]
        self._guards = tuple(guards)
        self._screens = tuple(screens)
        self._hooks = hooks
        self._gate = gate
        self._conversations = conversations
        self._approvals = approvals
        self._tool_runner = tool_runner
        self._telemetry = telemetry
        self._settings = settings

    @property
    def conducted(self) -> bool:
        """Whether an orchestrator (a group's, a flow's) conducts the runs, not a ReAct loop."""
        return not isinstance(self._conductor, ReactLoop)

    async def run(
        self, command: AgentCommand, mode: Mode, emit: Emit, origin: RequestOrigin
    ) -> RunState:
        """Run ``command`` to its end; its events go to ``emit``, its outcome is the state."""
        ctx = RunContext(
            command=command,
            request_id=origin.request_id or uuid.uuid4().hex,
            mode=mode,
            client_address=origin.address,
            request_headers=origin.headers or {},
            screens=self._screens,
            agent=self._settings.name,
            parent=current_run_context(),
        )
        run = RunState(ctx, emit)
        run.limits = self._settings.limits.for_command(command)
        logged = log_context(
            request_id=ctx.request_id, user_id=command.user_id, session_id=command.session_id
        )
        with bind_run_context(ctx), logged, self._telemetry.run_span(run) as span:
            try:
                await self._drive_within_deadline(run)
            except anyio.get_cancelled_exc_class():
                with anyio.CancelScope(shield=True):
                    await self._cancelled(run, span)
                raise
            await self._finish(run, span)
        return run

    async def _drive_within_deadline(self, run: RunState) -> None:
        """Drive the run under its deadline; every failure but cancellation becomes its error."""
        timeout = self._settings.limits.request_timeout
        try:
            deadline = anyio.current_time() + (math.inf if timeout is None else timeout)
            with anyio.CancelScope(deadline=deadline) as scope:
                await self._drive(run)
            if scope.cancelled_caught:
                message = f"the run did not finish within {timeout} s"
                run.fail(ErrorInfo(code=ErrorCode.TIMEOUT.value, message=message))
        except RunFailed as exc:
            run.fail(exc.info)
        except StoreUnavailable as exc:
            logger.warning("run failed: %s", exc)
            run.fail(ErrorInfo(code=ErrorCode.UNAVAILABLE.value, message=str(exc)))
        except Exception as exc:
            if out_of_descriptors(exc):  # too many connections at once: wait, not a fault
                logger.warning("run refused, out of file descriptors: %s", exc)
                run.fail(overloaded())
                return
            logger.exception("run failed unexpectedly")
            run.fail(_internal_error(run, exc))

    async def _drive(self, run: RunState) -> None:
        if run.ctx.command.variables is not None:
            command = run.ctx.command
            prompt = _rendered(command.user_prompt, command) or ""
            run.ctx.command = command.model_copy(update={"user_prompt": prompt})
        await check_guards(run, self._guards, self._telemetry)
        if self._hooks:
            checked = _guarded_text(run.ctx.command)
            try:
                await self._hooks.before_agent_start(run.ctx)
            except HookRejection as exc:
                raise RunFailed(ErrorCode.HOOK_REJECTED, exc.reason) from None
            if _guarded_text(run.ctx.command) != checked:
                await check_guards(run, self._guards, self._telemetry, rewritten=True)
        command = run.ctx.command
        slash = (
            None
            if self._commands is None or command.resumes
            else self._commands.match(command.user_prompt)
        )
        if slash is not None:
            await self._answer(run, *slash)
            return
        output = OutputFormat.resolve(command.response_format)
        max_calls = command.max_tool_calls
        if max_calls is None:
            max_calls = self._settings.max_tool_calls
        async with self._gate.permit():
            if not isinstance(self._conductor, ReactLoop):
                await conduct(run, self._conductor, self._conversations, output)
                return
            agent = await self._prepare(run, output, max_calls)
            await self._converse(run, output, max_calls, agent)

    async def _answer(self, run: RunState, slash: SlashCommand, args: str) -> None:
        """A slash command's answer, as the run's text; the conversation stays as it was."""
        memory = self._conversations.memory
        reply = await slash.handler(SlashCall(slash.name, args, run.ctx, memory))
        run.texts.append(reply)
        run.emit(MessageEvent(reply))

    async def _prepare(self, run: RunState, output: OutputFormat | None, max_calls: int) -> Driver:
        """The run's tools and its conversation so far: prompt, history, the user's message,
        or the paused run it resumes; returns the agent that goes on with it."""
        command = run.ctx.command
        paused = await self._conversations.load_paused(command) if command.resumes else None
        if paused is not None and paused.client_tools and not command.client_tools:
            command = run.ctx.command = command.model_copy(
                update={"client_tools": paused.client_tools}
            )
        self._offer_tools(run, command)
        template = command.system_prompt or self._settings.system_prompt
        system = _with_format(_rendered(template, command), output)
        run.messages = [SystemMessage(content=system)] if system else []
        history = await self._conversations.load(run, command)
        if command.messages is not None:
            if paused is not None:
                history = before_paused(history, paused) or []
            run.prefix_length = len(history)
        run.messages += history
        run.history = history
        if output is not None:
            run.response_format, run.response_format_optional = output.native, output.repair
        if paused is None:
            run.add(UserMessage(content=command.user_prompt))
            return self
        agent = self._resumer(run, paused, output)
        assert agent._approvals is not None  # a driver with a ReAct loop has approvals
        await agent._approvals.resume(run, max_calls, paused)
        return agent

    def _resumer(self, run: RunState, paused: PendingRun, output: OutputFormat | None) -> Driver:
        """The agent that was speaking when the run paused, given the run again (its tools,
        prompt and signer: its tokens are checked by the signer that made them)."""
        if paused.agent is None:
            return self
        agent = _reachable(self, paused.agent)
        if agent is None:
            raise RunFailed(
                ErrorCode.INVALID_INPUT,
                f"the paused run was on agent {paused.agent!r}, to which agent "
                f"{self._settings.name!r} no longer hands over",
            )
        if agent is self:
            return self
        agent._take_over(run, output, f"from {self._settings.name}, resuming its paused run")
        return agent

    async def _converse(
        self, run: RunState, output: OutputFormat | None, max_calls: int, agent: Driver
    ) -> None:
        """The ReAct loop of the agent that has the conversation: ``agent`` (this one, or the
        one a resumed run paused on), then each agent a handoff gives it to (same messages,
        budget and usage; the target's prompt, model and tools)."""
        while True:
            assert isinstance(agent._conductor, ReactLoop)  # handoffs lead to agents only
            await agent._conductor.run(run, output, max_calls)
            if run.handoff is None:
                return
            agent = agent._hand_over(run, output)

    def _hand_over(self, run: RunState, output: OutputFormat | None) -> Driver:
        """The agent the run's handoff names, now in charge of the run (this one still, if
        the handoff call did not succeed: a hook refused it)."""
        request, run.handoff = run.handoff, None
        assert request is not None
        target = self._handoffs.get(request.tool)
        calls = reversed(run.records)
        status = next((r.status for r in calls if r.call_id == request.call_id), None)
        if target is None or status != "success":
            return self
        run.handoffs += 1
        source = self._settings.name
        target._take_over(run, output, f"from {source}")
        self._telemetry.handed_over(source, target._settings.name)
        return target

    def _take_over(self, run: RunState, output: OutputFormat | None, detail: str) -> None:
        """Give ``run`` to this driver's agent, and say so on the stream (``detail``: from
        whom): its name, its tools, and its system prompt in place of the one the conversation
        had (the command's ``system_prompt`` was for the agent it was sent to)."""
        run.ctx.agent = self._settings.name
        self._offer_tools(run, run.ctx.command)
        messages = run.messages
        if messages and isinstance(messages[0], SystemMessage):
            del messages[0]
        system = _with_format(_rendered(self._settings.system_prompt, run.ctx.command), output)
        if system:
            messages.insert(0, SystemMessage(content=system))
        run.emit(
            AgentSelectedEvent(agent=self._settings.name, selected_by="handoff", detail=detail)
        )

    def tools_changed(self, handoffs: Mapping[str, Driver]) -> None:
        """Tools were added to the registry (``AgentExecutor.add_tools``)."""
        self._tool_specs = [t.spec() for t in self._tools.values()]
        self._handoffs = handoffs
        if self._tool_runner is not None:
            self._tool_runner.tools_changed()

    def with_tools(self, tools: Mapping[str, Tool]) -> Driver:
        """This agent as it is now, also offering ``tools`` to the runs it is given (a flow's
        settings give an agent node tools for that flow's runs only): the agent's registry
        stays as it is, and a tool of its own of the same name wins."""
        view = copy.copy(self)
        view._tools = {**tools, **self._tools}
        view._tool_specs = [t.spec() for t in view._tools.values()]
        return view

    def _offer_tools(self, run: RunState, command: AgentCommand) -> None:
        """The run's tools: the executor's, plus the client's own for this run."""
        run.tools, run.tool_specs = self._tools, self._tool_specs
        if command.client_tools:
            run.tools, run.tool_specs = _with_client_tools(run.tools, run.tool_specs, command)

    async def _finish(self, run: RunState, span: Span) -> None:
        """Close the run: pending tools, memory, hooks, telemetry, then the closing events."""
        if self._tool_runner is not None:
            self._tool_runner.close_pending(run)
        if self._hooks and run.error is None:  # a replaced result is what memory keeps
            result = run.result()
            replaced = await self._hooks.after_agent_complete(run.ctx, result)
            if replaced is not result:
                run.replace_result(replaced)
        if run.error is None or _whole_turns_kept(run):
            paused = None
            if run.finish_reason in ("waiting_for_approval", "tool_calls"):
                paused = run.paused or snapshot(run)
            if paused is not None or run.new_messages:  # a slash command leaves it as it was
                await self._conversations.save(run, paused)
        if self._hooks and run.error is not None:
            await self._hooks.on_agent_failed(run.ctx, run.error)
        self._telemetry.run_finished(span, run)
        if run.error is not None:
            run.emit(error_event(run.error))
        run.emit(run.done_event())

    async def _cancelled(self, run: RunState, span: Span) -> None:
        run.cancelled = True
        run.emit = drop
        if self._tool_runner is not None:
            self._tool_runner.close_pending(run)
        self._telemetry.run_cancelled(span, run)
        if self._hooks:
            with anyio.move_on_after(1):
                await self._hooks.on_agent_failed(
                    run.ctx, ErrorInfo(code="cancelled", message="the run was cancelled")
                )


def _reachable(start: Driver, name: str) -> Driver | None:
    """The agent named ``name`` among ``start`` and those its handoffs lead to (the nearest,
    breadth first)."""
    seen, queue = {id(start)}, [start]
    for driver in queue:  # the list grows while it is read: breadth first
        if driver._settings.name == name:
            return driver
        for target in driver._handoffs.values():
            if id(target) not in seen:
                seen.add(id(target))
                queue.append(target)
    return None


def _with_client_tools(
    tools: Mapping[str, Tool], specs: list[dict[str, Any]], command: AgentCommand
) -> tuple[dict[str, Tool], list[dict[str, Any]]]:
    """The executor's tools and the client's, which may not reuse their names."""
    clash = sorted({t.name for t in command.client_tools} & set(tools))
    if clash:
        raise RunFailed(
            ErrorCode.INVALID_INPUT, f"client tools may not reuse the agent's tool names: {clash}"
        )
    extra = {
        t.name: FrontendTool(
            t.name, t.description, t.parameters, timeout=t.timeout or 30.0, strict=t.strict
        )
        for t in command.client_tools
    }
    return {**tools, **extra}, specs + [t.spec() for t in extra.values()]


def _internal_error(run: RunState, exc: Exception) -> ErrorInfo:
    """An unexpected exception as the run's error: a generic message naming the request id
    (the log has the traceback), the exception itself as the detail."""
    message = f"internal error (request id {run.ctx.request_id})"
    return ErrorInfo(code=ErrorCode.INTERNAL_ERROR.value, message=message, detail=error_detail(exc))


def _whole_turns_kept(run: RunState) -> bool:
    """A run its spending limit stopped keeps its whole turns (the turn it cut was never
    added), when it has one: a user message with no answer is not worth keeping."""
    return run.finish_reason == "budget" and any(
        isinstance(m, AssistantMessage) for m in run.new_messages
    )


def _rendered(template: str | None, command: AgentCommand) -> str | None:
    """``template`` with the command's variables put in (none: as it is)."""
    if template is None or command.variables is None:
        return template
    try:
        return render(template, command.variables)
    except TemplateError as exc:
        raise RunFailed(ErrorCode.INVALID_INPUT, str(exc)) from None


def _with_format(system: str | None, output: OutputFormat | None) -> str | None:
    """The system prompt with the requested output format's instructions."""
    if output is None or not output.instructions:
        return system
    return f"{system}\n\n{output.instructions}" if system else output.instructions


def _guarded_text(command: AgentCommand) -> tuple[str, str | None, tuple[Message, ...] | None]:
    """What of a command the content guards read and the model will be given (messages are
    frozen, so a tuple of them is a snapshot; comparing one is cheap when nothing changed)."""
    messages = command.messages
    return (
        command.user_prompt,
        command.system_prompt,
        None if messages is None else tuple(messages),
    )
