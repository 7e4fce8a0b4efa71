"""Prompt-mode tools, through the public API, on a scripted model that rejects the ``tools``
field as a model without function calling does: a two-tool task completes streamed, with the
same events, hooks and limits as native tools; the final answer streams as it arrives (before
its JSON closes); a malformed reply is sent back once, a second one fails the call; a call that
needs approval pauses the run; ``auto`` asks litellm's model data."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from prometheus_client import CollectorRegistry

from agent_executor import (
    AgentCommand,
    AgentEvent,
    AgentExecutor,
    ApprovalRequiredEvent,
    DoneEvent,
    ErrorEvent,
    Hook,
    MessageEvent,
    ModelError,
    PromptToolsModel,
    ReasoningEvent,
    RunContext,
    ScriptedModel,
    ToolCall,
    ToolEndEvent,
    ToolLimits,
    ToolStartEvent,
    tool,
)
from agent_executor.models import ModelChunk, ModelRequest, with_tool_mode
from agent_executor.models.scripted import text_turn


class NoToolsModel(ScriptedModel):
    """A scripted model that refuses a request carrying tools (HTTP 400 from a server whose
    model has no function calling)."""

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        if request.tools:
            raise ModelError("this model does not support tools", status_code=400)
        async for chunk in super().stream(request):
            yield chunk


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


@tool
def convert(celsius: float) -> str:
    """Celsius to Fahrenheit."""
    return f"{celsius * 9 / 5 + 32:g}F"


def step(action: str, **fields: Any) -> str:
    return json.dumps({"thought": fields.pop("thought", ""), "action": action, **fields})


def call(name: str, **parameters: Any) -> str:
    return step(
        "tool_call",
        thought=f"I need {name}.",
        action_input={"tool_name": name, "parameters": parameters},
    )


async def stream(agent: AgentExecutor, prompt: str) -> list[AgentEvent]:
    return [e async for e in agent.execute_stream(AgentCommand(user_prompt=prompt))]


def agent_on(model: ScriptedModel, **options: Any) -> AgentExecutor:
    return AgentExecutor(
        model=model,
        tools=[weather, convert],
        tool_mode="prompt",
        metrics=CollectorRegistry(),
        **options,
    )


async def test_a_model_without_function_calling_completes_a_two_tool_task_streamed() -> None:
    answer = step("final_answer", thought="Both known.", answer="Sunny, 77F in Paris.")
    model = NoToolsModel(
        [
            text_turn(call("weather", city="Paris"), chunk_size=9),
            text_turn(call("convert", celsius=25), chunk_size=9),
            text_turn(answer, chunk_size=4),
        ]
    )
    agent = agent_on(model)

    events = await stream(agent, "Weather in Paris, in Fahrenheit?")

    starts = [e for e in events if isinstance(e, ToolStartEvent)]
    ends = [e for e in events if isinstance(e, ToolEndEvent)]
    assert [(e.tool, e.arguments) for e in starts] == [
        ("weather", {"city": "Paris"}),
        ("convert", {"celsius": 25}),
    ]
    assert [(e.status, e.result) for e in ends] == [
        ("success", "sunny in Paris"),
        ("success", "77F"),
    ]
    pieces = [e.text for e in events if isinstance(e, MessageEvent)]
    assert "".join(pieces) == "Sunny, 77F in Paris."
    assert len(pieces) > 3  # streamed as the answer's string arrived, not once it closed
    thoughts = "".join(e.text for e in events if isinstance(e, ReasoningEvent))
    assert "I need weather." in thoughts and "Both known." in thoughts
    done = events[-1]
    assert isinstance(done, DoneEvent) and done.finish_reason == "stop"
    assert all(not r.tools for r in model.requests)  # never sent the tools field
    second = model.requests[1]
    system = second.messages[0].content
    assert '"name": "weather"' in system and '"action": "final_answer"' in system
    assert second.messages[-1].content == "Observation (weather): sunny in Paris"
    assert json.loads(second.messages[-2].content)["action_input"]["tool_name"] == "weather"


async def test_hooks_and_limits_see_prompt_mode_calls_as_any_calls() -> None:
    seen: list[str] = []

    class Watch(Hook):
        async def before_tool_call(self, ctx: RunContext, call: ToolCall) -> None:
            seen.append(call.name)

    model = NoToolsModel(
        [
            call("weather", city="Oslo") + "\n" + call("weather", city="Rome"),
            step("final_answer", answer="Done."),
        ]
    )
    agent = agent_on(model, hooks=[Watch()], tool_limits=ToolLimits(max_calls=1))
    result = await agent.execute(AgentCommand(user_prompt="two cities"))

    assert [(r.tool, r.status) for r in result.tool_calls] == [
        ("weather", "success"),
        ("weather", "rejected"),
    ]
    assert seen == ["weather"]
    assert result.content == "Done."


async def test_a_malformed_reply_is_sent_back_once_then_the_call_fails() -> None:
    fixed = NoToolsModel(["Sure! The weather is nice.", step("final_answer", answer="Nice.")])
    result = await agent_on(fixed).execute(AgentCommand(user_prompt="hi"))
    assert result.content == "Nice."
    told = fixed.requests[1].messages[-1].content
    assert "it holds no JSON step" in told
    assert fixed.requests[1].messages[-2].content == "Sure! The weather is nice."

    hopeless = NoToolsModel(['{"action": "dance"}', "still no JSON"])
    events = await stream(agent_on(hopeless), "hi")
    errors = [e for e in events if isinstance(e, ErrorEvent)]
    assert [e.code for e in errors] == ["invalid_plan"]
    assert "unknown action 'dance'" not in errors[0].message  # the second reply's fault is told
    assert "holds no JSON step" in errors[0].message
    assert isinstance(events[-1], DoneEvent) and events[-1].finish_reason == "error"


async def test_a_call_that_needs_approval_pauses_the_run() -> None:
    @tool(requires_approval=True)
    def refund(amount: float) -> str:
        """Refund an amount."""
        return "refunded"

    model = NoToolsModel([call("refund", amount=5)])
    agent = AgentExecutor(
        model=model, tools=[refund], tool_mode="prompt", metrics=CollectorRegistry()
    )
    events = [
        e async for e in agent.execute_stream(AgentCommand(user_prompt="refund", session_id="s"))
    ]
    assert [e.tool for e in events if isinstance(e, ApprovalRequiredEvent)] == ["refund"]
    assert isinstance(events[-1], DoneEvent)
    assert events[-1].finish_reason == "waiting_for_approval"


def test_auto_asks_litellms_model_data() -> None:
    native = ScriptedModel(["x"], name="openai/gpt-4o-mini")
    local = ScriptedModel(["x"], name="ollama/some-local-model-without-data")
    assert with_tool_mode(native, "auto") is native
    assert isinstance(with_tool_mode(local, "auto"), PromptToolsModel)
    assert with_tool_mode(local, "native") is local


# An answer with every kind of JSON escape: quotes, backslashes (one escaping the next), a
# newline, \u escapes of accented letters, and emoji outside the BMP, which json.dumps writes as
# surrogate pairs (\ud83d\ude00), as models that escape non-ASCII do.
TRICKY = 'Say "hi" \\ and \\\\n: é, ✓, 😀 and 🎉.\nDone \\u0041.'


async def test_a_streamed_answer_split_anywhere_decodes_to_the_answer() -> None:
    raw = step("final_answer", thought="Ready.", answer=TRICKY)
    for size in range(1, 14):
        model = NoToolsModel([text_turn(raw, chunk_size=size)])
        events = await stream(agent_on(model), "Greet me.")
        pieces = [e.text for e in events if isinstance(e, MessageEvent)]
        assert "".join(pieces) == TRICKY, size
        for piece in pieces:  # no piece is half a surrogate pair: each encodes as UTF-8
            piece.encode("utf-8")
        assert len(pieces) > 2, size  # streamed while the string was open


async def test_a_long_answer_streams_in_pieces_no_larger_than_its_chunks() -> None:
    answer = "word " * 4000
    model = NoToolsModel([text_turn(step("final_answer", answer=answer), chunk_size=7)])
    events = await stream(agent_on(model), "Talk.")
    pieces = [e.text for e in events if isinstance(e, MessageEvent)]
    assert "".join(pieces) == answer
    assert max(map(len, pieces)) <= 7  # each chunk's own text, decoded as it came
