"""Assembly of streamed tool-call fragments into complete calls (pure and synchronous).

Providers stream a turn's tool calls as fragments, and no two do it quite alike (the
conformance fixtures in ``tests/conformance/`` name each shape and its public source):

- OpenAI keys fragments by ``index``, sends ``id`` and ``name`` once, then the arguments in
  pieces; fragments of several calls may interleave.
- Some omit ``index`` (Gemini, older Ollama): a fragment without one belongs to the call being
  written, unless it starts a new call.
- Some reuse ``index: 0`` for every parallel call with distinct ids (Ollama), or start at 1.
- Some repeat ``id`` and ``name`` on every fragment (MiniMax, NIM, Fireworks), or split the
  name into pieces (a fragment is appended unless it equals the name held).
- Some send whole calls, or all calls, in one chunk (Groq, Mistral), or ids that are empty,
  missing or change from fragment to fragment (Gemini, LM Studio).

A fragment starts a new call when it cannot belong to the one held: a different ``id`` with
another name or after complete arguments, a different name once arguments have begun, or more
arguments after a complete JSON object. Every call ends with an id of its own, unique in the
turn: the provider's first one, or one generated here; that id is what goes back to the model.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable
from typing import Any

from .._json_outline import JsonOutline
from ..messages import ToolCall
from ..models.base import ToolCallDelta

__all__ = ["ToolCallAssembler"]


class _PartialCall:
    __slots__ = (
        "_complete",
        "_shape",
        "arguments",
        "fields",
        "handed_out",
        "id",
        "indexed",
        "name",
        "result",
    )

    def __init__(self) -> None:
        self.indexed = False
        self.id = ""
        self.name = ""
        self.arguments: list[str] = []
        self.fields: dict[str, Any] = {}
        self.handed_out = False
        self.result: ToolCall | None = None
        self._shape = _Shape()
        self._complete: bool | None = None  # complete_arguments() of the arguments so far

    def absorb(self, delta: ToolCallDelta) -> None:
        if delta.id and not self.id:
            self.id = delta.id
        name = delta.name
        if name and name != self.name:
            self.name = name if not self.name else self.name + name
        if delta.arguments:
            self.arguments.append(delta.arguments)
            self._shape.read(delta.arguments)
            self._complete = None
        if delta.provider_fields:
            self.fields.update(delta.provider_fields)

    def starts_anew(self, delta: ToolCallDelta) -> bool:
        """Whether ``delta`` cannot be a fragment of this call (see the module docstring)."""
        if delta.id and self.id and delta.id != self.id:
            return bool(delta.name and delta.name != self.name) or self.complete_arguments()
        if not self.arguments or (delta.id and delta.id == self.id):
            return False
        if delta.name and delta.name != self.name:
            return True
        return bool(delta.arguments) and self.complete_arguments()

    def complete_arguments(self) -> bool:
        """Whether the arguments so far are one whole JSON object. Asked at every fragment,
        so parsed only when :class:`_Shape` says they may be one, and once."""
        if self._complete is None:
            self._complete = self._shape.closed and _is_object("".join(self.arguments))
        return self._complete

    def complete(self, taken: set[str]) -> ToolCall:
        if self.result is None:
            if not self.id or self.id in taken:
                self.id = f"call_{uuid.uuid4().hex[:24]}"
            self.result = ToolCall(
                id=self.id,
                name=self.name,
                arguments="".join(self.arguments).strip() or "{}",
                provider_fields=self.fields,
            )
        taken.add(self.id)
        return self.result


def _is_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


class _Shape:
    """Whether JSON text read a fragment at a time is, so far, one object whose braces have
    closed with only whitespace after. A fragment costs its own length, where parsing all
    the arguments at every fragment made a long argument (a file a tool writes) quadratic."""

    __slots__ = ("_outline", "_state")

    _EMPTY, _OPEN, _CLOSED, _OTHER = range(4)

    def __init__(self) -> None:
        self._state = self._EMPTY
        self._outline = JsonOutline()

    @property
    def closed(self) -> bool:
        return self._state == self._CLOSED

    def read(self, text: str) -> None:
        if self._state == self._OTHER:
            return
        outline = self._outline
        for _, char in outline.marks(text):
            if self._state == self._OPEN:
                if char in "}]" and outline.depth == 1:
                    self._state = self._CLOSED
            elif self._state == self._EMPTY and char == "{":
                self._state = self._OPEN
            else:
                self._state = self._OTHER  # not an object, or more after one
                return


class ToolCallAssembler:
    """Collects :class:`ToolCallDelta` fragments of one model turn, in arrival order.

    :meth:`add` also says when a call is finished before the turn ends: when fragments of
    another call begin and the call's arguments already form a complete JSON object (so
    interleaved fragments of unfinished calls are never mistaken for finished ones). The
    executor starts ``eager`` tools at that moment.
    """

    __slots__ = ("_active", "_calls", "_current", "_ids")

    def __init__(self) -> None:
        self._calls: list[_PartialCall] = []
        self._current: dict[int, _PartialCall] = {}
        self._active: _PartialCall | None = None
        self._ids: set[str] = set()

    def __bool__(self) -> bool:
        return bool(self._calls)

    def add(self, delta: ToolCallDelta) -> ToolCall | None:
        """Add one fragment; return the previous call if this one showed that it is finished."""
        index = delta.index
        if index is None:
            call = self._active
        else:
            call = self._current.get(index)
            if call is None and self._active is not None and not self._active.indexed:
                call = self._active  # the index arrives after the call's first fragment
        if call is None or call.starts_anew(delta):
            call = _PartialCall()
            self._calls.append(call)
        if index is not None:
            self._current[index] = call
            call.indexed = True
        call.absorb(delta)
        previous, self._active = self._active, call
        if previous is None or previous is call or previous.handed_out:
            return None
        return self._finished(previous)

    def add_all(self, deltas: Iterable[ToolCallDelta]) -> None:
        """Add several fragments, in order."""
        for delta in deltas:
            self.add(delta)

    def calls(self) -> list[ToolCall]:
        """The assembled calls in the order they began, each with an id unique in the turn."""
        return [call.complete(self._ids) for call in self._calls]

    def _finished(self, call: _PartialCall) -> ToolCall | None:
        if not call.name or not call.complete_arguments():
            return None
        call.handed_out = True
        return call.complete(self._ids)
