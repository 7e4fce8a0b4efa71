"""Conversation memory: across runs, per user, nothing saved by failed or cancelled runs."""

from __future__ import annotations

import anyio
import pytest

from agent_executor import (
    AgentCommand,
    AssistantMessage,
    ConversationStore,
    InMemoryConversationStore,
    ModelError,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
    tool,
)
from agent_executor.models.scripted import call, tool_turn

from .helpers import make_executor

# This module still passes the keyword arguments the settings objects replaced (max_turns=...);
# they warn until 0.2.0 (tests/test_settings.py checks the warning itself).
pytestmark = pytest.mark.filterwarnings(
    "ignore:.*keyword arguments are deprecated:DeprecationWarning"
)


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


def command(prompt: str, user: str | None = "alice", session: str | None = "s1") -> AgentCommand:
    return AgentCommand(user_prompt=prompt, user_id=user, session_id=session)


async def test_second_run_sees_the_first_runs_messages() -> None:
    executor = make_executor(
        [tool_turn(call("lookup", {"key": "k"}, id="c1")), "found it", "you asked about k"],
        [lookup],
        system_prompt="Be brief.",
    )

    await executor.execute(command("what is k?"))
    await executor.execute(command("what did I ask?"))

    seen = executor.model.requests[2].messages  # type: ignore[attr-defined]
    assert seen == [
        SystemMessage(content="Be brief."),
        UserMessage(content="what is k?"),
        AssistantMessage(
            content="", tool_calls=(ToolCall(id="c1", name="lookup", arguments='{"key": "k"}'),)
        ),
        ToolMessage(tool_call_id="c1", name="lookup", content="value of k"),
        AssistantMessage(content="found it"),
        UserMessage(content="what did I ask?"),
    ]


async def test_users_do_not_share_a_session_id() -> None:
    executor = make_executor(["for alice", "for bob"])

    await executor.execute(command("alice speaks", user="alice"))
    await executor.execute(command("bob speaks", user="bob"))

    bob_saw = executor.model.requests[1].messages  # type: ignore[attr-defined]
    assert bob_saw == [UserMessage(content="bob speaks")]


async def test_without_a_session_nothing_is_remembered() -> None:
    executor = make_executor(["one", "two"])

    await executor.execute(command("first", session=None))
    await executor.execute(command("second", session=None))

    assert executor.model.requests[1].messages == [  # type: ignore[attr-defined]
        UserMessage(content="second")
    ]


async def test_explicit_messages_bypass_the_store() -> None:
    store = InMemoryConversationStore()
    executor = make_executor(["answer"], memory=store)
    prior = [UserMessage(content="earlier"), AssistantMessage(content="reply")]

    await executor.execute(
        AgentCommand(user_prompt="now", user_id="u", session_id="s", messages=prior)
    )

    assert executor.model.requests[0].messages == [  # type: ignore[attr-defined]
        *prior,
        UserMessage(content="now"),
    ]
    assert await store.load("u", "s") == []


async def test_messages_validate_from_plain_dicts() -> None:
    cmd = AgentCommand.model_validate(
        {
            "user_prompt": "now",
            "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}],
        }
    )
    assert cmd.messages == [UserMessage(content="hi"), AssistantMessage(content="yo")]


async def test_a_failed_run_saves_nothing() -> None:
    store = InMemoryConversationStore()
    executor = make_executor(
        [tool_turn(call("lookup", {"key": "k"})), ModelError("boom")], [lookup], memory=store
    )

    result = await executor.execute(command("what is k?"))

    assert result.error is not None
    assert await store.load("alice", "s1") == []


async def test_a_timed_out_run_saves_nothing() -> None:
    store = InMemoryConversationStore()

    @tool
    async def hang() -> str:
        """Hangs."""
        await anyio.sleep(10)
        return "never"

    executor = make_executor([tool_turn(call("hang"))], [hang], memory=store, request_timeout=0.1)

    result = await executor.execute(command("go"))

    assert result.error is not None and result.error.code == "timeout"
    assert await store.load("alice", "s1") == []


async def test_a_cancelled_run_saves_nothing() -> None:
    store = InMemoryConversationStore()
    started = anyio.Event()

    @tool
    async def hang() -> str:
        """Hangs."""
        started.set()
        await anyio.sleep(10)
        return "never"

    executor = make_executor([tool_turn(call("hang"))], [hang], memory=store)

    async with anyio.create_task_group() as tg:
        tg.start_soon(executor.execute, command("go"))
        await started.wait()
        tg.cancel_scope.cancel()

    assert await store.load("alice", "s1") == []


class FailingStore(InMemoryConversationStore):
    async def append(self, user_id: str | None, session_id: str, messages: object) -> None:
        raise ConnectionError("store is down")


async def test_a_store_that_cannot_save_fails_the_run_clearly() -> None:
    executor = make_executor(["hello"], memory=FailingStore())

    result = await executor.execute(command("hi"))

    assert not result.success
    assert result.error is not None
    assert (result.error.code, result.error.message) == (
        "internal_error",
        "the conversation could not be saved",
    )


def test_the_in_memory_store_satisfies_the_protocol() -> None:
    assert isinstance(InMemoryConversationStore(), ConversationStore)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def test_sessions_expire_after_their_ttl_and_use_refreshes_it() -> None:
    clock = Clock()
    store = InMemoryConversationStore(ttl_seconds=10, sweep_interval_seconds=1, clock=clock)
    await store.append("u", "a", [UserMessage(content="a")])
    await store.append("u", "b", [UserMessage(content="b")])

    clock.now = 8
    assert await store.load("u", "a") != []
    clock.now = 15

    assert await store.load("u", "b") == []
    assert await store.load("u", "a") == [UserMessage(content="a")]
    assert len(store) == 1


async def test_least_recently_used_sessions_are_evicted() -> None:
    store = InMemoryConversationStore(max_sessions=2)
    for name in ("a", "b"):
        await store.append("u", name, [UserMessage(content=name)])
    await store.load("u", "a")
    await store.append("u", "c", [UserMessage(content="c")])

    assert await store.load("u", "b") == []
    assert await store.load("u", "a") != [] and await store.load("u", "c") != []


async def test_trimming_drops_whole_turns_only() -> None:
    store = InMemoryConversationStore(max_messages_per_session=5)
    turn = [
        UserMessage(content="q"),
        AssistantMessage(tool_calls=(ToolCall(id="c", name="t"),)),
        ToolMessage(tool_call_id="c", name="t", content="r"),
        AssistantMessage(content="a"),
    ]
    await store.append("u", "s", turn)
    await store.append("u", "s", turn)

    kept = await store.load("u", "s")
    assert kept == turn


async def test_delete_forgets_a_session() -> None:
    store = InMemoryConversationStore()
    await store.append("u", "s", [UserMessage(content="x")])

    assert await store.delete("u", "s") is True
    assert await store.delete("u", "s") is False
    assert await store.load("u", "s") == []


def test_bad_store_configuration_is_refused() -> None:
    from agent_executor import ConfigurationError

    with pytest.raises(ConfigurationError):
        InMemoryConversationStore(ttl_seconds=0)
