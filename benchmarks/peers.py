"""The peers' clients (run from ``.venv-peers``): the openai SDK, pydantic-ai, the OpenAI Agents
SDK and LangGraph, each doing the same conversation as the floor."""

from __future__ import annotations

import contextlib
import json
import os
from typing import Any

from scenario import TOOL_SPEC, now, prompt, weather
from variants import Variant, tool_round

__all__ = ["LangGraph", "OpenAIAgents", "OpenAISDK", "PydanticAI"]

TOOL_DOC = "Current weather in a city."


class OpenAISDK(Variant):
    """The official ``openai`` SDK: stream, collect the tool call, run it, stream again."""

    dists = ("openai", "httpx")

    async def setup(self, base_url: str, concurrency: int, job: dict[str, Any]) -> None:
        from openai import AsyncOpenAI

        self.client = AsyncOpenAI(base_url=base_url, api_key="bench", max_retries=0)
        from openai._constants import DEFAULT_CONNECTION_LIMITS

        self.pool = f"httpx default {DEFAULT_CONNECTION_LIMITS}"

    async def run(self, rid: str, tokens: int, delay_ms: int) -> tuple[str, float | None]:
        messages: list[dict[str, Any]] = [
            {"role": "user", "content": prompt(rid, tokens, delay_ms)}
        ]
        parts: list[str] = []
        first = None
        while True:
            stream = await self.client.chat.completions.create(
                model="bench",
                messages=messages,  # type: ignore[arg-type]
                tools=[TOOL_SPEC],  # type: ignore[list-item]
                stream=True,
                stream_options={"include_usage": True},
            )
            calls: dict[int, dict[str, Any]] = {}
            async for chunk in stream:
                if not chunk.choices:
                    continue
                delta = chunk.choices[0].delta
                if delta.content:
                    if first is None:
                        first = now()
                    parts.append(delta.content)
                if delta.tool_calls:
                    for tc in delta.tool_calls:
                        entry = calls.setdefault(
                            tc.index, {"id": None, "name": None, "arguments": ""}
                        )
                        if tc.id:
                            entry["id"] = tc.id
                        if tc.function:
                            if tc.function.name:
                                entry["name"] = tc.function.name
                            if tc.function.arguments:
                                entry["arguments"] += tc.function.arguments
            if not calls:
                break
            messages += tool_round(list(calls.values()), json.loads)
        return "".join(parts), first

    async def close(self) -> None:
        await self.client.close()


class PydanticAI(Variant):
    """pydantic-ai ``Agent.run_stream_events`` with ``OpenAIChatModel`` + ``OpenAIProvider``."""

    dists = ("pydantic-ai-slim", "openai", "httpx", "pydantic")

    async def setup(self, base_url: str, concurrency: int, job: dict[str, Any]) -> None:
        from pydantic_ai import Agent
        from pydantic_ai.messages import PartDeltaEvent, PartStartEvent, TextPart, TextPartDelta
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        self.types = (PartDeltaEvent, PartStartEvent, TextPart, TextPartDelta)
        provider = OpenAIProvider(base_url=base_url, api_key="bench")
        self.agent = Agent(OpenAIChatModel("bench", provider=provider))

        @self.agent.tool_plain
        async def get_weather(city: str) -> str:
            """Current weather in a city."""
            return weather(city)

        self.pool = _httpx_pool(provider.client)

    async def run(self, rid: str, tokens: int, delay_ms: int) -> tuple[str, float | None]:
        handle = self.agent.run_stream_events(prompt(rid, tokens, delay_ms))
        # pydantic-ai >= 2 returns an async context manager; 1.x an async iterator.
        if hasattr(handle, "__aenter__"):
            async with handle as events:
                return await self._consume(events)
        return await self._consume(handle)

    async def _consume(self, events: Any) -> tuple[str, float | None]:
        part_delta, part_start, text_part, text_delta = self.types
        parts: list[str] = []
        first = None
        async for event in events:
            text = None
            if isinstance(event, part_delta):
                if isinstance(event.delta, text_delta):
                    text = event.delta.content_delta
            elif isinstance(event, part_start) and isinstance(event.part, text_part):
                text = event.part.content
            if text:
                if first is None:
                    first = now()
                parts.append(text)
        return "".join(parts), first


class OpenAIAgents(Variant):
    """OpenAI Agents SDK: ``Runner.run_streamed`` with ``OpenAIChatCompletionsModel``."""

    dists = ("openai-agents", "openai", "httpx")

    async def setup(self, base_url: str, concurrency: int, job: dict[str, Any]) -> None:
        os.environ["OPENAI_AGENTS_DISABLE_TRACING"] = "1"
        from agents import (
            Agent,
            OpenAIChatCompletionsModel,
            Runner,
            function_tool,
            set_tracing_disabled,
        )
        from openai import AsyncOpenAI
        from openai.types.responses import ResponseTextDeltaEvent

        set_tracing_disabled(True)  # no export of traces (no network here)
        client = AsyncOpenAI(base_url=base_url, api_key="bench", max_retries=0)

        @function_tool
        async def get_weather(city: str) -> str:
            """Current weather in a city."""
            return weather(city)

        self.runner, self.delta_type = Runner, ResponseTextDeltaEvent
        self.agent = Agent(
            name="bench",
            model=OpenAIChatCompletionsModel(model="bench", openai_client=client),
            tools=[get_weather],
        )
        self.pool = _httpx_pool(client)

    async def run(self, rid: str, tokens: int, delay_ms: int) -> tuple[str, float | None]:
        delta_type = self.delta_type
        parts: list[str] = []
        first = None
        result = self.runner.run_streamed(self.agent, input=prompt(rid, tokens, delay_ms))
        async for event in result.stream_events():
            if (
                event.type == "raw_response_event"
                and isinstance(event.data, delta_type)
                and event.data.delta
            ):
                if first is None:
                    first = now()
                parts.append(event.data.delta)
        return "".join(parts), first


class LangGraph(Variant):
    """LangGraph ``create_react_agent`` + ``ChatOpenAI(base_url=...)``, ``astream`` messages."""

    dists = ("langgraph", "langchain-openai", "langchain-core", "openai", "httpx")

    async def setup(self, base_url: str, concurrency: int, job: dict[str, Any]) -> None:
        for name in ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2"):
            os.environ.pop(name, None)
        from langchain_core.messages import AIMessageChunk
        from langchain_core.tools import tool
        from langchain_openai import ChatOpenAI
        from langgraph.prebuilt import create_react_agent

        @tool
        async def get_weather(city: str) -> str:
            """Current weather in a city."""
            return weather(city)

        llm = ChatOpenAI(
            model="bench",
            base_url=base_url,
            api_key="bench",  # type: ignore[arg-type]
            streaming=True,
            stream_usage=True,
            max_retries=0,
        )
        self.chunk_type = AIMessageChunk
        self.agent = create_react_agent(llm, [get_weather])
        self.pool = "langchain-openai default (openai SDK httpx client)"

    async def run(self, rid: str, tokens: int, delay_ms: int) -> tuple[str, float | None]:
        chunk_type = self.chunk_type
        parts: list[str] = []
        first = None
        inputs = {"messages": [("user", prompt(rid, tokens, delay_ms))]}
        async for message, _meta in self.agent.astream(inputs, stream_mode="messages"):
            if isinstance(message, chunk_type) and message.content:
                content = message.content
                if not isinstance(content, str):
                    content = "".join(
                        p.get("text", "") if isinstance(p, dict) else str(p) for p in content
                    )
                if first is None:
                    first = now()
                parts.append(content)
        return "".join(parts), first


def _httpx_pool(client: Any) -> str:
    with contextlib.suppress(Exception):
        pool = client._client._transport._pool
        return (
            f"httpx max_connections={pool._max_connections}, "
            f"max_keepalive={pool._max_keepalive_connections}"
        )
    return "httpx default"
