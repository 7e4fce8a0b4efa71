"""A run's event log gives back exactly the events the run emitted, from any position, whatever
text they carry and however the run's stream and its client interleave.

The log keeps short text deltas folded into strings with one byte of length each, long ones
and other events apart, and takes events over from a retaining ``EventStream`` in batches;
hypothesis draws the runs (any Unicode, lone surrogates, deltas of 0 to 600 characters,
reasoning text that must not be taken for answer text) and the points where the client takes
events, the log settles and a reader reads.
"""

from __future__ import annotations

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st

from agent_executor import (
    AgentEvent,
    AssistantMessage,
    DoneEvent,
    EventStream,
    MessageEvent,
    ReasoningEvent,
    UserMessage,
)
from agent_executor._engine.state import Emit
from server.runs.log import EventLog, LogReader

_TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=40)
_LONG = st.text(max_size=600, min_size=250)
_EVENT = st.one_of(
    _TEXT.map(MessageEvent),
    _LONG.map(MessageEvent),
    _TEXT.map(ReasoningEvent),
)
_STEP = st.sampled_from(["emit", "take", "drain", "settle", "read"])


def _run(events: list[AgentEvent], gate: asyncio.Event, emitted: list[int]) -> EventStream:
    """A run that emits ``events`` one each time the gate opens, then its ``done``."""

    async def start(emit: Emit) -> None:
        for event in events:
            emit(event)
            emitted[0] += 1
            await gate.wait()
            gate.clear()
        emit(DoneEvent("stop", None, [], 1.0))
        emitted[0] += 1

    return EventStream(start)


@settings(max_examples=150, deadline=None)
@given(st.lists(_EVENT, max_size=120), st.lists(_STEP, max_size=300))
def test_the_log_gives_back_every_event_from_any_position(
    events: list[AgentEvent], steps: list[str]
) -> None:
    async def scenario() -> None:
        gate = asyncio.Event()
        emitted, taken = [0], 0
        stream = _run(events, gate, emitted)
        log = EventLog()
        log.follow(stream)
        stream.start()
        await asyncio.sleep(0)
        for step in steps:
            if step == "emit":
                gate.set()
                await asyncio.sleep(0)
            elif step == "take" and taken < emitted[0]:
                await asyncio.wait_for(anext(stream), 1)
                taken += 1
            elif step == "drain":
                taken += len(stream.drain_nowait())
            elif step == "settle":
                log.settle()
            elif step == "read" and len(log):
                position = len(log) - 1
                if position < len(events):
                    assert log.event(position) == events[position]
        while not log.done:
            gate.set()
            await asyncio.sleep(0)
        await stream.aclose()

        kept = list(log.events(0, len(log)))
        assert kept[:-1] == events
        assert isinstance(kept[-1], DoneEvent)
        assert [log.event(position) for position in range(len(log))] == kept
        for start in {0, len(events) // 3, len(events)}:
            reader = LogReader(log, start)
            assert [event async for event in reader] == kept[start:]

    asyncio.run(scenario())


def test_a_log_past_its_bound_stops_keeping_and_says_so() -> None:
    async def scenario() -> None:
        gate = asyncio.Event()
        stream = _run([MessageEvent("x" * 200) for _ in range(50)], gate, [0])
        log = EventLog(4096)
        log.follow(stream)
        async for _ in stream:
            gate.set()
            log.compact()
        assert log.overflowed
        assert stream.retained == 0  # nothing is held for a log that keeps nothing more

    asyncio.run(scenario())


def test_a_kept_done_leaves_the_conversation_to_the_run() -> None:
    """A finished run is kept for minutes; its ``done`` is kept without the conversation that
    rode on it (no dialect sends that), and replays as the same event."""
    conversation = [UserMessage(content="hi"), AssistantMessage(content="hello " * 200)]

    async def start(emit: Emit) -> None:
        emit(MessageEvent("hello"))
        emit(DoneEvent("stop", None, [], 1.0, messages=conversation))

    async def scenario() -> None:
        stream = EventStream(start)
        log = EventLog()
        log.follow(stream)
        seen = [event async for event in stream]
        log.compact()
        kept = list(log.events(0, len(log)))
        assert kept == seen
        assert isinstance(seen[-1], DoneEvent) and seen[-1].messages == conversation
        assert isinstance(kept[-1], DoneEvent) and kept[-1].messages == []

    asyncio.run(scenario())
