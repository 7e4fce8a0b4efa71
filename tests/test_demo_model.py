"""The offline DemoModel: streams word by word, calls the demo tools when asked about the
weather or the time, and any other tool the message names (issue 30, item 8)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Literal

import anyio
import httpx
import pytest
from prometheus_client import CollectorRegistry

from agent_executor import (
    AgentCommand,
    AgentEvent,
    AgentExecutor,
    DemoModel,
    DoneEvent,
    FrontendTool,
    MessageEvent,
    ModelChunk,
    ToolCallEvent,
    ToolStartEvent,
    UserMessage,
    handoff,
    tool,
)
from agent_executor.models.base import ModelRequest
from agent_executor.tools.demo import DEMO_TOOLS, get_time, get_weather

from .helpers import collect
from .server_helpers import ROOT, service_process


def demo_executor(registry: object) -> AgentExecutor:
    return AgentExecutor(model=DemoModel(word_delay=0), tools=DEMO_TOOLS, metrics=registry)  # type: ignore[arg-type]


async def test_weather_question_calls_get_weather_then_answers(registry: object) -> None:
    events = await collect(demo_executor(registry), "What's the weather in Lisbon?")

    starts = [e for e in events if isinstance(e, ToolStartEvent)]
    assert [(e.tool, e.arguments) for e in starts] == [("get_weather", {"city": "Lisbon"})]
    text = "".join(e.text for e in events if isinstance(e, MessageEvent))
    assert "In Lisbon it is" in text and "°C" in text
    assert len([e for e in events if isinstance(e, MessageEvent)]) > 5


async def test_weather_and_time_are_called_together(registry: object) -> None:
    result = await demo_executor(registry).execute(
        AgentCommand(user_prompt="What is the weather and the time in Tokyo?")
    )

    assert [(r.tool, r.status) for r in result.tool_calls] == [
        ("get_weather", "success"),
        ("get_time", "success"),
    ]
    assert result.tool_calls[1].arguments == {"timezone": "Asia/Tokyo"}
    assert "(Asia/Tokyo)" in result.content
    assert result.usage is not None and result.usage.input_tokens > 0


async def test_small_talk_needs_no_tools(registry: object) -> None:
    result = await demo_executor(registry).execute(AgentCommand(user_prompt="Hello!"))

    assert result.success and result.tool_calls == []
    assert "demo model" in result.content


async def test_without_the_demo_tools_it_does_not_call_them(registry: object) -> None:
    executor = AgentExecutor(model=DemoModel(word_delay=0), metrics=registry)  # type: ignore[arg-type]

    result = await executor.execute(AgentCommand(user_prompt="weather in Paris?"))

    assert result.tool_calls == [] and result.success


def test_demo_tools_are_deterministic_and_validate_zones() -> None:
    assert get_weather("paris") == get_weather(" Paris ")
    assert get_time("UTC")["timezone"] == "UTC"
    with pytest.raises(ValueError, match="unknown time zone"):
        get_time("Mars/Olympus")


def test_the_model_string_demo_selects_the_demo_model(registry: object) -> None:
    executor = AgentExecutor(model="demo", metrics=registry)  # type: ignore[arg-type]
    assert isinstance(executor.model, DemoModel)


# ---- "what is my time zone?": the browser's get_browser_timezone, answered by the client ----

BROWSER_TZ_SPEC = {
    "name": "get_browser_timezone",
    "description": "The time zone of the user's browser (IANA name).",
    "parameters": {"type": "object", "properties": {}},
}


async def ask_the_browser(
    executor: AgentExecutor, command: AgentCommand, answer: dict[str, object] | None
) -> list[AgentEvent]:
    """Stream a run; answer its frontend calls as the chat page would (``None``: never)."""
    events: list[AgentEvent] = []
    async for event in executor.execute_stream(command):
        events.append(event)
        if isinstance(event, ToolCallEvent) and answer is not None:
            outcome = executor.tool_results.deliver(event.call_id, command.user_id, **answer)
            assert outcome == "delivered"
    return events


def final(events: list[AgentEvent]) -> DoneEvent:
    done = events[-1]
    assert isinstance(done, DoneEvent)
    return done


def streamed_text(events: list[AgentEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, MessageEvent))


async def test_my_time_zone_asks_the_browser_through_a_client_tool(registry: object) -> None:
    executor = demo_executor(registry)  # get_time is on offer too, and is not called
    command = AgentCommand(
        user_prompt="What is my time zone?", user_id="u", client_tools=[BROWSER_TZ_SPEC]
    )

    events = await ask_the_browser(executor, command, {"result": "Europe/Paris"})

    calls = [e for e in events if isinstance(e, ToolCallEvent)]
    assert [(e.tool, e.arguments) for e in calls] == [("get_browser_timezone", {})]
    done = final(events)
    assert done.finish_reason == "stop"
    assert [(r.tool, r.status, r.result) for r in done.tool_calls] == [
        ("get_browser_timezone", "success", "Europe/Paris")
    ]
    text = streamed_text(events)
    assert "Your browser says your time zone is Europe/Paris." in text
    assert text.startswith("Let me check that for you (get_browser_timezone). ")


@pytest.mark.parametrize("prompt", ["which timezone is MY TIMEZONE", "my time-zone, please"])
async def test_a_frontend_tool_answer_as_json_is_read_too(registry: object, prompt: str) -> None:
    executor = AgentExecutor(
        model=DemoModel(word_delay=0),
        tools=[FrontendTool("get_browser_timezone", "The browser's time zone.", timeout=5)],
        metrics=registry,  # type: ignore[arg-type]
    )
    command = AgentCommand(user_prompt=prompt, user_id="u")

    events = await ask_the_browser(executor, command, {"result": {"timezone": "Asia/Tokyo"}})

    assert "Your browser says your time zone is Asia/Tokyo." in streamed_text(events)
    assert final(events).tool_calls[0].arguments == {}


async def test_the_browser_failing_is_said_plainly(registry: object) -> None:
    command = AgentCommand(
        user_prompt="what's my time zone?", user_id="u", client_tools=[BROWSER_TZ_SPEC]
    )

    events = await ask_the_browser(
        demo_executor(registry), command, {"error": "this page does not run it"}
    )

    text = streamed_text(events)
    assert "Your browser could not tell me your time zone: this page does not run it." in text
    assert "says your time zone is" not in text
    assert final(events).tool_calls[0].status == "error"


async def test_no_answer_from_the_browser_is_said_plainly(registry: object) -> None:
    executor = AgentExecutor(
        model=DemoModel(word_delay=0),
        tools=[FrontendTool("get_browser_timezone", "The browser's time zone.", timeout=0.05)],
        metrics=registry,  # type: ignore[arg-type]
    )

    events = await ask_the_browser(
        executor, AgentCommand(user_prompt="my time zone?", user_id="u"), None
    )

    text = streamed_text(events)
    assert "I could not get your time zone from your browser:" in text
    assert "did not finish within" in text
    assert final(events).tool_calls[0].status == "timeout"


@pytest.mark.parametrize("answer", [None, "", "not a zone!", 42, ["Asia/Tokyo"]])
async def test_a_result_that_is_no_zone_name_is_not_taken_for_one(
    registry: object, answer: object
) -> None:
    command = AgentCommand(user_prompt="my timezone?", user_id="u", client_tools=[BROWSER_TZ_SPEC])

    events = await ask_the_browser(demo_executor(registry), command, {"result": answer})

    text = streamed_text(events)
    assert "I could not get your time zone from your browser:" in text
    assert "says your time zone is" not in text


async def test_my_time_zone_without_the_browser_tool_behaves_as_before(registry: object) -> None:
    result = await demo_executor(registry).execute(
        AgentCommand(user_prompt="What is my time zone?")
    )

    assert [(r.tool, r.arguments) for r in result.tool_calls] == [("get_time", {"timezone": "UTC"})]
    assert "(UTC)" in result.content


async def test_other_questions_do_not_ask_the_browser(registry: object) -> None:
    command = AgentCommand(
        user_prompt="What's the weather and the time in Tokyo?", client_tools=[BROWSER_TZ_SPEC]
    )

    result = await demo_executor(registry).execute(command)

    assert [r.tool for r in result.tool_calls] == ["get_weather", "get_time"]


async def test_the_browser_call_streams_like_the_other_tool_calls() -> None:
    tools = [{"type": "function", "function": {**BROWSER_TZ_SPEC}}]
    request = ModelRequest([UserMessage(content="what is my time zone?")], tools)

    chunks = [chunk async for chunk in DemoModel(word_delay=0).stream(request)]
    again = [chunk async for chunk in DemoModel(word_delay=0).stream(request)]

    assert chunks == again  # deterministic
    deltas = [d for c in chunks if c.tool_calls for d in c.tool_calls]
    assert deltas[0].name == "get_browser_timezone" and deltas[0].index == 0
    assert "".join(d.arguments or "" for d in deltas) == "{}"
    assert [c.finish_reason for c in chunks if c.finish_reason] == ["tool_calls"]


# ---- a newcomer's own tools: called when the message names them ------------------------------


@tool
def lookup_order(order_id: str) -> dict[str, str]:
    """Look up an order by its id: its status."""
    return {"order_id": order_id, "status": "shipped"}


@tool
def convert_currency(amount: float, to: Literal["EUR", "USD", "GBP"] = "EUR") -> str:
    """Convert an amount of money into another currency."""
    return f"{amount:g} is {amount * 2:g} {to}"


@tool
def add(a: int, b: int) -> int:
    """Add two whole numbers."""
    return a + b


@tool
def shout(text: str, times: int = 1) -> str:
    """Repeat a text in capitals."""
    return " ".join([text.upper()] * times)


OWN_TOOLS = [lookup_order, convert_currency, add, shout]


def own_executor(registry: object, *tools: object) -> AgentExecutor:
    return AgentExecutor(
        model=DemoModel(word_delay=0),
        tools=[*OWN_TOOLS, *tools],  # type: ignore[list-item]
        metrics=registry,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(
    ("prompt", "tool_name", "arguments"),
    [
        ("Where is order 42?", "lookup_order", {"order_id": "42"}),  # a word of its name
        ("lookup_order A-17 please", "lookup_order", {"order_id": "A-17"}),  # its name
        ("please look up order B-9", "lookup_order", {"order_id": "B-9"}),
        ("convert 12.5 to USD", "convert_currency", {"amount": 12.5, "to": "USD"}),  # an enum
        ("convert currency amount=7", "convert_currency", {"amount": 7}),  # name=value
        ("add 2 and 3", "add", {"a": 2, "b": 3}),  # numbers in order
        ("shout 'hello there' 3 times", "shout", {"text": "hello there", "times": 3}),  # quoted
        ("shout good morning", "shout", {"text": "good morning"}),  # the words after its name
        ("put this text in capitals: hi", "shout", {"text": "hi"}),  # words of its description
    ],
)
async def test_a_tool_the_message_names_is_called_with_arguments_from_it(
    registry: object, prompt: str, tool_name: str, arguments: dict[str, object]
) -> None:
    result = await own_executor(registry).execute(AgentCommand(user_prompt=prompt))

    assert [(r.tool, r.arguments, r.status) for r in result.tool_calls] == [
        (tool_name, arguments, "success")
    ]
    assert result.content.startswith(f"Let me check that for you ({tool_name}). ")
    assert f"The {tool_name} tool said: {result.tool_calls[0].result} Anything else?" in (
        result.content
    )


async def test_the_answer_streams_the_tools_result(registry: object) -> None:
    events = await collect(own_executor(registry), "Where is order 42?")

    starts = [(e.tool, e.arguments) for e in events if isinstance(e, ToolStartEvent)]
    assert starts == [("lookup_order", {"order_id": "42"})]
    assert streamed_text(events) == (
        "Let me check that for you (lookup_order). \n\n"
        'The lookup_order tool said: {"order_id":"42","status":"shipped"} Anything else?'
    )


async def test_a_message_naming_no_tool_says_which_tools_it_has(registry: object) -> None:
    result = await own_executor(registry).execute(AgentCommand(user_prompt="Hello!"))

    assert result.tool_calls == []
    assert "demo model" in result.content
    assert "Name one of my tools (add, convert_currency, lookup_order, shout)" in result.content


async def test_the_demo_tools_keep_their_own_rules_beside_other_tools(registry: object) -> None:
    executor = own_executor(registry, *DEMO_TOOLS)

    result = await executor.execute(AgentCommand(user_prompt="What's the weather in Lisbon?"))

    assert [(r.tool, r.arguments) for r in result.tool_calls] == [
        ("get_weather", {"city": "Lisbon"})
    ]


async def test_a_handoff_is_only_taken_when_asked_for_by_name(registry: object) -> None:
    billing = AgentExecutor(model=DemoModel(word_delay=0), name="billing", metrics=registry)  # type: ignore[arg-type]
    triage = AgentExecutor(
        model=DemoModel(word_delay=0),
        tools=[handoff(billing)],
        metrics=CollectorRegistry(),
    )

    kept = await triage.execute(AgentCommand(user_prompt="I have a billing question"))
    handed = await triage.execute(AgentCommand(user_prompt="transfer to billing, please"))

    assert kept.tool_calls == []
    assert [r.tool for r in handed.tool_calls] == ["transfer_to_billing"]


def test_the_calls_stream_like_a_providers_and_are_deterministic() -> None:
    tools = [{"type": "function", "function": lookup_order.spec()["function"]}]
    request = ModelRequest([UserMessage(content="where is order 42?")], tools)

    async def chunks() -> list[ModelChunk]:
        return [chunk async for chunk in DemoModel(word_delay=0).stream(request)]

    first, again = anyio.run(chunks), anyio.run(chunks)

    assert first == again
    deltas = [d for c in first if c.tool_calls for d in c.tool_calls]
    assert deltas[0].name == "lookup_order"
    assert "".join(d.arguments or "" for d in deltas) == '{"order_id": "42"}'


MY_TOOLS = '''
from agent_executor import tool


@tool
def lookup_order(order_id: str) -> dict:
    """Look up an order by its id."""
    return {"order_id": order_id, "status": "shipped"}
'''


def test_serve_with_ones_own_tools_shows_them_called(tmp_path: Path) -> None:
    (tmp_path / "mytools.py").write_text(MY_TOOLS, encoding="utf-8")

    with service_process("--tools", str(tmp_path / "mytools.py")) as (_, base):
        answer = httpx.post(f"{base}/api/chat", json={"message": "Where is order 42?"}, timeout=30)

    assert answer.status_code == 200, answer.text
    result = answer.json()
    assert [(c["tool"], c["arguments"]) for c in result["tool_calls"]] == [
        ("lookup_order", {"order_id": "42"})
    ]
    assert '"status":"shipped"' in result["content"]


# ---- examples/slack_bot.py says which variables to set ----------------------------------------


def test_the_slack_example_without_its_tokens_says_what_to_set() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLACK_")}

    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "slack_bot.py")],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )

    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("slack_bot: set SLACK_BOT_TOKEN (")
    assert "SLACK_APP_TOKEN (" in line and "docs/integrations-slack.md" in line
