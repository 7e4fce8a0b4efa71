"""A spec-exact parser of ``text/event-stream`` (WHATWG HTML, "Server-sent events", 9.2.6).

Written from the specification, independent of the server's framing code, so that the
reliability tests check the wire format against the standard rather than against itself:

- the byte stream is decoded as UTF-8 (invalid sequences become U+FFFD), and one leading
  U+FEFF (BOM) is dropped;
- lines end at CRLF, a lone LF or a lone CR (a CR at the end of one network chunk followed by
  an LF at the start of the next is one line break);
- an empty line dispatches the event; a line starting with ``:`` is a comment; otherwise the
  field name is the text before the first ``:`` and the value the text after it, less one
  leading space (a line without ``:`` is a field with an empty value);
- ``data`` appends the value and an LF to the data buffer, ``event`` sets the type, ``id`` sets
  the last event id unless the value contains NUL, ``retry`` takes ASCII digits only; other
  fields are ignored;
- on dispatch the last event id is updated (it persists across events); an empty data buffer
  dispatches nothing; one final LF is removed from the data; the type defaults to ``message``;
- an event not terminated by a blank line when the stream ends is discarded.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass

__all__ = ["EventStreamParser", "SSEEvent", "parse"]


@dataclass(frozen=True, slots=True)
class SSEEvent:
    """One dispatched event, as a browser's ``EventSource`` hands it to a listener."""

    type: str
    data: str
    last_event_id: str


class EventStreamParser:
    """Incremental: feed bytes as they arrive, get the events they complete."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._started = False
        self._pending = ""  # text of an unterminated line
        self._cr_seen = False  # the last character fed was a CR (an LF may follow)
        self._data: list[str] = []
        self._type = ""
        self._last_id_buffer = ""
        self.last_event_id = ""
        self.retry: int | None = None
        self.comments: list[str] = []

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Consume ``chunk``; return the events it completed, in order."""
        return self._feed_text(self._decoder.decode(chunk))

    def close(self) -> list[SSEEvent]:
        """End of stream: flush the decoder; an unterminated event is discarded."""
        events = self._feed_text(self._decoder.decode(b"", final=True))
        self._pending = ""
        self._data, self._type = [], ""
        return events

    def _feed_text(self, text: str) -> list[SSEEvent]:
        if not self._started and text:
            self._started = True
            if text.startswith("\ufeff"):
                text = text[1:]
        events: list[SSEEvent] = []
        start = 0
        i = 0
        n = len(text)
        if self._cr_seen and n:
            self._cr_seen = False
            if text[0] == "\n":  # the LF of a CRLF split across chunks
                start = i = 1
        while i < n:
            char = text[i]
            if char == "\r" or char == "\n":
                line = self._pending + text[start:i]
                self._pending = ""
                event = self._line(line)
                if event is not None:
                    events.append(event)
                if char == "\r":
                    if i + 1 < n:
                        if text[i + 1] == "\n":
                            i += 1
                    else:
                        self._cr_seen = True
                start = i + 1
            i += 1
        self._pending += text[start:]
        return events

    def _line(self, line: str) -> SSEEvent | None:
        if line == "":
            return self._dispatch()
        if line.startswith(":"):
            self.comments.append(line[1:])
            return None
        field, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if field == "event":
            self._type = value
        elif field == "data":
            self._data.append(value)
            self._data.append("\n")
        elif field == "id" and "\x00" not in value:
            self._last_id_buffer = value
        elif field == "retry" and value and all("0" <= c <= "9" for c in value):
            self.retry = int(value)
        return None

    def _dispatch(self) -> SSEEvent | None:
        self.last_event_id = self._last_id_buffer
        if not self._data:
            self._type = ""
            return None
        data = "".join(self._data)
        if data.endswith("\n"):
            data = data[:-1]
        event = SSEEvent(self._type or "message", data, self.last_event_id)
        self._data, self._type = [], ""
        return event


def parse(stream: bytes) -> list[SSEEvent]:
    """Every event of a complete stream."""
    parser = EventStreamParser()
    return parser.feed(stream) + parser.close()
