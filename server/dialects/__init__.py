"""Wire dialects: one run's events as the bytes a kind of client reads.

Every streaming endpoint serves the same event stream (:data:`agent_executor.AgentEvent`); a
dialect is an :class:`Encoder` of it, chosen by the route: the service's own typed SSE
(:mod:`.typed`, text and json modes), OpenAI's chunks and Responses events (``server/v1``), the
AI SDK's UI message stream (:mod:`.ui_message`) and AG-UI (:mod:`.ag_ui`). Each says its media
type and headers, the frames that open the stream, and how each event type maps, dispatching on
the event's type from one table (:class:`EventTable`); the frames that close it come with the
``done`` event, which every stream ends with.
"""

from .base import Encoder, EventTable

__all__ = ["Encoder", "EventTable"]
