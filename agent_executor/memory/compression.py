"""History compression: fold the older turns of a long conversation into one summary.

A session's stored history grows with every run, and so do the cost and latency of every model
call. When the history passes ``max_tokens``, :class:`HistoryCompressor` keeps the most recent
whole turns (up to ``keep_recent_tokens``) verbatim and asks a model, once, to summarise
everything before them into one :class:`SystemMessage`. Cuts fall only at turn boundaries (a
turn starts at a :class:`UserMessage`), so a tool call is never separated from its result. An
earlier summary at the front of the history is summarised again with the turns after it, so
repeated compression keeps a single summary message.

The executor (``AgentExecutor(history_compressor=...)``) calls :func:`compact_history` before a
run; it writes the compressed prefix back with ``replace_prefix`` when the store is a
:class:`~agent_executor.memory.CompactableStore`, and never lets a failed summary fail the run.
"""

from __future__ import annotations

import logging
import math
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass

import anyio

from ..errors import ConfigurationError, ModelError
from ..messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolMessage,
    Usage,
    UserMessage,
    to_openai_messages,
)
from ..models.base import ChatModel, ModelChunk, ModelRequest
from ..observability.metrics import Metrics
from .store import CompactableStore, ConversationStore

__all__ = [
    "DEFAULT_INSTRUCTIONS",
    "SUMMARY_PREFIX",
    "Compression",
    "HistoryCompressor",
    "Summary",
    "TokenCounter",
    "compact_history",
    "estimate_tokens",
    "litellm_token_counter",
    "transcript",
]

logger = logging.getLogger("agent_executor.compression")

TokenCounter = Callable[[Sequence[Message]], int]
"""Counts the tokens of a list of messages, as the model would see them."""

SUMMARY_PREFIX = "Summary of the earlier conversation:\n"
"""How a summary message's content starts; marks it for the next compression."""

DEFAULT_INSTRUCTIONS = (
    "You compress conversations between a user and an AI assistant. Write a concise summary of "
    "the conversation you are given, so the assistant can continue it without the original. "
    "Keep every fact, decision, name, number, date, identifier and user preference; the open "
    "questions and unfinished tasks; and the tool results that still matter (what was looked "
    "up and what came back). Include any earlier summary's content. Drop greetings, "
    "repetition and chatter. Write plain prose or short bullet points, in the language of the "
    "conversation, and do not address the user."
)

_MESSAGE_OVERHEAD = 4


def estimate_tokens(messages: Sequence[Message]) -> int:
    """A cheap token estimate: a quarter of the characters (rounded up) plus a few per message.

    Counts content, tool names and tool-call arguments. Close enough for English text with
    common tokenizers; use :func:`litellm_token_counter` for a model's real tokenizer.
    """
    chars = 0
    for message in messages:
        chars += len(message.content)
        if isinstance(message, AssistantMessage):
            chars += sum(len(c.name) + len(c.arguments) for c in message.tool_calls)
        elif isinstance(message, ToolMessage):
            chars += len(message.name)
    return math.ceil(chars / 4) + _MESSAGE_OVERHEAD * len(messages)


def litellm_token_counter(model_name: str) -> TokenCounter:
    """A counter using litellm's tokenizer for ``model_name`` (e.g. ``"openai/gpt-4o-mini"``).

    litellm is imported on the first count, not here, so building the counter costs nothing.
    """

    def count(messages: Sequence[Message]) -> int:
        from ..models.litellm import import_litellm

        litellm = import_litellm()
        return int(
            litellm.token_counter(model=model_name, messages=to_openai_messages(list(messages)))
        )

    return count


@dataclass(frozen=True, slots=True)
class Summary:
    """What one summary call wrote, and what its provider reported it used (``None``: no
    usage in the stream)."""

    text: str
    usage: Usage | None = None


@dataclass(frozen=True, slots=True)
class Compression:
    """One compression: ``old`` (the prefix that was summarised) became ``summary``;
    ``recent`` (the turns after it) is kept as it was. ``usage`` is what the summary call
    used, which the executor charges to the run like any model call."""

    old: list[Message]
    summary: SystemMessage
    recent: list[Message]
    usage: Usage | None = None

    @property
    def messages(self) -> list[Message]:
        """The compressed history: the summary, then the recent turns."""
        return [self.summary, *self.recent]


class HistoryCompressor:
    """Summarises the older turns of a history once it passes ``max_tokens``.

    ``model`` writes the summaries (a small, cheap model is usually enough). ``max_tokens`` is
    the threshold on the stored history (system prompt and new prompt not included);
    ``keep_recent_tokens`` is the budget of the recent turns kept verbatim (the last turn is
    always kept, even when it alone is larger). ``token_counter`` defaults to
    :func:`estimate_tokens`. ``instructions`` is the summariser's system prompt; ``timeout``
    bounds the summary call in seconds (``None``: no limit of its own).
    """

    def __init__(
        self,
        model: ChatModel,
        *,
        max_tokens: int = 8000,
        keep_recent_tokens: int = 2000,
        token_counter: TokenCounter | None = None,
        instructions: str = DEFAULT_INSTRUCTIONS,
        timeout: float | None = 30.0,
    ) -> None:
        if max_tokens < 1 or keep_recent_tokens < 1:
            raise ConfigurationError("max_tokens and keep_recent_tokens must be positive")
        if keep_recent_tokens >= max_tokens:
            raise ConfigurationError("keep_recent_tokens must be smaller than max_tokens")
        if timeout is not None and timeout <= 0:
            raise ConfigurationError("timeout must be positive or None")
        self.model = model
        self.max_tokens = max_tokens
        self.keep_recent_tokens = keep_recent_tokens
        self.count: TokenCounter = token_counter or estimate_tokens
        self.instructions = instructions
        self.timeout = timeout

    def split(self, messages: Sequence[Message]) -> tuple[list[Message], list[Message]] | None:
        """Where to cut: ``(old, recent)``, or ``None`` when under the threshold or nothing can
        be cut (a single turn). No model call."""
        if self.count(messages) <= self.max_tokens:
            return None
        cuts = _cut_points(messages)
        if not cuts:
            return None
        cut, end, kept = cuts[-1], len(messages), 0
        for start in reversed(cuts):
            kept += self.count(messages[start:end])
            if kept > self.keep_recent_tokens:
                break
            cut, end = start, start
        return list(messages[:cut]), list(messages[cut:])

    async def compress(self, messages: Sequence[Message]) -> Compression | None:
        """Summarise the older turns; ``None`` when there is nothing to do.

        Raises :class:`ModelError` if the summary call fails or returns no text, and
        ``TimeoutError`` if it takes longer than ``timeout``.
        """
        parts = self.split(messages)
        if parts is None:
            return None
        old, recent = parts
        summary = await self.summary(old)
        content = SUMMARY_PREFIX + summary.text
        return Compression(old, SystemMessage(content=content), recent, summary.usage)

    async def summarise(self, messages: Sequence[Message]) -> str:
        """One streamed model call, without tools, that summarises ``messages``."""
        return (await self.summary(messages)).text

    async def summary(self, messages: Sequence[Message]) -> Summary:
        """:meth:`summarise`, with what the call used (for its spend to be counted)."""
        request = ModelRequest(
            [
                SystemMessage(content=self.instructions),
                UserMessage(content="The conversation to summarise:\n\n" + transcript(messages)),
            ]
        )
        with anyio.fail_after(self.timeout):
            text, usage = await _collect(self.model.stream(request))
        text = text.strip()
        if not text:
            raise ModelError("the summariser returned no text")
        return Summary(text, usage)


async def compact_history(
    compressor: HistoryCompressor,
    store: ConversationStore,
    user_id: str | None,
    session_id: str,
    history: list[Message],
    metrics: Metrics,
    *,
    spent: Callable[[Usage | None, bool], Awaitable[None]] | None = None,
) -> list[Message]:
    """The history a run should use: compressed (and written back) when it is long enough.

    Never fails for a failed summary: that is logged, counted, and the full history is used.
    When the store is not a :class:`CompactableStore`, or the session changed since it was
    loaded, the compression serves this run only. ``spent`` is told of every summary call:
    its usage and ``True`` when it answered, ``None`` and ``False`` when the model failed or
    took too long (the executor counts and charges it like the run's own calls).
    """
    try:
        result = await compressor.compress(history)
    except Exception as exc:
        metrics.history_compression_failures.inc()
        if isinstance(exc, ModelError):
            reason = exc.message
        elif isinstance(exc, TimeoutError):
            reason = f"no summary within {compressor.timeout} s"
        else:
            logger.exception("history compression failed, using the full history")
            return history
        logger.warning("history compression failed, using the full history: %s", reason)
        if spent is not None:
            await spent(None, False)
        return history
    if result is None:
        return history
    if spent is not None:
        await spent(result.usage, True)
    metrics.history_compressions.inc()
    logger.info(
        "history compressed: %d messages summarised, %d kept", len(result.old), len(result.recent)
    )
    if isinstance(store, CompactableStore):
        try:
            if not await store.replace_prefix(user_id, session_id, result.old, [result.summary]):
                logger.info("the session changed meanwhile; the compression serves this run only")
        except Exception:
            logger.exception("storing the compressed history failed")
    return result.messages


def transcript(messages: Sequence[Message]) -> str:
    """Messages as plain text for the summariser (no tool-call structure a provider could
    reject in a request without tools)."""
    lines: list[str] = []
    for message in messages:
        if isinstance(message, SystemMessage):
            content = message.content.removeprefix(SUMMARY_PREFIX)
            lines.append(f"[Earlier summary]\n{content}")
        elif isinstance(message, UserMessage):
            lines.append(f"User: {message.content}")
        elif isinstance(message, AssistantMessage):
            if message.content:
                lines.append(f"Assistant: {message.content}")
            for c in message.tool_calls:
                lines.append(f"Assistant called tool {c.name} with {c.arguments}")
        else:
            lines.append(f"Tool {message.name} returned: {message.content}")
    return "\n\n".join(lines)


def _cut_points(messages: Sequence[Message]) -> list[int]:
    """Indexes where a kept suffix may start: a user message with something other than system
    messages before it and no tool call still waiting for its result."""
    cuts: list[int] = []
    waiting: set[str] = set()
    seen_turn = False
    for i, message in enumerate(messages):
        if isinstance(message, UserMessage):
            if seen_turn and not waiting:
                cuts.append(i)
            seen_turn = True
        elif isinstance(message, AssistantMessage):
            waiting = {c.id for c in message.tool_calls}
            seen_turn = True
        elif isinstance(message, ToolMessage):
            waiting.discard(message.tool_call_id)
            seen_turn = True
    return cuts


async def _collect(stream: AsyncIterator[ModelChunk]) -> tuple[str, Usage | None]:
    """The streamed text, and the last usage reported (providers send the call's total last)."""
    texts: list[str] = []
    usage: Usage | None = None
    try:
        async for chunk in stream:
            if chunk.text:
                texts.append(chunk.text)
            if chunk.usage is not None:
                usage = chunk.usage
    finally:
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            await aclose()
    return "".join(texts), usage
