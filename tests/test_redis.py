"""The Redis parts against a real ``redis-server``: store, rate limits, tool-result relay.

Two clients of one Redis stand for two replicas. The service-level scenarios (two processes)
are in ``test_redis_service.py``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import pytest

from agent_executor import (
    AgentCommand,
    AgentEvent,
    AgentExecutor,
    AssistantMessage,
    DoneEvent,
    ErrorEvent,
    FrontendTool,
    GuardRejection,
    RateLimitGuard,
    StoreUnavailable,
    SystemMessage,
    ToolCall,
    ToolCallEvent,
    ToolMessage,
    ToolResults,
    UserMessage,
)
from agent_executor.approvals import PendingRun
from agent_executor.context import RunContext
from agent_executor.messages import Usage
from agent_executor.models.scripted import call, tool_turn
from agent_executor.redis import (
    RedisConversationStore,
    RedisRateLimitStorage,
    RedisToolResultRelay,
    connect,
)
from agent_executor.results import ToolCallRecord

from .helpers import make_executor
from .redis_server import RedisServer


@pytest.fixture
def server(redis_running: RedisServer) -> RedisServer:
    return redis_running


@pytest.fixture
async def store(server: RedisServer) -> AsyncIterator[RedisConversationStore]:
    store = RedisConversationStore(server.url)
    yield store
    await store.aclose()


TURN = [
    UserMessage(content="What's the weather in Paris?"),
    AssistantMessage(
        content="Let me look.",
        tool_calls=(
            ToolCall(
                id="c1",
                name="get_weather",
                arguments='{"city": "Paris"}',
                provider_fields={"extra_content": {"google": {"thought_signature": "c2ln"}}},
            ),
            ToolCall(id="c2", name="get_time", arguments="{}"),
        ),
        provider_fields={
            "reasoning_content": "The user wants the weather; call the tool.",
            "thinking_blocks": [{"type": "thinking", "thinking": "...", "signature": "EsQD"}],
        },
    ),
    ToolMessage(tool_call_id="c1", name="get_weather", content='{"temp": 21, "sky": "clear ☀"}'),
    ToolMessage(tool_call_id="c2", name="get_time", content="12:00"),
    AssistantMessage(content="21 °C and clear at noon."),
]


def context(user: str) -> RunContext:
    command = AgentCommand(user_prompt="hi", user_id=user)
    return RunContext(command=command, request_id="r", mode="execute")


async def test_every_message_type_and_a_paused_run_round_trip(
    server: RedisServer, store: RedisConversationStore
) -> None:
    history = [SystemMessage(content="Summary: earlier talk."), *TURN]
    await store.append("alice", "s1", history)
    paused = PendingRun(
        messages=[UserMessage(content="delete it"), TURN[1]],
        results=[TURN[2]],
        pending=[ToolCall(id="c2", name="get_time", arguments="{}")],
        records=[
            ToolCallRecord(
                call_id="c1",
                tool="get_weather",
                arguments={"city": "Paris"},
                status="success",
                duration_ms=1.5,
                result="21",
            )
        ],
        turns=1,
        tool_calls_made=2,
        usage=Usage(input_tokens=3, output_tokens=4),
    )
    await store.save_pending("alice", "s1", paused)

    other = RedisConversationStore(server.url)  # another replica
    try:
        assert await other.load("alice", "s1") == history
        assert await other.load_pending("alice", "s1") == paused
        assert await other.load("bob", "s1") == []  # the same session id under another user
        assert await other.load_pending("bob", "s1") is None
    finally:
        await other.aclose()


async def test_turns_appended_by_two_replicas_at_once_never_interleave(
    server: RedisServer,
) -> None:
    a, b = RedisConversationStore(server.url), RedisConversationStore(server.url)

    def turn(who: str, n: int) -> list[UserMessage | AssistantMessage]:
        return [
            UserMessage(content=f"{who}{n}"),
            AssistantMessage(content=f"{who}{n}-1"),
            AssistantMessage(content=f"{who}{n}-2"),
        ]

    try:
        async with anyio.create_task_group() as tg:
            for n in range(40):
                tg.start_soon(a.append, "u", "s", turn("a", n))
                tg.start_soon(b.append, "u", "s", turn("b", n))
        history = await a.load("u", "s")
    finally:
        await a.aclose()
        await b.aclose()

    assert len(history) == 3 * (200 // 3)  # whole turns within the default bound of 200
    assert isinstance(history[0], UserMessage)
    for i in range(0, len(history) - 2, 3):
        name = history[i].content
        assert [m.content for m in history[i : i + 3]] == [name, f"{name}-1", f"{name}-2"]


async def test_the_bound_drops_whole_turns_and_keeps_tool_pairs(server: RedisServer) -> None:
    store = RedisConversationStore(server.url, max_messages_per_session=7)
    try:
        await store.append("u", "s", TURN)
        await store.append(
            "u", "s", [UserMessage(content="thanks"), AssistantMessage(content=":)")]
        )
        assert [m.content for m in await store.load("u", "s")][:2] == [
            TURN[0].content,
            TURN[1].content,
        ]  # 7 messages still fit
        await store.append("u", "s", [UserMessage(content="bye"), AssistantMessage(content="o/")])
        history = await store.load("u", "s")
    finally:
        await store.aclose()

    assert [m.content for m in history] == ["thanks", ":)", "bye", "o/"]


async def test_sessions_expire_after_the_ttl_and_use_refreshes_it(server: RedisServer) -> None:
    store = RedisConversationStore(server.url, ttl_seconds=0.6)
    try:
        await store.append("u", "s", TURN)
        await store.save_pending("u", "s", PendingRun(messages=[], pending=[]))
        for _ in range(3):
            await anyio.sleep(0.3)
            assert await store.load("u", "s") == TURN  # each load gives it another 0.6 s
        await anyio.sleep(0.9)
        assert await store.load("u", "s") == []
        assert await store.load_pending("u", "s") is None
    finally:
        await store.aclose()


async def test_delete_and_replace_prefix(store: RedisConversationStore) -> None:
    await store.append("u", "s", TURN)
    summary = SystemMessage(content="They asked about Paris.")

    assert not await store.replace_prefix("u", "s", TURN[1:3], [summary])  # not the head
    assert await store.replace_prefix("u", "s", TURN[:4], [summary])
    assert await store.load("u", "s") == [summary, TURN[4]]
    assert not await store.replace_prefix("u", "s", TURN[:4], [summary])  # already done

    assert await store.delete("u", "s")
    assert await store.load("u", "s") == []
    assert not await store.delete("u", "s")


async def test_a_rate_limit_holds_across_replicas(server: RedisServer) -> None:
    # Two guards with their own clients and clocks far apart: Redis's clock decides.
    a = RateLimitGuard("3/minute", storage=RedisRateLimitStorage(server.url), clock=lambda: 0.0)
    b = RateLimitGuard("3/minute", storage=RedisRateLimitStorage(server.url), clock=lambda: 9e9)
    outcomes: list[float | None] = []
    try:
        for guard in (a, b, a, b, a):
            try:
                await guard.check(context("bob"))
                outcomes.append(None)
            except GuardRejection as exc:
                outcomes.append(exc.retry_after)
        await b.check(context("carol"))  # another key has its own allowance
    finally:
        await a.aclose()
        await b.aclose()

    assert outcomes[:3] == [None, None, None]
    assert all(wait is not None and 19 < wait <= 20 for wait in outcomes[3:])


BROWSER_TZ = FrontendTool("get_browser_timezone", "The browser's time zone.", timeout=10)


def replica(server: RedisServer, turns: list[object]) -> AgentExecutor:
    return make_executor(
        turns,  # type: ignore[arg-type]
        [BROWSER_TZ],
        tool_results=ToolResults(relay=RedisToolResultRelay(server.url)),
    )


async def test_a_frontend_result_posted_to_another_replica_reaches_the_run(
    server: RedisServer,
) -> None:
    a = replica(server, [tool_turn(call("get_browser_timezone", id="tz1")), "Tokyo it is."])
    b = replica(server, [])
    command = AgentCommand(user_prompt="my zone?", user_id="alice")
    outcomes: list[str] = []
    events: list[AgentEvent] = []
    try:
        async for event in a.execute_stream(command):
            events.append(event)
            if isinstance(event, ToolCallEvent):
                outcomes.append(await b.tool_results.submit("tz1", "mallory", result="UTC"))
                outcomes.append(await b.tool_results.submit("nope", "alice", result="UTC"))
                outcomes.append(await b.tool_results.submit("tz1", "alice", result="Asia/Tokyo"))
                outcomes.append(await b.tool_results.submit("tz1", "alice", result="UTC"))
    finally:
        await a.aclose()
        await b.aclose()

    assert outcomes == ["unknown", "unknown", "delivered", "answered"]
    done = events[-1]
    assert isinstance(done, DoneEvent)
    assert [(r.status, r.result) for r in done.tool_calls] == [("success", "Asia/Tokyo")]


async def test_an_idle_relay_stays_subscribed_past_its_socket_timeout(
    server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    waiting_side = RedisToolResultRelay(connect(server.url, socket_timeout=0.3))
    other = RedisToolResultRelay(server.url)
    local = ToolResults(relay=waiting_side)
    answer = local.expect("c1", "alice")
    try:
        await local.announce("c1", "alice", ttl=30)
        before = (await other.redis.info("stats"))["total_connections_received"]
        await anyio.sleep(1.2)  # several socket timeouts with nothing to read
        after = (await other.redis.info("stats"))["total_connections_received"]
        assert await other.deliver("c1", "alice", "late but fine", None) == "delivered"
        with anyio.fail_after(5):
            assert await answer == ("late but fine", None)
        # no reconnects meanwhile: each would leave a moment in which answers are lost
        assert after == before
        assert not [r for r in caplog.records if r.name == "agent_executor.redis"]
    finally:
        await waiting_side.aclose()
        await waiting_side.redis.aclose()
        await other.aclose()


async def test_an_answer_for_a_replica_that_is_gone_is_unknown(server: RedisServer) -> None:
    gone, other = RedisToolResultRelay(server.url), RedisToolResultRelay(server.url)
    local = ToolResults(relay=gone)
    waiting = local.expect("c9", "alice")
    await local.announce("c9", "alice", ttl=30)
    await gone.aclose()  # the replica dies: nobody listens on its channel any more
    try:
        assert await other.deliver("c9", "alice", "x", None) == "unknown"
        assert await other.deliver("c9", "alice", "x", None) == "unknown"
        assert not waiting.done()
    finally:
        await other.aclose()


async def test_redis_down_is_a_clear_error_and_coming_back_needs_no_restart(
    server: RedisServer,
) -> None:
    executor = make_executor(
        ["one", "two"],
        memory=RedisConversationStore(server.url),
        guards=[RateLimitGuard("100/minute", storage=RedisRateLimitStorage(server.url))],
    )
    command = AgentCommand(user_prompt="hi", user_id="u", session_id="s")
    try:
        assert (await executor.execute(command)).success
        server.stop()
        events = [e async for e in executor.execute_stream(command)]
        error = events[-2]
        assert isinstance(error, ErrorEvent)
        assert error.code == "unavailable"
        assert "Redis is unavailable" in error.message
        assert str(server.port) not in error.message  # the reason is in the log
        assert isinstance(events[-1], DoneEvent) and events[-1].finish_reason == "error"
        with pytest.raises(StoreUnavailable):
            await RedisConversationStore(server.url).load("u", "s")

        server.start()
        result = await executor.execute(command)
        assert result.success and result.content == "two"
    finally:
        await executor.aclose()
