"""Conversation memory: the :class:`ConversationStore` protocol and the in-memory store.

History is keyed by ``(user_id, session_id)``: the same session id under two users is two
conversations. The executor loads a session's history before a run and appends the run's
messages in one call once the run has completed, so a failed or cancelled run leaves nothing
behind and a stored tool call is always followed by its result.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from ..approvals import PendingRun
from ..errors import ConfigurationError
from ..messages import Message, UserMessage

__all__ = [
    "CompactableStore",
    "ConversationStore",
    "InMemoryConversationStore",
    "UserScopedStore",
]


@runtime_checkable
class ConversationStore(Protocol):
    """Where conversations live between runs."""

    async def load(self, user_id: str | None, session_id: str) -> list[Message]:
        """The session's messages, oldest first (empty for an unknown or expired session)."""
        ...

    async def append(
        self, user_id: str | None, session_id: str, messages: Sequence[Message]
    ) -> None:
        """Add one completed run's messages to the session, all or nothing."""
        ...

    async def delete(self, user_id: str | None, session_id: str) -> bool:
        """Forget the session; true if it existed."""
        ...


@runtime_checkable
class UserScopedStore(Protocol):
    """A store that can forget every session of one user at once (``DELETE /api/sessions``)."""

    async def delete_user(self, user_id: str) -> int: ...


@runtime_checkable
class CompactableStore(Protocol):
    """A store whose history can be compressed in place (see
    :mod:`agent_executor.memory.compression`).

    Optional: a :class:`ConversationStore` that also has ``replace_prefix`` keeps the summaries
    the executor writes; with any other store a compression serves only the run that made it.
    """

    async def replace_prefix(
        self,
        user_id: str | None,
        session_id: str,
        old: Sequence[Message],
        new: Sequence[Message],
    ) -> bool:
        """Replace the first ``len(old)`` messages of the session by ``new``, atomically, if the
        history still starts with exactly ``old`` (compared by value); messages after them stay.

        Returns false and changes nothing otherwise: when another run compacted or trimmed the
        session since ``old`` was loaded, or the session is unknown or expired.
        """
        ...


@dataclass(slots=True)
class _Session:
    messages: list[Message]
    expires_at: float


class InMemoryConversationStore:
    """A process-local store with idle expiry, a bound on sessions and on messages per session.

    A session expires ``ttl_seconds`` after its last use; expired sessions are swept at most
    every ``sweep_interval_seconds`` during normal calls (no background task to manage). Past
    ``max_sessions`` the least recently used session is evicted. Past
    ``max_messages_per_session`` the oldest turns are dropped whole, so the history still starts
    with a user message and never splits a tool call from its result. Runs paused for a
    person's approval are kept apart from the history (``save_pending``), with the same TTL.
    """

    def __init__(
        self,
        *,
        ttl_seconds: float = 3600.0,
        max_sessions: int = 10_000,
        max_messages_per_session: int = 200,
        sweep_interval_seconds: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if ttl_seconds <= 0 or max_sessions < 1 or max_messages_per_session < 1:
            raise ConfigurationError("ttl_seconds, max_sessions and max_messages must be positive")
        self.ttl_seconds = ttl_seconds
        self.max_sessions = max_sessions
        self.max_messages_per_session = max_messages_per_session
        self._sweep_interval = sweep_interval_seconds
        self._clock = clock
        self._sessions: OrderedDict[tuple[str, str], _Session] = OrderedDict()
        self._pending: OrderedDict[tuple[str, str], tuple[PendingRun, float]] = OrderedDict()
        self._last_sweep = clock()

    def __len__(self) -> int:
        return len(self._sessions)

    async def load(self, user_id: str | None, session_id: str) -> list[Message]:
        """The session's messages, refreshing its expiry."""
        session = self._touch(_key(user_id, session_id))
        return list(session.messages) if session else []

    async def append(
        self, user_id: str | None, session_id: str, messages: Sequence[Message]
    ) -> None:
        """Add a completed run's messages, then enforce the bounds."""
        key = _key(user_id, session_id)
        session = self._touch(key)
        if session is None:
            session = _Session([], 0.0)
            self._sessions[key] = session
        session.messages.extend(messages)
        session.expires_at = self._clock() + self.ttl_seconds
        _trim(session.messages, self.max_messages_per_session)
        while len(self._sessions) > self.max_sessions:
            self._sessions.popitem(last=False)

    async def replace_prefix(
        self,
        user_id: str | None,
        session_id: str,
        old: Sequence[Message],
        new: Sequence[Message],
    ) -> bool:
        """Swap the history's prefix ``old`` for ``new`` if it is unchanged, refreshing the
        session's expiry; see :meth:`CompactableStore.replace_prefix`."""
        session = self._touch(_key(user_id, session_id))
        if session is None or session.messages[: len(old)] != list(old):
            return False
        session.messages[: len(old)] = new
        return True

    async def delete(self, user_id: str | None, session_id: str) -> bool:
        """Forget the session and a run of it waiting for approval; true if either existed."""
        paused = self._pending.pop(_key(user_id, session_id), None)
        return (self._sessions.pop(_key(user_id, session_id), None) or paused) is not None

    async def delete_user(self, user_id: str) -> int:
        """Forget every session of ``user_id`` (histories and paused runs); how many."""
        keys = {key for key in (*self._sessions, *self._pending) if key[0] == user_id}
        for key in keys:
            self._sessions.pop(key, None)
            self._pending.pop(key, None)
        return len(keys)

    async def save_pending(self, user_id: str | None, session_id: str, run: PendingRun) -> None:
        """Keep a paused run of the session until it resumes or ``ttl_seconds`` pass."""
        key = _key(user_id, session_id)
        self._pending.pop(key, None)
        self._pending[key] = (run, self._clock() + self.ttl_seconds)
        while len(self._pending) > self.max_sessions:
            self._pending.popitem(last=False)

    async def load_pending(self, user_id: str | None, session_id: str) -> PendingRun | None:
        """The session's paused run, if it has one that has not expired."""
        entry = self._pending.get(_key(user_id, session_id))
        if entry is None or entry[1] <= self._clock():
            return None
        return entry[0]

    async def delete_pending(self, user_id: str | None, session_id: str) -> None:
        """Forget the session's paused run."""
        self._pending.pop(_key(user_id, session_id), None)

    def _touch(self, key: tuple[str, str]) -> _Session | None:
        now = self._clock()
        if now - self._last_sweep >= self._sweep_interval:
            self._sweep(now)
        session = self._sessions.get(key)
        if session is None:
            return None
        if session.expires_at <= now:
            del self._sessions[key]
            return None
        session.expires_at = now + self.ttl_seconds
        self._sessions.move_to_end(key)
        return session

    def _sweep(self, now: float) -> None:
        # Expiry is refreshed on every use, so least recently used order is expiry order.
        self._last_sweep = now
        while self._sessions:
            key, session = next(iter(self._sessions.items()))
            if session.expires_at > now:
                break
            del self._sessions[key]


def _key(user_id: str | None, session_id: str) -> tuple[str, str]:
    return (user_id or "", session_id)


def _trim(messages: list[Message], limit: int) -> None:
    """Drop the oldest turns (each starts at a user message) until ``limit`` holds."""
    if len(messages) <= limit:
        return
    starts = [i for i, m in enumerate(messages) if isinstance(m, UserMessage)]
    cut = next((i for i in starts if len(messages) - i <= limit), starts[-1] if starts else 0)
    del messages[:cut]
