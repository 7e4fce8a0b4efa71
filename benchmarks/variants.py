"""The clients measured: the floor, ours, and our service's client (``Variant`` subclasses).

A variant is set up once (``setup``) and runs one conversation per ``run``: the user turn, the
tool call, the answer; it returns the text and the time of its first text delta. Each imports
its own client in ``setup``, so this module needs only the standard library.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

from scenario import TOOL_SPEC, now, prompt, weather

__all__ = ["Floor", "Ours", "RunFailure", "ServiceClient", "Variant", "tool_round"]


class RunFailure(Exception):
    pass


class Variant:
    dists: tuple[str, ...] = ()
    pool = "n/a"

    async def setup(self, base_url: str, concurrency: int, job: dict[str, Any]) -> None:
        raise NotImplementedError

    async def run(self, rid: str, tokens: int, delay_ms: int) -> tuple[str, float | None]:
        raise NotImplementedError

    async def close(self) -> None:
        pass


def tool_round(calls: list[dict[str, Any]], loads: Callable[[Any], Any]) -> list[dict[str, Any]]:
    """The assistant message with the model's ``calls`` and the tool's answer to each."""
    assistant = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": c["id"],
                "type": "function",
                "function": {"name": c["name"], "arguments": c["arguments"]},
            }
            for c in calls
        ],
    }
    results = [
        {"role": "tool", "tool_call_id": c["id"], "content": weather(**loads(c["arguments"]))}
        for c in calls
    ]
    return [assistant, *results]


class Floor(Variant):
    """Raw aiohttp: bytes split into lines in bulk, ``json.loads`` (or orjson) per ``data:``."""

    dists = ("aiohttp",)

    def __init__(self, use_orjson: bool) -> None:
        self.use_orjson = use_orjson
        if use_orjson:
            self.dists = ("aiohttp", "orjson")

    async def setup(self, base_url: str, concurrency: int, job: dict[str, Any]) -> None:
        import aiohttp

        if self.use_orjson:
            import orjson

            self.loads, self.dumps = orjson.loads, orjson.dumps
        else:
            self.loads = json.loads
            self.dumps = lambda obj: json.dumps(obj).encode()
        limit = max(100, concurrency)
        self.pool = f"aiohttp TCPConnector(limit={limit})"
        self.session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=limit, limit_per_host=0),
            timeout=aiohttp.ClientTimeout(total=None, connect=30),
        )
        self.url = base_url + "/chat/completions"
        self.headers = {"Content-Type": "application/json", "Authorization": "Bearer bench"}

    async def run(self, rid: str, tokens: int, delay_ms: int) -> tuple[str, float | None]:
        messages: list[dict[str, Any]] = [
            {"role": "user", "content": prompt(rid, tokens, delay_ms)}
        ]
        parts: list[str] = []
        first = await self.converse(messages, parts)
        return "".join(parts), first

    async def converse(self, messages: list[dict[str, Any]], parts: list[str]) -> float | None:
        """Model turns until one calls no tool; text deltas go to ``parts``. The time of the
        first text delta."""
        calls, first = await self._turn(messages, parts, None)
        while calls:
            messages += tool_round(calls, self.loads)
            calls, first = await self._turn(messages, parts, first)
        return first

    async def _turn(
        self, messages: list[dict[str, Any]], parts: list[str], first: float | None
    ) -> tuple[list[dict[str, Any]], float | None]:
        loads = self.loads
        body = self.dumps(
            {
                "model": "bench",
                "messages": messages,
                "tools": [TOOL_SPEC],
                "stream": True,
                "stream_options": {"include_usage": True},
            }
        )
        calls: dict[int, dict[str, Any]] = {}
        async with self.session.post(self.url, data=body, headers=self.headers) as resp:
            if resp.status != 200:
                raise RunFailure(f"HTTP {resp.status}: {(await resp.text())[:200]}")
            pending = b""
            done = False
            # Read to the end of the body (after [DONE] comes only the chunked terminator), so
            # the connection goes back to the pool instead of being closed.
            async for data in resp.content.iter_any():
                if done:
                    continue
                lines = (pending + data).split(b"\n") if pending else data.split(b"\n")
                pending = lines.pop()
                for line in lines:
                    if not line.startswith(b"data:"):
                        continue
                    payload = line[5:].strip()
                    if payload == b"[DONE]":
                        done = True
                        break
                    obj = loads(payload)
                    choices = obj.get("choices")
                    if not choices:
                        continue
                    delta = choices[0].get("delta") or {}
                    text = delta.get("content")
                    if text:
                        if first is None:
                            first = now()
                        parts.append(text)
                    tool_calls = delta.get("tool_calls")
                    if tool_calls:
                        for tc in tool_calls:
                            entry = calls.setdefault(
                                tc.get("index", 0), {"id": None, "name": None, "arguments": ""}
                            )
                            if tc.get("id"):
                                entry["id"] = tc["id"]
                            fn = tc.get("function") or {}
                            if fn.get("name"):
                                entry["name"] = fn["name"]
                            if fn.get("arguments"):
                                entry["arguments"] += fn["arguments"]
        return list(calls.values()), first

    async def close(self) -> None:
        await self.session.close()


class Ours(Variant):
    """``AgentExecutor(...).execute_stream()`` on ``OpenAICompatModel`` or ``LiteLLMModel``."""

    def __init__(self, litellm: bool) -> None:
        self.litellm = litellm
        self.dists = ("agent-executor", "aiohttp", "orjson", "pydantic", "anyio") + (
            ("litellm", "openai", "httpx") if litellm else ()
        )

    async def setup(self, base_url: str, concurrency: int, job: dict[str, Any]) -> None:
        if self.litellm:
            os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        from bench_tools import get_weather
        from prometheus_client import CollectorRegistry

        from agent_executor import (
            AgentCommand,
            AgentExecutor,
            DoneEvent,
            ErrorEvent,
            LiteLLMModel,
            MessageEvent,
            OpenAICompatModel,
        )

        self.AgentCommand, self.MessageEvent = AgentCommand, MessageEvent
        self.DoneEvent, self.ErrorEvent = DoneEvent, ErrorEvent
        if self.litellm:
            model: Any = LiteLLMModel("openai/bench", api_base=base_url, api_key="bench")
            model.preload()
            self.pool = "litellm defaults"
        else:
            # A ChatModel instance is used as given, so its pool is sized here explicitly from
            # the same number as max_concurrency (only model *strings* get it automatically).
            model = OpenAICompatModel(
                "openai/bench", base_url=base_url, api_key="bench", max_connections=concurrency
            )
            self.pool = f"aiohttp TCPConnector(limit={concurrency})"
        self.executor = AgentExecutor(
            model=model,
            tools=[get_weather],
            max_concurrency=concurrency,
            metrics=CollectorRegistry(),
        )

    async def run(self, rid: str, tokens: int, delay_ms: int) -> tuple[str, float | None]:
        message_event = self.MessageEvent
        parts: list[str] = []
        first = None
        done = None
        command = self.AgentCommand(user_prompt=prompt(rid, tokens, delay_ms))
        async for event in self.executor.execute_stream(command):
            if type(event) is message_event:
                if first is None:
                    first = now()
                parts.append(event.text)
            elif isinstance(event, self.ErrorEvent):
                raise RunFailure(f"{event.code}: {event.message}")
            elif isinstance(event, self.DoneEvent):
                done = event
        if done is None:
            raise RunFailure("no done event")
        statuses = [r.status for r in done.tool_calls]
        if statuses != ["success"]:
            raise RunFailure(f"tool calls: {statuses}")
        return "".join(parts), first

    async def close(self) -> None:
        await self.executor.aclose()


class ServiceClient(Variant):
    """A client of our service: POST /api/chat/stream, a plain SSE parser (text mode)."""

    dists = ("agent-executor", "aiohttp")

    async def setup(self, base_url: str, concurrency: int, job: dict[str, Any]) -> None:
        import aiohttp

        limit = max(100, concurrency)
        self.session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=limit, limit_per_host=0),
            timeout=aiohttp.ClientTimeout(total=None, connect=60),
        )
        self.url = job["service_url"] + "/api/chat/stream"
        self.pool = f"client: aiohttp TCPConnector(limit={limit})"

    async def run(self, rid: str, tokens: int, delay_ms: int) -> tuple[str, float | None]:
        body = json.dumps({"message": prompt(rid, tokens, delay_ms)})
        parts: list[bytes] = []
        first = None
        event = b"message"
        data: list[bytes] = []
        finished = False
        async with self.session.post(
            self.url, data=body, headers={"Content-Type": "application/json"}
        ) as resp:
            if resp.status != 200:
                raise RunFailure(f"HTTP {resp.status}: {(await resp.text())[:200]}")
            pending = b""
            async for chunk in resp.content.iter_any():
                lines = (pending + chunk).split(b"\n") if pending else chunk.split(b"\n")
                pending = lines.pop()
                for line in lines:
                    if not line:  # dispatch
                        if event == b"message":
                            if first is None:
                                first = now()
                            parts.append(b"\n".join(data))
                        elif event == b"error":
                            raise RunFailure(b"\n".join(data).decode())
                        elif event == b"done":
                            finished = True
                        event, data = b"message", []
                    elif line.startswith(b"data:"):
                        value = line[5:]
                        data.append(value[1:] if value.startswith(b" ") else value)
                    elif line.startswith(b"event:"):
                        event = line[6:].strip()
        if not finished:
            raise RunFailure("the stream ended without a done event")
        return b"".join(parts).decode(), first

    async def close(self) -> None:
        await self.session.close()


class ServiceV1Client(ServiceClient):
    """A client of our service's OpenAI-compatible stream: POST /v1/chat/completions with
    ``stream: true``, its ``data:`` chunks parsed with orjson (the content deltas joined)."""

    async def setup(self, base_url: str, concurrency: int, job: dict[str, Any]) -> None:
        await super().setup(base_url, concurrency, job)
        self.url = job["service_url"] + "/v1/chat/completions"

    async def run(self, rid: str, tokens: int, delay_ms: int) -> tuple[str, float | None]:
        import orjson

        body = json.dumps(
            {
                "model": "default",
                "stream": True,
                "messages": [{"role": "user", "content": prompt(rid, tokens, delay_ms)}],
            }
        )
        parts: list[str] = []
        first = None
        finished = False
        async with self.session.post(
            self.url, data=body, headers={"Content-Type": "application/json"}
        ) as resp:
            if resp.status != 200:
                raise RunFailure(f"HTTP {resp.status}: {(await resp.text())[:200]}")
            pending = b""
            async for chunk in resp.content.iter_any():
                lines = (pending + chunk).split(b"\n") if pending else chunk.split(b"\n")
                pending = lines.pop()
                for line in lines:
                    if not line.startswith(b"data: "):
                        continue
                    payload = line[6:]
                    if payload == b"[DONE]":
                        finished = True
                        continue
                    obj = orjson.loads(payload)
                    if "error" in obj:
                        raise RunFailure(str(obj["error"]))
                    for choice in obj.get("choices") or ():
                        text = choice["delta"].get("content")
                        if text:
                            if first is None:
                                first = now()
                            parts.append(text)
        if not finished:
            raise RunFailure("the stream ended without [DONE]")
        return "".join(parts), first
