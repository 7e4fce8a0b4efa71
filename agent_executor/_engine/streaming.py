"""Streaming one model call: open it (retrying before the first chunk), stream it, assemble it.

Retries, the first-chunk timeout and the idle-gap timeout live here, once, for every model.
The per-chunk path does only what each chunk needs: one event per text delta and a clock read
for the idle deadline (one cancel scope per turn, not a timer per chunk).
"""

from __future__ import annotations

import logging
import math
import random
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.lowlevel
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt

from ..errors import ModelError
from ..events import MessageEvent, ReasoningEvent
from ..guards import OutputBlocked, OutputFilter
from ..messages import ToolCall, Usage
from ..models.base import ChatModel, ModelChunk, ModelRequest, ModelResponse
from ..settings import ModelPolicy
from .assembler import ToolCallAssembler
from .budget import BudgetStop, Meter
from .state import Emit
from .telemetry import TurnMetrics

__all__ = [
    "ModelPolicy",
    "TurnOutput",
    "paragraph_break",
    "retry_delay",
    "stream_turn",
]

logger = logging.getLogger("agent_executor.model")

_JOIN_EVERY = 32
"""Text deltas a turn keeps apart before they are joined into one string (``_join_deltas``)."""


@dataclass(slots=True)
class TurnOutput:
    """Where a turn's output goes: events, the run's text, and the run's callbacks.

    ``texts`` collects the run's text (what the user saw: its deltas, joined every few
    dozen); ``on_first_text`` is called when the run's first delta is released; ``on_call``
    gets each tool call whose arguments are complete before the stream ends (for eager
    tools); ``text_filter`` (an output guard) sees every delta before anyone else and may hold
    text back. ``reasoning`` collects the run's reasoning deltas, each also emitted as a
    :class:`ReasoningEvent` (``None``: reasoning is kept from the caller);
    ``reasoning_filter`` is the output guard's filter for them. ``meter`` counts the output
    against the run's spending limits (``None``: no limits).
    """

    emit: Emit
    texts: list[str]
    on_first_text: Callable[[], None]
    on_call: Callable[[ToolCall], None] | None = None
    text_filter: OutputFilter | None = None
    reasoning: list[str] | None = None
    reasoning_filter: OutputFilter | None = None
    meter: Meter | None = None


async def stream_turn(
    model: ChatModel,
    request: ModelRequest,
    policy: ModelPolicy,
    metrics: TurnMetrics,
    output: TurnOutput,
) -> ModelResponse:
    """Stream one model call to the end, emitting a ``MessageEvent`` per released text delta.

    Raises :class:`ModelError` when the call fails (after retries, if it failed before its first
    chunk) or stalls; text already emitted is never repeated. ``OutputBlocked`` comes from the
    text filter.
    """
    started = time.perf_counter()
    state = _TurnState(len(output.texts))
    try:
        stream, first = await _open(model, request, policy, metrics)
        try:
            await _consume(stream, first, state, policy.idle_timeout, output)
        finally:
            await _close(stream)
    except (OutputBlocked, BudgetStop):
        metrics.record(started, state.usage, ok=True)
        raise
    except Exception:
        metrics.record(started, state.usage, ok=False)
        raise
    metrics.record(started, state.usage, ok=True)
    return ModelResponse(
        text="".join(output.texts[state.text_from :]),
        tool_calls=tuple(state.assembler.calls()),
        finish_reason=state.finish_reason,
        usage=state.usage,
        reasoning="".join(state.reasoning),
        provider_fields=state.provider_fields,
    )


class _TurnState:
    """One turn's parts. ``text_from``: where the turn's text starts in the run's deltas;
    ``pending_break``: an earlier turn wrote text, so this turn's first text is set apart."""

    __slots__ = (
        "assembler",
        "finish_reason",
        "pending_break",
        "provider_fields",
        "reasoning",
        "text_from",
        "usage",
    )

    def __init__(self, text_from: int) -> None:
        self.text_from = text_from
        self.pending_break = text_from > 0
        self.assembler = ToolCallAssembler()
        self.finish_reason: str | None = None
        self.usage: Usage | None = None
        self.reasoning: list[str] = []
        self.provider_fields: dict[str, Any] = {}


async def _open(
    model: ChatModel, request: ModelRequest, policy: ModelPolicy, metrics: TurnMetrics
) -> tuple[AsyncIterator[ModelChunk], ModelChunk | None]:
    """Start the stream and wait for its first chunk, retrying transient failures.

    The first attempt is made directly; tenacity's machinery is built only when it fails
    with a retryable error, so a healthy turn allocates no retry state.
    """
    try:
        return await _open_once(model, request, policy.first_token_timeout)
    except ModelError as exc:
        if not exc.retryable or policy.retries < 1:
            raise
        first_error = exc
    _retrying_after(model, first_error, metrics)
    retrying = AsyncRetrying(
        stop=stop_after_attempt(policy.retries),
        # tenacity's attempt n (n >= 1) failed: wait before retry number n + 1
        wait=lambda state: retry_delay(
            policy, state.attempt_number + 1, state.outcome.exception() if state.outcome else None
        ),
        retry=retry_if_exception(lambda exc: isinstance(exc, ModelError) and exc.retryable),
        before_sleep=lambda state: _retrying_after(
            model, state.outcome.exception() if state.outcome else None, metrics
        ),
        sleep=anyio.sleep,
        reraise=True,
    )
    await anyio.sleep(retry_delay(policy, 1, first_error))
    async for attempt in retrying:
        with attempt:
            return await _open_once(model, request, policy.first_token_timeout)
    raise AssertionError("unreachable: tenacity reraises the last error")


def _retrying_after(model: ChatModel, error: BaseException | None, metrics: TurnMetrics) -> None:
    metrics.retries.inc()
    logger.info("model %s failed (%s); retrying", model.name, error)


def retry_delay(policy: ModelPolicy, retry: int, error: BaseException | None) -> float:
    """Seconds before retry number ``retry`` (1, 2, ...): exponential backoff with jitter,
    at least the provider's ``retry_after`` hint, at most ``max_backoff`` (plus jitter)."""
    backoff = min(policy.backoff * 2.0 ** (retry - 1), policy.max_backoff)
    backoff += random.uniform(0, policy.backoff)
    hint = error.retry_after if isinstance(error, ModelError) else None
    return max(backoff, min(hint or 0.0, policy.max_backoff))


async def _open_once(
    model: ChatModel, request: ModelRequest, first_token_timeout: float | None
) -> tuple[AsyncIterator[ModelChunk], ModelChunk | None]:
    stream = model.stream(request)
    wait = math.inf if first_token_timeout is None else first_token_timeout
    try:
        # A cancel scope, not ``anyio.fail_after``: that is two generator context managers
        # per model turn, alive while the first chunk is awaited.
        with anyio.CancelScope(deadline=anyio.current_time() + wait):
            return stream, await stream.__anext__()
    except StopAsyncIteration:
        return stream, None
    except TimeoutError:
        pass
    except BaseException:
        await _close(stream)
        raise
    # The scope's deadline passed (it caught its own cancellation), or the model timed out.
    await _close(stream)
    raise ModelError(
        f"model {model.name} sent nothing within {first_token_timeout} s (first-token timeout)",
        retryable=True,
    ) from None


async def _consume(
    stream: AsyncIterator[ModelChunk],
    chunk: ModelChunk | None,
    state: _TurnState,
    idle_timeout: float | None,
    output: TurnOutput,
) -> None:
    """Process chunks until the stream ends. The idle timeout is a deadline on one cancel
    scope, pushed forward at most every quarter timeout rather than at every chunk: a stall is
    detected between ``idle_timeout`` and 1.25 times it after the last chunk."""
    if chunk is None:
        return
    idle = math.inf if idle_timeout is None else idle_timeout
    slack = idle / 4
    emit, texts, text_filter, meter = output.emit, output.texts, output.text_filter, output.meter
    next_chunk, monotonic = stream.__anext__, time.monotonic
    assembler, on_call = state.assembler, output.on_call
    join_at = len(texts) + _JOIN_EVERY
    with anyio.CancelScope(deadline=anyio.current_time() + idle + slack) as scope:
        next_refresh = monotonic() + slack
        while True:
            text = chunk.text
            if text:
                if meter is not None:
                    meter.feed(len(text))
                if text_filter is not None:
                    text = text_filter.feed(text)
                if text:
                    first = not texts
                    if first:
                        output.on_first_text()
                    elif state.pending_break:
                        _break_between_turns(state, output)
                    texts.append(text)
                    emit(MessageEvent(text))
                    if first:
                        # The first text goes out now, not after the rest of a burst is parsed.
                        await anyio.lowlevel.checkpoint()
                    elif len(texts) >= join_at:
                        join_at = _join_deltas(texts, state.text_from)
            if chunk.tool_calls:
                if meter is not None:
                    meter.feed(
                        sum(len(d.arguments or "") + len(d.name or "") for d in chunk.tool_calls)
                    )
                if on_call is None:
                    assembler.add_all(chunk.tool_calls)
                else:
                    for delta in chunk.tool_calls:
                        finished = assembler.add(delta)
                        if finished is not None:
                            on_call(finished)
            if chunk.finish_reason:
                state.finish_reason = chunk.finish_reason
            if chunk.usage is not None:
                state.usage = chunk.usage
            if chunk.reasoning:
                if meter is not None:
                    meter.feed(len(chunk.reasoning))
                _reason(chunk.reasoning, state, output)
            if chunk.provider_fields:
                state.provider_fields.update(chunk.provider_fields)
            try:
                chunk = await next_chunk()
            except StopAsyncIteration:
                _flush(state, output)
                return
            if monotonic() >= next_refresh:
                scope.deadline = anyio.current_time() + idle + slack
                next_refresh = monotonic() + slack
    if scope.cancelled_caught:
        raise ModelError(f"the model stream stalled: no chunk for {idle_timeout} s (idle timeout)")


def _join_deltas(texts: list[str], turn_from: int) -> int:
    """Join the turn's last deltas into one string; where the next join is due.

    A run keeps its text as long as it runs, and a delta is a string of its own (about 55
    bytes for a word, beside the list's 8): joined every ``_JOIN_EVERY`` deltas, a run of 100
    words holds four strings, not a hundred. Only the turn's own deltas are joined: the run's
    earlier text and the break before the turn's stay where a turn's ``text_from`` finds them.
    """
    start = max(turn_from, len(texts) - _JOIN_EVERY)
    if len(texts) - start > 1:
        texts[start:] = ["".join(texts[start:])]
    return len(texts) + _JOIN_EVERY


def _reason(text: str, state: _TurnState, output: TurnOutput) -> None:
    """A reasoning delta: kept for the turn, and released to the caller unless it is off."""
    state.reasoning.append(text)
    if output.reasoning is None:
        return
    if output.reasoning_filter is not None:
        text = output.reasoning_filter.feed(text)
    _release_reasoning(text, output)


def _release_reasoning(text: str, output: TurnOutput) -> None:
    if text and output.reasoning is not None:
        output.reasoning.append(text)
        output.emit(ReasoningEvent(text))


def _flush(state: _TurnState, output: TurnOutput) -> None:
    """The stream ended: release what the output guard's filters still hold back."""
    if output.reasoning_filter is not None:
        _release_reasoning(output.reasoning_filter.flush(), output)
    if output.text_filter is not None:
        _release(output.text_filter.flush(), state, output)


def _release(text: str, state: _TurnState, output: TurnOutput) -> None:
    if text:
        if not output.texts:
            output.on_first_text()
        elif state.pending_break:
            _break_between_turns(state, output)
        output.texts.append(text)
        output.emit(MessageEvent(text))


def _break_between_turns(state: _TurnState, output: TurnOutput) -> None:
    """Set this turn's text apart from the last turn's with a paragraph break, a message of
    its own: "Let me check the weather." then tools then "It is sunny." would otherwise read
    "...weather.It is sunny." in every transcript built from the stream. The break is the
    run's text (what the user reads, ``AgentResult.content``), not the turn's own message."""
    state.pending_break = False
    texts = output.texts
    gap = paragraph_break(texts)
    if gap:
        texts.append(gap)
        state.text_from = len(texts)
        output.emit(MessageEvent(gap))


def paragraph_break(texts: list[str]) -> str:
    """What sets new text apart from ``texts`` (the run's text so far): a blank line, or what
    completes one (``"\n"`` after a newline, nothing after a blank line or before any text)."""
    if not texts:
        return ""
    tail = (texts[-2] + texts[-1] if len(texts) > 1 else texts[-1])[-2:]
    return "" if tail == "\n\n" else "\n" if tail.endswith("\n") else "\n\n"


async def _close(stream: AsyncIterator[Any]) -> None:
    aclose = getattr(stream, "aclose", None)
    if aclose is None or getattr(stream, "ag_frame", True) is None:
        return  # nothing to close, or an async generator that has already finished
    with anyio.move_on_after(5, shield=True):
        await aclose()
