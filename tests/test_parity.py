"""``execute()`` and ``execute_stream()`` are one loop: same result, same model calls, same hooks.

Every scenario runs once per mode on identical fresh executors. The stream's events are folded
into a result and compared with what ``execute()`` returned, and the model requests and hook
calls of both runs are compared too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest
from pydantic import BaseModel

from agent_executor import (
    AgentCommand,
    AgentEvent,
    AgentExecutor,
    AgentResult,
    DoneEvent,
    ErrorEvent,
    GuardRejection,
    Hook,
    HookRejection,
    InputValidationGuard,
    MessageEvent,
    ModelChunk,
    ModelError,
    RunContext,
    ToolCall,
    ToolEndEvent,
    ToolStartEvent,
    tool,
)
from agent_executor.models.scripted import Pause, call, text_turn, tool_turn

from .helpers import make_executor

# This module still passes the keyword arguments the settings objects replaced (max_turns=...);
# they warn until 0.2.0 (tests/test_settings.py checks the warning itself).
pytestmark = pytest.mark.filterwarnings(
    "ignore:.*keyword arguments are deprecated:DeprecationWarning"
)


@tool
def get_weather(city: str) -> str:
    """Weather."""
    return f"sunny in {city}"


@tool
def explode() -> str:
    """Fails."""
    raise ValueError("no")


@tool(timeout=0.02)
async def dawdle() -> str:
    """Too slow."""
    await anyio.sleep(1)
    return "late"


@tool
async def hang() -> str:
    """Hangs until the run times out."""
    await anyio.sleep(10)
    return "never"


TOOLS = [get_weather, explode, dawdle, hang]


class City(BaseModel):
    name: str
    population: int


class Recorder(Hook):
    def __init__(self, refuse_tool: str | None = None, refuse_start: bool = False) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.refuse_tool = refuse_tool
        self.refuse_start = refuse_start

    async def before_agent_start(self, ctx: RunContext) -> None:
        self.calls.append(("before_agent_start", ctx.command.user_prompt))
        if self.refuse_start:
            raise HookRejection("not today")

    async def before_model(self, ctx: RunContext, request: Any) -> None:
        self.calls.append(("before_model", ctx.turn, len(request.messages)))

    async def after_model(self, ctx: RunContext, response: Any) -> None:
        self.calls.append(("after_model", response.text, len(response.tool_calls)))

    async def before_tool_call(self, ctx: RunContext, call: ToolCall) -> None:
        self.calls.append(("before_tool_call", call.name, call.arguments))
        if call.name == self.refuse_tool:
            raise HookRejection("too dangerous")

    async def after_tool_call(self, ctx: RunContext, call: ToolCall, record: Any) -> None:
        self.calls.append(("after_tool_call", call.name, record.status))

    async def after_agent_complete(self, ctx: RunContext, result: AgentResult) -> None:
        self.calls.append(("after_agent_complete", result.content, result.finish_reason))

    async def on_agent_failed(self, ctx: RunContext, error: Any) -> None:
        self.calls.append(("on_agent_failed", error.code))


class RefuseAll:
    name = "refuse_all"
    codes = ("rate_limited",)

    async def check(self, ctx: RunContext) -> None:
        raise GuardRejection("rate_limited", "slow down", retry_after=2.5)


@dataclass
class Scenario:
    turns: Callable[[], list[Any]]
    command: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    hook: Callable[[], Recorder] = Recorder


SCENARIOS: dict[str, Scenario] = {
    "text_only": Scenario(lambda: [text_turn("Just text.", usage=(3, 2))]),
    "text_tool_text": Scenario(
        lambda: [
            tool_turn(call("get_weather", {"city": "Oslo"}), text="Looking. ", usage=(5, 5)),
            text_turn("Sunny.", usage=(9, 1)),
        ]
    ),
    "split_arguments": Scenario(
        lambda: [tool_turn(call("get_weather", {"city": "Rio de Janeiro"}), fragment_size=1), "ok"]
    ),
    "parallel_interleaved": Scenario(
        lambda: [
            tool_turn(
                call("get_weather", {"city": "A"}),
                call("get_weather", {"city": "B"}),
                fragment_size=2,
                interleave=True,
            ),
            "both",
        ]
    ),
    "invalid_arguments": Scenario(lambda: [tool_turn(call("get_weather", {"town": "x"})), "oops"]),
    "unknown_tool": Scenario(lambda: [tool_turn(call("teleport", {})), "cannot"]),
    "tool_exception": Scenario(lambda: [tool_turn(call("explode")), "it failed"]),
    "tool_timeout": Scenario(lambda: [tool_turn(call("dawdle")), "too slow"]),
    "hook_refuses_tool": Scenario(
        lambda: [tool_turn(call("explode")), "refused"],
        hook=lambda: Recorder(refuse_tool="explode"),
    ),
    "hook_refuses_start": Scenario(list, hook=lambda: Recorder(refuse_start=True)),
    "max_tool_calls": Scenario(
        lambda: [
            tool_turn(call("get_weather", {"city": "A"}), call("get_weather", {"city": "B"})),
            "final",
        ],
        options={"max_tool_calls": 1},
    ),
    "max_turns": Scenario(
        lambda: [tool_turn(call("get_weather", {"city": "A"}))], options={"max_turns": 1}
    ),
    "request_timeout": Scenario(
        lambda: [tool_turn(call("hang"))], options={"request_timeout": 0.05}
    ),
    "llm_error_mid_stream": Scenario(
        lambda: [[ModelChunk(text="part"), ModelError("dropped", retryable=True)]]
    ),
    "retried_before_first_chunk": Scenario(
        lambda: [ModelError("503", retryable=True), "after retry"], options={"retry_backoff": 0.001}
    ),
    "idle_timeout": Scenario(
        lambda: [[ModelChunk(text="a"), Pause(1)]], options={"stream_idle_timeout": 0.05}
    ),
    "guard_rejection": Scenario(list, options={"guards": [RefuseAll()]}),
    "invalid_input": Scenario(
        list, command={"user_prompt": "   "}, options={"guards": [InputValidationGuard()]}
    ),
    "structured_output": Scenario(
        lambda: ['{"name": "Oslo", "population": 700000}'], command={"response_format": City}
    ),
    "structured_output_repaired": Scenario(
        lambda: ["Oslo has 700k people", '```json\n{"name": "Oslo", "population": 700000}\n```'],
        command={"response_format": City},
    ),
    "structured_output_fails": Scenario(
        lambda: ["nope", "still nope"], command={"response_format": "json"}
    ),
    "unsupported_format": Scenario(list, command={"response_format": "xml"}),
    "memory": Scenario(lambda: ["remembered"], command={"user_id": "u", "session_id": "s"}),
}


def result_from_events(events: list[AgentEvent]) -> dict[str, Any]:
    done = events[-1]
    assert isinstance(done, DoneEvent)
    assert sum(isinstance(e, DoneEvent) for e in events) == 1
    errors = [e for e in events if isinstance(e, ErrorEvent)]
    assert len(errors) <= 1
    starts = {e.call_id for e in events if isinstance(e, ToolStartEvent)}
    ends = {e.call_id for e in events if isinstance(e, ToolEndEvent)}
    assert starts == ends == {r.call_id for r in done.tool_calls}
    return {
        "success": not errors,
        "content": "".join(e.text for e in events if isinstance(e, MessageEvent)),
        "tool_calls": [_record(r) for r in done.tool_calls],
        "usage": done.usage,
        "error": (errors[0].code, errors[0].message, errors[0].retry_after) if errors else None,
        "finish_reason": done.finish_reason,
        "output": done.output,
    }


def summarise(result: AgentResult) -> dict[str, Any]:
    return {
        "success": result.success,
        "content": result.content,
        "tool_calls": [_record(r) for r in result.tool_calls],
        "usage": result.usage,
        "error": (
            (result.error.code, result.error.message, result.error.retry_after)
            if result.error
            else None
        ),
        "finish_reason": result.finish_reason,
        "output": result.output,
    }


def _record(record: Any) -> tuple[Any, ...]:
    return (record.call_id, record.tool, record.arguments, record.status, record.result)


def build(scenario: Scenario) -> tuple[AgentExecutor, Recorder]:
    hook = scenario.hook()
    executor = make_executor(scenario.turns(), TOOLS, hooks=[hook], **scenario.options)
    return executor, hook


@pytest.mark.parametrize("name", sorted(SCENARIOS))
async def test_execute_and_execute_stream_agree(name: str) -> None:
    scenario = SCENARIOS[name]
    command = AgentCommand(**{"user_prompt": "question", **scenario.command})
    streamer, stream_hook = build(scenario)
    executor, execute_hook = build(scenario)

    events = [event async for event in streamer.execute_stream(command, request_id="parity")]
    result = await executor.execute(command, request_id="parity")

    assert result_from_events(events) == summarise(result)
    assert stream_hook.calls == execute_hook.calls
    stream_requests = streamer.model.requests  # type: ignore[attr-defined]
    assert stream_requests == executor.model.requests  # type: ignore[attr-defined]
    assert streamer.model.remaining == 0  # type: ignore[attr-defined]


EXPECTED = {
    "text_only": ("stop", None),
    "text_tool_text": ("stop", None),
    "tool_exception": ("stop", None),
    "hook_refuses_start": ("error", "hook_rejected"),
    "max_tool_calls": ("max_tool_calls", None),
    "max_turns": ("max_turns", None),
    "request_timeout": ("error", "timeout"),
    "llm_error_mid_stream": ("error", "llm_error"),
    "idle_timeout": ("error", "llm_error"),
    "guard_rejection": ("error", "rate_limited"),
    "invalid_input": ("error", "invalid_input"),
    "structured_output_fails": ("error", "unsupported_format"),
    "unsupported_format": ("error", "unsupported_format"),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
async def test_scenarios_end_as_expected(name: str) -> None:
    executor, _ = build(SCENARIOS[name])
    command = AgentCommand(**{"user_prompt": "question", **SCENARIOS[name].command})

    result = await executor.execute(command)

    finish_reason, code = EXPECTED[name]
    assert result.finish_reason == finish_reason
    assert (result.error.code if result.error else None) == code


async def test_structured_output_is_validated_into_a_model() -> None:
    executor, _ = build(SCENARIOS["structured_output_repaired"])
    command = AgentCommand(user_prompt="a city", response_format=City)

    events = [e async for e in executor.execute_stream(command)]

    done = events[-1]
    assert isinstance(done, DoneEvent)
    assert done.output == City(name="Oslo", population=700000)
    repair = executor.model.requests[1].messages[-1]  # type: ignore[attr-defined]
    assert repair.role == "user" and "did not match the requested format" in repair.content
    system = executor.model.requests[0].messages[0]  # type: ignore[attr-defined]
    assert system.role == "system" and '"population"' in system.content


async def test_guard_rejection_carries_retry_after() -> None:
    executor, hook = build(SCENARIOS["guard_rejection"])

    events = [e async for e in executor.execute_stream(AgentCommand(user_prompt="hi"))]

    assert events[0] == ErrorEvent(code="rate_limited", message="slow down", retry_after=2.5)
    assert hook.calls == [("on_agent_failed", "rate_limited")]
    registry = executor.metrics.registry
    assert (
        registry.get_sample_value(
            "agent_executor_guard_rejections_total", {"guard": "refuse_all", "code": "rate_limited"}
        )
        == 1
    )


async def test_the_final_answer_after_max_tool_calls_is_validated_too() -> None:
    executor = make_executor(
        [
            tool_turn(call("get_weather", {"city": "A"}), call("get_weather", {"city": "B"})),
            '{"name": "A", "population": 1}',
        ],
        TOOLS,
        max_tool_calls=1,
    )

    result = await executor.execute(AgentCommand(user_prompt="q", response_format=City))

    assert result.finish_reason == "max_tool_calls"
    assert result.output == City(name="A", population=1)


async def test_max_turns_without_a_formatted_answer_is_a_format_error() -> None:
    executor = make_executor([tool_turn(call("get_weather", {"city": "A"}))], TOOLS, max_turns=1)

    result = await executor.execute(AgentCommand(user_prompt="q", response_format=City))

    assert result.error is not None
    assert result.error.code == "unsupported_format"
    assert "max_turns (1) was reached" in result.error.message
