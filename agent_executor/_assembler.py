"""Assembly of streamed tool-call fragments into complete calls (pure and synchronous).

Providers stream a turn's tool calls as fragments keyed by ``index``: the id and name usually
arrive in a call's first fragment only, the JSON arguments in many pieces, and fragments of
several calls may interleave. Some providers omit the index (read as 0) or the id (one is
generated), and a few reuse index 0 for every parallel call but give each its own id, so a new
id at an index that already has one starts a new call.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from .messages import ToolCall
from .models.base import ToolCallDelta

__all__ = ["ToolCallAssembler"]


class _PartialCall:
    __slots__ = ("arguments", "id", "name")

    def __init__(self) -> None:
        self.id = ""
        self.name = ""
        self.arguments: list[str] = []


class ToolCallAssembler:
    """Collects :class:`ToolCallDelta` fragments of one model turn, in arrival order."""

    __slots__ = ("_calls", "_current")

    def __init__(self) -> None:
        self._calls: list[_PartialCall] = []
        self._current: dict[int, _PartialCall] = {}

    def __bool__(self) -> bool:
        return bool(self._calls)

    def add(self, delta: ToolCallDelta) -> None:
        """Add one fragment."""
        index = delta.index or 0
        call = self._current.get(index)
        if call is None or (delta.id and call.id and delta.id != call.id):
            call = _PartialCall()
            self._current[index] = call
            self._calls.append(call)
        if delta.id and not call.id:
            call.id = delta.id
        if delta.name and not call.name:
            call.name = delta.name
        if delta.arguments:
            call.arguments.append(delta.arguments)

    def add_all(self, deltas: Iterable[ToolCallDelta]) -> None:
        """Add several fragments, in order."""
        for delta in deltas:
            self.add(delta)

    def calls(self) -> list[ToolCall]:
        """The assembled calls in the order they began; missing ids are generated."""
        return [
            ToolCall(
                id=call.id or f"call_{uuid.uuid4().hex[:24]}",
                name=call.name,
                arguments="".join(call.arguments).strip() or "{}",
            )
            for call in self._calls
        ]
