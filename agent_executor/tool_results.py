"""``ToolResults``: where a frontend tool's answer meets the run waiting for it.

The run registers each frontend call (:meth:`ToolResults.expect`) and waits; the client runs
the tool and delivers the answer (:meth:`ToolResults.deliver`, ``POST /api/chat/tool-result`` in
the service). Only the run's own user can deliver; an unknown, expired or someone else's call
id is ``unknown`` (the service answers 404 and does not say which), and a second answer to the
same call is ``answered`` (409). Either way nothing changes.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["ClientToolError", "Delivery", "ToolResults"]

Delivery = Literal["delivered", "unknown", "answered"]


class ClientToolError(Exception):
    """The client reported that running its tool failed; the message goes to the model."""


@dataclass(slots=True)
class _Waiting:
    user_id: str | None
    future: asyncio.Future[tuple[Any, str | None]]


class ToolResults:
    """Frontend calls waiting for their client's answer (one registry per executor)."""

    def __init__(self, *, remember: int = 10_000) -> None:
        self._waiting: dict[str, _Waiting] = {}
        self._answered: OrderedDict[str, str | None] = OrderedDict()  # call id -> user
        self._remember = remember

    def __len__(self) -> int:
        return len(self._waiting)

    def expect(self, call_id: str, user_id: str | None) -> asyncio.Future[tuple[Any, str | None]]:
        """Register a call; the future resolves to ``(result, error)`` when the client answers."""
        future: asyncio.Future[tuple[Any, str | None]] = asyncio.get_running_loop().create_future()
        self._waiting[call_id] = _Waiting(user_id, future)
        return future

    def forget(self, call_id: str) -> None:
        """The run stopped waiting (answered, timed out or cancelled)."""
        self._waiting.pop(call_id, None)

    def waiting_for(self, call_id: str, user_id: str | None) -> bool:
        """Whether ``call_id`` is waiting for an answer from ``user_id``."""
        waiting = self._waiting.get(call_id)
        return waiting is not None and waiting.user_id == user_id

    def deliver(
        self, call_id: str, user_id: str | None, *, result: Any = None, error: str | None = None
    ) -> Delivery:
        """Hand the client's answer to the waiting run."""
        waiting = self._waiting.get(call_id)
        if waiting is None or waiting.user_id != user_id:
            answered = waiting is None and call_id in self._answered
            return "answered" if answered and self._answered[call_id] == user_id else "unknown"
        del self._waiting[call_id]
        self._answered[call_id] = user_id
        while len(self._answered) > self._remember:
            self._answered.popitem(last=False)
        if not waiting.future.done():
            waiting.future.set_result((result, error))
        return "delivered"
