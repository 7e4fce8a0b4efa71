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
from typing import Any, Literal

__all__ = ["ClientToolError", "Delivery", "ToolResults"]

Delivery = Literal["delivered", "unknown", "answered"]


class ClientToolError(Exception):
    """The client reported that running its tool failed; the message goes to the model."""


class ToolResults:
    """Frontend calls waiting for their client's answer (one registry per executor).

    Calls are keyed by user and call id, so two users' runs never meet even when a model
    reuses ids (``call_0``); one user's two runs waiting on the same id at once cannot be told
    apart, so the second call fails (:class:`ClientToolError`) instead of taking the first's
    answer.
    """

    def __init__(self, *, remember: int = 10_000) -> None:
        self._waiting: dict[tuple[str | None, str], asyncio.Future[tuple[Any, str | None]]] = {}
        self._answered: OrderedDict[tuple[str | None, str], None] = OrderedDict()
        self._remember = remember

    def __len__(self) -> int:
        return len(self._waiting)

    def expect(self, call_id: str, user_id: str | None) -> asyncio.Future[tuple[Any, str | None]]:
        """Register a call; the future resolves to ``(result, error)`` when the client answers."""
        key = (user_id, call_id)
        if key in self._waiting:
            raise ClientToolError(
                f"another call with id {call_id!r} is already waiting for this user's answer"
            )
        future: asyncio.Future[tuple[Any, str | None]] = asyncio.get_running_loop().create_future()
        self._waiting[key] = future
        self._answered.pop(key, None)
        return future

    def forget(self, call_id: str, user_id: str | None, future: asyncio.Future[Any]) -> None:
        """The run stopped waiting for ``future`` (answered, timed out or cancelled)."""
        key = (user_id, call_id)
        if self._waiting.get(key) is future:
            del self._waiting[key]

    def waiting_for(self, call_id: str, user_id: str | None) -> bool:
        """Whether ``call_id`` is waiting for an answer from ``user_id``."""
        return (user_id, call_id) in self._waiting

    def deliver(
        self, call_id: str, user_id: str | None, *, result: Any = None, error: str | None = None
    ) -> Delivery:
        """Hand the client's answer to the waiting run."""
        key = (user_id, call_id)
        future = self._waiting.pop(key, None)
        if future is None:
            return "answered" if key in self._answered else "unknown"
        self._answered[key] = None
        while len(self._answered) > self._remember:
            self._answered.popitem(last=False)
        if not future.done():
            future.set_result((result, error))
        return "delivered"
