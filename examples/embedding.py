"""Embed agent-executor in a plain asyncio program: one ``execute()``, one ``execute_stream()``.

Offline on the DemoModel unless ``LLM_MODEL`` names a model (``openai/gpt-4o-mini`` takes the
fast OpenAI-compatible client, ``anthropic/...`` goes through litellm); ``LLM_BASE_URL`` and
``LLM_API_KEY`` point it at an OpenAI-compatible server."""

from __future__ import annotations

import asyncio
import os
from contextlib import aclosing

from agent_executor import (
    AgentCommand,
    AgentExecutor,
    ChatModel,
    DemoModel,
    ErrorEvent,
    MessageEvent,
    ToolEndEvent,
    ToolStartEvent,
    tool,
)
from agent_executor.models import resolve_model
from agent_executor.tools.demo import DEMO_TOOLS  # the only tools the DemoModel calls

USER, SESSION = "alice", "trip-1"  # one conversation: the second run sees the first


@tool
def to_fahrenheit(celsius: float) -> float:
    """Convert a temperature from degrees Celsius to degrees Fahrenheit.

    Args:
        celsius: The temperature in degrees Celsius.
    """
    return round(celsius * 9 / 5 + 32, 1)  # a sync tool runs in a worker thread


@tool(timeout=5)
async def packing_advice(conditions: str) -> str:
    """Suggest one thing to pack for weather conditions such as "light rain"."""
    await asyncio.sleep(0.01)  # stands in for real I/O: async tools run on the event loop
    return "an umbrella" if "rain" in conditions else "sunglasses"


async def main() -> None:
    model: ChatModel = DemoModel()
    if name := os.environ.get("LLM_MODEL"):
        base, key = os.environ.get("LLM_BASE_URL"), os.environ.get("LLM_API_KEY")
        model = resolve_model(name, api_base=base, api_key=key)
    tools = [*DEMO_TOOLS, to_fahrenheit, packing_advice]
    async with AgentExecutor(model=model, tools=tools) as executor:
        ask = "What time is it in Paris?"
        first = AgentCommand(user_prompt=ask, user_id=USER, session_id=SESSION)
        result = await executor.execute(first)
        print(f"execute(): {result.content}\n  tools={[c.tool for c in result.tool_calls]}")
        # A real model finds "there" in the session history; the DemoModel falls back to Paris.
        second = first.model_copy(update={"user_prompt": "And what is the weather there?"})
        print("execute_stream(): ", end="")
        mid_line = True  # streamed text is printed without line breaks
        async with aclosing(executor.execute_stream(second)) as events:
            async for event in events:
                if isinstance(event, MessageEvent):
                    print(event.text, end="", flush=True)
                    mid_line = True
                    continue
                print(end="\n" if mid_line else "")  # end the line of streamed text
                mid_line = False
                if isinstance(event, ToolStartEvent):
                    print(f"  [tool start] {event.tool} {event.arguments}")
                elif isinstance(event, ToolEndEvent):
                    print(f"  [tool end] {event.tool}: {event.status} ({event.duration_ms:.0f} ms)")
                elif isinstance(event, ErrorEvent):
                    print(f"  [error] {event.code}: {event.message}")
        history = await executor.memory.load(USER, SESSION)
        print(f"session {SESSION!r} holds {len(history)} messages")


if __name__ == "__main__":
    asyncio.run(main())
