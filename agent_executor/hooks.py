"""Lifecycle hooks: observe and steer every step of a run.

Subclass :class:`Hook` and override the methods you need; all are optional no-ops. Hooks run in
registration order and fire identically in ``execute()`` and ``execute_stream()``.

- ``before_agent_start(ctx)`` may return a changed :class:`AgentCommand` or reject the run.
- ``before_model(ctx, request)`` may change the request (in place or by returning a new one).
- ``after_model(ctx, response)`` sees each finished model turn.
- ``before_tool_call(ctx, call)`` may return a changed :class:`ToolCall` (new arguments) or
  reject the call: it gets status ``rejected``, the reason goes to the model, the run goes on.
- ``after_tool_call(ctx, call, record)`` may return a replacement record (e.g. a new ``result``).
- ``after_agent_complete(ctx, result)`` and ``on_agent_failed(ctx, error)`` are notifications.

Two hooks ship ready to use: :class:`ToolAllowlistHook` (which tools a user or role may call)
and :class:`AuditLogHook` (a structured record of every step).

A hook refuses by raising :class:`~agent_executor.errors.HookRejection`. A hook that raises
anything else fails closed: the step is refused as if rejected, and the error is logged with the
request id. Exceptions from the two notifications are logged and do not change the result.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .errors import HookRejection, out_of_descriptors

if TYPE_CHECKING:
    from .command import AgentCommand
    from .context import RunContext
    from .messages import ToolCall
    from .models.base import ModelRequest, ModelResponse
    from .observability import Metrics
    from .results import AgentResult, ErrorInfo, ToolCallRecord

__all__ = ["AuditLogHook", "Hook", "HookChain", "ToolAllowlistHook"]

logger = logging.getLogger("agent_executor.hooks")


class Hook:
    """Base class of hooks; every method is an optional async no-op."""

    @property
    def name(self) -> str:
        """Used in log lines."""
        return type(self).__name__

    async def before_agent_start(self, ctx: RunContext) -> AgentCommand | None:
        """After the guards, before the model; return a new command to replace it.

        If the text of the command changed (``user_prompt``, ``system_prompt`` or
        ``messages``, returned or changed in place), the content guards check it again (the
        rate limit is not charged twice); a rejection ends the run as a direct one would.
        """
        return None

    async def before_model(self, ctx: RunContext, request: ModelRequest) -> ModelRequest | None:
        """Before each model call; return a new request to replace it."""
        return None

    async def after_model(self, ctx: RunContext, response: ModelResponse) -> ModelResponse | None:
        """After each model call that spent: answered, or cut at the run's spending limit
        (``finish_reason`` ``"budget"``). Return a new response to replace the model's before
        its tools run: its ``text`` and ``tool_calls`` are what the conversation keeps (what
        the model reads next, what memory saves, ``AgentResult.content``) and the calls that
        run. Text already streamed is not taken back, an eager tool started during the stream
        has started, and a call cut at the spending limit cannot be replaced (the run ends)."""
        return None

    async def before_tool_call(self, ctx: RunContext, call: ToolCall) -> ToolCall | None:
        """Before each tool call; return a changed call (same id) to change its arguments."""
        return None

    async def after_tool_call(
        self, ctx: RunContext, call: ToolCall, record: ToolCallRecord
    ) -> ToolCallRecord | None:
        """After each tool call; return a new record to replace what the model is given.

        ``record.result`` is what the model would get (already screened by the guards); a
        different ``result`` returned here is screened again before the model sees it.
        """
        return None

    async def after_agent_complete(
        self, ctx: RunContext, result: AgentResult
    ) -> AgentResult | None:
        """After a run has succeeded, before its conversation is saved. Return a new result to
        replace it: its ``content`` is the answer memory keeps (the last assistant message)
        and ``execute()`` returns, its ``output`` what ``done`` reports; the text a stream
        already carried is not taken back. Should saving then fail, ``on_agent_failed``
        follows."""
        return None

    async def on_agent_failed(self, ctx: RunContext, error: ErrorInfo) -> None:
        """After a run has failed or was cancelled (``error.code`` says which)."""


class HookChain:
    """Runs one hook point over all hooks with the fail-closed rule; used by the executor."""

    __slots__ = ("_hooks", "_metrics")

    def __init__(self, hooks: Sequence[Hook], metrics: Metrics) -> None:
        self._hooks = tuple(hooks)
        self._metrics = metrics

    def __bool__(self) -> bool:
        return bool(self._hooks)

    async def before_agent_start(self, ctx: RunContext) -> AgentCommand:
        for hook in self._hooks:
            with _Guarded(hook, "before_agent_start", self._metrics):
                command = await hook.before_agent_start(ctx)
            if command is not None:
                ctx.command = command
        return ctx.command

    async def before_model(self, ctx: RunContext, request: ModelRequest) -> ModelRequest:
        for hook in self._hooks:
            with _Guarded(hook, "before_model", self._metrics):
                request = await hook.before_model(ctx, request) or request
        return request

    async def after_model(self, ctx: RunContext, response: ModelResponse) -> ModelResponse:
        for hook in self._hooks:
            with _Guarded(hook, "after_model", self._metrics):
                response = await hook.after_model(ctx, response) or response
        return response

    async def before_tool_call(self, ctx: RunContext, call: ToolCall) -> ToolCall:
        for hook in self._hooks:
            with _Guarded(hook, "before_tool_call", self._metrics):
                call = await hook.before_tool_call(ctx, call) or call
        return call

    async def after_tool_call(
        self, ctx: RunContext, call: ToolCall, record: ToolCallRecord
    ) -> ToolCallRecord:
        for hook in self._hooks:
            with _Guarded(hook, "after_tool_call", self._metrics):
                record = await hook.after_tool_call(ctx, call, record) or record
        return record

    async def after_agent_complete(self, ctx: RunContext, result: AgentResult) -> AgentResult:
        for hook in self._hooks:
            try:
                result = await hook.after_agent_complete(ctx, result) or result
            except Exception:
                logger.exception("hook %s failed in after_agent_complete", hook.name)
        return result

    async def on_agent_failed(self, ctx: RunContext, error: ErrorInfo) -> None:
        for hook in self._hooks:
            try:
                await hook.on_agent_failed(ctx, error)
            except Exception:
                logger.exception("hook %s failed in on_agent_failed", hook.name)


class _Guarded:
    """Counts rejections and turns unexpected hook errors into rejections (fail closed)."""

    __slots__ = ("_hook", "_metrics", "_point")

    def __init__(self, hook: Hook, point: str, metrics: Metrics) -> None:
        self._hook, self._point, self._metrics = hook, point, metrics

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        if exc is None or not isinstance(exc, Exception) or out_of_descriptors(exc):
            return  # no descriptor left is the process's state, not the hook's refusal
        self._metrics.hook_rejections.labels(self._point).inc()
        if isinstance(exc, HookRejection):
            logger.info("hook %s rejected %s: %s", self._hook.name, self._point, exc.reason)
            return
        logger.error(
            "hook %s failed in %s; refusing the step", self._hook.name, self._point, exc_info=exc
        )
        raise HookRejection(f"{self._point} hook {self._hook.name} failed") from exc


def _role_from_metadata(ctx: RunContext) -> str | None:
    role = ctx.command.metadata.get("role")
    return role if isinstance(role, str) else None


class ToolAllowlistHook(Hook):
    """Lets each user, or each role, use only the tools it is allowed.

    ``users`` and ``roles`` map a user id or a role to tool names (``"*"`` allows all); a user
    may use the tools of its entry and of its role's entry. Users with neither get ``default``
    (``None``: every tool). Disallowed tools are not offered to the model at all, and a call to
    one anyway is refused (status ``rejected``). The role comes from ``role(ctx)``, by default
    ``command.metadata["role"]``: in the service, metadata is what the client sent, so set roles
    server-side (e.g. in a ``before_agent_start`` hook) or rely on authenticated user ids.
    """

    def __init__(
        self,
        *,
        users: Mapping[str, Iterable[str]] | None = None,
        roles: Mapping[str, Iterable[str]] | None = None,
        default: Iterable[str] | None = None,
        role: Callable[[RunContext], str | None] = _role_from_metadata,
    ) -> None:
        self._users = {user: frozenset(names) for user, names in (users or {}).items()}
        self._roles = {name: frozenset(tools) for name, tools in (roles or {}).items()}
        self._default = None if default is None else frozenset(default)
        self._role = role

    def allowed(self, ctx: RunContext) -> frozenset[str] | None:
        """The tools ``ctx``'s user may use (``None``: all of them)."""
        entries = [self._users.get(ctx.user_id or ""), self._roles.get(self._role(ctx) or "")]
        found = [entry for entry in entries if entry is not None]
        if not found:
            return self._default
        names = frozenset().union(*found)
        return None if "*" in names else names

    async def before_model(self, ctx: RunContext, request: ModelRequest) -> ModelRequest | None:
        allowed = self.allowed(ctx)
        if allowed is not None and request.tools:
            request.tools = [t for t in request.tools if t["function"]["name"] in allowed]
        return request

    async def before_tool_call(self, ctx: RunContext, call: ToolCall) -> ToolCall | None:
        allowed = self.allowed(ctx)
        if allowed is not None and call.name not in allowed:
            raise HookRejection(f"{call.name} is not allowed for this user")
        return None


class AuditLogHook(Hook):
    """One structured log record per step, on the ``agent_executor.audit`` logger.

    Each record's ``audit`` attribute holds the event as a dict (the JSON log format prints
    it); the message is a short ``key=value`` line. Prompts, arguments and results are left out
    unless ``include_content`` is true, so the audit log does not become a copy of user data.
    """

    def __init__(
        self,
        *,
        logger: logging.Logger | None = None,
        level: int = logging.INFO,
        include_content: bool = False,
    ) -> None:
        self._logger = logger or logging.getLogger("agent_executor.audit")
        self._level = level
        self._content = include_content

    def _log(self, event: str, ctx: RunContext, **fields: Any) -> None:
        entry = {
            "event": event,
            "request_id": ctx.request_id,
            "user_id": ctx.user_id,
            "session_id": ctx.session_id,
            **fields,
        }
        line = " ".join(f"{k}={v}" for k, v in entry.items() if v is not None)
        self._logger.log(self._level, "audit %s", line, extra={"audit": entry})

    async def before_agent_start(self, ctx: RunContext) -> None:
        prompt = ctx.command.user_prompt
        self._log(
            "run_started",
            ctx,
            mode=ctx.mode,
            prompt_chars=len(prompt),
            prompt=prompt if self._content else None,
        )

    async def after_model(self, ctx: RunContext, response: ModelResponse) -> None:
        self._log(
            "model_turn",
            ctx,
            turn=ctx.turn,
            finish_reason=response.finish_reason,
            tool_calls=[c.name for c in response.tool_calls] or None,
            input_tokens=response.usage.input_tokens if response.usage else None,
            output_tokens=response.usage.output_tokens if response.usage else None,
        )

    async def before_tool_call(self, ctx: RunContext, call: ToolCall) -> None:
        self._log(
            "tool_call",
            ctx,
            tool=call.name,
            call_id=call.id,
            arguments=call.arguments if self._content else None,
        )

    async def after_tool_call(
        self, ctx: RunContext, call: ToolCall, record: ToolCallRecord
    ) -> None:
        self._log(
            "tool_result",
            ctx,
            tool=call.name,
            call_id=call.id,
            status=record.status,
            duration_ms=record.duration_ms,
            result=record.result if self._content else None,
        )

    async def after_agent_complete(self, ctx: RunContext, result: AgentResult) -> None:
        self._log(
            "run_completed",
            ctx,
            finish_reason=result.finish_reason,
            tool_calls=len(result.tool_calls),
            duration_ms=result.duration_ms,
        )

    async def on_agent_failed(self, ctx: RunContext, error: ErrorInfo) -> None:
        self._log("run_failed", ctx, code=error.code, message=error.message)
