"""The seam every wire dialect plugs into: :class:`Encoder`, and :class:`EventTable` for the
one-table dispatch on an event's type."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypeVar

from agent_executor import AgentEvent

__all__ = ["Encoder", "EventTable"]

_E = TypeVar("_E")


class Encoder(Protocol):
    """Turns one stream's events into bytes on the wire, in order; one encoder per stream.

    ``media_type`` and ``headers`` are the response's (``text/event-stream`` and the dialect's
    own, such as the AI SDK's ``x-vercel-ai-ui-message-stream: v1``); ``opening()`` is written
    before the first event (a ``retry:`` hint, a ``start`` chunk), and the ``done`` event's
    bytes close the stream (``data: [DONE]``, ``RUN_FINISHED``). An event the dialect does not
    show encodes to ``b""``. ``heartbeat`` is what an idle stream is sent to keep proxies from
    closing it (an SSE comment; ``b""``: nothing, for a dialect whose every byte is content).
    """

    media_type: str
    heartbeat: bytes

    @property
    def headers(self) -> Mapping[str, str]: ...

    def opening(self) -> bytes: ...

    def encode(self, event: AgentEvent) -> bytes: ...


class EventTable:
    """An encoder's mapping from event type to the method that encodes it.

    Built once per encoder class from ``{EventClass: method}``; :meth:`encode` looks the event's
    exact type up (one dict lookup, no ``isinstance`` ladder) and returns ``b""`` for a type the
    dialect does not show.
    """

    __slots__ = ("_methods",)

    def __init__(self, methods: Mapping[type[Any], Callable[[Any, Any], bytes]]) -> None:
        self._methods = dict(methods)

    def encode(self, encoder: _E, event: AgentEvent) -> bytes:
        method = self._methods.get(type(event))
        return b"" if method is None else method(encoder, event)
