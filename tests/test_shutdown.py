"""Shutdown as a load balancer expects it (issue #30, item 7).

On SIGTERM the real process (``python -m server``) answers its readiness probe 503 at once,
keeps its listener open through the grace period refusing new runs with 503 and
``Retry-After``, lets running streams finish (a stream still running when the grace is over
ends with ``error`` ``overloaded`` and ``done``), serves clients re-attaching to running runs,
then closes and exits 0. In-process tests cover what the process cannot show: the exact
readiness answer, and the runs whose client left.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import threading
import time
from collections import defaultdict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
from aiohttp import web
from aiohttp.test_utils import TestServer
from mcp import Client

from agent_executor import tool
from agent_executor.models.scripted import call, text_turn, tool_turn
from server import Settings, create_app
from server.app import begin_shutdown
from server.state import STATE

from .helpers import make_executor
from .server_helpers import service_process

GRACE_SECONDS = 4.0
SLOW = {"message": "weather in Rome?", "events": "json"}
"""A run whose tool (tests/slow_tools.py) outlives the grace period."""
BROWSER_TOOL = {
    "name": "get_browser_timezone",
    "description": "The time zone of the user's browser (IANA name).",
    "parameters": {"type": "object", "properties": {}},
}
ASKING = {"message": "what is my time zone?", "events": "json", "tools": [BROWSER_TOOL]}
"""A run waiting for the client's answer to a frontend tool call, given during the grace."""
NEW_RUNS = [
    ("/api/chat", {"message": "weather in Rome?"}),
    ("/api/chat/stream", {"message": "weather in Rome?"}),
    ("/api/chat/ui", {"id": "c", "trigger": "submit-message", "messages": [
        {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]},
    ]}),
    ("/api/ag-ui", {
        "threadId": "t1", "runId": "r1", "state": {}, "tools": [], "context": [],
        "forwardedProps": {}, "messages": [{"id": "u1", "role": "user", "content": "hi"}],
    }),
    ("/v1/chat/completions", {"model": "default", "messages": [{"role": "user", "content": "hi"}]}),
    ("/v1/chat/completions", {
        "model": "default", "stream": True, "messages": [{"role": "user", "content": "hi"}],
    }),
    ("/v1/responses", {"model": "default", "input": "hi"}),
]  # fmt: skip
"""Every request that would start a run, one per endpoint (and both ``/v1`` chat modes)."""


class Stream:
    """One ``json``-mode event stream, read in a task as it comes."""

    def __init__(self, client: httpx.AsyncClient, method: str, url: str, **request: Any) -> None:
        self.events: list[tuple[str, Any]] = []
        self.headers = httpx.Headers()
        self._seen: defaultdict[str, asyncio.Event] = defaultdict(asyncio.Event)
        self.task = asyncio.ensure_future(self._read(client, method, url, **request))

    async def seen(self, kind: str) -> Any:
        """The data of the first ``kind`` event, once it has come."""
        waiting = asyncio.ensure_future(self._seen[kind].wait())
        await asyncio.wait({waiting, self.task}, return_when=asyncio.FIRST_COMPLETED)
        if not waiting.done():
            waiting.cancel()
            self.task.result()  # its failure, if any
            raise AssertionError(f"the stream ended without {kind}: {self.events}")
        return next(data for event, data in self.events if event == kind)

    def kinds(self) -> list[str]:
        return [event for event, _ in self.events]

    async def _read(self, client: httpx.AsyncClient, method: str, url: str, **request: Any) -> None:
        async with client.stream(method, url, **request) as response:
            assert response.status_code == 200, await response.aread()
            self.headers = response.headers
            kind = ""
            async for line in response.aiter_lines():
                if line.startswith("event: "):
                    kind = line.removeprefix("event: ")
                elif line.startswith("data: "):
                    self.events.append((kind, json.loads(line.removeprefix("data: "))))
                    self._seen[kind].set()


def read_output(process: subprocess.Popen[str]) -> tuple[threading.Thread, list[str]]:
    """The process's output, read as it comes (a full pipe would block its logging)."""
    lines: list[str] = []
    assert process.stdout is not None
    reader = threading.Thread(target=lines.extend, args=(process.stdout,))
    reader.start()
    return reader, lines


async def until_unready(client: httpx.AsyncClient) -> httpx.Response:
    """Ask the readiness probe again and again until it answers 503."""
    while True:
        answer = await client.get("/api/ready")
        if answer.status_code == 503:
            return answer
        assert answer.status_code == 200


async def refuse_new_runs(
    client: httpx.AsyncClient, running: Stream, until: float
) -> list[httpx.Response]:
    """Every new run asked for, round after round until ``until`` (shortly before the grace
    ends), while ``running``, which only the end of the grace ends, goes on."""
    answers: list[httpx.Response] = []
    while True:
        for path, body in NEW_RUNS:
            answers.append(await client.post(path, json=body))
        if time.monotonic() >= until:
            return answers
        await asyncio.wait({running.task}, timeout=0.2)
        assert not running.task.done(), "the grace period ended early"


async def mcp_tools(base: str) -> list[str]:
    """The MCP endpoint's tools (its first request loads the MCP SDK in the service)."""
    async with Client(f"{base}/mcp") as mcp:
        return [listed.name for listed in (await mcp.list_tools()).tools]


async def mcp_call(base: str) -> Any:
    async with Client(f"{base}/mcp") as mcp:
        return await mcp.call_tool("default", {"message": "hi"})


async def test_sigterm_drains_the_way_a_load_balancer_expects() -> None:
    with service_process(
        "--tools", "tests/slow_tools.py", "--shutdown-grace", str(GRACE_SECONDS),
        env={"SLOW_TOOL_SECONDS": "30"},
    ) as (process, base):  # fmt: skip
        reader, output = read_output(process)
        async with httpx.AsyncClient(base_url=base, timeout=20) as client:
            slow = Stream(client, "POST", "/api/chat/stream", json=SLOW)
            asking = Stream(client, "POST", "/api/chat/stream", json=ASKING)
            await slow.seen("tool_start")
            asked = await asking.seen("tool_call")
            ready_before = await client.get("/api/ready")
            tools = await mcp_tools(base)

            signalled = time.monotonic()
            process.send_signal(signal.SIGTERM)
            unready = await until_unready(client)
            latency = time.monotonic() - signalled

            run_id = slow.headers["X-Run-Id"]
            again = Stream(client, "GET", f"/api/runs/{run_id}/events")
            await again.seen("tool_start")
            answered = await client.post(
                "/api/chat/tool-result", json={"call_id": asked["call_id"], "result": "UTC"}
            )
            await asking.task
            live = await client.get("/api/health")
            refused_call = await mcp_call(base)
            until = signalled + GRACE_SECONDS - 1  # new connections race with the close
            refusals = await refuse_new_runs(client, slow, until)
            await asyncio.gather(slow.task, again.task)
        exit_code = await asyncio.to_thread(process.wait, 15)
        reader.join()

    assert ready_before.status_code == 200
    assert latency < 0.1, f"readiness turned 503 {latency * 1000:.0f} ms after SIGTERM"
    assert unready.headers["Retry-After"] == "5"
    assert unready.json()["error"]["code"] == "unavailable"
    assert unready.json()["error"]["message"] == "not ready: shutting down"
    assert live.status_code == 200

    assert answered.json() == {"status": "delivered"}  # the grace serves what runs need
    assert "error" not in asking.kinds()
    assert asking.kinds()[-2:] == ["message", "done"]
    assert asking.events[-1][1]["finish_reason"] == "stop"

    shut = {"code": "overloaded", "message": "the server is shutting down"}
    for stream in (slow, again):  # the first reader and the one that came back
        assert stream.kinds()[-2:] == ["error", "done"]
        assert stream.events[-2][1] == shut
        assert stream.events[-1][1]["finish_reason"] == "error"
        assert stream.kinds().count("done") == 1
    assert again.kinds()[:2] == slow.kinds()[:2]  # from the run's start

    assert len(refusals) >= len(NEW_RUNS)
    assert {(r.status_code, r.headers.get("Retry-After")) for r in refusals} == {(503, "5")}
    assert {r.json()["error"]["code"] for r in refusals} == {"unavailable"}
    assert {r.headers["Connection"] for r in refusals} == {"close"}
    assert "default" in tools
    assert refused_call.is_error
    assert refused_call.structured_content["error"]["code"] == "unavailable"

    assert exit_code == 0
    log = "".join(output)
    assert "SIGTERM: shutting down" in log
    assert "Traceback" not in log and "was destroyed but it is pending" not in log


async def test_sigint_shuts_down_the_same_way() -> None:
    with service_process(
        "--tools", "tests/slow_tools.py", "--shutdown-grace", "1", env={"SLOW_TOOL_SECONDS": "30"}
    ) as (process, base):
        reader, output = read_output(process)
        async with httpx.AsyncClient(base_url=base, timeout=20) as client:
            slow = Stream(client, "POST", "/api/chat/stream", json=SLOW)
            await slow.seen("tool_start")
            process.send_signal(signal.SIGINT)
            unready = await until_unready(client)
            refused = await client.post("/api/chat", json={"message": "hi"})
            await slow.task
        exit_code = await asyncio.to_thread(process.wait, 15)
        reader.join()

    assert unready.json()["error"]["message"] == "not ready: shutting down"
    assert (refused.status_code, refused.headers["Retry-After"]) == (503, "5")
    assert slow.kinds()[-2:] == ["error", "done"]
    assert exit_code == 0
    assert "SIGINT: shutting down" in "".join(output)


@asynccontextmanager
async def served(app: web.Application) -> AsyncIterator[httpx.AsyncClient]:
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    try:
        async with httpx.AsyncClient(base_url=str(server.make_url("")), timeout=10) as client:
            yield client
    finally:
        await server.close()


async def test_readiness_says_shutting_down_and_liveness_stays_200() -> None:
    app = create_app(make_executor([]))
    async with served(app) as client:
        before = await client.get("/api/ready")
        begin_shutdown(app)
        ready = await client.get("/api/ready", headers={"X-Request-Id": "r1"})
        also_ready = await client.get("/api/health?ready=1")
        live = await client.get("/api/health")

    assert before.status_code == 200
    body = ready.json()
    assert (ready.status_code, ready.headers["Retry-After"]) == (503, "5")
    assert body["success"] is False
    assert body["error"] == {
        "code": "unavailable",
        "message": "not ready: shutting down",
        "request_id": "r1",
        "retry_after": 5,
    }
    assert (body["data"]["status"], body["data"]["checks"]) == ("healthy", {"model": "ok"})
    assert also_ready.status_code == 503
    assert live.status_code == 200
    assert live.json()["success"] is True


GO = {"message": "go", "events": "json"}


class Held:
    """An app whose agent's tool waits at a gate the test opens (two runs' worth of turns);
    a cancelled call is seen."""

    def __init__(self) -> None:
        self.gate = anyio.Event()
        self.cancelled = anyio.Event()

        @tool
        async def hold() -> str:
            """Hold."""
            try:
                await self.gate.wait()
            except anyio.get_cancelled_exc_class():
                self.cancelled.set()
                raise
            return "held"

        holding = tool_turn(call("hold", {}, id="c1"))
        self.app = create_app(
            make_executor([holding, holding, text_turn("Done."), text_turn("Done.")], [hold]),
            Settings(reattach_grace_seconds=60, shutdown_grace_seconds=30),
        )
        self.hub = self.app[STATE].streams.runs


async def leave_after_tool_start(client: httpx.AsyncClient) -> str:
    """Start a run, drop the connection at its ``tool_start``, once the service has seen the
    client go; the run's id."""
    async with client.stream("POST", "/api/chat/stream", json=GO) as response:
        run_id = response.headers["X-Run-Id"]
        async for line in response.aiter_lines():
            if line == "event: tool_start":
                break
    await anyio.wait_all_tasks_blocked()
    return run_id


async def test_a_client_may_come_back_to_its_run_while_open_streams_have_their_grace() -> None:
    held = Held()
    async with served(held.app) as client:
        staying = Stream(client, "POST", "/api/chat/stream", json=GO)
        await staying.seen("tool_start")
        run_id = await leave_after_tool_start(client)
        left = held.hub.find(run_id)
        assert left is not None and left.readers == 0
        begin_shutdown(held.app)
        async with anyio.create_task_group() as group:
            group.start_soon(held.app.shutdown)  # waits for the open stream, up to 30 s
            back = Stream(client, "GET", f"/api/runs/{run_id}/events")
            await back.seen("tool_start")  # the events it missed, during the grace
            held.gate.set()  # both runs finish, and so does the shutdown
            await asyncio.gather(staying.task, back.task)
        kept = len(held.hub)

    assert not held.cancelled.is_set()
    for stream in (staying, back):
        assert stream.kinds() == ["tool_start", "tool_end", "message", "done"]
        assert stream.events[-1][1]["finish_reason"] == "stop"
    assert kept == 2  # finished, kept for the replay window
    assert len(held.hub) == 0  # forgotten at cleanup


async def test_runs_nobody_reads_are_cancelled_once_the_open_streams_have_ended() -> None:
    held = Held()
    async with served(held.app) as client:
        run_id = await leave_after_tool_start(client)
        begin_shutdown(held.app)
        await held.app.shutdown()  # no stream is open: at once
        after = held.hub.find(run_id)

    assert held.cancelled.is_set()
    assert after is None
    assert len(held.hub) == 0
