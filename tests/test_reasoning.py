"""Reasoning and provider state through the public API, the service's SSE bytes and the
OpenAI-compatible endpoint, on a ScriptedModel; and what goes back to the provider."""

from __future__ import annotations

import json

from prometheus_client import CollectorRegistry

from agent_executor import (
    AgentCommand,
    AgentExecutor,
    AssistantMessage,
    InMemoryConversationStore,
    MessageEvent,
    ModelChunk,
    OutputGuard,
    ReasoningEvent,
    ScriptedModel,
    ToolCall,
    ToolCallDelta,
    UserMessage,
    tool,
)
from agent_executor.messages import to_openai_messages

from .helpers import collect, make_executor
from .server_helpers import serve


@tool
def get_weather(city: str) -> str:
    """Weather."""
    return f"sunny in {city}"


def _thinking_tool_turn() -> list[ModelChunk]:
    return [
        ModelChunk(reasoning="The user wants "),
        ModelChunk(reasoning="the weather."),
        ModelChunk(
            tool_calls=(
                ToolCallDelta(
                    index=0,
                    id="c1",
                    name="get_weather",
                    arguments='{"city": "Oslo"}',
                    provider_fields={"extra_content": {"google": {"thought_signature": "U0lH"}}},
                ),
            )
        ),
        ModelChunk(
            finish_reason="tool_calls",
            provider_fields={"reasoning_content": "The user wants the weather."},
        ),
    ]


def _answer_turn() -> list[ModelChunk]:
    return [ModelChunk(reasoning="Answer briefly."), ModelChunk(text="Sunny in Oslo.")]


async def test_reasoning_is_its_own_event_and_never_part_of_the_answer() -> None:
    executor = make_executor([_thinking_tool_turn(), _answer_turn()], [get_weather])

    events = await collect(executor, "weather in Oslo?")
    result = await make_executor([_thinking_tool_turn(), _answer_turn()], [get_weather]).execute(
        AgentCommand(user_prompt="weather in Oslo?")
    )

    assert [e.text for e in events if isinstance(e, ReasoningEvent)] == [
        "The user wants ",
        "the weather.",
        "Answer briefly.",
    ]
    assert "".join(e.text for e in events if isinstance(e, MessageEvent)) == "Sunny in Oslo."
    assert result.content == "Sunny in Oslo."
    assert result.reasoning == "The user wants the weather.Answer briefly."


async def test_provider_state_goes_back_on_the_next_turn_and_into_memory() -> None:
    model = ScriptedModel([_thinking_tool_turn(), _answer_turn()])
    memory = InMemoryConversationStore()
    executor = AgentExecutor(
        model=model, tools=[get_weather], memory=memory, metrics=CollectorRegistry()
    )

    await executor.execute(AgentCommand(user_prompt="weather?", session_id="s"))

    sent = to_openai_messages(model.requests[1].messages)
    assistant = next(m for m in sent if m["role"] == "assistant")
    assert assistant["reasoning_content"] == "The user wants the weather."
    assert assistant["tool_calls"][0]["extra_content"] == {"google": {"thought_signature": "U0lH"}}
    stored = await memory.load(None, "s")
    kept = [m for m in stored if isinstance(m, AssistantMessage)]
    assert kept[0].provider_fields == {"reasoning_content": "The user wants the weather."}
    assert kept[0].tool_calls[0].provider_fields["extra_content"]["google"]["thought_signature"]


async def test_reasoning_events_off_keeps_reasoning_from_the_caller_only() -> None:
    model = ScriptedModel([_thinking_tool_turn(), _answer_turn()])
    executor = AgentExecutor(
        model=model, tools=[get_weather], reasoning_events=False, metrics=CollectorRegistry()
    )

    events = await collect(executor, "weather?")

    assert not [e for e in events if isinstance(e, ReasoningEvent)]
    sent = to_openai_messages(model.requests[1].messages)
    assert next(m for m in sent if m["role"] == "assistant")["reasoning_content"]


async def test_the_output_guard_redacts_reasoning_too() -> None:
    secret = "sk-" + "a" * 30
    executor = make_executor(
        [[ModelChunk(reasoning=f"the key is {secret} "), ModelChunk(text="Done.")]],
        output_guard=OutputGuard(),
    )

    events = await collect(executor, "hi")

    reasoning = "".join(e.text for e in events if isinstance(e, ReasoningEvent))
    assert secret not in reasoning
    assert "the key is" in reasoning


def test_every_assistant_turn_carries_reasoning_content_once_one_does() -> None:
    messages = [
        UserMessage(content="hi"),
        AssistantMessage(content="Hello."),
        UserMessage(content="weather?"),
        AssistantMessage(
            tool_calls=(ToolCall(id="c1", name="get_weather", arguments="{}"),),
            provider_fields={"reasoning_content": "Call the tool."},
        ),
    ]

    sent = [m for m in to_openai_messages(messages) if m["role"] == "assistant"]

    assert [m["reasoning_content"] for m in sent] == ["", "Call the tool."]
    assert "reasoning_content" not in to_openai_messages(messages[:2])[1]


async def test_reasoning_on_the_wire_in_both_modes_and_on_the_openai_endpoint() -> None:
    turns = [[ModelChunk(reasoning="Think."), ModelChunk(text="Hi.")]]

    async with serve(make_executor(list(turns))) as client:
        text_mode = await client.post("/api/chat/stream", json={"message": "hi"})
    async with serve(make_executor(list(turns))) as client:
        json_mode = await client.post("/api/chat", json={"message": "hi"})
    async with serve(make_executor(list(turns))) as client:
        streamed = await client.post(
            "/v1/chat/completions",
            json={
                "model": "default",
                "stream": True,
                "messages": [{"role": "user", "content": "hi"}],
            },
        )
    async with serve(make_executor(list(turns))) as client:
        whole = await client.post(
            "/v1/chat/completions",
            json={"model": "default", "messages": [{"role": "user", "content": "hi"}]},
        )

    run = text_mode.headers["x-run-id"].encode()
    assert text_mode.content == (
        b'retry: 1000\nid: RUN:0\nevent: reasoning\ndata: {"text":"Think."}\n\n'
        b"id: RUN:1\nevent: message\ndata: Hi.\n\n"
        b"id: RUN:2\nevent: done\ndata: \n\n"
    ).replace(b"RUN", run)
    assert json_mode.json()["content"] == "Hi."
    assert json_mode.json()["reasoning"] == "Think."
    deltas = [
        json.loads(line[6:])["choices"][0]["delta"]
        for line in streamed.text.split("\n")
        if line.startswith("data: {") and json.loads(line[6:])["choices"]
    ]
    assert deltas[0] == {"reasoning_content": "Think.", "role": "assistant"}
    assert deltas[1] == {"content": "Hi."}
    message = whole.json()["choices"][0]["message"]
    assert message == {"role": "assistant", "content": "Hi.", "reasoning_content": "Think."}
