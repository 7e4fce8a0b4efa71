"""Server-Sent Events: the open streams of an app (:mod:`.streams`: writer, monitor, shutdown
drain). What goes on the wire is a dialect's business (``server/dialects``, whose ``framing``
module holds the SSE framing; its names are handed on here)."""

from ..dialects.framing import HEARTBEAT, SSE_HEADERS, frame, retry
from .streams import SSEWriter, StreamMonitor, Streams

__all__ = [
    "HEARTBEAT",
    "SSE_HEADERS",
    "SSEWriter",
    "StreamMonitor",
    "Streams",
    "frame",
    "retry",
]
