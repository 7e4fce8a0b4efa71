"""The conversation a run starts from and what it leaves behind.

A run's history is the command's own ``messages``, or else the session's stored history (made
shorter by the history compressor when it has grown too long). Only a run that succeeded is
saved, as whole turns; a paused run is kept apart (as a :class:`PendingRun`) until it resumes,
so the history never holds a tool call without its result.
"""

from __future__ import annotations

import logging

from ..approvals import PendingRun, PendingRunStore
from ..command import AgentCommand
from ..errors import ErrorCode, StoreUnavailable
from ..memory import (
    ConversationStore,
    HistoryCompressor,
    InMemoryConversationStore,
    compact_history,
)
from ..messages import Message
from ..observability import Metrics
from ..results import ErrorInfo
from .state import RunFailed, RunState

__all__ = ["Conversations"]

logger = logging.getLogger("agent_executor")


class Conversations:
    """Loads and saves the sessions' conversations, and keeps their paused runs (in the
    conversation store when it can keep them, else in this process's memory)."""

    __slots__ = ("_compressor", "_metrics", "memory", "pending_store")

    def __init__(
        self, memory: ConversationStore, compressor: HistoryCompressor | None, metrics: Metrics
    ) -> None:
        self.memory = memory
        self._compressor = compressor
        self._metrics = metrics
        self.pending_store: PendingRunStore = (
            memory if isinstance(memory, PendingRunStore) else InMemoryConversationStore()
        )

    async def load(self, command: AgentCommand) -> list[Message]:
        """The history the run continues (empty without messages or a session)."""
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
        return await compact_history(
            self._compressor,
            self.memory,
            command.user_id,
            command.session_id,
            history,
            self._metrics,
        )

    async def load_paused(self, command: AgentCommand) -> PendingRun:
        """The session's paused run, which the command's approvals settle."""
        if command.session_id is None:
            raise RunFailed(ErrorCode.INVALID_INPUT, "approvals need the session_id of the run")
        paused = await self.pending_store.load_pending(command.user_id, command.session_id)
        if paused is None:
            raise RunFailed(
                ErrorCode.INVALID_INPUT, "nothing in this session is waiting for approval"
            )
        return paused

    async def save(self, run: RunState, paused: PendingRun | None) -> None:
        """Append the run to the history, or keep the ``paused`` run until it resumes."""
        command = run.ctx.command
        if command.session_id is None:
            return
        user, session = command.user_id, command.session_id
        try:
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
