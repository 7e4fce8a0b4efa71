"""Turns kept apart (issue 19, item 6): where the text of two model turns meets, the stream
carries a paragraph break as a ``message`` event of its own, so every reader of the stream
(Python, SSE in both modes, the OpenAI-compatible endpoint, Slack) and ``AgentResult.content``
read "preamble", a blank line, "answer" instead of the two glued together.

The break is the reader's, not the conversation's: the turn's own assistant message, sent back
to the model and kept in memory, is the text the model wrote.
"""

from __future__ import annotations

import json

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from agent_executor import (
    AgentCommand,
    AssistantMessage,
    InMemoryConversationStore,
    MessageEvent,
    OutputGuard,
    tool,
)
from agent_executor.integrations.slack import SlackStreamer, workspace_budget
from agent_executor.models.scripted import call, text_turn, tool_turn

from .fakes.slack_api import FakeSlackAPI
from .helpers import collect, make_executor
from .server_helpers import serve


@tool
def get_weather(city: str) -> str:
    """Weather."""
    return f"sunny in {city}"


def _weather_run(first: str = "Let me check the weather.") -> list[list[object]]:
    return [
        tool_turn(call("get_weather", {"city": "Oslo"}, id="c1"), text=first),
        text_turn("It is sunny in Oslo."),
    ]


async def test_the_break_is_a_message_event_of_its_own_and_content_reads_the_same() -> None:
    memory = InMemoryConversationStore()
    executor = make_executor(_weather_run(), [get_weather], memory=memory)

    events = await collect(executor, AgentCommand(user_prompt="weather?", session_id="s"))
    result = await make_executor(_weather_run(), [get_weather]).execute(
        AgentCommand(user_prompt="weather?")
    )

    texts = [event.text for event in events if isinstance(event, MessageEvent)]
    assert "\n\n" in texts  # alone, not glued to a word
    assert "".join(texts) == "Let me check the weather.\n\nIt is sunny in Oslo."
    assert result.content == "Let me check the weather.\n\nIt is sunny in Oslo."
    stored = [m for m in await memory.load(None, "s") if isinstance(m, AssistantMessage)]
    assert [m.content for m in stored] == ["Let me check the weather.", "It is sunny in Oslo."]


@pytest.mark.parametrize(
    ("first", "joined"),
    [
        ("Checking.\n", "Checking.\n\nIt is sunny in Oslo."),  # one newline: one more
        ("Checking.\n\n", "Checking.\n\nIt is sunny in Oslo."),  # already apart: nothing
        ("", "It is sunny in Oslo."),  # nothing before: no leading break
    ],
)
async def test_the_break_completes_what_the_earlier_turn_left(first: str, joined: str) -> None:
    result = await make_executor(_weather_run(first), [get_weather]).execute(
        AgentCommand(user_prompt="weather?")
    )

    assert result.content == joined


async def test_a_turn_without_text_adds_no_second_break() -> None:
    turns = [
        tool_turn(call("get_weather", {"city": "Oslo"}, id="c1"), text="One moment."),
        tool_turn(call("get_weather", {"city": "Rome"}, id="c2")),
        text_turn("Both are sunny."),
    ]

    result = await make_executor(turns, [get_weather]).execute(AgentCommand(user_prompt="?"))

    assert result.content == "One moment.\n\nBoth are sunny."


async def test_the_output_guard_holding_text_back_still_gets_the_break() -> None:
    turns = [
        tool_turn(call("get_weather", {"city": "Oslo"}, id="c1"), text="Checking."),
        text_turn("key sk-proj-" + "a" * 40),
    ]
    executor = make_executor(turns, [get_weather], output_guard=OutputGuard())

    result = await executor.execute(AgentCommand(user_prompt="?"))

    assert result.content.startswith("Checking.\n\nkey ")
    assert "sk-proj-aaaa" not in result.content


async def test_sse_in_both_modes_and_the_json_endpoint_carry_the_break() -> None:
    async with serve(make_executor(_weather_run() * 3, [get_weather])) as client:
        text = await client.post("/api/chat/stream", json={"message": "weather?"})
        as_json = await client.post(
            "/api/chat/stream", json={"message": "weather?", "events": "json"}
        )
        answer = await client.post("/api/chat", json={"message": "weather?"})

    assert b"event: message\ndata: \ndata: \ndata: \n\n" in text.content
    messages = [
        json.loads(line.removeprefix("data: "))["text"]
        for block in as_json.text.split("\n\n")
        if "event: message" in block
        for line in block.splitlines()
        if line.startswith("data: ")
    ]
    assert "\n\n" in messages
    assert answer.json()["content"] == "Let me check the weather.\n\nIt is sunny in Oslo."


async def test_the_openai_compatible_endpoint_carries_the_break() -> None:
    async with serve(make_executor(_weather_run() * 2, [get_weather])) as client:
        whole = await client.post(
            "/v1/chat/completions",
            json={"model": "default", "messages": [{"role": "user", "content": "weather?"}]},
        )
        streamed = await client.post(
            "/v1/chat/completions",
            json={
                "model": "default",
                "stream": True,
                "messages": [{"role": "user", "content": "weather?"}],
            },
        )

    expected = "Let me check the weather.\n\nIt is sunny in Oslo."
    assert whole.json()["choices"][0]["message"]["content"] == expected
    deltas = [
        json.loads(line.removeprefix("data: "))["choices"][0]["delta"].get("content") or ""
        for line in streamed.text.splitlines()
        if line.startswith("data: {")
    ]
    assert "".join(deltas) == expected


async def test_slack_shows_the_break() -> None:
    executor = make_executor(_weather_run(), [get_weather])
    async with FakeSlackAPI() as slack:
        client = AsyncWebClient(token=slack.token, base_url=slack.base_url)
        workspace_budget(client).min_interval = 0.0
        streamer = SlackStreamer(client, "C1", interval=0.01)

        result = await streamer.stream(executor.execute_stream(AgentCommand(user_prompt="?")))

    assert slack.messages[result.ts].text == "Let me check the weather.\n\nIt is sunny in Oslo."
