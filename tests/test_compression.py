"""History compression: older turns summarised into one message, recent turns kept whole."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence

import pytest
from prometheus_client import CollectorRegistry

from agent_executor import (
    AgentCommand,
    AssistantMessage,
    CompactableStore,
    ConfigurationError,
    ConversationStore,
    HistoryCompressor,
    InMemoryConversationStore,
    Message,
    MessageEvent,
    ModelChunk,
    ModelError,
    ModelRequest,
    ScriptedModel,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
    litellm_token_counter,
    tool,
)
from agent_executor.memory.compression import SUMMARY_PREFIX, estimate_tokens
from agent_executor.models.scripted import Pause, call, tool_turn

from .helpers import make_executor, sample

COMPRESSIONS = "agent_executor_history_compressions_total"
FAILURES = "agent_executor_history_compression_failures_total"
USER, SESSION = "alice", "s1"


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


def command(prompt: str) -> AgentCommand:
    return AgentCommand(user_prompt=prompt, user_id=USER, session_id=SESSION)


def chat_turn(question: str, answer: str) -> list[Message]:
    return [UserMessage(content=question), AssistantMessage(content=answer)]


def tool_chat_turn(question: str, calls: Sequence[tuple[str, str]], answer: str) -> list[Message]:
    """A turn with one assistant message calling ``calls`` (id, key), their results, an answer."""
    return [
        UserMessage(content=question),
        AssistantMessage(
            content="",
            tool_calls=tuple(
                ToolCall(id=i, name="lookup", arguments=f'{{"key": "{k}"}}') for i, k in calls
            ),
        ),
        *(ToolMessage(tool_call_id=i, name="lookup", content=f"value of {k}") for i, k in calls),
        AssistantMessage(content=answer),
    ]


def messages_count(messages: Sequence[Message]) -> int:
    """A token counter that makes every message cost 10 tokens."""
    return 10 * len(messages)


def assert_tool_pairs_intact(messages: Sequence[Message]) -> None:
    """Every assistant tool call is followed at once by its results, and every result by
    nothing but its own call's siblings."""
    answered: set[str] = set()
    for i, message in enumerate(messages):
        if isinstance(message, AssistantMessage) and message.tool_calls:
            ids = [c.id for c in message.tool_calls]
            following = messages[i + 1 : i + 1 + len(ids)]
            assert [m.tool_call_id for m in following if isinstance(m, ToolMessage)] == ids
            answered.update(ids)
        if isinstance(message, ToolMessage):
            assert message.tool_call_id in answered, f"orphan tool result at {i}"


async def seeded_store(*turns: list[Message]) -> InMemoryConversationStore:
    store = InMemoryConversationStore()
    for turn in turns:
        await store.append(USER, SESSION, turn)
    return store


LONG = "I am Ada Lovelace, I live in London and I prefer green tea to coffee. " * 4
OLD_1 = chat_turn(LONG, "Noted, Ada.")
OLD_2 = chat_turn("Order 42 shipped on 3 May; tracking ZX-881. " * 4, "Thanks for the update.")
RECENT = tool_chat_turn("What is k?", [("c1", "k")], "k has a value.")


def compressor_for(summariser: ScriptedModel, **options: object) -> HistoryCompressor:
    """Threshold just under the seeded history, budget just over its last turn."""
    history = [*OLD_1, *OLD_2, *RECENT]
    defaults: dict[str, object] = {
        "max_tokens": estimate_tokens(history) - 1,
        "keep_recent_tokens": estimate_tokens(RECENT) + 1,
    }
    return HistoryCompressor(summariser, **{**defaults, **options})  # type: ignore[arg-type]


async def test_a_long_history_is_summarised_and_the_recent_turn_kept(
    registry: CollectorRegistry,
) -> None:
    store = await seeded_store(OLD_1, OLD_2, RECENT)
    summariser = ScriptedModel(["Ada (London) likes green tea. Order 42 shipped 3 May, ZX-881."])
    executor = make_executor(
        ["Your order is 42."],
        registry=registry,
        memory=store,
        system_prompt="Be brief.",
        history_compressor=compressor_for(summariser),
    )

    result = await executor.execute(command("Which order was it?"))

    assert result.success
    summary = SystemMessage(
        content=SUMMARY_PREFIX + "Ada (London) likes green tea. Order 42 shipped 3 May, ZX-881."
    )
    assert executor.model.requests[0].messages == [  # type: ignore[attr-defined]
        SystemMessage(content="Be brief."),
        summary,
        *RECENT,
        UserMessage(content="Which order was it?"),
    ]
    assert await store.load(USER, SESSION) == [
        summary,
        *RECENT,
        UserMessage(content="Which order was it?"),
        AssistantMessage(content="Your order is 42."),
    ]
    assert sample(registry, COMPRESSIONS) == 1
    assert sample(registry, FAILURES) == 0


async def test_the_summariser_gets_the_old_turns_as_text_without_tools() -> None:
    store = await seeded_store(OLD_1, OLD_2, RECENT)
    summariser = ScriptedModel(["summary"])
    instructions = "Summarise, keeping names and numbers."
    executor = make_executor(
        ["ok"],
        memory=store,
        history_compressor=compressor_for(summariser, instructions=instructions),
    )

    await executor.execute(command("next"))

    (request,) = summariser.requests
    assert request.tools == []
    assert request.messages[0] == SystemMessage(content=instructions)
    assert len(request.messages) == 2 and isinstance(request.messages[1], UserMessage)
    text = request.messages[1].content
    assert "User: " + LONG.strip() in text
    assert "Assistant: Noted, Ada." in text
    assert "tracking ZX-881" in text
    assert "What is k?" not in text  # the kept turn is not summarised


async def test_streamed_runs_compress_too_and_the_summary_is_not_streamed() -> None:
    store = await seeded_store(OLD_1, OLD_2, RECENT)
    summariser = ScriptedModel(["a secret summary"])
    executor = make_executor(
        ["the answer"], memory=store, history_compressor=compressor_for(summariser)
    )

    events = [e async for e in executor.execute_stream(command("next"))]

    text = "".join(e.text for e in events if isinstance(e, MessageEvent))
    assert text == "the answer"
    assert (await store.load(USER, SESSION))[0] == SystemMessage(
        content=SUMMARY_PREFIX + "a secret summary"
    )


async def test_tool_calls_are_never_split_from_their_results() -> None:
    recent = [
        *tool_chat_turn("Look up a and b", [("a1", "a"), ("b1", "b")], "a and b found"),
        *tool_chat_turn("And c?", [("c1", "c")], "c found"),
    ]
    store = await seeded_store(OLD_1, OLD_2, recent)
    summariser = ScriptedModel(["summary"])
    # 13 messages of 10 tokens: a 65-token budget, cut anywhere, would keep the last 6 messages
    # and orphan the result of b1; by turns it keeps only the last turn (40 tokens).
    compressor = HistoryCompressor(
        summariser, max_tokens=100, keep_recent_tokens=65, token_counter=messages_count
    )
    executor = make_executor(
        [tool_turn(call("lookup", {"key": "d"}, id="d1")), "d found"],
        [lookup],
        memory=store,
        history_compressor=compressor,
    )

    result = await executor.execute(command("And d?"))

    assert result.success
    seen = executor.model.requests[0].messages  # type: ignore[attr-defined]
    last_turn = recent[5:]
    assert last_turn[0] == UserMessage(content="And c?")
    assert seen == [SystemMessage(content=SUMMARY_PREFIX + "summary"), *last_turn, seen[-1]]
    assert_tool_pairs_intact(seen)
    stored = await store.load(USER, SESSION)
    assert stored[1:5] == last_turn
    assert_tool_pairs_intact(stored)
    summarised = summariser.requests[0].messages[1].content
    assert "Assistant called tool lookup with" in summarised
    assert "Tool lookup returned: value of b" in summarised


def test_split_keeps_the_recent_turns_that_fit_and_cuts_only_at_user_messages() -> None:
    turns = [
        chat_turn("one", "1"),
        tool_chat_turn("two", [("x", "x"), ("y", "y")], "2"),  # 5 messages
        chat_turn("three", "3"),
        chat_turn("four", "4"),
    ]
    history = [m for turn in turns for m in turn]
    compressor = HistoryCompressor(
        ScriptedModel(), max_tokens=50, keep_recent_tokens=45, token_counter=messages_count
    )

    parts = compressor.split(history)

    assert parts is not None
    old, recent = parts
    assert old == turns[0] + turns[1]  # turn two (50 tokens) does not fit beside three and four
    assert recent == turns[2] + turns[3]
    assert_tool_pairs_intact(recent)


def test_the_last_turn_is_kept_even_when_it_alone_exceeds_the_budget() -> None:
    big = tool_chat_turn("big", [("p", "p"), ("q", "q"), ("r", "r")], "done")  # 6 messages
    history = [*chat_turn("small", "ok"), *big]
    compressor = HistoryCompressor(
        ScriptedModel(), max_tokens=30, keep_recent_tokens=20, token_counter=messages_count
    )

    assert compressor.split(history) == (chat_turn("small", "ok"), big)


def test_nothing_is_cut_under_the_threshold_or_from_a_single_turn() -> None:
    compressor = HistoryCompressor(
        ScriptedModel(), max_tokens=40, keep_recent_tokens=10, token_counter=messages_count
    )
    assert compressor.split([*chat_turn("a", "b"), *chat_turn("c", "d")]) is None  # 40 tokens
    one_turn = tool_chat_turn("x", [("1", "a"), ("2", "b"), ("3", "c")], "y")
    assert compressor.split(one_turn) is None  # over, but one turn
    assert compressor.split([SystemMessage(content=SUMMARY_PREFIX + "s"), *one_turn]) is None


async def test_under_the_threshold_nothing_happens(registry: CollectorRegistry) -> None:
    store = await seeded_store(OLD_1, RECENT)
    summariser = ScriptedModel()  # any call would fail the script
    compressor = HistoryCompressor(summariser, max_tokens=10_000, keep_recent_tokens=100)
    executor = make_executor(
        ["fine"], registry=registry, memory=store, history_compressor=compressor
    )

    await executor.execute(command("next"))

    assert summariser.requests == []
    assert executor.model.requests[0].messages == [  # type: ignore[attr-defined]
        *OLD_1,
        *RECENT,
        UserMessage(content="next"),
    ]
    assert (await store.load(USER, SESSION))[: len(OLD_1)] == OLD_1
    assert sample(registry, COMPRESSIONS) == 0
    assert sample(registry, FAILURES) == 0


@pytest.mark.parametrize(
    ("turn", "timeout", "logged"),
    [
        (ModelError("provider down"), 30.0, "provider down"),
        ([ModelChunk(text="  ")], 30.0, "the summariser returned no text"),
        ([Pause(5.0), ModelChunk(text="late")], 0.05, "no summary within 0.05 s"),
    ],
    ids=["model-error", "empty", "timeout"],
)
async def test_a_failed_summary_leaves_the_run_and_the_history_intact(
    registry: CollectorRegistry,
    caplog: pytest.LogCaptureFixture,
    turn: object,
    timeout: float,
    logged: str,
) -> None:
    store = await seeded_store(OLD_1, OLD_2, RECENT)
    summariser = ScriptedModel([turn])  # type: ignore[list-item]
    executor = make_executor(
        ["still here"],
        registry=registry,
        memory=store,
        history_compressor=compressor_for(summariser, timeout=timeout),
    )
    caplog.set_level(logging.WARNING, logger="agent_executor.compression")

    result = await executor.execute(command("next"))

    assert result.success and result.content == "still here"
    full = [*OLD_1, *OLD_2, *RECENT]
    assert executor.model.requests[0].messages == [  # type: ignore[attr-defined]
        *full,
        UserMessage(content="next"),
    ]
    assert await store.load(USER, SESSION) == [
        *full,
        UserMessage(content="next"),
        AssistantMessage(content="still here"),
    ]
    assert sample(registry, FAILURES) == 1
    assert sample(registry, COMPRESSIONS) == 0
    assert any(logged in r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)


async def test_repeated_compression_keeps_a_single_summary(registry: CollectorRegistry) -> None:
    store = InMemoryConversationStore()
    summariser = ScriptedModel(["summary one", "summary two"])
    compressor = HistoryCompressor(
        summariser, max_tokens=50, keep_recent_tokens=25, token_counter=messages_count
    )
    executor = make_executor(
        [f"answer {i}" for i in range(1, 6)],
        registry=registry,
        memory=store,
        history_compressor=compressor,
    )

    for i in range(1, 6):
        result = await executor.execute(command(f"question {i}"))
        assert result.success

    # Run 4 loads turns 1-3 (60 tokens) and summarises turns 1-2; run 5 loads the summary
    # and turns 3-4 (50 tokens, not over), so there has been one compression so far.
    stored = await store.load(USER, SESSION)
    assert [m for m in stored if isinstance(m, SystemMessage)] == [stored[0]]
    assert stored[0] == SystemMessage(content=SUMMARY_PREFIX + "summary one")
    assert stored[1:] == [m for i in range(3, 6) for m in chat_turn(f"question {i}", f"answer {i}")]

    executor.model.add("answer 6")  # type: ignore[attr-defined]
    await executor.execute(command("question 6"))

    stored = await store.load(USER, SESSION)
    assert [m for m in stored if isinstance(m, SystemMessage)] == [
        SystemMessage(content=SUMMARY_PREFIX + "summary two")
    ]
    assert stored[0] == SystemMessage(content=SUMMARY_PREFIX + "summary two")
    assert stored[1:] == [m for i in range(5, 7) for m in chat_turn(f"question {i}", f"answer {i}")]
    second = summariser.requests[1].messages[1].content
    assert "[Earlier summary]\nsummary one" in second
    assert SUMMARY_PREFIX not in second
    assert "User: question 3" in second and "User: question 4" in second
    assert "question 5" not in second
    assert sample(registry, COMPRESSIONS) == 2


class InterferingModel:
    """A summariser that lets ``meanwhile`` change the store while it works."""

    def __init__(self, text: str, meanwhile: Callable[[], Awaitable[None]]) -> None:
        self._text = text
        self._meanwhile = meanwhile

    @property
    def name(self) -> str:
        return "interfering"

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        await self._meanwhile()
        yield ModelChunk(text=self._text)


async def test_a_session_trimmed_meanwhile_is_left_alone_but_the_run_uses_the_summary(
    registry: CollectorRegistry,
) -> None:
    store = await seeded_store(OLD_1, OLD_2, RECENT)

    async def trim() -> None:
        assert await store.replace_prefix(USER, SESSION, OLD_1, [])

    model = InterferingModel("summary", trim)
    compressor = HistoryCompressor(
        model, max_tokens=50, keep_recent_tokens=25, token_counter=messages_count
    )
    executor = make_executor(["ok"], registry=registry, memory=store, history_compressor=compressor)

    result = await executor.execute(command("next"))

    assert result.success
    summary = SystemMessage(content=SUMMARY_PREFIX + "summary")
    assert executor.model.requests[0].messages == [  # type: ignore[attr-defined]
        summary,
        *RECENT,
        UserMessage(content="next"),
    ]
    assert await store.load(USER, SESSION) == [
        *OLD_2,
        *RECENT,
        UserMessage(content="next"),
        AssistantMessage(content="ok"),
    ]
    assert sample(registry, COMPRESSIONS) == 1


async def test_messages_appended_during_the_summary_are_kept() -> None:
    store = await seeded_store(OLD_1, OLD_2, RECENT)
    other_run = chat_turn("from another run", "its answer")

    async def append() -> None:
        await store.append(USER, SESSION, other_run)

    compressor = HistoryCompressor(
        InterferingModel("summary", append),
        max_tokens=50,
        keep_recent_tokens=25,
        token_counter=messages_count,
    )
    executor = make_executor(["ok"], memory=store, history_compressor=compressor)

    await executor.execute(command("next"))

    assert await store.load(USER, SESSION) == [
        SystemMessage(content=SUMMARY_PREFIX + "summary"),
        *RECENT,
        *other_run,
        UserMessage(content="next"),
        AssistantMessage(content="ok"),
    ]


class PlainStore:
    """A conversation store without ``replace_prefix``."""

    def __init__(self) -> None:
        self.messages: list[Message] = []

    async def load(self, user_id: str | None, session_id: str) -> list[Message]:
        return list(self.messages)

    async def append(
        self, user_id: str | None, session_id: str, messages: Sequence[Message]
    ) -> None:
        self.messages.extend(messages)

    async def delete(self, user_id: str | None, session_id: str) -> bool:
        return False


async def test_a_store_without_replace_prefix_gets_the_compression_for_the_run_only() -> None:
    store = PlainStore()
    store.messages = [*OLD_1, *OLD_2, *RECENT]
    assert isinstance(store, ConversationStore) and not isinstance(store, CompactableStore)
    summariser = ScriptedModel(["summary"])
    executor = make_executor(["ok"], memory=store, history_compressor=compressor_for(summariser))

    await executor.execute(command("next"))

    assert executor.model.requests[0].messages[0] == SystemMessage(  # type: ignore[attr-defined]
        content=SUMMARY_PREFIX + "summary"
    )
    assert store.messages[: len(OLD_1)] == OLD_1


async def test_explicit_messages_are_never_compressed() -> None:
    summariser = ScriptedModel()
    compressor = HistoryCompressor(
        summariser, max_tokens=20, keep_recent_tokens=10, token_counter=messages_count
    )
    executor = make_executor(["ok"], history_compressor=compressor)
    prior = [*OLD_1, *OLD_2, *RECENT]

    await executor.execute(
        AgentCommand(user_prompt="next", user_id=USER, session_id=SESSION, messages=prior)
    )

    assert summariser.requests == []
    assert executor.model.requests[0].messages[:-1] == prior  # type: ignore[attr-defined]


async def test_replace_prefix_swaps_only_an_unchanged_prefix() -> None:
    store = await seeded_store(OLD_1, OLD_2)
    summary = SystemMessage(content=SUMMARY_PREFIX + "s")
    assert isinstance(store, CompactableStore)

    assert not await store.replace_prefix(USER, SESSION, OLD_2, [summary])  # not a prefix
    assert not await store.replace_prefix(USER, SESSION, [*OLD_1, *OLD_2, *OLD_1], [summary])
    assert not await store.replace_prefix(USER, "unknown", [], [summary])
    assert not await store.replace_prefix("bob", SESSION, OLD_1, [summary])
    assert await store.load(USER, SESSION) == [*OLD_1, *OLD_2]

    # Equal by value is enough: copies of the messages match.
    copies = [m.model_copy() for m in OLD_1]
    assert await store.replace_prefix(USER, SESSION, copies, [summary])
    assert await store.load(USER, SESSION) == [summary, *OLD_2]
    assert not await store.replace_prefix(USER, SESSION, OLD_1, [summary])  # already done
    assert await store.load(USER, SESSION) == [summary, *OLD_2]


async def test_replace_prefix_refreshes_the_expiry() -> None:
    now = [0.0]
    store = InMemoryConversationStore(ttl_seconds=10, clock=lambda: now[0])
    await store.append(USER, SESSION, OLD_1)
    now[0] = 8
    assert await store.replace_prefix(USER, SESSION, OLD_1[:1], [UserMessage(content="x")])
    now[0] = 15
    assert await store.load(USER, SESSION) == [UserMessage(content="x"), OLD_1[1]]
    now[0] = 30
    assert not await store.replace_prefix(USER, SESSION, [], [])  # expired


@pytest.mark.parametrize(
    "options",
    [
        {"max_tokens": 0},
        {"keep_recent_tokens": 0},
        {"max_tokens": 100, "keep_recent_tokens": 100},
        {"max_tokens": 100, "keep_recent_tokens": 200},
        {"timeout": 0},
    ],
)
def test_bad_configuration_is_refused(options: dict[str, float]) -> None:
    with pytest.raises(ConfigurationError):
        HistoryCompressor(ScriptedModel(), **options)  # type: ignore[arg-type]


def test_the_default_estimate_counts_content_arguments_and_messages() -> None:
    assert estimate_tokens([]) == 0
    assert estimate_tokens([UserMessage(content="x" * 8)]) == 2 + 4
    assert estimate_tokens([UserMessage(content="x" * 9)]) == 3 + 4
    call_message = AssistantMessage(tool_calls=(ToolCall(id="1", name="abcd", arguments="x" * 12),))
    assert estimate_tokens([call_message]) == 4 + 4


def test_the_litellm_counter_uses_the_models_tokenizer() -> None:
    count = litellm_token_counter("openai/gpt-4o-mini")
    short = count([UserMessage(content="hello")])
    longer = count([UserMessage(content="hello " * 100)])
    assert 0 < short < 20
    assert 90 < longer - short < 120
