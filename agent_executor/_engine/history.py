"""The conversation a run starts from and what it leaves behind.

A run's history is the command's own ``messages``, or else the session's stored history (made
shorter by the history compressor when it has grown too long). Only a run that succeeded is
saved, as whole turns; a paused run is kept apart (as a :class:`PendingRun`) until it resumes,
so the history never holds a tool call without its result.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable

from ..approvals import PendingRun, PendingRunStore
from ..command import AgentCommand
from ..errors import ErrorCode, StoreUnavailable
from ..memory import (
    ConversationStore,
    HistoryCompressor,
    InMemoryConversationStore,
    compact_history,
)
from ..messages import AssistantMessage, Message, ToolMessage, Usage, UserMessage
from ..observability import Metrics
from ..results import ErrorInfo
from .state import RunFailed, RunState
from .summary_spend import SummarySpend

__all__ = ["Conversations", "before_paused"]

logger = logging.getLogger("agent_executor")


class Conversations:
    """Loads and saves the sessions' conversations, and keeps their paused runs (in the
    conversation store when it can keep them, else in this process's memory)."""

    __slots__ = ("_compressor", "_metrics", "_spend", "memory", "pending_store")

    def __init__(
        self,
        memory: ConversationStore,
        compressor: HistoryCompressor | None,
        metrics: Metrics,
        spend: SummarySpend | None = None,
    ) -> None:
        self.memory = memory
        self._compressor = compressor
        self._metrics = metrics
        self._spend = spend
        self.pending_store: PendingRunStore = (
            memory if isinstance(memory, PendingRunStore) else InMemoryConversationStore()
        )

    async def load(self, run: RunState, command: AgentCommand) -> list[Message]:
        """The history ``run`` continues (empty without messages or a session); a summary
        made to shorten it is charged to ``run``."""
        if command.messages is not None:
            return list(command.messages)
        if command.session_id is None:
            return []
        try:
            history = await self.memory.load(command.user_id, command.session_id)
        except StoreUnavailable:
            raise  # reported with its own message by the driver
        except Exception:
            logger.exception("loading the conversation failed")
            raise RunFailed(
                ErrorCode.INTERNAL_ERROR, "the conversation store is unavailable"
            ) from None
        if self._compressor is None:
            return history
        spend, started = self._spend, time.perf_counter()

        async def spent(usage: Usage | None, ok: bool) -> None:
            if spend is not None:
                await spend.charge(run, usage, started, ok=ok)

        return await compact_history(
            self._compressor,
            self.memory,
            command.user_id,
            command.session_id,
            history,
            self._metrics,
            spent=spent,
        )

    async def load_paused(self, command: AgentCommand) -> PendingRun:
        """The paused run the command resumes: the session's, or, without a session, the one
        that handed back the client calls whose results the command gives.

        A command giving the whole conversation again (``messages``, as OpenAI clients send
        it) whose paused run is not kept (expired, or kept by a replica without a shared
        store) goes on from the conversation's last assistant turn, as the client saw it.
        """
        results = [result.call_id for result in command.tool_results or ()]
        key = command.session_id or (_calls_key(results) if results else None)
        if key is None:
            raise RunFailed(ErrorCode.INVALID_INPUT, "approvals need the session_id of the run")
        paused = await self.pending_store.load_pending(command.user_id, key)
        if paused is not None and _fits(paused, command):
            return paused
        from_messages = _from_messages(command)
        if from_messages is not None:
            return from_messages
        if results:
            raise RunFailed(
                ErrorCode.INVALID_INPUT,
                f"no run is waiting for the results of the calls {sorted(results)}",
            )
        raise RunFailed(ErrorCode.INVALID_INPUT, "nothing in this session is waiting for approval")

    async def save(self, run: RunState, paused: PendingRun | None) -> None:
        """Append the run to the history, or keep the ``paused`` run until it resumes."""
        command = run.ctx.command
        user, session = command.user_id, command.session_id
        try:
            if session is None:
                await self._save_sessionless(command, paused)
                return
            if paused is not None:
                await self.pending_store.save_pending(user, session, paused)
                return
            await self.pending_store.delete_pending(user, session)  # the conversation moved on
            if command.messages is None:
                await self.memory.append(user, session, run.new_messages)
        except StoreUnavailable as exc:  # the store logged its reason
            message = f"the conversation could not be saved: {exc}"
            run.fail(ErrorInfo(code=ErrorCode.UNAVAILABLE.value, message=message))
        except Exception:
            logger.exception("saving the conversation failed")
            run.fail(
                ErrorInfo(
                    code=ErrorCode.INTERNAL_ERROR.value,
                    message="the conversation could not be saved",
                )
            )

    async def _save_sessionless(self, command: AgentCommand, paused: PendingRun | None) -> None:
        """Without a session only a run that handed calls back to the client is kept, under
        its calls' ids; the paused run it went on with is forgotten."""
        user = command.user_id
        if command.tool_results:
            resumed = _calls_key(result.call_id for result in command.tool_results)
            await self.pending_store.delete_pending(user, resumed)
        if paused is not None and paused.client_calls:
            key = _calls_key(call.id for call in paused.client_calls)
            await self.pending_store.save_pending(user, key, paused)


def _calls_key(call_ids: Iterable[str]) -> str:
    """Where a run without a session waits for its client calls' results: under their ids
    (the model's ids; providers make them unique), which the resuming command gives back."""
    return "tool-calls:" + ",".join(sorted(call_ids))


def _fits(paused: PendingRun, command: AgentCommand) -> bool:
    """Whether the command's messages still hold the conversation the paused run went on."""
    return command.messages is None or before_paused(command.messages, paused) is not None


def before_paused(messages: list[Message], paused: PendingRun) -> list[Message] | None:
    """The part of a resuming command's ``messages`` before the paused run: they end with the
    client's view of it, which the paused run's own messages replace. The run began with the
    user's message, found again by its content (the client may have changed what came before:
    an instructions message, an earlier turn); a run that began otherwise is cut where it
    began. ``None`` when the messages no longer hold it."""
    first = paused.messages[0] if paused.messages else None
    if isinstance(first, UserMessage):
        for index in range(len(messages) - 1, -1, -1):
            if messages[index] == first:
                return messages[:index]
        return None
    length = paused.history_length
    return None if length is None or length > len(messages) else messages[:length]


def _from_messages(command: AgentCommand) -> PendingRun | None:
    """A paused run made from the conversation the command gives: its last assistant turn,
    whose calls not answered after it the command's results answer (``None`` if it has no
    such turn)."""
    messages = command.messages
    if not command.tool_results or not messages:
        return None
    turn = next(
        (i for i in range(len(messages) - 1, -1, -1) if isinstance(messages[i], AssistantMessage)),
        None,
    )
    if turn is None:
        return None
    assistant = messages[turn]
    assert isinstance(assistant, AssistantMessage)
    results = [m for m in messages[turn + 1 :] if isinstance(m, ToolMessage)]
    answered = {m.tool_call_id for m in results}
    calls = [call for call in assistant.tool_calls if call.id not in answered]
    if not calls:
        return None
    return PendingRun(
        messages=[assistant],
        results=results,
        pending=[],
        client_calls=calls,
        history_length=turn,
    )
