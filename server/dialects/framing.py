"""Server-Sent Events framing: bytes on the wire, no I/O.

Framing follows the WHATWG event-stream rules: each event has an ``id:``, an ``event:`` (the
event type) and one ``data:`` line per line of its data, so text containing line breaks comes
back intact (CR and CRLF arrive as LF, as the format defines; ``json`` mode escapes them, so
every character survives). An idle stream gets a ``:`` comment as a heartbeat; ``retry:``
tells a browser's ``EventSource`` how soon to reconnect when the connection drops.
"""

from __future__ import annotations

import re

__all__ = ["HEARTBEAT", "SSE_HEADERS", "frame", "retry"]

SSE_HEADERS = {
    "Content-Type": "text/event-stream",
    "Cache-Control": "no-cache",
    "X-Accel-Buffering": "no",
    "Connection": "keep-alive",
}
HEARTBEAT = b": heartbeat\n\n"

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def frame(event: str, data: str, event_id: int | str) -> bytes:
    """One event on the wire: ``id``, ``event`` and a ``data:`` line per line of ``data``."""
    if "\n" in data or "\r" in data:
        data = "\ndata: ".join(_LINE_BREAK.split(data))
    text = f"id: {event_id}\nevent: {event}\ndata: {data}\n\n"
    return text.encode("utf-8", "replace")


def retry(milliseconds: int) -> bytes:
    """The ``retry:`` field line (to go in an event's block): how long ``EventSource`` waits
    before it reconnects."""
    return b"retry: %d\n" % milliseconds
