"""OpenTelemetry traces: one span per run, per model call and per tool call.

Off unless asked for: ``AgentExecutor(tracer=True)`` uses the global tracer provider (configure
the SDK and an exporter as usual), ``tracer=some_tracer`` a given ``opentelemetry.trace.Tracer``.
It needs the ``[otel]`` extra; without it, asking for tracing raises ``MissingExtraError`` (a
``ConfigurationError`` and an ``ImportError``) naming the extra.
When off, every call here is a cheap no-op and ``opentelemetry`` is never imported.

Attribute names follow the OpenTelemetry GenAI semantic conventions: ``gen_ai.operation.name``
(``invoke_agent``, ``chat``, ``execute_tool``), ``gen_ai.agent.name``, ``gen_ai.request.model``,
``gen_ai.usage.input_tokens``/``output_tokens``, ``gen_ai.response.finish_reasons``,
``gen_ai.tool.name``, ``gen_ai.tool.call.id``, ``gen_ai.conversation.id``, ``error.type``.
While a run's span is open its trace id is in the logging context (``trace_id``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from typing import TYPE_CHECKING, Any

from .._extras import requires_extra
from .logs import set_trace_id

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

__all__ = ["Span", "Tracing"]

Span = Any
"""An ``opentelemetry.trace.Span`` (``None`` when tracing is off)."""


class Tracing:
    """Creates the spans of runs, model calls and tool calls (or nothing, when off)."""

    __slots__ = ("_error_status", "_tracer")

    def __init__(self, tracer: object | bool | None) -> None:
        self._tracer: Any = None
        self._error_status: Any = None
        if tracer is None or tracer is False:
            return
        with requires_extra("otel", "tracing (AgentExecutor(tracer=...))"):
            from opentelemetry import trace
            from opentelemetry.trace import Status, StatusCode
        self._tracer = trace.get_tracer("agent_executor") if tracer is True else tracer
        self._error_status = lambda message: Status(StatusCode.ERROR, message)

    @property
    def enabled(self) -> bool:
        return self._tracer is not None

    def span(
        self, name: str, attributes: dict[str, Any], *, trace_logs: bool = False
    ) -> AbstractContextManager[Span]:
        """A current span named ``name`` (``None`` inside when tracing is off)."""
        if self._tracer is None:
            return nullcontext(None)
        return self._open(name, attributes, trace_logs)

    @contextmanager
    def _open(self, name: str, attributes: dict[str, Any], trace_logs: bool) -> Iterator[Span]:
        clean = {k: v for k, v in attributes.items() if v is not None}
        with self._tracer.start_as_current_span(
            name, attributes=clean, record_exception=False, set_status_on_exception=False
        ) as span:
            if not trace_logs:
                yield span
                return
            with set_trace_id(format(span.get_span_context().trace_id, "032x")):
                yield span

    def fail(self, span: Span, error_type: str, message: str) -> None:
        """Mark ``span`` failed with an ``error.type`` (an error code or exception type)."""
        if span is not None:
            span.set_attribute("error.type", error_type)
            span.set_status(self._error_status(message))

    @staticmethod
    def set(span: Span, attributes: dict[str, Any]) -> None:
        """Set attributes on ``span`` (``None`` values are skipped)."""
        if span is not None:
            for key, value in attributes.items():
                if value is not None:
                    span.set_attribute(key, value)
