"""Assembly of streamed tool-call fragments into complete calls (pure and synchronous).

Providers stream a turn's tool calls as fragments keyed by ``index``: the id and name usually
arrive in a call's first fragment only, the JSON arguments in many pieces, and fragments of
several calls may interleave. Some providers omit the index (read as 0) or the id (one is
generated), and a few reuse index 0 for every parallel call but give each its own id, so a new
id at an index that already has one starts a new call.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable

from .messages import ToolCall
from .models.base import ToolCallDelta

__all__ = ["ToolCallAssembler"]


class _PartialCall:
    __slots__ = ("arguments", "handed_out", "id", "name")

    def __init__(self) -> None:
        self.id = ""
        self.name = ""
        self.arguments: list[str] = []
        self.handed_out = False

    def complete(self) -> ToolCall:
        if not self.id:
            self.id = f"call_{uuid.uuid4().hex[:24]}"
        return ToolCall(
            id=self.id, name=self.name, arguments="".join(self.arguments).strip() or "{}"
        )


class ToolCallAssembler:
    """Collects :class:`ToolCallDelta` fragments of one model turn, in arrival order.

    :meth:`add` also says when a call is finished before the turn ends: when fragments of
    another call begin and the call's arguments already form a complete JSON object (so
    interleaved fragments of unfinished calls are never mistaken for finished ones). The
    executor starts ``eager`` tools at that moment.
    """

    __slots__ = ("_active", "_calls", "_current")

    def __init__(self) -> None:
        self._calls: list[_PartialCall] = []
        self._current: dict[int, _PartialCall] = {}
        self._active: _PartialCall | None = None

    def __bool__(self) -> bool:
        return bool(self._calls)

    def add(self, delta: ToolCallDelta) -> ToolCall | None:
        """Add one fragment; return the previous call if this one showed that it is finished."""
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
        previous, self._active = self._active, call
        if previous is None or previous is call or previous.handed_out:
            return None
        return _finished(previous)

    def add_all(self, deltas: Iterable[ToolCallDelta]) -> None:
        """Add several fragments, in order."""
        for delta in deltas:
            self.add(delta)

    def calls(self) -> list[ToolCall]:
        """The assembled calls in the order they began; missing ids are generated."""
        return [call.complete() for call in self._calls]


def _finished(call: _PartialCall) -> ToolCall | None:
    try:
        arguments = json.loads("".join(call.arguments) or "{}")
    except ValueError:
        return None
    if not isinstance(arguments, dict) or not call.name:
        return None
    call.handed_out = True
    return call.complete()
