"""Server-Sent Events: the framing (:mod:`.framing`, bytes only) and the open streams of an
app (:mod:`.streams`: writer, monitor, shutdown drain)."""

from .framing import (
    HEARTBEAT,
    SSE_HEADERS,
    AgentEventEncoder,
    EventEncoder,
    EventMode,
    encode_data,
    frame,
)
from .streams import SSEWriter, StreamMonitor, Streams

__all__ = [
    "HEARTBEAT",
    "SSE_HEADERS",
    "AgentEventEncoder",
    "EventEncoder",
    "EventMode",
    "SSEWriter",
    "StreamMonitor",
    "Streams",
    "encode_data",
    "frame",
]
