"""``ScriptedModel``: a deterministic model that plays scripted turns at the chunk level.

For tests and examples. Each call to :meth:`ScriptedModel.stream` plays the next turn of the
script, exactly as a provider would stream it: text in pieces, tool calls split into argument
fragments (interleaved if asked), usage, a finish reason, pauses and failures where placed.
Every request is recorded in :attr:`ScriptedModel.requests`, and a call past the end of the
script raises :class:`~agent_executor.errors.ScriptExhaustedError`.

A turn is one of:

- a ``str``: streamed word by word, finish reason ``stop``;
- a sequence of items: :class:`ModelChunk`, :class:`Pause` (sleep) or an exception (raised at
  that point; an exception first simulates a failure before the first chunk);
- an exception: the call fails before streaming anything;
- a callable ``(request) -> turn``: computes the turn from the request (like a FunctionModel).

Builders: :func:`text_turn`, :func:`tool_turn` with :func:`call`, :func:`usage_chunk`.
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

import anyio

from ..errors import ScriptExhaustedError
from ..messages import Usage
from .base import ModelChunk, ModelRequest, ToolCallDelta

__all__ = [
    "Pause",
    "ScriptItem",
    "ScriptedCall",
    "ScriptedModel",
    "ScriptedTurn",
    "call",
    "text_turn",
    "tool_turn",
    "usage_chunk",
]


@dataclass(frozen=True, slots=True)
class Pause:
    """Sleep ``seconds`` at this point of a scripted turn (a slow or stalled provider)."""

    seconds: float


ScriptItem: TypeAlias = "ModelChunk | Pause | BaseException"
ScriptedTurn: TypeAlias = (
    "str | Sequence[ScriptItem] | BaseException | Callable[[ModelRequest], ScriptedTurn]"
)

_WORD_RE = re.compile(r"\s*\S+\s*|\s+")


class ScriptedModel:
    """Plays one scripted turn per model call; see the module docstring for the turn forms."""

    def __init__(
        self, turns: Iterable[ScriptedTurn] = (), *, name: str = "scripted", delay: float = 0.0
    ) -> None:
        self._name = name
        self._turns: deque[ScriptedTurn] = deque(turns)
        self._delay = delay
        self.requests: list[ModelRequest] = []

    @property
    def name(self) -> str:
        """The model name used in metrics and logs."""
        return self._name

    @property
    def remaining(self) -> int:
        """Turns not played yet."""
        return len(self._turns)

    def add(self, *turns: ScriptedTurn) -> None:
        """Append turns to the script."""
        self._turns.extend(turns)

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        """Play the next turn."""
        self.requests.append(
            ModelRequest(list(request.messages), list(request.tools), dict(request.params))
        )
        if not self._turns:
            raise ScriptExhaustedError(
                f"ScriptedModel {self._name!r} was called {len(self.requests)} times but only "
                f"{len(self.requests) - 1} turns were scripted"
            )
        for item in _items(self._turns.popleft(), request):
            if isinstance(item, Pause):
                await anyio.sleep(item.seconds)
            elif isinstance(item, BaseException):
                raise item
            else:
                if self._delay:
                    await anyio.sleep(self._delay)
                yield item


def _items(turn: ScriptedTurn, request: ModelRequest) -> Sequence[ScriptItem]:
    while callable(turn) and not isinstance(turn, BaseException):
        turn = turn(request)
    if isinstance(turn, str):
        return text_turn(turn)
    if isinstance(turn, BaseException):
        return [turn]
    return turn


@dataclass(frozen=True, slots=True)
class ScriptedCall:
    """A tool call for :func:`tool_turn`; ``id=None`` streams it without an id."""

    name: str
    arguments: str
    id: str | None


def call(
    name: str,
    arguments: dict[str, Any] | str | None = None,
    *,
    id: str | None = "auto",
) -> ScriptedCall:
    """A scripted tool call; ``arguments`` as a dict or raw (possibly invalid) JSON text.

    ``id="auto"`` derives an id from the call's position in its turn (``call_0``, ...).
    """
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments or {})
    return ScriptedCall(name=name, arguments=raw, id=id)


def usage_chunk(input_tokens: int, output_tokens: int) -> ModelChunk:
    """A chunk carrying only token usage, as providers send at the end of a stream."""
    return ModelChunk(usage=Usage(input_tokens=input_tokens, output_tokens=output_tokens))


def text_turn(
    text: str,
    *,
    chunk_size: int | None = None,
    usage: tuple[int, int] | None = None,
    finish_reason: str | None = "stop",
) -> list[ScriptItem]:
    """Text streamed word by word (or in ``chunk_size``-character pieces)."""
    items: list[ScriptItem] = [ModelChunk(text=piece) for piece in _split(text, chunk_size)]
    items.append(ModelChunk(finish_reason=finish_reason))
    if usage is not None:
        items.append(usage_chunk(*usage))
    return items


def tool_turn(
    *calls: ScriptedCall,
    text: str = "",
    fragment_size: int | None = None,
    interleave: bool = False,
    with_index: bool = True,
    usage: tuple[int, int] | None = None,
    finish_reason: str | None = "tool_calls",
) -> list[ScriptItem]:
    """Optional text, then tool calls streamed as fragments like a provider does.

    Each call's first fragment carries its index, id and name; its JSON arguments follow in
    ``fragment_size``-character pieces (all at once if ``None``). ``interleave`` alternates the
    fragments of the calls round-robin; ``with_index=False`` omits indexes (read as 0).
    """
    items: list[ScriptItem] = [ModelChunk(text=piece) for piece in _split(text, None)]
    streams = [_fragments(i, c, fragment_size, with_index) for i, c in enumerate(calls)]
    if interleave:
        longest = max((len(s) for s in streams), default=0)
        ordered = [s[k] for k in range(longest) for s in streams if k < len(s)]
    else:
        ordered = [delta for stream in streams for delta in stream]
    items.extend(ModelChunk(tool_calls=(delta,)) for delta in ordered)
    items.append(ModelChunk(finish_reason=finish_reason))
    if usage is not None:
        items.append(usage_chunk(*usage))
    return items


def _fragments(
    index: int, scripted: ScriptedCall, size: int | None, with_index: bool
) -> list[ToolCallDelta]:
    raw = scripted.arguments
    pieces = [raw[i : i + size] for i in range(0, len(raw), size)] if size else [raw]
    call_id = f"call_{index}" if scripted.id == "auto" else scripted.id
    idx = index if with_index else None
    first = ToolCallDelta(index=idx, id=call_id, name=scripted.name, arguments="")
    return [first, *(ToolCallDelta(index=idx, arguments=piece) for piece in pieces if piece)]


def _split(text: str, size: int | None) -> list[str]:
    if not text:
        return []
    if size:
        return [text[i : i + size] for i in range(0, len(text), size)]
    return _WORD_RE.findall(text)
