"""Compaction inside a run: a long tool loop kept within the model's context window.

History compression (:mod:`agent_executor.memory.compression`) shortens a session's stored
history when a run starts; a run of many tool turns still grows past the window inside itself
and would fail on the provider's context-length error. Before each model call,
:class:`Compactor` estimates the request (:func:`~.budget.estimate_input_tokens`); when it
would pass the window less the room kept for the answer, the turns before the last ones are
summarised by the same summariser:

- the system prompt stays first and gains the summary (``Summary of the earlier steps``), which
  replaces an earlier one, so repeated compaction keeps one summary, itself summarised again;
- the user's last message before the kept turns (the task) stays, word for word;
- the kept turns start at a turn boundary (an assistant message with no call of an earlier
  turn still waiting), so a tool call is never separated from its result; the last turn is
  always kept, and as many before it as fit half the window.

Only the messages sent to the model change: the run's new messages (what memory keeps, what
the result reports) stay whole. A :class:`~agent_executor.events.CompactedEvent` says so. A
summary that fails is logged, and the call goes out uncompacted.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

from ..errors import ModelError
from ..events import CompactedEvent
from ..memory.compression import HistoryCompressor
from ..messages import AssistantMessage, Message, SystemMessage, ToolMessage, UserMessage
from ..models.base import ModelRequest
from .budget import estimate_input_tokens
from .state import RunState
from .summary_spend import SummarySpend

__all__ = ["SUMMARY_HEADING", "Compactor"]

logger = logging.getLogger("agent_executor.compression")

SUMMARY_HEADING = "\n\nSummary of the earlier steps of this conversation:\n"
"""Where the summary begins in the system prompt (and where an earlier one is found)."""

_ANSWER_ROOM = 1024


class Compactor:
    """Keeps each model request of a run within ``window`` tokens (see the module
    docstring); ``summariser`` writes the summaries."""

    __slots__ = ("_spend", "_summariser", "_window")

    def __init__(
        self, window: int, summariser: HistoryCompressor, spend: SummarySpend | None = None
    ) -> None:
        self._window = window
        self._summariser = summariser
        self._spend = spend

    async def fit(self, run: RunState, tools: list[dict[str, Any]], params: dict[str, Any]) -> None:
        """Compact ``run.messages`` if the next request would not fit."""
        room = params.get("max_tokens") or params.get("max_completion_tokens")
        limit = self._window - int(room or min(_ANSWER_ROOM, self._window // 4))
        before = _tokens(run.messages, tools)
        if before <= limit:
            return
        plan = _plan(run.messages, tools, limit // 2)
        if plan is None:
            return
        system, task, old, kept = plan
        started = time.perf_counter()
        try:
            summary = await self._summariser.summary([*_earlier_summary(system), *old])
        except Exception as exc:  # a failed summary must not fail the run
            logger.warning("compaction inside the run failed, sending it whole: %s", exc)
            if self._spend is not None and isinstance(exc, (ModelError, TimeoutError)):
                await self._spend.charge(run, None, started, ok=False)
            return
        if self._spend is not None:
            await self._spend.charge(run, summary.usage, started)
        head = SystemMessage(content=_prompt(system) + SUMMARY_HEADING + summary.text)
        messages: list[Message] = [head, *([task] if task is not None else []), *kept]
        count = len(run.messages)
        run.messages = messages
        run.emit(CompactedEvent(count, len(messages), before, _tokens(messages, tools)))


def _tokens(messages: Sequence[Message], tools: list[dict[str, Any]]) -> int:
    return estimate_input_tokens(ModelRequest(list(messages), tools))


def _plan(
    messages: Sequence[Message], tools: list[dict[str, Any]], keep_tokens: int
) -> tuple[SystemMessage | None, UserMessage | None, list[Message], list[Message]] | None:
    """``(system prompt, task, turns to summarise, turns to keep)``; ``None`` when there is
    nothing before the last turn to summarise."""
    system = messages[0] if messages and isinstance(messages[0], SystemMessage) else None
    body = list(messages[1:] if system is not None else messages)
    cuts = _cut_points(body)
    if not cuts:
        return None
    cut, end, kept = cuts[-1], len(body), 0
    for start in reversed(cuts):
        kept += _tokens(body[start:end], [])
        if kept > keep_tokens and start != cuts[-1]:
            break
        cut, end = start, start
    old = body[:cut]
    task_at = next(
        (i for i in range(len(old) - 1, -1, -1) if isinstance(old[i], UserMessage)), None
    )
    task = old.pop(task_at) if task_at is not None else None
    if not old:
        return None
    assert task is None or isinstance(task, UserMessage)
    return system, task, old, body[cut:]


def _cut_points(messages: Sequence[Message]) -> list[int]:
    """Where kept turns may start: an assistant message with no earlier call still waiting
    for its result, after at least one message."""
    cuts: list[int] = []
    waiting: set[str] = set()
    for index, message in enumerate(messages):
        if isinstance(message, AssistantMessage):
            if index and not waiting:
                cuts.append(index)
            waiting = {call.id for call in message.tool_calls}
        elif isinstance(message, ToolMessage):
            waiting.discard(message.tool_call_id)
    return cuts


def _prompt(system: SystemMessage | None) -> str:
    """The system prompt without an earlier summary."""
    return "" if system is None else system.content.partition(SUMMARY_HEADING)[0]


def _earlier_summary(system: SystemMessage | None) -> list[Message]:
    """An earlier summary, as a message to summarise again with the turns after it."""
    if system is None or SUMMARY_HEADING not in system.content:
        return []
    return [SystemMessage(content=system.content.partition(SUMMARY_HEADING)[2])]
