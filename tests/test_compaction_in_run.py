"""Compaction inside a run, through the public API: a run of 200 tool turns on a model with a
4,000-token window finishes, and no request the model receives passes its window; the task
stays word for word, a tool call never loses its result, the summaries are one message that
is summarised again, ``compacted`` events say so, and memory keeps the whole run."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

from prometheus_client import CollectorRegistry

from agent_executor import (
    AgentCommand,
    AgentExecutor,
    AssistantMessage,
    CompactedEvent,
    DoneEvent,
    ModelChunk,
    ModelPolicy,
    ModelRequest,
    RunLimits,
    SystemMessage,
    ToolCallDelta,
    ToolLimits,
    ToolMessage,
    UserMessage,
    tool,
)
from agent_executor.memory.compression import DEFAULT_INSTRUCTIONS

WINDOW = 4000
TURNS = 200
TASK = "Read all 200 pages of the report, one by one, then tell me the last page's title."


@tool
def read_page(number: int) -> str:
    """Read one page of the report."""
    return f"Page {number}: " + "quarterly figures and commentary " * 8


def _tokens(request: ModelRequest) -> int:
    """The window's measure: a quarter of the characters the model is sent (as the fake's
    tokenizer; the executor estimates the same way)."""
    chars = sum(len(m.content) for m in request.messages)
    chars += sum(len(c.name) + len(c.arguments) for m in request.messages
                 if isinstance(m, AssistantMessage) for c in m.tool_calls)  # fmt: skip
    chars += sum(len(str(spec)) for spec in request.tools)
    return (chars + 3) // 4


class WindowedModel:
    """A model with a 4,000-token window that reads one page per turn until it has read
    them all; it refuses a request over its window, and writes summaries when asked."""

    name = "windowed"

    def __init__(self) -> None:
        self.largest = 0
        self.summaries = 0
        self.tasks_seen: list[bool] = []

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        size = _tokens(request)
        self.largest = max(self.largest, size)
        if size > WINDOW:
            raise AssertionError(f"a request of {size} tokens passed the window of {WINDOW}")
        first = request.messages[0]
        if isinstance(first, SystemMessage) and first.content == DEFAULT_INSTRUCTIONS:
            self.summaries += 1
            yield ModelChunk(text=f"Summary {self.summaries}: pages read so far, all fine.")
            return
        self.tasks_seen.append(any(m.content == TASK for m in request.messages))
        read = [m for m in request.messages if isinstance(m, ToolMessage)]
        last = int(read[-1].content.split(":")[0].removeprefix("Page ")) if read else 0
        if last >= TURNS:
            yield ModelChunk(text="The last page is page 200.")
            return
        arguments = json.dumps({"number": last + 1})
        delta = ToolCallDelta(index=0, id=f"call_{last + 1}", name="read_page", arguments=arguments)
        yield ModelChunk(tool_calls=(delta,), finish_reason="tool_calls")


async def test_a_run_of_200_tool_turns_stays_within_a_4000_token_window() -> None:
    model = WindowedModel()
    agent = AgentExecutor(
        model=model,
        tools=[read_page],
        system_prompt="You read reports.",
        model_policy=ModelPolicy(context_window=WINDOW),
        run_limits=RunLimits(max_turns=TURNS + 1),
        tool_limits=ToolLimits(max_calls=TURNS),
        metrics=CollectorRegistry(),
    )

    events = [e async for e in agent.execute_stream(AgentCommand(user_prompt=TASK, session_id="s"))]

    done = events[-1]
    assert isinstance(done, DoneEvent) and done.finish_reason == "stop", done
    assert len(done.tool_calls) == TURNS
    assert model.largest <= WINDOW
    compacted = [e for e in events if isinstance(e, CompactedEvent)]
    assert len(compacted) >= 3 and model.summaries == len(compacted)
    assert all(e.tokens_after < e.tokens_before <= WINDOW for e in compacted)
    assert all(model.tasks_seen)  # the task went to every call, word for word
    history = await agent.memory.load(None, "s")
    assert len(history) == 1 + 2 * TURNS + 1  # memory keeps the whole run, not the summary
    assert isinstance(history[0], UserMessage) and history[0].content == TASK


async def test_a_short_run_is_not_compacted() -> None:
    model = WindowedModel()
    agent = AgentExecutor(
        model=model,
        tools=[read_page],
        model_policy=ModelPolicy(context_window=WINDOW),
        metrics=CollectorRegistry(),
    )
    result = await agent.execute(AgentCommand(user_prompt=TASK))
    assert result.finish_reason == "max_turns"  # ten turns, well within the window
    assert model.summaries == 0 and model.largest < WINDOW // 2


async def test_without_a_window_the_same_run_passes_it() -> None:
    model = WindowedModel()
    agent = AgentExecutor(
        model=model,
        tools=[read_page],
        run_limits=RunLimits(max_turns=TURNS + 1),
        tool_limits=ToolLimits(max_calls=TURNS),
        metrics=CollectorRegistry(),
    )
    result = await agent.execute(AgentCommand(user_prompt=TASK))
    assert result.error is not None and result.error.detail is not None
    assert "passed the window" in result.error.detail  # what compaction prevents above


def test_the_typed_stream_carries_compacted_in_json_mode_only() -> None:
    from server.dialects.typed import encode_data

    event = CompactedEvent(82, 42, 3040, 1587)
    data = encode_data(event, "json")
    assert data is not None and json.loads(data) == {
        "messages_before": 82,
        "messages_after": 42,
        "tokens_before": 3040,
        "tokens_after": 1587,
    }
    assert encode_data(event, "text") is None


def test_the_window_may_come_from_litellms_model_data() -> None:
    import pytest

    from agent_executor import ConfigurationError, ScriptedModel

    known = AgentExecutor(
        model=ScriptedModel(["x"], name="openai/gpt-4o-mini"),
        model_policy=ModelPolicy(context_window="auto"),
        metrics=CollectorRegistry(),
    )
    assert known.model_policy.context_window == "auto"
    with pytest.raises(ConfigurationError, match="no context window for 'ollama/my-local-model'"):
        AgentExecutor(
            model=ScriptedModel(["x"], name="ollama/my-local-model"),
            model_policy=ModelPolicy(context_window="auto"),
            metrics=CollectorRegistry(),
        )
    with pytest.raises(ValueError, match="at least 256"):
        ModelPolicy(context_window=100)
