"""One measurement of one benchmark variant, in a process of its own.

    python benchmarks/worker.py --variant ours --base-url http://127.0.0.1:8500/v1 --job '{...}'

Run by ``benchmarks/run.py`` (the project's venv runs our variants and the floor, the peers'
venv runs the peers); it prints one JSON object on its last line of output. Only the standard
library is imported at module level: each variant imports its own client in ``setup``.

Modes (``job["mode"]``):

- ``cpu``: warm up, then ``latency_runs`` small runs (client timestamps for time to first token,
  the LLM server timestamps the same runs), then ``pairs`` runs of ``n1`` and ``n2`` tokens in
  alternating order, each timed with ``time.process_time()`` (for the service: the service
  process's CPU from ``/proc/<pid>/task/*/schedstat``, in ns).
- ``concurrency``: ``streams`` runs at once, ``tokens`` deltas ``delay_ms`` apart; wall time,
  failures, CPU, peak RSS (``VmHWM`` after resetting it through ``/proc/<pid>/clear_refs``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import resource
import sys
import time
import traceback
import warnings
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from scenario import TOOL_SPEC, expected_text, now, prompt, run_id, weather  # noqa: E402

warnings.filterwarnings("ignore")

# --------------------------------------------------------------------------- #
# /proc helpers (the service's CPU and memory are read from outside it)
# --------------------------------------------------------------------------- #


def _status_kib(pid: int | str, field: str) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def rss_kib(pid: int | str = "self") -> int:
    return _status_kib(pid, "VmRSS")


def hwm_kib(pid: int | str = "self") -> int:
    return _status_kib(pid, "VmHWM")


def reset_hwm(pid: int | str = "self") -> bool:
    """Reset the peak RSS to the current RSS (Linux >= 4.0)."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def proc_cpu_seconds(pid: int) -> float:
    """CPU time of every thread of ``pid`` (ns resolution, unlike the 10 ms ticks of /stat)."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total / 1e9


def raise_nofile() -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def versions(*dists: str) -> dict[str, str]:
    out = {}
    for dist in dists:
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "not installed"
    return out


class RunFailure(Exception):
    pass


# --------------------------------------------------------------------------- #
# Variants: setup() once, run() per conversation -> (text, time of the first text delta)
# --------------------------------------------------------------------------- #


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


VARIANTS: dict[str, Any] = {
    "floor": lambda: Floor(use_orjson=False),
    "floor_orjson": lambda: Floor(use_orjson=True),
    "ours": lambda: Ours(litellm=False),
    "ours_litellm": lambda: Ours(litellm=True),
    "service": ServiceClient,
    "openai_sdk": OpenAISDK,
    "pydantic_ai": PydanticAI,
    "openai_agents": OpenAIAgents,
    "langgraph": LangGraph,
}

# --------------------------------------------------------------------------- #
# Modes
# --------------------------------------------------------------------------- #


async def _checked_run(
    variant: Variant, rid: str, tokens: int, delay_ms: int
) -> tuple[float, float | None, float]:
    t0 = now()
    text, first = await variant.run(rid, tokens, delay_ms)
    end = now()
    if text != expected_text(tokens):
        raise RunFailure(
            f"wrong text: {len(text)} chars, expected {len(expected_text(tokens))}: {text[:80]!r}"
        )
    return t0, first, end


async def cpu_mode(variant: Variant, job: dict[str, Any]) -> dict[str, Any]:
    service_pid = job.get("service_pid")
    prefix = job["prefix"]
    out: dict[str, Any] = {"latency": [], "cpu_us_per_token": [], "client_cpu_us_per_token": []}
    for _ in range(job["warmup"]):
        await _checked_run(variant, run_id(prefix + "w"), job["latency_tokens"], 0)
    await _checked_run(variant, run_id(prefix + "w"), job["n2"], 0)
    # The first full collection after the imports can take tens of ms (proportional to the
    # heap the imports left); it would land in one measured run at random. Do it now, for
    # every variant alike; later collections happen at their natural rate.
    gc.collect()
    for _ in range(job["latency_runs"]):
        rid = run_id(prefix + "l")
        t0, first, end = await _checked_run(variant, rid, job["latency_tokens"], 0)
        out["latency"].append({"run": rid, "t0": t0, "first": first, "end": end})
    out["cpu_us_per_token"], out["client_cpu_us_per_token"] = await _cpu_pairs(
        variant, prefix + "c", job["n1"], job["n2"], job["pairs"], 0, service_pid
    )
    out["cyclic_garbage_per_run"] = await _cyclic_garbage(variant, prefix + "g")
    if job.get("paced_pairs"):
        out["paced_cpu_us_per_token"], out["paced_client_cpu_us_per_token"] = await _cpu_pairs(
            variant,
            prefix + "p",
            job["paced_n1"],
            job["paced_n2"],
            job["paced_pairs"],
            job["paced_delay_ms"],
            service_pid,
        )
    return out


async def _cyclic_garbage(variant: Variant, prefix: str, runs: int = 5) -> float:
    """Objects per conversation that only the cyclic GC can free (reference cycles)."""
    gc.collect()
    gc.disable()
    try:
        for _ in range(runs):
            await _checked_run(variant, run_id(prefix), 5, 0)
        await asyncio.sleep(0.05)
        return gc.collect() / runs
    finally:
        gc.enable()


class GCTimer:
    """Time spent in garbage collection, per generation (gc.callbacks)."""

    def __init__(self) -> None:
        self.count = [0, 0, 0]
        self.seconds = [0.0, 0.0, 0.0]
        self.longest = 0.0
        self._start = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        else:
            spent = time.perf_counter() - self._start
            generation = info["generation"]
            self.count[generation] += 1
            self.seconds[generation] += spent
            self.longest = max(self.longest, spent)


async def _cpu_pairs(
    variant: Variant,
    prefix: str,
    n1: int,
    n2: int,
    pairs: int,
    delay_ms: int,
    service_pid: int | None,
) -> tuple[list[float], list[float]]:
    """CPU µs per extra token: runs of n1 and n2 tokens (alternating order), difference."""
    samples: list[float] = []
    client_samples: list[float] = []
    for i in range(pairs):
        cost: dict[int, float] = {}
        client_cost: dict[int, float] = {}
        for n in (n1, n2) if i % 2 == 0 else (n2, n1):
            rid = run_id(prefix)
            c0 = time.process_time()
            s0 = proc_cpu_seconds(service_pid) if service_pid else 0.0
            await _checked_run(variant, rid, n, delay_ms)
            client_cost[n] = time.process_time() - c0
            cost[n] = (proc_cpu_seconds(service_pid) - s0) if service_pid else client_cost[n]
        samples.append((cost[n2] - cost[n1]) / (n2 - n1) * 1e6)
        client_samples.append((client_cost[n2] - client_cost[n1]) / (n2 - n1) * 1e6)
    return samples, client_samples


async def concurrency_mode(variant: Variant, job: dict[str, Any]) -> dict[str, Any]:
    service_pid = job.get("service_pid")
    target = service_pid or "self"
    streams, tokens, delay_ms = job["streams"], job["tokens"], job["delay_ms"]
    await _checked_run(variant, "-", 5, 0)  # warm-up: imports, first connection
    gc.collect()
    if job.get("ready_file"):  # lets a profiler attach before the burst (profile_hotpath.py)
        with open(job["ready_file"], "w") as ready:  # noqa: ASYNC230 - once, before the burst
            ready.write(str(os.getpid()))
        await asyncio.sleep(job.get("pause_s", 1.0))
    baseline = rss_kib(target)
    hwm_reset = reset_hwm(target)
    client_baseline = rss_kib()
    if service_pid:
        reset_hwm()
    service_url = job.get("service_url")
    gc0 = await asyncio.to_thread(_service_gc_collections, service_url) if service_url else None
    cpu0 = proc_cpu_seconds(service_pid) if service_pid else time.process_time()
    client_cpu0 = time.process_time()
    durations: list[float] = []
    ttfts: list[float] = []
    errors: dict[str, int] = {}

    async def one() -> None:
        try:
            t0, first, end = await _checked_run(variant, "-", tokens, delay_ms)
        except Exception as exc:
            key = f"{type(exc).__name__}: {str(exc)[:160]}"
            errors[key] = errors.get(key, 0) + 1
            return
        durations.append(end - t0)
        if first is not None:
            ttfts.append(first - t0)

    gc_timer = GCTimer()
    gc.callbacks.append(gc_timer)
    started = now()
    tasks = [asyncio.ensure_future(one()) for _ in range(streams)]
    _done, pending = await asyncio.wait(tasks, timeout=job["time_limit"])
    wall = now() - started
    gc.callbacks.remove(gc_timer)
    cpu = (proc_cpu_seconds(service_pid) if service_pid else time.process_time()) - cpu0
    client_cpu = time.process_time() - client_cpu0
    peak = hwm_kib(target)
    client_peak = hwm_kib()
    for task in pending:
        task.cancel()
    if pending:
        await asyncio.wait(pending, timeout=10)
    service_gc = None
    if service_url and gc0 is not None:
        gc1 = await asyncio.to_thread(_service_gc_collections, service_url)
        service_gc = [b - a for a, b in zip(gc0, gc1, strict=True)] if gc1 is not None else None
    durations.sort()
    ttfts.sort()
    return {
        "streams": streams,
        "completed": len(durations),
        "failed": sum(errors.values()),
        "unfinished": len(pending),
        "errors": errors,
        "wall_s": wall,
        "time_limit_s": job["time_limit"],
        "cpu_s": cpu,
        "client_cpu_s": client_cpu if service_pid else None,
        "baseline_rss_kib": baseline,
        "peak_rss_kib": peak,
        "hwm_reset": hwm_reset,
        "rss_per_stream_kib": (peak - baseline) / streams,
        "client_peak_rss_kib": client_peak if service_pid else None,
        "client_rss_per_stream_kib": (client_peak - client_baseline) / streams
        if service_pid
        else None,
        "client_gc": {
            "collections": gc_timer.count,
            "seconds": [round(x, 4) for x in gc_timer.seconds],
            "longest_pause_s": round(gc_timer.longest, 4),
        },
        "service_gc_collections": service_gc,
        "stream_s_p50": _pct(durations, 50),
        "stream_s_p99": _pct(durations, 99),
        "ttft_s_p50": _pct(ttfts, 50),
        "ttft_s_p99": _pct(ttfts, 99),
    }


def _service_gc_collections(service_url: str) -> list[int] | None:
    """The service's garbage collections so far, per generation, from its ``/metrics``
    (prometheus-client's ``python_gc_collections_total``); read before and after the burst."""
    import re
    import urllib.request

    try:
        with urllib.request.urlopen(service_url + "/metrics", timeout=10) as response:
            text = response.read().decode()
    except OSError:
        return None
    pattern = r'^python_gc_collections_total\{generation="(\d)"\} (\S+)$'
    found = dict(re.findall(pattern, text, re.M))
    if len(found) != 3:
        return None
    return [int(float(found[str(g)])) for g in range(3)]


def _pct(values: list[float], p: float) -> float | None:
    if not values:
        return None
    return values[min(len(values) - 1, int(len(values) * p / 100))]


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    job = json.loads(args.job)
    variant: Variant = VARIANTS[args.variant]()
    concurrency = job.get("streams", job.get("pool", 100))
    t_setup = time.perf_counter()
    await variant.setup(args.base_url, concurrency, job)
    out: dict[str, Any] = {
        "variant": args.variant,
        "setup_s": time.perf_counter() - t_setup,
        "pool": variant.pool,
        "versions": versions(*variant.dists),
        "python": sys.version.split()[0],
    }
    try:
        if job["mode"] == "cpu":
            out.update(await cpu_mode(variant, job))
        else:
            out.update(await concurrency_mode(variant, job))
    finally:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(variant.close(), 10)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--variant", required=True, choices=sorted(VARIANTS))
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--job", required=True)
    args = parser.parse_args()
    raise_nofile()
    try:
        result = asyncio.run(main_async(args))
    except Exception as exc:
        result = {
            "variant": args.variant,
            "failed": True,
            "error": f"{type(exc).__name__}: {exc}",
            "traceback": traceback.format_exc()[-3000:],
        }
    sys.stdout.write("\n" + json.dumps(result) + "\n")
    sys.stdout.flush()
    # Some SDKs leave threads or sockets behind; the measurement is done, do not wait for them.
    os._exit(0)


if __name__ == "__main__":
    main()
