"""The SSE stream on the wire: exact bytes, framing through a standard client, heartbeats,
disconnects, and errors after the stream has started."""

from __future__ import annotations

import json

import anyio
import pytest
from httpx_sse import aconnect_sse

from agent_executor import ModelChunk, ModelError, tool
from agent_executor.models.scripted import Pause, call, text_turn, tool_turn
from server import Settings

from .helpers import make_executor, sample
from .server_helpers import serve


@tool
def get_weather(city: str) -> str:
    """Weather."""
    return f"sunny in {city}"


async def test_exact_bytes_of_a_scripted_run_in_text_mode() -> None:
    executor = make_executor(
        [
            tool_turn(call("get_weather", {"city": "Oslo"}, id="c1"), text="Let me see."),
            text_turn("Sunny in Oslo."),
        ],
        [get_weather],
    )

    async with serve(executor) as client:
        response = await client.post("/api/chat/stream", json={"message": "weather?"})

    assert response.status_code == 200
    assert response.headers["content-type"] == "text/event-stream"
    assert response.headers["cache-control"] == "no-cache"
    assert response.headers["x-accel-buffering"] == "no"
    assert "content-encoding" not in response.headers
    run = response.headers["x-run-id"].encode()
    assert response.content == b"retry: 1000\n" + (
        b"id: RUN:0\nevent: message\ndata: Let \n\n"
        b"id: RUN:1\nevent: message\ndata: me \n\n"
        b"id: RUN:2\nevent: message\ndata: see.\n\n"
        b"id: RUN:3\nevent: tool_start\ndata: get_weather\n\n"
        b"id: RUN:4\nevent: tool_end\ndata: get_weather\n\n"
        # the paragraph break between the turns: an empty line twice, as three data lines
        b"id: RUN:5\nevent: message\ndata: \ndata: \ndata: \n\n"
        b"id: RUN:6\nevent: message\ndata: Sunny \n\n"
        b"id: RUN:7\nevent: message\ndata: in \n\n"
        b"id: RUN:8\nevent: message\ndata: Oslo.\n\n"
        b"id: RUN:9\nevent: done\ndata: \n\n"
    ).replace(b"RUN", run)


async def test_json_mode_carries_the_event_objects() -> None:
    executor = make_executor(
        [
            tool_turn(call("get_weather", {"city": "Oslo"}, id="c1")),
            text_turn("Sunny.", usage=(7, 2)),
        ],
        [get_weather],
    )

    async with serve(executor) as client:
        response = await client.post(
            "/api/chat/stream", json={"message": "weather?", "events": "json"}
        )

    frames = [f.removeprefix("retry: 1000\n") for f in response.text.split("\n\n") if f]
    parsed = []
    for frame in frames:
        fields = dict(line.split(": ", 1) for line in frame.split("\n"))
        parsed.append((fields["event"], json.loads(fields["data"])))
    assert [event for event, _ in parsed] == ["tool_start", "tool_end", "message", "done"]
    assert parsed[0][1] == {"tool": "get_weather", "call_id": "c1", "arguments": {"city": "Oslo"}}
    assert parsed[1][1]["status"] == "success"
    assert set(parsed[1][1]) == {"tool", "call_id", "status", "duration_ms", "result"}
    assert parsed[1][1]["result"] == "sunny in Oslo"  # what the model was given
    assert parsed[2][1] == {"text": "Sunny."}
    done = parsed[3][1]
    assert done["finish_reason"] == "stop"
    assert done["usage"] == {"input_tokens": 7, "output_tokens": 2}
    assert done["tool_calls"][0]["result"] == "sunny in Oslo"
    assert set(done) == {"finish_reason", "usage", "tool_calls", "duration_ms", "output", "run_id"}
    assert done["run_id"] == response.headers["x-run-id"]


TRICKY = "one\ntwo\n\nthree\r\nfour\rfive data: x\n"


@pytest.mark.parametrize("method", ["POST", "GET"])
async def test_line_breaks_survive_a_standard_sse_client_in_text_mode(method: str) -> None:
    executor = make_executor([[ModelChunk(text=TRICKY), ModelChunk(text="end")]])

    async with serve(executor) as client:
        kwargs = {"json": {"message": "go"}} if method == "POST" else {"params": {"message": "go"}}
        async with aconnect_sse(client, method, "/api/chat/stream", **kwargs) as source:
            events = [(e.event, e.data, e.id) async for e in source.aiter_sse()]
            run = source.response.headers["x-run-id"]

    assert events == [
        ("message", "one\ntwo\n\nthree\nfour\nfive data: x\n", f"{run}:0"),
        ("message", "end", f"{run}:1"),
        ("done", "", f"{run}:2"),
    ]


async def test_json_mode_keeps_every_character() -> None:
    text = TRICKY + '\x00 é \u2028 "quoted" \\'
    executor = make_executor([[ModelChunk(text=text)]])

    async with (
        serve(executor) as client,
        aconnect_sse(
            client, "POST", "/api/chat/stream", json={"message": "go", "events": "json"}
        ) as source,
    ):
        events = [(e.event, e.data) async for e in source.aiter_sse()]

    assert json.loads(events[0][1]) == {"text": text}
    assert events[1][0] == "done"


async def test_a_heartbeat_is_sent_while_a_tool_is_busy() -> None:
    @tool
    async def slow() -> str:
        """Takes a while."""
        await anyio.sleep(0.7)
        return "done"

    executor = make_executor([tool_turn(call("slow")), "finished"], [slow])

    async with serve(executor, Settings(heartbeat_seconds=0.2)) as client:
        response = await client.post("/api/chat/stream", json={"message": "go"})

    body = response.content
    start = body.index(b"event: tool_start")
    end = body.index(b"event: tool_end")
    assert body.count(b": heartbeat\n\n", start, end) >= 2
    assert body.endswith(b"event: done\ndata: \n\n")


async def test_a_client_that_leaves_cancels_the_run_once_the_grace_is_over() -> None:
    """With no grace (``--reattach-grace 0``) at once; tests/test_stream_reattach.py has the
    grace in which the client may come back."""
    started, cancelled = anyio.Event(), anyio.Event()

    @tool
    async def sleepy() -> str:
        """Sleeps."""
        started.set()
        try:
            await anyio.sleep(30)
        except anyio.get_cancelled_exc_class():
            cancelled.set()
            raise
        return "never"

    executor = make_executor([tool_turn(call("sleepy"))], [sleepy])
    registry = executor.metrics.registry

    async with serve(executor, Settings(reattach_grace_seconds=0)) as client:
        async with client.stream("POST", "/api/chat/stream", json={"message": "go"}) as response:
            async for line in response.aiter_lines():
                if line == "event: tool_start":
                    break
            await started.wait()
        with anyio.fail_after(1):
            await cancelled.wait()
            while sample(registry, "agent_executor_sse_streams_active"):
                await anyio.sleep(0.01)

    assert sample(registry, "agent_executor_in_flight_requests") == 0
    assert sample(registry, "agent_executor_sse_disconnects_total") == 1
    assert (
        sample(registry, "agent_executor_requests_total", mode="stream", outcome="cancelled") == 1
    )


async def test_an_error_after_the_stream_started_is_an_error_event_then_done() -> None:
    executor = make_executor(
        [[ModelChunk(text="Half an "), ModelError("litellm.APIError: upstream reset by 10.0.0.7")]]
    )

    async with serve(executor) as client:
        response = await client.post(
            "/api/chat/stream",
            json={"message": "hi", "events": "json"},
            headers={"X-Request-Id": "req-9"},
        )

    assert response.status_code == 200
    run = response.headers["x-run-id"]
    frames = [f for f in response.text.split("\n\n") if f]
    assert frames[:2] == [
        f'retry: 1000\nid: {run}:0\nevent: message\ndata: {{"text":"Half an "}}',
        f'id: {run}:1\nevent: error\ndata: {{"code":"llm_error","message":"The model call '
        'failed; the server log has the details (request id req-9)."}',
    ]
    assert frames[2].startswith(f'id: {run}:2\nevent: done\ndata: {{"finish_reason":"error"')
    assert len(frames) == 3


async def test_streams_active_gauge_returns_to_zero() -> None:
    executor = make_executor(["a", "b", "c"])
    registry = executor.metrics.registry

    async with serve(executor) as client:
        for _ in range(3):
            response = await client.get("/api/chat/stream", params={"message": "x"})
            assert response.text.endswith("event: done\ndata: \n\n")

    assert sample(registry, "agent_executor_sse_streams_active") == 0
    assert sample(registry, "agent_executor_sse_disconnects_total") == 0


async def test_the_request_id_header_reaches_the_run() -> None:
    executor = make_executor(["x"])

    async with serve(executor) as client:
        response = await client.post(
            "/api/chat/stream", json={"message": "hi"}, headers={"X-Request-Id": "abc-123"}
        )

    assert response.headers["x-request-id"] == "abc-123"


async def test_unreadable_request_ids_are_replaced() -> None:
    executor = make_executor(["x"])

    async with serve(executor) as client:
        response = await client.post(
            "/api/chat", json={"message": "hi"}, headers={"X-Request-Id": "x" * 500}
        )

    assert len(response.headers["x-request-id"]) == 32


async def test_lone_surrogates_survive_json_mode_and_are_replaced_in_text_mode() -> None:
    text = "a\ud800b"
    executor = make_executor([[ModelChunk(text=text)], [ModelChunk(text=text)]])

    async with serve(executor) as client:
        as_json = await client.post("/api/chat/stream", json={"message": "x", "events": "json"})
        as_text = await client.post("/api/chat/stream", json={"message": "x"})

    data = as_json.text.split("\n")[3].removeprefix("data: ")
    assert json.loads(data) == {"text": text}
    run = as_text.headers["x-run-id"].encode()
    assert as_text.content.startswith(b"retry: 1000\nid: %s:0\nevent: message\ndata: a?b\n\n" % run)


async def test_events_waiting_together_are_written_together() -> None:
    """A burst of deltas goes out in one write; the bytes are the same as one by one."""
    chunks = [ModelChunk(text=f"{i} ") for i in range(50)]
    executor = make_executor([chunks])

    async with serve(executor) as client:
        response = await client.post("/api/chat/stream", json={"message": "x"})

    run = response.headers["x-run-id"]
    expected = b"".join(
        f"id: {run}:{i}\nevent: message\ndata: {i} \n\n".encode() for i in range(50)
    )
    done = f"id: {run}:50\nevent: done\ndata: \n\n".encode()
    assert response.content == b"retry: 1000\n" + expected + done


async def test_a_client_that_reads_nothing_gets_cut_off(caplog: pytest.LogCaptureFixture) -> None:
    """A client that stopped reading is cut off while the model is still writing."""
    import socket

    chunks = [item for _ in range(4000) for item in (ModelChunk(text="x" * 4096), Pause(0.001))]
    executor = make_executor([chunks])
    registry = executor.metrics.registry

    async with serve(executor, Settings(write_timeout_seconds=0.5)) as client:
        url = client.base_url
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect((url.host, url.port))
        body = b'{"message": "go"}'
        sock.sendall(
            b"POST /api/chat/stream HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
            b"\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
        )
        try:
            with anyio.fail_after(10):
                while sample(registry, "agent_executor_sse_streams_active") or not sample(
                    registry, "agent_executor_sse_disconnects_total"
                ):
                    await anyio.sleep(0.05)
        finally:
            sock.close()

    assert "is not reading: cut the stream" in caplog.text
    assert sample(registry, "agent_executor_in_flight_requests") == 0
    assert (
        sample(registry, "agent_executor_requests_total", mode="stream", outcome="cancelled") == 1
    )


async def test_a_hook_blocks_a_dangerous_tool_through_the_service() -> None:
    from agent_executor import Hook, HookRejection, RunContext, ToolCall

    @tool
    def delete_everything() -> str:
        """Dangerous."""
        return "deleted"

    class Blocker(Hook):
        async def before_tool_call(self, ctx: RunContext, call: ToolCall) -> None:
            if call.name == "delete_everything":
                raise HookRejection("not without a human")

    executor = make_executor(
        [tool_turn(call("delete_everything", id="c1")), text_turn("I was not allowed to.")],
        [delete_everything],
        hooks=[Blocker()],
    )

    async with serve(executor) as client:
        response = await client.post("/api/chat/stream", json={"message": "go", "events": "json"})

    frames = [f for f in response.text.split("\n\n") if f]
    events = [dict(line.split(": ", 1) for line in frame.split("\n")) for frame in frames]
    ends = [json.loads(e["data"]) for e in events if e["event"] == "tool_end"]
    assert ends[0]["status"] == "rejected"
    done = json.loads(events[-1]["data"])
    assert done["finish_reason"] == "stop"
    assert done["tool_calls"][0]["result"] == "the call was refused: not without a human"


async def test_the_output_guard_redacts_the_sse_stream() -> None:
    from agent_executor import OutputGuard

    key = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8t"
    chunks = [ModelChunk(text=piece) for piece in ("Your key: ", key[:9], key[9:], " done")]
    executor = make_executor([chunks], output_guard=OutputGuard())

    async with serve(executor) as client:
        response = await client.post("/api/chat/stream", json={"message": "key?"})

    assert "Ab3d" not in response.text and "sk-proj" not in response.text
    texts = [
        line.removeprefix("data: ")
        for line in response.text.split("\n")
        if line.startswith("data: ")
    ]
    assert "".join(texts) == "Your key: [redacted] done"
