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

A hook refuses by raising :class:`~agent_executor.errors.HookRejection`. A hook that raises
anything else fails closed: the step is refused as if rejected, and the error is logged with the
request id. Exceptions from the two notifications are logged and do not change the result.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .errors import HookRejection

if TYPE_CHECKING:
    from .command import AgentCommand
    from .context import RunContext
    from .messages import ToolCall
    from .metrics import Metrics
    from .models.base import ModelRequest, ModelResponse
    from .results import AgentResult, ErrorInfo, ToolCallRecord

__all__ = ["Hook"]

logger = logging.getLogger("agent_executor.hooks")


class Hook:
    """Base class of hooks; every method is an optional async no-op."""

    @property
    def name(self) -> str:
        """Used in log lines."""
        return type(self).__name__

    async def before_agent_start(self, ctx: RunContext) -> AgentCommand | None:
        """Before guards pass the run on to the model; return a new command to replace it."""
        return None

    async def before_model(self, ctx: RunContext, request: ModelRequest) -> ModelRequest | None:
        """Before each model call; return a new request to replace it."""
        return None

    async def after_model(self, ctx: RunContext, response: ModelResponse) -> None:
        """After each model call has streamed its whole answer."""

    async def before_tool_call(self, ctx: RunContext, call: ToolCall) -> ToolCall | None:
        """Before each tool call; return a changed call (same id) to change its arguments."""
        return None

    async def after_tool_call(
        self, ctx: RunContext, call: ToolCall, record: ToolCallRecord
    ) -> ToolCallRecord | None:
        """After each tool call; return a new record to replace what the model is given."""
        return None

    async def after_agent_complete(self, ctx: RunContext, result: AgentResult) -> None:
        """After a run has succeeded."""

    async def on_agent_failed(self, ctx: RunContext, error: ErrorInfo) -> None:
        """After a run has failed or was cancelled (``error.code`` says which)."""


class _HookChain:
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

    async def after_model(self, ctx: RunContext, response: ModelResponse) -> None:
        for hook in self._hooks:
            with _Guarded(hook, "after_model", self._metrics):
                await hook.after_model(ctx, response)

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

    async def after_agent_complete(self, ctx: RunContext, result: AgentResult) -> None:
        for hook in self._hooks:
            try:
                await hook.after_agent_complete(ctx, result)
            except Exception:
                logger.exception("hook %s failed in after_agent_complete", hook.name)

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
        if exc is None or not isinstance(exc, Exception):
            return
        self._metrics.hook_rejections.labels(self._point).inc()
        if isinstance(exc, HookRejection):
            logger.info("hook %s rejected %s: %s", self._hook.name, self._point, exc.reason)
            return
        logger.error(
            "hook %s failed in %s; refusing the step", self._hook.name, self._point, exc_info=exc
        )
        raise HookRejection(f"{self._point} hook {self._hook.name} failed") from exc
