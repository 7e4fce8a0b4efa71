"""SlackStreamer against a local stand-in of the Slack Web API (tests/fakes/slack_api.py).

The real slack-sdk ``AsyncWebClient`` talks HTTP to the stand-in, so request shapes, the 429
retry handler and the streaming helper are the real ones. Timing checks are semantic only: no two
calls closer than the configured spacing (minus a small tolerance for the request to reach the
server), and the number of updates bounded by the stream's duration over the interval.
"""

from __future__ import annotations

import asyncio
import gc
import importlib.util
import itertools
import math
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Literal

import pytest
from prometheus_client import CollectorRegistry
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

import agent_executor.integrations.slack as slack_module
import agent_executor.integrations.slack._pacing as slack_pacing
import agent_executor.integrations.slack._streamer as slack_streamer
from agent_executor import (
    AgentCommand,
    AgentEvent,
    AgentExecutor,
    DemoModel,
    DoneEvent,
    ErrorEvent,
    MessageEvent,
    ModelChunk,
    ReasoningEvent,
    ToolEndEvent,
    ToolStartEvent,
)
from agent_executor.integrations.slack import (
    SharedRateLimitRetryHandler,
    SlackStreamer,
    WorkspaceBudget,
    workspace_budget,
)
from agent_executor.models.scripted import Pause, ScriptItem
from agent_executor.tools.demo import DEMO_TOOLS
from tests.fakes.slack_api import Call, FakeSlackAPI
from tests.helpers import make_executor

# A request reaches the stand-in a few ms after the streamer starts it; allow for that jitter.
TOLERANCE = 0.03
INTERVAL = 0.1
THREAD = "1700000000.000100"
DONE = DoneEvent(finish_reason="stop", usage=None, tool_calls=[], duration_ms=1.0)


@pytest.fixture(autouse=True)
def no_full_collection_pauses() -> Iterator[None]:
    # The timing checks allow a few ms of jitter. A full garbage collection walks every object
    # of the session (tens of ms once e.g. the browser tests' modules are loaded too), and one
    # landing between two calls fails them, depending only on what else was imported. Frozen
    # objects are skipped by the collector, so collections during a test stay short.
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


@pytest.fixture(autouse=True)
def fresh_budgets(monkeypatch: pytest.MonkeyPatch) -> None:
    # Budgets are process-wide by design; a test must not inherit another test's pauses.
    monkeypatch.setattr(slack_pacing, "BUDGETS", {})


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlackAPI]:
    async with FakeSlackAPI() as server:
        yield server


def make_client(slack: FakeSlackAPI, *, spacing: float = 0.0) -> AsyncWebClient:
    """A real slack-sdk client on the stand-in; its workspace budget set to ``spacing``."""
    client = AsyncWebClient(token=slack.token, base_url=slack.base_url)
    workspace_budget(client).min_interval = spacing
    return client


async def paced(items: Iterable[AgentEvent | float]) -> AsyncIterator[AgentEvent]:
    """The events in order; a float sleeps that long (a model writing, a tool running)."""
    for item in items:
        if isinstance(item, float):
            await asyncio.sleep(item)
        else:
            yield item


def words(count: int, gap: float) -> list[AgentEvent | float]:
    return list(itertools.chain.from_iterable((MessageEvent(f"w{i} "), gap) for i in range(count)))


def gaps(calls: Sequence[Call]) -> list[float]:
    return [b.time - a.time for a, b in itertools.pairwise(calls)]


def assert_spaced(calls: Sequence[Call], spacing: float) -> None:
    assert calls, "no calls"
    assert min(gaps(calls), default=math.inf) >= spacing - TOLERANCE, gaps(calls)


# ------------------------------------------------------------------------- update strategy


async def test_update_coalesces_a_200_chunk_run_into_paced_updates(slack: FakeSlackAPI) -> None:
    pieces = [f"w{i} " for i in range(200)]
    script: list[ScriptItem] = []
    for piece in pieces:
        script += [ModelChunk(text=piece), Pause(0.005)]
    script.append(ModelChunk(finish_reason="stop"))
    executor = make_executor([script])
    client = make_client(slack)

    started = time.monotonic()
    streamer = SlackStreamer(client, "C1", thread_ts=THREAD, interval=INTERVAL)
    result = await streamer.stream(
        executor.execute_stream(AgentCommand(user_prompt="Count to 200"))
    )
    elapsed = time.monotonic() - started

    expected = "".join(pieces)
    posts, updates = slack.calls_to("chat.postMessage"), slack.calls_to("chat.update")
    assert [c.method for c in slack.calls] == ["chat.postMessage"] + ["chat.update"] * len(updates)
    assert posts[0].params["markdown_text"] == "_Thinking…_"
    assert posts[0].params["thread_ts"] == THREAD
    # At most one update per interval (the first one an interval after the placeholder).
    assert len(updates) <= math.ceil(elapsed / INTERVAL) + 1, (len(updates), elapsed)
    assert_spaced(slack.calls, INTERVAL)
    # The message grows: every update is a longer prefix of the answer, never a stale one.
    texts = [c.params["markdown_text"] for c in updates]
    assert len(texts) >= 3
    assert all(expected.startswith(t) for t in texts)
    assert all(len(a) < len(b) for a, b in itertools.pairwise(texts))
    message = slack.messages[result.ts]
    assert message.text == expected == texts[-1] == result.text
    assert (result.channel, result.api_calls) == ("C1", len(slack.calls))


async def test_update_shows_tool_progress_then_removes_it(slack: FakeSlackAPI) -> None:
    events: list[AgentEvent | float] = [
        MessageEvent("Let me check."),
        0.15,
        ToolStartEvent("get_weather", "call_1", {"city": "Paris"}),
        0.35,
        ToolEndEvent("get_weather", "call_1", "success", 350.0),
        0.15,
        MessageEvent(" It is sunny."),
        DONE,
    ]
    streamer = SlackStreamer(make_client(slack), "C1", interval=INTERVAL)
    result = await streamer.stream(paced(events))

    texts = [c.params["markdown_text"] for c in slack.calls_to("chat.update")]
    with_status = "Let me check.\n\n_Checking get_weather…_"
    assert with_status in texts
    after = texts[texts.index(with_status) + 1 :]
    assert after and all("Checking" not in t for t in after)
    assert slack.messages[result.ts].text == result.text == "Let me check. It is sunny."


@pytest.mark.parametrize("strategy", ["update", "native"])
async def test_an_error_event_shows_and_the_message_is_finished(
    slack: FakeSlackAPI, strategy: Literal["update", "native"]
) -> None:
    events: list[AgentEvent | float] = [
        MessageEvent("Partial answer"),
        0.05,
        ErrorEvent(code="llm_error", message="The model is unavailable."),
        DoneEvent(finish_reason="error", usage=None, tool_calls=[], duration_ms=1.0),
    ]
    streamer = SlackStreamer(
        make_client(slack), "C1", thread_ts=THREAD, strategy=strategy, interval=INTERVAL
    )
    result = await streamer.stream(paced(events))

    expected = "Partial answer\n\n⚠️ The model is unavailable."
    assert slack.messages[result.ts].text == result.text == expected
    if strategy == "native":
        assert slack.calls[-1].method == "chat.stopStream"
        assert not slack.messages[result.ts].streaming


async def test_a_failing_event_source_is_shown_and_raised(slack: FakeSlackAPI) -> None:
    async def failing() -> AsyncIterator[AgentEvent]:
        yield MessageEvent("Half an ans")
        await asyncio.sleep(0.05)
        raise RuntimeError("the run broke")

    streamer = SlackStreamer(make_client(slack), "C1", interval=INTERVAL)
    with pytest.raises(RuntimeError, match="the run broke"):
        await streamer.stream(failing())

    (message,) = slack.messages.values()
    assert message.text == "Half an ans\n\n⚠️ The answer was interrupted (RuntimeError)."


async def test_a_failed_intermediate_update_is_skipped(slack: FakeSlackAPI) -> None:
    slack.fail("chat.update", "internal_error")
    streamer = SlackStreamer(make_client(slack), "C1", interval=INTERVAL)
    result = await streamer.stream(paced([*words(30, 0.01), DONE]))

    updates = [c for c in slack.calls if c.method == "chat.update"]
    assert updates[0].error == "internal_error" and all(c.ok for c in updates[1:])
    assert slack.messages[result.ts].text == result.text == "".join(f"w{i} " for i in range(30))


async def test_a_failed_placeholder_raises_and_closes_the_run(slack: FakeSlackAPI) -> None:
    slack.fail("chat.postMessage", "channel_not_found")
    closed = asyncio.Event()

    async def endless() -> AsyncIterator[AgentEvent]:
        try:
            while True:
                yield MessageEvent("more ")
                await asyncio.sleep(0.01)
        finally:
            closed.set()

    streamer = SlackStreamer(make_client(slack), "C404", interval=INTERVAL)
    with pytest.raises(SlackApiError, match="channel_not_found"):
        await streamer.stream(endless())
    assert closed.is_set()
    assert [c.method for c in slack.calls] == ["chat.postMessage"]


async def test_update_cuts_an_answer_longer_than_slack_allows(slack: FakeSlackAPI) -> None:
    streamer = SlackStreamer(make_client(slack), "C1", interval=0.0)
    result = await streamer.stream(paced([MessageEvent("x" * 20_000), DONE]))
    assert len(result.text) == slack_module.MARKDOWN_LIMIT == len(slack.messages[result.ts].text)
    assert result.text.startswith("x" * 11_000) and result.text.endswith("12,000 characters)_")


async def test_a_streamer_is_single_use(slack: FakeSlackAPI) -> None:
    streamer = SlackStreamer(make_client(slack), "C1", interval=0.0)
    await streamer.stream(paced([MessageEvent("hi"), DONE]))
    with pytest.raises(RuntimeError, match="one message"):
        await streamer.stream(paced([DONE]))


# ------------------------------------------------------------------------- native strategy


async def test_native_starts_appends_and_stops_in_order(slack: FakeSlackAPI) -> None:
    events = [*words(40, 0.01), DONE]
    streamer = SlackStreamer(
        make_client(slack),
        "C1",
        thread_ts=THREAD,
        strategy="native",
        interval=INTERVAL,
        recipient_team_id="T1",
        recipient_user_id="U1",
    )
    result = await streamer.stream(paced(events))

    methods = [c.method for c in slack.calls]
    assert methods[0] == "chat.startStream" and methods[-1] == "chat.stopStream"
    assert set(methods[1:-1]) == {"chat.appendStream"}
    start = slack.calls[0].params
    assert (start["thread_ts"], start["recipient_team_id"], start["recipient_user_id"]) == (
        THREAD,
        "T1",
        "U1",
    )
    assert {c.params["ts"] for c in slack.calls[1:]} == {result.ts}
    assert_spaced(slack.calls, INTERVAL)
    expected = "".join(f"w{i} " for i in range(40))
    message = slack.messages[result.ts]
    assert message.text == result.text == expected
    assert not message.streaming and message.thread_ts == THREAD
    # Only new text is sent: each call carries the next piece, none is sent twice.
    assert all(expected.startswith(h) for h in message.history)
    assert result.api_calls == len(slack.calls)


async def test_native_shows_tools_as_task_cards(slack: FakeSlackAPI) -> None:
    events: list[AgentEvent | float] = [
        MessageEvent("Let me check. "),
        0.15,
        ToolStartEvent("get_weather", "call_1", {"city": "Paris"}),
        0.25,
        ToolEndEvent("get_weather", "call_1", "timeout", 250.0),
        MessageEvent("No luck."),
        DONE,
    ]
    streamer = SlackStreamer(
        make_client(slack), "C1", thread_ts=THREAD, strategy="native", interval=INTERVAL
    )
    result = await streamer.stream(paced(events))

    message = slack.messages[result.ts]
    assert message.text == result.text == "Let me check. No luck."
    assert [(t["id"], t["title"], t["status"]) for t in message.tasks] == [
        ("call_1", "Checking get_weather", "in_progress"),
        ("call_1", "Checking get_weather", "error"),
    ]
    assert message.tasks[-1]["details"] == "timeout"


async def test_native_without_chunk_support_falls_back_to_text(
    slack: FakeSlackAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(slack_streamer, "NATIVE_CHUNKS", False)  # as with slack-sdk 3.37 to 3.39
    events: list[AgentEvent | float] = [
        MessageEvent("Let me check."),
        ToolStartEvent("get_weather", "call_1", {"city": "Paris"}),
        0.15,
        ToolEndEvent("get_weather", "call_1", "success", 150.0),
        MessageEvent("Sunny."),
        DONE,
    ]
    streamer = SlackStreamer(
        make_client(slack), "C1", thread_ts=THREAD, strategy="native", interval=INTERVAL
    )
    result = await streamer.stream(paced(events))

    expected = "Let me check.\n\n_Checking get_weather…_\n\nSunny."
    assert slack.messages[result.ts].text == result.text == expected
    assert not slack.messages[result.ts].tasks


async def test_native_with_no_text_still_posts_and_stops(slack: FakeSlackAPI) -> None:
    streamer = SlackStreamer(
        make_client(slack), "C1", thread_ts=THREAD, strategy="native", interval=0.0
    )
    result = await streamer.stream(paced([DONE]))
    assert [c.method for c in slack.calls] == ["chat.startStream", "chat.stopStream"]
    assert slack.messages[result.ts].text == result.text == "_(no answer)_"


# ------------------------------------------------------------------------- reasoning

SECRET = "zebra-plan"  # a word of the model's reasoning, which must never reach Slack


def reasoning_run() -> list[AgentEvent | float]:
    """Reasoning, the answer's first words, a tool, reasoning again, the rest of the answer."""
    return [
        ReasoningEvent(f"The user wants the weather; {SECRET} step one. "),
        0.15,
        ReasoningEvent(f"{SECRET} step two."),
        0.15,
        MessageEvent("Let me check."),
        0.15,
        ToolStartEvent("get_weather", "call_1", {"city": "Paris"}),
        0.15,
        ToolEndEvent("get_weather", "call_1", "success", 150.0),
        ReasoningEvent(f"It is sunny; {SECRET} step three."),
        0.25,
        MessageEvent(" It is sunny."),
        0.15,
        DONE,
    ]


def assert_no_reasoning_sent(slack: FakeSlackAPI) -> None:
    assert slack.calls
    for call in slack.calls:
        assert SECRET not in repr(call.params), call
    for message in slack.messages.values():
        assert SECRET not in message.text and SECRET not in repr(message.tasks)


async def test_update_shows_thinking_never_the_reasoning(slack: FakeSlackAPI) -> None:
    streamer = SlackStreamer(make_client(slack), "C1", interval=INTERVAL)
    result = await streamer.stream(paced(reasoning_run()))

    assert_no_reasoning_sent(slack)
    # Before any text the placeholder already says it; after the tool, a status line does.
    assert slack.calls_to("chat.postMessage")[0].params["markdown_text"] == "_Thinking…_"
    texts = [c.params["markdown_text"] for c in slack.calls_to("chat.update")]
    with_status = "Let me check.\n\n_Thinking…_"
    assert with_status in texts
    after = texts[texts.index(with_status) + 1 :]
    assert after and all("Thinking" not in t for t in after)  # gone once the answer goes on
    assert slack.messages[result.ts].text == result.text == "Let me check. It is sunny."


async def test_native_shows_thinking_as_task_cards_never_the_reasoning(
    slack: FakeSlackAPI,
) -> None:
    streamer = SlackStreamer(
        make_client(slack), "C1", thread_ts=THREAD, strategy="native", interval=INTERVAL
    )
    result = await streamer.stream(paced(reasoning_run()))

    assert_no_reasoning_sent(slack)
    message = slack.messages[result.ts]
    assert message.text == result.text == "Let me check. It is sunny."
    cards = [(t["id"], t["title"], t["status"]) for t in message.tasks]
    assert cards == [
        ("thinking_1", "Thinking", "in_progress"),
        ("thinking_1", "Thinking", "complete"),
        ("call_1", "Checking get_weather", "in_progress"),
        ("call_1", "Checking get_weather", "complete"),
        ("thinking_2", "Thinking", "in_progress"),
        ("thinking_2", "Thinking", "complete"),
    ]
    # the first card opened the message, before any answer text
    first = slack.calls_to("chat.startStream")[0].params
    assert "Let me check" not in repr(first) and "thinking_1" in repr(first)


async def test_native_without_chunk_support_shows_no_reasoning(
    slack: FakeSlackAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(slack_streamer, "NATIVE_CHUNKS", False)  # as with slack-sdk 3.37 to 3.39
    streamer = SlackStreamer(
        make_client(slack), "C1", thread_ts=THREAD, strategy="native", interval=INTERVAL
    )
    result = await streamer.stream(paced(reasoning_run()))

    assert_no_reasoning_sent(slack)
    # no status line for thinking: it would stay in the answer (tools' lines do)
    expected = "Let me check.\n\n_Checking get_weather…_\n\n It is sunny."
    assert slack.messages[result.ts].text == result.text == expected


async def test_reasoning_of_a_real_run_stays_out_of_slack(slack: FakeSlackAPI) -> None:
    turn: list[ScriptItem] = [
        ModelChunk(reasoning=f"Think: {SECRET}. "),
        Pause(0.25),
        ModelChunk(reasoning="Done thinking."),
        ModelChunk(text="Hello "),
        Pause(0.15),
        ModelChunk(text="there."),
        ModelChunk(finish_reason="stop"),
    ]
    executor = make_executor([turn])
    seen: list[AgentEvent] = []

    async def recorded() -> AsyncIterator[AgentEvent]:
        events = executor.execute_stream(AgentCommand(user_prompt="Hi"))
        try:
            async for event in events:
                seen.append(event)
                yield event
        finally:
            await events.aclose()

    streamer = SlackStreamer(make_client(slack), "C1", interval=INTERVAL)
    result = await streamer.stream(recorded())

    assert [e.text for e in seen if isinstance(e, ReasoningEvent)]  # the run did reason
    assert_no_reasoning_sent(slack)
    assert "Done thinking" not in repr([c.params for c in slack.calls])
    assert slack.messages[result.ts].text == result.text == "Hello there."


def test_native_needs_a_thread() -> None:
    client = AsyncWebClient(token="xoxb-test", base_url="http://127.0.0.1:9/api/")
    with pytest.raises(ValueError, match="thread_ts"):
        SlackStreamer(client, "C1", strategy="native")


# ------------------------------------------------------------------------- rate limits


async def test_a_429_is_waited_out_and_the_update_retried(slack: FakeSlackAPI) -> None:
    slack.rate_limit("chat.update", retry_after=1)
    client = make_client(slack)
    streamer = SlackStreamer(client, "C1", interval=INTERVAL)
    assert any(isinstance(h, SharedRateLimitRetryHandler) for h in client.retry_handlers)

    result = await streamer.stream(paced([*words(20, 0.01), DONE]))

    limited = [c for c in slack.calls if c.status == 429]
    assert [c.method for c in limited] == ["chat.update"]
    retry = slack.calls[slack.calls.index(limited[0]) + 1]
    assert retry.method == "chat.update" and retry.ok
    assert retry.time - limited[0].time >= 1.0 - TOLERANCE  # Retry-After honoured
    assert slack.messages[result.ts].text == result.text == "".join(f"w{i} " for i in range(20))
    assert result.api_calls == len(slack.calls) - 1  # the retry is part of the same call


async def test_a_429_pauses_every_streamer_of_the_workspace(slack: FakeSlackAPI) -> None:
    # Two clients with one token, as Bolt creates per request: one workspace, one budget.
    # (Spaced a little, so the other call is not already on its way when the 429 comes.)
    first, second = make_client(slack, spacing=0.05), make_client(slack, spacing=0.05)
    assert workspace_budget(first) is workspace_budget(second)
    slack.rate_limit("chat.update", retry_after=1)

    results = await asyncio.gather(
        SlackStreamer(first, "C1", interval=INTERVAL).stream(paced([*words(30, 0.02), DONE])),
        SlackStreamer(second, "C2", interval=INTERVAL).stream(paced([*words(30, 0.02), DONE])),
    )

    (limited,) = [c for c in slack.calls if c.status == 429]
    after = [c for c in slack.calls if c.time > limited.time]
    assert after and after[0].time - limited.time >= 1.0 - TOLERANCE  # nobody called meanwhile
    expected = "".join(f"w{i} " for i in range(30))
    assert [slack.messages[r.ts].text for r in results] == [expected, expected]


async def test_streamers_of_one_workspace_share_the_budget(slack: FakeSlackAPI) -> None:
    spacing = 0.15
    client = make_client(slack, spacing=spacing)
    streams = [
        SlackStreamer(client, channel, interval=0.05).stream(paced([*words(40, 0.02), DONE]))
        for channel in ("C1", "C2")
    ]
    results = await asyncio.gather(*streams)

    # Each streamer alone could call every 0.05 s; together they keep the workspace's spacing.
    assert_spaced(slack.calls, spacing)
    assert {c.params["channel"] for c in slack.calls_to("chat.update")} == {"C1", "C2"}
    expected = "".join(f"w{i} " for i in range(40))
    assert [slack.messages[r.ts].text for r in results] == [expected, expected]


async def test_workspace_budget_spaces_callers() -> None:
    budget = WorkspaceBudget(0.05)
    stamps: list[float] = []

    async def caller() -> None:
        for _ in range(3):
            await budget.acquire()
            stamps.append(time.monotonic())

    await asyncio.gather(caller(), caller())
    stamps.sort()
    # The k-th slot starts k intervals after the first; a late wake-up may shorten the gap
    # after it, but no caller ever starts before its slot.
    assert all(stamp >= stamps[0] + k * 0.05 - 0.002 for k, stamp in enumerate(stamps)), stamps


# ------------------------------------------------------------------------- packaging, example


def test_agent_executor_does_not_import_slack() -> None:
    code = "import sys, agent_executor; assert 'slack_sdk' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=30)


def load_example() -> ModuleType:
    path = Path(__file__).resolve().parent.parent / "examples" / "slack_bot.py"
    spec = importlib.util.spec_from_file_location("slack_bot_example", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # no tokens needed: the app is built in main()
    return module


@pytest.mark.parametrize("strategy", ["update", "native"])
async def test_example_bot_answers_a_mention_in_its_thread(
    slack: FakeSlackAPI, strategy: str
) -> None:
    example = load_example()
    event = {
        "type": "app_mention",
        "channel": "C1",
        "ts": THREAD,
        "user": "U1",
        "team": "T1",
        "text": "<@U0BOT> What is the weather in Paris?",
    }
    model = DemoModel(word_delay=0.005)
    async with AgentExecutor(model=model, tools=DEMO_TOOLS, metrics=CollectorRegistry()) as ex:
        result = await example.answer_mention(
            event, make_client(slack), ex, strategy=strategy, interval=INTERVAL
        )
        history = await ex.memory.load("U1", f"C1:{THREAD}")

    message = slack.messages[result.ts]
    assert message.thread_ts == THREAD
    assert "In Paris it is" in message.text and "°C" in message.text
    assert message.text == result.text
    assert len(history) >= 2  # the thread is the session: the question and the answer are kept
