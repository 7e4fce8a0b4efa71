"""``AgentExecutor``: the one ReAct loop behind ``execute()`` and ``execute_stream()``.

A run flows one way: command → guards → ``before_agent_start`` hooks → concurrency permit →
turns (model stream → events → tool calls → hooks → tools → results) → memory → metrics → done.
Both execution modes call :meth:`AgentExecutor._run`; they differ only in what happens to the
events it emits (dropped by ``execute()``, forwarded by ``execute_stream()``) and both read
their outcome from the same :class:`~agent_executor._run.Run`.
"""

from __future__ import annotations

import logging
import math
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import anyio

from ._gate import ConcurrencyGate
from ._output import OutputFormat
from ._run import Emit, Run, RunFailed
from ._stream import EventStream
from ._tool_runner import Decision, ToolLimits, ToolRunner, loose_arguments
from ._turn import ModelPolicy, TurnMetrics, TurnOutput, stream_turn
from .approvals import Approval, ApprovalSigner, AskUserTool, PendingRun, PendingRunStore
from .command import AgentCommand
from .compression import HistoryCompressor, compact_history
from .context import RunContext
from .context import _current as _current_run
from .errors import (
    ConfigurationError,
    ErrorCode,
    GuardRejection,
    HookRejection,
    ModelError,
    StoreUnavailable,
)
from .events import AgentEvent, ApprovalRequiredEvent, ErrorEvent, ToolEndEvent
from .guards import Guard, ToolResultScreen
from .hooks import Hook, _HookChain
from .logging import install_log_context, log_context
from .memory import ConversationStore, InMemoryConversationStore
from .messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from .metrics import Metrics
from .models import ChatModel, resolve_model
from .models.base import ModelRequest, ModelResponse
from .output_guard import OutputBlocked, OutputGuard
from .results import AgentResult, ErrorInfo, PendingApproval, ToolCallRecord
from .tool_results import ToolResults
from .tools import FrontendTool, FunctionTool, Tool
from .tracing import Span, Tracing

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

__all__ = ["AgentExecutor"]

logger = logging.getLogger("agent_executor")

Mode = Literal["stream", "execute"]


_SERVER_SIDE_FAILURES = frozenset(
    code.value
    for code in (
        ErrorCode.TIMEOUT,
        ErrorCode.OVERLOADED,
        ErrorCode.LLM_ERROR,
        ErrorCode.INTERNAL_ERROR,
    )
)
"""Outcomes logged as warnings; refusals of the caller's input are routine (info)."""


@dataclass(frozen=True, slots=True)
class _Caller:
    """Who asked for a run: the request id, network address and HTTP headers, when known."""

    request_id: str | None
    address: str | None
    headers: Mapping[str, str] | None


def _assistant(response: ModelResponse, calls: tuple[ToolCall, ...]) -> AssistantMessage:
    """The turn as it is kept in the conversation, with what the provider needs back."""
    return AssistantMessage(
        content=response.text, tool_calls=calls, provider_fields=response.provider_fields
    )


def _drop(event: AgentEvent) -> None:
    """The ``emit`` of ``execute()``: its result is read from the run, not from events."""


class AgentExecutor:
    """Runs agents: a model, tools, guards, hooks and limits around one streaming ReAct loop.

    ``model`` is a :class:`ChatModel` or a model string (``"openai/gpt-4o-mini"`` goes through
    litellm, ``"demo"`` is the offline :class:`DemoModel`). Durations are in seconds; ``None``
    disables a timeout. ``memory`` defaults to a fresh :class:`InMemoryConversationStore` and
    is used only for commands with a ``session_id``. ``metrics`` is the prometheus registry to
    record into (default: prometheus-client's default registry). ``tool_results`` is where
    frontend tools' answers arrive (several executors of one service may share one, and with
    a relay it spans replicas). ``history_compressor`` summarises the older turns of a session
    whose stored history has grown too long, before the run (see :class:`HistoryCompressor`).
    ``reasoning_events=False`` keeps the model's reasoning from the caller (no
    ``ReasoningEvent``, no ``AgentResult.reasoning``); what the provider needs back of it on
    the next turn still goes back.
    """

    def __init__(
        self,
        *,
        model: ChatModel | str,
        tools: Iterable[Tool | Callable[..., Any]] = (),
        guards: Sequence[Guard] = (),
        hooks: Sequence[Hook] = (),
        system_prompt: str | None = None,
        model_params: dict[str, Any] | None = None,
        max_concurrency: int = 16,
        max_queue: int | None = None,
        queue_timeout: float | None = 30.0,
        request_timeout: float | None = 300.0,
        tool_timeout: float | None = 30.0,
        max_tool_calls: int = 20,
        max_turns: int = 10,
        max_parallel_tools: int = 8,
        max_identical_calls: int = 2,
        max_tool_result_chars: int = 100_000,
        model_retries: int = 2,
        retry_backoff: float = 0.5,
        retry_max_backoff: float = 8.0,
        first_token_timeout: float | None = 60.0,
        stream_idle_timeout: float | None = 60.0,
        memory: ConversationStore | None = None,
        history_compressor: HistoryCompressor | None = None,
        metrics: CollectorRegistry | None = None,
        output_guard: OutputGuard | None = None,
        tracer: object | bool | None = None,
        approval_secret: bytes | str | None = None,
        name: str = "default",
        description: str = "",
        tool_results: ToolResults | None = None,
        reasoning_events: bool = True,
    ) -> None:
        if max_concurrency < 1 or max_turns < 1 or max_parallel_tools < 1 or max_tool_calls < 0:
            raise ConfigurationError(
                "max_concurrency, max_turns and max_parallel_tools must be "
                ">= 1 and max_tool_calls >= 0"
            )
        self.name = name
        self.description = description
        self.model: ChatModel = resolve_model(model)
        reserve = getattr(self.model, "reserve_connections", None)
        if reserve is not None:
            reserve(max_concurrency)  # every run holding a permit gets a pooled connection
        self.tools: dict[str, Tool] = _registry(tools)
        self.memory: ConversationStore = InMemoryConversationStore() if memory is None else memory
        self._compressor = history_compressor
        self.metrics = Metrics.for_registry(metrics)
        self._guards = tuple(guards)
        self._output_guard = output_guard
        self._reasoning_events = reasoning_events
        self._tracing = Tracing(tracer)
        self._signer = ApprovalSigner(approval_secret)
        self.tool_results = ToolResults() if tool_results is None else tool_results
        self._fallback_pending = InMemoryConversationStore()
        self._hooks = _HookChain(hooks, self.metrics)
        self._system_prompt = system_prompt
        self._model_params = dict(model_params or {})
        self._max_turns = max_turns
        self._max_tool_calls = max_tool_calls
        self._request_timeout = request_timeout
        self._gate = ConcurrencyGate(
            max_concurrency,
            max_queue=max_queue,
            queue_timeout=queue_timeout,
            metrics=self.metrics,
        )
        self._tool_specs = [t.spec() for t in self.tools.values()]
        self._policy = ModelPolicy(
            retries=model_retries,
            backoff=retry_backoff,
            max_backoff=retry_max_backoff,
            first_token_timeout=first_token_timeout,
            idle_timeout=stream_idle_timeout,
        )
        self._turn_metrics = TurnMetrics(self.metrics, self.model.name)
        self._tool_runner = ToolRunner(
            self.tools,
            ToolLimits(
                timeout=tool_timeout,
                max_parallel=max_parallel_tools,
                max_result_chars=max_tool_result_chars,
                max_identical_calls=max_identical_calls,
            ),
            self._hooks,
            self.metrics,
            [g for g in self._guards if isinstance(g, ToolResultScreen)],
            self._tracing,
            self.tool_results,
        )
        self.metrics.register_tools(self.tools)
        for guard in self._guards:
            self.metrics.register_guard(guard.name, getattr(guard, "codes", ()))
        install_log_context()

    @property
    def max_concurrency(self) -> int:
        """Runs that may hold a permit at once."""
        return self._gate.capacity

    async def execute(
        self,
        command: AgentCommand,
        *,
        request_id: str | None = None,
        client_address: str | None = None,
        request_headers: Mapping[str, str] | None = None,
    ) -> AgentResult:
        """Run to the end and return the result; failures come back as ``success=False``.

        ``request_id`` names the run in logs (one is generated otherwise); ``client_address``
        is the caller's address, for guards such as rate limits; ``request_headers`` are the
        caller's HTTP headers, for tools that pass some on (see ``RestTool``).
        """
        caller = _Caller(request_id, client_address, request_headers)
        run = await self._run(command, "execute", _drop, caller)
        return run.result()

    def execute_stream(
        self,
        command: AgentCommand,
        *,
        request_id: str | None = None,
        client_address: str | None = None,
        request_headers: Mapping[str, str] | None = None,
    ) -> EventStream:
        """Yield the run's events as they happen; the last one is always a ``DoneEvent``.

        The returned :class:`EventStream` is an async generator: ``async for`` it. Leaving early
        (``break``, ``aclose()``, cancelling the consuming task) cancels the run: running tools
        are cancelled and the permit is released. The run starts at the first ``__anext__``.
        """
        caller = _Caller(request_id, client_address, request_headers)
        return EventStream(lambda emit: self._run(command, "stream", emit, caller))

    async def aclose(self) -> None:
        """Release what the model, the tools, the stores and the guards hold (HTTP sessions,
        such as a :class:`~agent_executor.rest.RestTool`'s, Redis connections); the executor is
        unusable afterwards. Parts shared by several executors may be closed more than once."""
        parts = (self.model, *self.tools.values(), self.memory, self.tool_results, *self._guards)
        for part in parts:
            aclose = getattr(part, "aclose", None)
            if aclose is not None:
                await aclose()

    async def __aenter__(self) -> AgentExecutor:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def _run(self, command: AgentCommand, mode: Mode, emit: Emit, caller: _Caller) -> Run:
        ctx = RunContext(
            command=command,
            request_id=caller.request_id or uuid.uuid4().hex,
            mode=mode,
            client_address=caller.address,
            request_headers=caller.headers or {},
        )
        run = Run(ctx, emit)
        token = _current_run.set(ctx)
        try:
            await self._traced_run(run, command, mode)
        finally:
            _current_run.reset(token)
        return run

    async def _traced_run(self, run: Run, command: AgentCommand, mode: Mode) -> None:
        ctx = run.ctx
        attributes = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": self.name,
            "gen_ai.request.model": self.model.name,
            "gen_ai.conversation.id": command.session_id,
            "agent_executor.request_id": ctx.request_id,
            "agent_executor.mode": mode,
        }
        with (
            log_context(
                request_id=ctx.request_id, user_id=command.user_id, session_id=command.session_id
            ),
            self._tracing.span(f"invoke_agent {self.name}", attributes, trace_logs=True) as span,
        ):
            try:
                await self._guarded_drive(run)
            except anyio.get_cancelled_exc_class():
                with anyio.CancelScope(shield=True):
                    await self._cancelled(run)
                self._tracing.fail(span, "cancelled", "the run was cancelled")
                raise
            await self._finish(run)
            self._trace_outcome(span, run)

    async def _guarded_drive(self, run: Run) -> None:
        """Drive the run under its deadline; every failure but cancellation becomes its error."""
        try:
            timeout = math.inf if self._request_timeout is None else self._request_timeout
            with anyio.CancelScope(deadline=anyio.current_time() + timeout) as deadline:
                await self._drive(run)
            if deadline.cancelled_caught:
                message = f"the run did not finish within {self._request_timeout} s"
                run.fail(ErrorInfo(code=ErrorCode.TIMEOUT.value, message=message))
        except RunFailed as exc:
            run.fail(exc.info)
        except StoreUnavailable as exc:
            logger.warning("run failed: %s", exc)
            run.fail(ErrorInfo(code=ErrorCode.INTERNAL_ERROR.value, message=str(exc)))
        except Exception:
            logger.exception("run failed unexpectedly")
            message = f"internal error (request id {run.ctx.request_id})"
            run.fail(ErrorInfo(code=ErrorCode.INTERNAL_ERROR.value, message=message))

    def _trace_outcome(self, span: Span, run: Run) -> None:
        if span is None:
            return
        usage = run.usage
        self._tracing.set(
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
            self._tracing.fail(span, run.error.code, run.error.message)

    async def _drive(self, run: Run) -> None:
        await self._check_guards(run)
        if self._hooks:
            checked = _guarded_text(run.ctx.command)
            try:
                await self._hooks.before_agent_start(run.ctx)
            except HookRejection as exc:
                raise RunFailed(ErrorCode.HOOK_REJECTED, exc.reason) from None
            if _guarded_text(run.ctx.command) != checked:
                await self._check_guards(run, rewritten=True)
        output = OutputFormat.resolve(run.ctx.command.response_format)
        async with self._gate.permit():
            await self._prepare(run, output)
            await self._react(run, output)

    async def _check_guards(self, run: Run, *, rewritten: bool = False) -> None:
        """Run the guards in order; the first rejection ends the run with its code.

        A command that a ``before_agent_start`` hook rewrote (its ``user_prompt``,
        ``system_prompt`` or ``messages`` changed, by a returned copy or in place) is checked
        again (``rewritten=True``), by the guards that judge its content only: a guard whose
        ``checks_content`` attribute is false (``RateLimitGuard``, which counts requests and
        has counted this one already) is skipped; a guard without the attribute is a content
        guard. The rejection of a rewritten command is the same as a direct one.
        """
        for guard in self._guards:
            if rewritten and not getattr(guard, "checks_content", True):
                continue
            try:
                await guard.check(run.ctx)
            except GuardRejection as exc:
                self.metrics.guard_rejections.labels(guard.name, exc.code.value).inc()
                logger.info(
                    "guard %s refused the %s: %s",
                    guard.name,
                    "command rewritten by a before_agent_start hook" if rewritten else "run",
                    exc.message,
                )
                raise RunFailed(exc.code, exc.message, exc.retry_after) from None

    async def _prepare(self, run: Run, output: OutputFormat | None) -> None:
        command = run.ctx.command
        self._offer_tools(run, command)
        system = command.system_prompt or self._system_prompt
        if output is not None:
            system = f"{system}\n\n{output.instructions}" if system else output.instructions
        run.messages = [SystemMessage(content=system)] if system else []
        run.messages += await self._history(command)
        if command.approvals is not None:
            await self._resume(run)
        else:
            run.add(UserMessage(content=command.user_prompt))

    def _offer_tools(self, run: Run, command: AgentCommand) -> None:
        """The run's tools: the executor's, plus the client's own for this run."""
        if not command.client_tools:
            run.tools, run.tool_specs = self.tools, self._tool_specs
            return
        clash = sorted({t.name for t in command.client_tools} & set(self.tools))
        if clash:
            raise RunFailed(
                ErrorCode.INVALID_INPUT,
                f"client tools may not reuse the agent's tool names: {clash}",
            )
        extra = {
            t.name: FrontendTool(t.name, t.description, t.parameters, timeout=t.timeout or 30.0)
            for t in command.client_tools
        }
        run.tools = {**self.tools, **extra}
        run.tool_specs = self._tool_specs + [t.spec() for t in extra.values()]

    async def _history(self, command: AgentCommand) -> list[Message]:
        if command.messages is not None:
            return list(command.messages)
        if command.session_id is None:
            return []
        try:
            history = await self.memory.load(command.user_id, command.session_id)
        except StoreUnavailable:
            raise  # reported with its own message by _guarded_drive
        except Exception:
            logger.exception("loading the conversation failed")
            raise RunFailed(
                ErrorCode.INTERNAL_ERROR, "the conversation store is unavailable"
            ) from None
        if self._compressor is None:
            return history
        return await compact_history(
            self._compressor,
            self.memory,
            command.user_id,
            command.session_id,
            history,
            self.metrics,
        )

    async def _react(self, run: Run, output: OutputFormat | None) -> None:
        command = run.ctx.command
        max_calls = command.max_tool_calls
        if max_calls is None:
            max_calls = self._max_tool_calls
        offer_tools, limit_hit = max_calls > 0, False
        while run.turns < self._max_turns:
            response, calls, turn_limit_hit = await self._turn(run, offer_tools, max_calls)
            if run.awaiting_approval:
                self._pause(run)
                return
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

    async def _turn(
        self, run: Run, offer_tools: bool, max_calls: int
    ) -> tuple[ModelResponse, tuple[ToolCall, ...], bool]:
        """One model turn and its tool calls.

        Returns the response, the calls the turn made and whether ``max_calls`` refused one.
        """
        if offer_tools and self._tool_runner.has_eager:
            return await self._turn_with_eager_tools(run, max_calls)
        response = await self._model_turn(run, run.tool_specs if offer_tools else [], None)
        calls = response.tool_calls if offer_tools else ()
        run.add(_assistant(response, calls))
        if not calls:
            return response, calls, False
        decision = self._refusal(run, response)
        return response, calls, await self._tool_runner.run_calls(run, calls, max_calls, decision)

    async def _turn_with_eager_tools(
        self, run: Run, max_calls: int
    ) -> tuple[ModelResponse, tuple[ToolCall, ...], bool]:
        """A turn whose tools' task group spans the model stream, so eager tools start early."""
        calls: tuple[ToolCall, ...] = ()
        failure: RunFailed | None = None
        try:
            async with anyio.create_task_group() as tg:
                batch = self._tool_runner.batch(run, tg, max_calls)
                try:
                    response = await self._model_turn(run, run.tool_specs, batch.start_eager)
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

    def _refusal(self, run: Run, response: ModelResponse) -> Decision | None:
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

    async def _model_turn(
        self,
        run: Run,
        tools: list[dict[str, Any]],
        on_call: Callable[[ToolCall], None] | None,
    ) -> ModelResponse:
        run.turns += 1
        run.ctx.turn = run.turns
        command = run.ctx.command
        request = ModelRequest(
            list(run.messages), tools, {**self._model_params, **command.model_params}
        )
        attributes = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": self.model.name,
            "agent_executor.turn": run.turns,
        }
        with self._tracing.span(f"chat {self.model.name}", attributes) as span:
            return await self._traced_model_turn(run, request, on_call, span)

    async def _traced_model_turn(
        self,
        run: Run,
        request: ModelRequest,
        on_call: Callable[[ToolCall], None] | None,
        span: Span,
    ) -> ModelResponse:
        try:
            if self._hooks:
                request = await self._hooks.before_model(run.ctx, request)
            guard = self._output_guard
            output = TurnOutput(
                run.emit,
                run.texts,
                lambda: self._first_text(run),
                on_call,
                guard.start() if guard is not None else None,
                run.reasoning if self._reasoning_events else None,
                guard.start() if guard is not None and self._reasoning_events else None,
            )
            response = await stream_turn(
                self.model, request, self._policy, self._turn_metrics, output
            )
            run.add_usage(response.usage)
            if self._hooks:
                await self._hooks.after_model(run.ctx, response)
        except HookRejection as exc:
            self._tracing.fail(span, ErrorCode.HOOK_REJECTED.value, exc.reason)
            raise RunFailed(ErrorCode.HOOK_REJECTED, exc.reason) from None
        except ModelError as exc:
            logger.warning("model call failed: %s", exc.message)
            self._tracing.fail(span, ErrorCode.LLM_ERROR.value, exc.message)
            raise RunFailed(ErrorCode.LLM_ERROR, exc.message) from None
        except OutputBlocked as exc:
            self.metrics.hook_rejections.labels("output_guard").inc()
            logger.warning("output guard withheld the answer (%s)", exc.kind)
            raise RunFailed(ErrorCode.HOOK_REJECTED, str(exc)) from None
        usage = response.usage
        self._tracing.set(
            span,
            {
                "gen_ai.usage.input_tokens": usage.input_tokens if usage else None,
                "gen_ai.usage.output_tokens": usage.output_tokens if usage else None,
                "gen_ai.response.finish_reasons": [response.finish_reason or "unknown"],
            },
        )
        return response

    def _first_text(self, run: Run) -> None:
        run.first_token_at = time.perf_counter()
        self.metrics.time_to_first_token.labels(run.ctx.mode).observe(
            run.first_token_at - run.started
        )

    def _accept(self, run: Run, output: OutputFormat, text: str) -> bool:
        """Validate the final answer; on the first failure ask the model once to repair it."""
        try:
            run.output = output.parse(text)
            return True
        except ValueError as exc:
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

    async def _finish(self, run: Run) -> None:
        """Close the run: pending tools, memory, hooks, metrics, then the closing events."""
        self._close_pending(run)
        if run.error is None:
            await self._save(run)
        if self._hooks:
            if run.error is None:
                await self._hooks.after_agent_complete(run.ctx, run.result())
            else:
                await self._hooks.on_agent_failed(run.ctx, run.error)
        outcome = run.error.code if run.error else "success"
        self._count(run, outcome)
        if run.error is not None:
            run.emit(
                ErrorEvent(
                    code=run.error.code,
                    message=run.error.message,
                    retry_after=run.error.retry_after,
                )
            )
        run.emit(run.done_event())

    async def _cancelled(self, run: Run) -> None:
        run.cancelled = True
        run.emit = _drop
        self._close_pending(run)
        self._count(run, "cancelled")
        logger.debug("run cancelled by the caller (user %s)", run.ctx.user_id)
        if self._hooks:
            with anyio.move_on_after(1):
                await self._hooks.on_agent_failed(
                    run.ctx, ErrorInfo(code="cancelled", message="the run was cancelled")
                )

    async def _save(self, run: Run) -> None:
        """Append the run to the history; a paused run is kept apart until it resumes."""
        command = run.ctx.command
        if command.session_id is None:
            return
        user, session = command.user_id, command.session_id
        try:
            if run.finish_reason == "waiting_for_approval":
                await self._pending_store.save_pending(user, session, _paused(run))
                return
            await self._pending_store.delete_pending(user, session)  # the conversation moved on
            if command.messages is None:
                await self.memory.append(user, session, run.new_messages)
        except Exception:
            logger.exception("saving the conversation failed")
            run.fail(
                ErrorInfo(
                    code=ErrorCode.INTERNAL_ERROR.value,
                    message="the conversation could not be saved",
                )
            )

    async def waiting_for_approval(self, user_id: str | None, session_id: str) -> bool:
        """Whether a run of this session is paused for approval (and may be resumed here)."""
        return await self._pending_store.load_pending(user_id, session_id) is not None

    @property
    def _pending_store(self) -> PendingRunStore:
        return self.memory if isinstance(self.memory, PendingRunStore) else self._fallback_pending

    def _pause(self, run: Run) -> None:
        """Stop at the calls that need a person: sign a token for each and announce them."""
        command = run.ctx.command
        if command.session_id is None:
            raise RunFailed(
                ErrorCode.INVALID_INPUT,
                "a tool that needs approval needs a session_id to resume the run",
            )
        for call in run.awaiting_approval:
            token = self._signer.token(command.user_id, command.session_id, call)
            arguments = loose_arguments(call.arguments)
            run.pending_approvals.append(
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

    async def _resume(self, run: Run) -> None:
        """Go on with the session's paused run: check the approvals, settle the pending calls."""
        command = run.ctx.command
        if command.session_id is None:
            raise RunFailed(ErrorCode.INVALID_INPUT, "approvals need the session_id of the run")
        paused = await self._pending_store.load_pending(command.user_id, command.session_id)
        if paused is None:
            raise RunFailed(
                ErrorCode.INVALID_INPUT, "nothing in this session is waiting for approval"
            )
        decided = self._decisions(run, paused, command.approvals or [])
        run.messages += paused.messages
        run.new_messages = list(paused.messages)
        run.turns, run.tool_calls_made, run.usage = (
            paused.turns,
            paused.tool_calls_made,
            (paused.usage),
        )
        max_calls = (
            self._max_tool_calls if command.max_tool_calls is None else (command.max_tool_calls)
        )
        await self._tool_runner.run_calls(run, paused.pending, max_calls, decided=decided)
        _reorder_results(run, paused.results)

    def _decisions(
        self, run: Run, paused: PendingRun, approvals: Sequence[Approval]
    ) -> dict[str, Decision | None]:
        """Each pending call's fate (``None``: approved, run it); refuses bad approvals."""
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

    def _close_pending(self, run: Run) -> None:
        """Tool calls cut short by a timeout or cancellation end as ``cancelled``."""
        now = time.perf_counter()
        for call_id, pending in run.pending.items():
            record = ToolCallRecord(
                call_id=call_id,
                tool=pending.tool,
                arguments=pending.arguments,
                status="cancelled",
                duration_ms=round((now - pending.started) * 1000, 3),
                result="cancelled: the run ended before the tool finished",
            )
            run.records.append(record)
            self._tool_runner.count(record, now - pending.started)
            run.emit(
                ToolEndEvent(
                    tool=pending.tool,
                    call_id=call_id,
                    status="cancelled",
                    duration_ms=record.duration_ms,
                )
            )
        run.pending.clear()

    def _count(self, run: Run, outcome: str) -> None:
        mode = run.ctx.mode
        seconds = time.perf_counter() - run.started
        self.metrics.requests.labels(mode, outcome).inc()
        self.metrics.request_duration.labels(mode).observe(seconds)
        self.metrics.react_turns.observe(run.turns)
        level = logging.WARNING if outcome in _SERVER_SIDE_FAILURES else logging.INFO
        logger.log(
            level,
            "run finished: outcome=%s turns=%d tool_calls=%d duration_ms=%.1f",
            outcome,
            run.turns,
            len(run.records),
            seconds * 1000,
        )


def _registry(tools: Iterable[Tool | Callable[..., Any]]) -> dict[str, Tool]:
    registry: dict[str, Tool] = {}
    for item in tools:
        tool = item if isinstance(item, Tool) else FunctionTool(item)
        if tool.name in registry:
            raise ConfigurationError(f"two tools are named {tool.name!r}")
        registry[tool.name] = tool
    return registry


def _guarded_text(
    command: AgentCommand,
) -> tuple[str, str | None, tuple[Message, ...] | None]:
    """What of a command the content guards read and the model will be given (messages are
    frozen, so a tuple of them is a snapshot; comparing one is cheap when nothing changed)."""
    messages = command.messages
    return (
        command.user_prompt,
        command.system_prompt,
        None if messages is None else tuple(messages),
    )


def _paused(run: Run) -> PendingRun:
    """The paused run's state: messages up to the assistant turn, that turn's results apart."""
    cut = max(i for i, m in enumerate(run.new_messages) if isinstance(m, AssistantMessage)) + 1
    results = [m for m in run.new_messages[cut:] if isinstance(m, ToolMessage)]
    return PendingRun(
        messages=run.new_messages[:cut],
        results=results,
        pending=list(run.awaiting_approval),
        turns=run.turns,
        tool_calls_made=run.tool_calls_made,
        usage=run.usage,
    )


def _reorder_results(run: Run, earlier: Sequence[ToolMessage]) -> None:
    """Put a resumed turn's results (those from before the pause and the new ones) in the
    order of the assistant's calls, right after it."""
    cut = max(i for i, m in enumerate(run.new_messages) if isinstance(m, AssistantMessage)) + 1
    assistant = run.new_messages[cut - 1]
    assert isinstance(assistant, AssistantMessage)
    order = {call.id: i for i, call in enumerate(assistant.tool_calls)}
    tail = [*earlier, *(m for m in run.new_messages[cut:] if isinstance(m, ToolMessage))]
    tail.sort(key=lambda m: order.get(m.tool_call_id, len(order)))
    del run.messages[len(run.messages) - (len(run.new_messages) - cut) :]
    run.new_messages[cut:] = tail
    run.messages += tail
