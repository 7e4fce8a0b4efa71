"""Any text survives SSE framing, checked with the spec-exact parser of ``sse_parser.py``.

Text mode: what a standard client gets back is the text with CRLF and lone CR turned into LF
(the event-stream format has no way to carry a CR in data) and each lone surrogate turned into
``?`` (``frame()`` encodes with ``errors="replace"``: a surrogate cannot be UTF-8). JSON mode
keeps every character, lone surrogates included. The same holds through the running service,
whatever the size of the network reads.

A CRLF that a model splits across two deltas arrives as two line breaks in text mode (each
event is framed on its own); JSON mode keeps it. The split-tool-call property ("any split of a
tool call's arguments across chunks assembles to the same call") is
``tests/test_assembler.py::test_any_split_and_interleaving_assembles_to_the_same_calls``.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry

from agent_executor import (
    AgentExecutor,
    ErrorEvent,
    MessageEvent,
    ModelChunk,
    ModelRequest,
    ToolStartEvent,
    UserMessage,
)
from server import create_app
from server.dialects.typed import encode_data
from server.sse import frame

from .sse_parser import EventStreamParser, SSEEvent, parse
from .support import ThreadedApp

SPECIALS = [
    *("\r", "\n", "\r\n", "\n\r", "\r\r\n", "\x00", "\ufeff", ":", " ", "data: x", "id: 9"),
    *("\u2028", "\x85", "\x0b", "\x0c", "\x1c", "👩\u200d👩\u200d👧", "\ud83d\ude00"),
]

characters = st.one_of(
    st.characters(),  # any code point but surrogates
    st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF, exclude_categories=()),
    st.sampled_from(["😀", "é", "\U0010ffff"]),
)
fragments = st.one_of(
    st.text(characters, max_size=40),
    st.sampled_from(SPECIALS),
)
long_lines = st.integers(min_value=1_000, max_value=120_000).map(lambda n: "long line " * (n // 10))
texts = st.tuples(
    st.lists(fragments, max_size=10), st.one_of(st.just(""), long_lines), st.integers(0, 10)
).map(lambda t: "".join([*t[0][: t[2]], t[1], *t[0][t[2] :]]))

_SURROGATE = re.compile("[\ud800-\udfff]")


def as_text_mode(text: str) -> str:
    """What the format can carry in text mode."""
    return _SURROGATE.sub("?", re.sub("\r\n|\r", "\n", text))


def as_json(value: object) -> object:
    """``value`` after a JSON round trip: the same, except that a high and a low surrogate
    held as two code points come back as the one character they encode (that is what JSON's
    ``\\ud83d\\ude00`` escapes mean, for every JSON parser)."""
    return json.loads(json.dumps(value))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts, event_id=st.integers(min_value=1, max_value=2**53))
def test_text_mode_keeps_the_text_up_to_line_break_normalisation(text: str, event_id: int) -> None:
    assert parse(frame("message", text, event_id)) == [
        SSEEvent("message", as_text_mode(text), str(event_id))
    ]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts, key=st.text(characters, max_size=10))
def test_json_mode_keeps_every_character(text: str, key: str) -> None:
    cases = [
        (MessageEvent(text), {"text": text}),
        (ErrorEvent(code="llm_error", message=text), {"code": "llm_error", "message": text}),
        (
            ToolStartEvent(tool="t", call_id=text[:20], arguments={key: text, "n": [text]}),
            {"tool": "t", "call_id": text[:20], "arguments": {key: text, "n": [text]}},
        ),
    ]
    for event, expected in cases:
        [parsed] = parse(frame(event.type, encode_data(event, "json"), 1))
        assert parsed.type == event.type
        assert json.loads(parsed.data) == as_json(expected)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    items=st.lists(st.tuples(texts, st.booleans()), min_size=1, max_size=6),
    cuts=st.lists(st.integers(min_value=0), max_size=40),
)
def test_a_stream_of_frames_parses_the_same_however_it_is_cut(
    items: list[tuple[str, bool]], cuts: list[int]
) -> None:
    """Network reads split frames anywhere: inside a UTF-8 sequence, between lines, inside a
    field name. An incremental parser fed the pieces gets the same events."""
    wire = b"".join(
        frame("message", encode_data(MessageEvent(text), "json") if js else text, i + 1)
        for i, (text, js) in enumerate(items)
    ) + frame("done", "", len(items) + 1)
    points = sorted({cut % (len(wire) + 1) for cut in cuts})
    pieces = [wire[a:b] for a, b in zip([0, *points], [*points, len(wire)], strict=True)]
    parser = EventStreamParser()
    events = [event for piece in pieces for event in parser.feed(piece)] + parser.close()

    assert events == parse(wire)
    assert len(events) == len(items) + 1 and events[-1] == SSEEvent("done", "", str(len(items) + 1))
    for (text, js), event in zip(items, events, strict=False):
        assert (json.loads(event.data)["text"] if js else event.data) == (
            as_json(text) if js else as_text_mode(text)
        )


def test_the_parser_follows_the_spec_examples() -> None:
    """Examples from the WHATWG specification (9.2.6), plus its edge cases."""
    assert parse(b"data: YHOO\ndata: +2\ndata: 10\n\n") == [SSEEvent("message", "YHOO\n+2\n10", "")]
    stream = (
        b": test stream\n\ndata: first event\nid: 1\n\n"
        b"data:second event\nid\n\ndata:  third event\n\n"
    )
    assert parse(stream) == [
        SSEEvent("message", "first event", "1"),
        SSEEvent("message", "second event", ""),
        SSEEvent("message", " third event", ""),
    ]
    assert parse(b"data\n\ndata\ndata\n\ndata:") == [
        SSEEvent("message", "", ""),
        SSEEvent("message", "\n", ""),
    ]
    assert parse(b"data:test\n\ndata: test\n\n") == [SSEEvent("message", "test", "")] * 2
    assert parse(b"\xef\xbb\xbfdata: a\r\ndata: b\rid: 7\x00\r\n\r\n") == [
        SSEEvent("message", "a\nb", "")
    ]
    parser = EventStreamParser()
    assert parser.feed(b"data: a\r") == []
    assert parser.feed(b"\n\r") == [SSEEvent("message", "a", "")]
    assert parser.feed(b"\nevent: x\ndata: b\xf0\x9f") == []
    assert parser.feed(b"\x98\x80\n\n") == [SSEEvent("x", "b😀", "")]


# --------------------------------------------------------------------------- the running service

PIECE = 7
"""The echo model streams the prompt in pieces of this many characters."""


class EchoModel:
    """Streams the user's message back, after its ``echo:`` prefix, in ``PIECE``-char deltas."""

    name = "echo"

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        prompt = next(m.content for m in reversed(request.messages) if isinstance(m, UserMessage))
        for piece in pieces(prompt.removeprefix("echo:")):
            yield ModelChunk(text=piece)
        yield ModelChunk(finish_reason="stop")


def pieces(text: str) -> list[str]:
    return [text[i : i + PIECE] for i in range(0, len(text), PIECE)]


@pytest.fixture(scope="module")
def echo_app() -> Iterator[ThreadedApp]:
    def make() -> object:
        executor = AgentExecutor(model=EchoModel(), metrics=CollectorRegistry())
        return create_app(executor)

    with ThreadedApp(make) as app:  # type: ignore[arg-type]
        yield app


service_texts = st.lists(
    st.one_of(st.text(characters, max_size=30), st.sampled_from(SPECIALS)), max_size=10
).map("".join)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=service_texts, mode=st.sampled_from(["text", "json"]))
def test_text_survives_the_running_service(echo_app: ThreadedApp, text: str, mode: str) -> None:
    body = json.dumps({"message": "echo:" + text, "events": mode})
    text = json.loads(body)["message"].removeprefix("echo:")  # what the server receives
    with httpx.Client(base_url=echo_app.base_url, timeout=10) as client:
        response = client.post(
            "/api/chat/stream", content=body, headers={"Content-Type": "application/json"}
        )

    assert response.status_code == 200
    events = parse(response.content)
    assert [e.type for e in events] == ["message"] * len(pieces(text)) + ["done"]
    run = response.headers["x-run-id"]
    assert [e.last_event_id for e in events] == [f"{run}:{i}" for i in range(len(events))]
    got = [json.loads(e.data)["text"] if mode == "json" else e.data for e in events[:-1]]
    expected = pieces(text) if mode == "json" else [as_text_mode(p) for p in pieces(text)]
    assert got == expected


def test_a_crlf_split_across_deltas_is_two_line_breaks_in_text_mode(echo_app: ThreadedApp) -> None:
    text = "abcdef\r\nghijkl"  # the CR ends the first 7-character piece, the LF starts the next
    with httpx.Client(base_url=echo_app.base_url, timeout=10) as client:
        as_text = client.post("/api/chat/stream", json={"message": "echo:" + text})
        as_json = client.post(
            "/api/chat/stream", json={"message": "echo:" + text, "events": "json"}
        )

    assert "".join(e.data for e in parse(as_text.content)) == "abcdef\n\nghijkl"
    assert "".join(json.loads(e.data)["text"] for e in parse(as_json.content)[:-1]) == text
