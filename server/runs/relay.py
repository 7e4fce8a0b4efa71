"""The :class:`RemoteRun` a client re-attaches to when its run goes on (or went on) on another
replica (``--redis-url``; the relay that finds it is ``RunHub``'s ``RunRelay``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol

from agent_executor import AgentEvent, ErrorCode, ErrorEvent

from ..dialects import Encoder
from ..dialects.registry import encoder_at

__all__ = ["REPLICA_GONE", "Reader", "RemoteRun"]

REPLICA_GONE = ErrorEvent(
    code=ErrorCode.UNAVAILABLE.value,
    message="the replica running the run went away before it finished",
)
"""The error that ends the stream of a client reading a run of another replica whose events
stopped without ``done``: that replica died, or lost Redis, and its lease ran out."""


class Reader(Protocol):
    """What a re-attached client reads: events, those waiting at once, and a way to stop."""

    def __aiter__(self) -> AsyncIterator[AgentEvent]: ...

    async def __anext__(self) -> AgentEvent: ...

    def drain_nowait(self) -> list[AgentEvent]: ...

    async def aclose(self) -> None: ...


class RemoteRun:
    """A run another replica runs (or ran), as a re-attaching client here needs it: whose it
    is, its dialect, where its ``done`` is, and its events (:meth:`reader`)."""

    def __init__(
        self,
        run_id: str,
        *,
        user_id: str | None,
        dialect: str,
        done_at: int | None,
        overflowed: bool,
    ) -> None:
        self.run_id = run_id
        self.user_id = user_id
        self.dialect = dialect
        self.done_at = done_at
        """The position of the run's ``done`` (``None`` while it goes on)."""
        self.overflowed = overflowed

    def belongs_to(self, user_id: str | None) -> bool:
        return self.user_id == user_id

    def encoder(self, start: int = 0) -> Encoder:
        return encoder_at(self.dialect)(self.run_id, start)

    def reader(self, start: int) -> Reader:
        """The run's events from ``start`` on, until its ``done``."""
        raise NotImplementedError

    def attach(self) -> None:
        """A client reads the run here (the replica running it must not abandon it)."""

    def detach(self) -> None:
        """The client stopped reading."""
