"""A lean OpenAI-compatible streaming server for the benchmarks (aiohttp, 127.0.0.1 only).

    python benchmarks/llm_server.py --port 8500 [--workers 2]

``POST /v1/chat/completions`` (stream only) plays the benchmark scenario (see ``scenario.py``):
a request without a ``tool`` message (and with ``tools`` offered) is answered with one
``get_weather`` call split over four argument fragments; the follow-up request (its messages
contain the tool result) is answered with ``tokens`` text deltas. Both turns end with a finish
chunk, a usage chunk (when ``stream_options.include_usage`` is asked for) and ``data: [DONE]``.
The parameters come from ``[bench run=ID tokens=N delay=MS]`` in the user's message, or, if it
is absent, from the ``X-Bench-Tokens`` / ``X-Bench-Delay-Ms`` headers, or a model name such as
``bench-t200-d20``.

Chunks are pre-encoded bytes, so the server does next to no work per token. Without a delay a
turn is sent in one write (the client's read sizes then do not depend on its own speed); with a
delay every chunk is its own write and each stream sleeps until its own next deadline (no drift:
a server that falls behind catches up).

With ``--workers K`` the server runs K processes on one port (``SO_REUSEPORT``, the kernel
spreads connections over them). Each process timestamps the runs it serves (CLOCK_MONOTONIC)
for ``GET /bench/stats?prefix=...``: request arrival, end of the tool-call turn, first text
delta written. Stats are per process, so the harness reads them from a one-worker server.
"""

from __future__ import annotations

import argparse
import asyncio
import heapq
import json
import os
import re
import resource
import signal
import subprocess
import sys
from pathlib import Path

from aiohttp import web

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scenario import ARG_FRAGMENTS, PARAMS_RE, TOKEN_WORDS, now

TOOL_ROLE_RE = re.compile(rb'"role"\s*:\s*"tool"')
MODEL_PARAMS_RE = re.compile(rb'"model"\s*:\s*"[^"]*?-t(\d+)-d(\d+)"')
CREATED = 1_700_000_000


def _frame(delta: dict, finish: str | None = None, usage_field: bool = False) -> bytes:
    obj: dict = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": "bench",
        "system_fingerprint": None,
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }
    if usage_field:
        obj["usage"] = None
    return b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"


def _usage_frame(prompt: int, completion: int) -> bytes:
    obj = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": "bench",
        "system_fingerprint": None,
        "choices": [],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }
    return b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"


def _chunked(frame: bytes) -> bytes:
    """``frame`` in HTTP/1.1 chunked transfer encoding (written straight to the transport)."""
    return b"%x\r\n%s\r\n" % (len(frame), frame)


class Frames:
    """Every frame of the scenario, encoded once (with and without the ``usage: null`` field)."""

    def __init__(self, usage_field: bool) -> None:
        u = usage_field
        self.text_role = _frame({"role": "assistant", "content": ""}, usage_field=u)
        self.tokens = [_frame({"content": w}, usage_field=u) for w in TOKEN_WORDS]
        self.stop = _frame({}, "stop", usage_field=u)
        self.tool_fragments = [
            _frame({"tool_calls": [{"index": 0, "function": {"arguments": f}}]}, usage_field=u)
            for f in ARG_FRAGMENTS
        ]
        self.tool_finish = _frame({}, "tool_calls", usage_field=u)
        self.usage_field = u
        self.tokens_chunked = [_chunked(f) for f in self.tokens]
        self.tool_fragments_chunked = [_chunked(f) for f in self.tool_fragments]

    def tool_head(self, call_id: str) -> bytes:
        return _frame(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "index": 0,
                        "id": call_id,
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": ""},
                    }
                ],
            },
            usage_field=self.usage_field,
        )


FRAMES = {True: Frames(True), False: Frames(False)}
DONE = b"data: [DONE]\n\n"
SSE_HEADERS = {"Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache"}


class _Paced:
    __slots__ = ("chunks", "delay", "future", "index", "on_first", "transport")

    def __init__(self, transport, chunks, delay, future, on_first) -> None:  # type: ignore[no-untyped-def]
        self.transport = transport
        self.chunks = chunks
        self.delay = delay
        self.future = future
        self.index = 0
        self.on_first = on_first


class Pacer:
    """Writes every paced stream's next chunk at its own deadline, from one timer.

    Cheaper than a sleeping task per stream (no task wake-up, no timer handle per chunk): one
    heap of (deadline, stream), one ``call_at`` for the earliest deadline, and per chunk one
    ``transport.write`` of pre-encoded bytes. Deadlines advance by the delay from the previous
    deadline, so a late tick is caught up rather than drifting.
    """

    def __init__(self) -> None:
        self.heap: list[tuple[float, int, _Paced]] = []
        self.timer: asyncio.TimerHandle | None = None
        self.timer_at = float("inf")
        self.seq = 0

    async def stream(self, transport, chunks, delay, on_first=None) -> None:  # type: ignore[no-untyped-def]
        """Write ``chunks`` (chunk-encoded) one per ``delay`` seconds; return after the last."""
        loop = asyncio.get_running_loop()
        paced = _Paced(transport, chunks, delay, loop.create_future(), on_first)
        self.seq += 1
        heapq.heappush(self.heap, (loop.time() + delay, self.seq, paced))
        self._arm(loop)
        await paced.future

    def _arm(self, loop: asyncio.AbstractEventLoop) -> None:
        if not self.heap:
            return
        first = self.heap[0][0]
        if first < self.timer_at:
            if self.timer is not None:
                self.timer.cancel()
            self.timer_at = first
            self.timer = loop.call_at(first, self._fire, loop)

    def _fire(self, loop: asyncio.AbstractEventLoop) -> None:
        self.timer, self.timer_at = None, float("inf")
        heap = self.heap
        horizon = loop.time() + 0.0005
        push, pop = heapq.heappush, heapq.heappop
        while heap and heap[0][0] <= horizon:
            deadline, seq, paced = pop(heap)
            transport = paced.transport
            if transport is None or transport.is_closing():
                if not paced.future.done():
                    paced.future.set_exception(ConnectionResetError("client went away"))
                continue
            if paced.index == 0 and paced.on_first is not None:
                paced.on_first()
            transport.write(paced.chunks[paced.index])
            paced.index += 1
            if paced.index < len(paced.chunks):
                push(heap, (deadline + paced.delay, seq, paced))
            elif not paced.future.done():
                paced.future.set_result(None)
        self._arm(loop)


class Server:
    def __init__(self) -> None:
        self.pacer = Pacer()
        self.stats: dict[str, dict[str, float]] = {}
        self.active = 0
        self.requests = 0

    def app(self) -> web.Application:
        app = web.Application(client_max_size=16 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self.completions)
        app.router.add_post("/chat/completions", self.completions)
        app.router.add_get("/bench/stats", self.get_stats)
        app.router.add_post("/bench/reset", self.reset)
        app.router.add_get("/bench/health", self.health)
        return app

    async def health(self, request: web.Request) -> web.Response:
        return web.json_response({"pid": os.getpid(), "active": self.active})

    async def get_stats(self, request: web.Request) -> web.Response:
        prefix = request.query.get("prefix", "")
        return web.json_response(
            {k: v for k, v in self.stats.items() if k.startswith(prefix)},
            dumps=lambda o: json.dumps(o, separators=(",", ":")),
        )

    async def reset(self, request: web.Request) -> web.Response:
        self.stats.clear()
        return web.json_response({"ok": True})

    async def completions(self, request: web.Request) -> web.StreamResponse:
        arrival = now()
        self.requests += 1
        body = await request.read()
        match = PARAMS_RE.search(body)
        if match:
            run, tokens, delay_ms = (
                match.group(1).decode(),
                int(match.group(2)),
                int(match.group(3)),
            )
        else:
            run = ""
            model_match = MODEL_PARAMS_RE.search(body)
            if model_match:
                tokens, delay_ms = int(model_match.group(1)), int(model_match.group(2))
            else:
                tokens = int(request.headers.get("X-Bench-Tokens", "20"))
                delay_ms = int(request.headers.get("X-Bench-Delay-Ms", "0"))
        tool_turn = b'"tools"' in body and TOOL_ROLE_RE.search(body) is None
        frames = FRAMES[b'"include_usage"' in body]
        record = self.stats.setdefault(run, {}) if run and run != "-" else None
        if record is not None:
            record["req2" if not tool_turn else "req1"] = arrival
            peer = request.transport.get_extra_info("peername") if request.transport else None
            record["port2" if not tool_turn else "port1"] = peer[1] if peer else 0
        resp = web.StreamResponse(headers=SSE_HEADERS)
        self.active += 1
        try:
            await resp.prepare(request)
            transport = request.transport
            if transport is None:
                raise ConnectionResetError("client went away")
            if tool_turn:
                await self._tool_turn(resp, transport, frames, run, delay_ms / 1000)
                if record is not None:
                    record["tool_done"] = now()
            else:
                await self._text_turn(resp, transport, frames, tokens, delay_ms / 1000, record)
                if record is not None:
                    record["done"] = now()
        except (ConnectionError, asyncio.CancelledError):
            if record is not None:
                record["aborted"] = now()
            raise
        finally:
            self.active -= 1
        return resp

    async def _tool_turn(
        self,
        resp: web.StreamResponse,
        transport: asyncio.BaseTransport,
        frames: Frames,
        run: str,
        delay: float,
    ) -> None:
        head = frames.tool_head(f"call_{run or 'bench'}"[:40])
        tail = [frames.tool_finish]
        if frames.usage_field:
            tail.append(_usage_frame(40, len(ARG_FRAGMENTS)))
        tail.append(DONE)
        if not delay:  # the whole turn in one write: clients read it in the same few reads
            await resp.write(b"".join([head, *frames.tool_fragments, *tail]))
            await resp.write_eof()
            return
        await resp.write(head)  # aiohttp sends the headers with the first chunk
        await self.pacer.stream(transport, frames.tool_fragments_chunked, delay)
        await resp.write(b"".join(tail))
        await resp.write_eof()

    async def _text_turn(
        self,
        resp: web.StreamResponse,
        transport: asyncio.BaseTransport,
        frames: Frames,
        tokens: int,
        delay: float,
        record: dict[str, float] | None,
    ) -> None:
        write = resp.write
        words = frames.tokens
        n_words = len(words)
        tail = [frames.stop]
        if frames.usage_field:
            tail.append(_usage_frame(60, tokens))
        tail.append(DONE)
        if not delay:
            # No delay: the whole turn in one write, so the size of the client's reads does
            # not depend on how fast the client is (a slow client would otherwise get bigger
            # reads, i.e. cheaper tokens). Every token is still its own SSE event.
            if record is not None:
                record["first_text"] = now()
            body = [frames.text_role, *(words[i % n_words] for i in range(tokens)), *tail]
            await write(b"".join(body))
            await resp.write_eof()
            return
        await write(frames.text_role)  # aiohttp sends the headers with the first chunk
        chunked = frames.tokens_chunked
        on_first = None
        if record is not None:

            def on_first() -> None:
                record["first_text"] = now()

        if tokens:
            await self.pacer.stream(
                transport,
                [chunked[i % n_words] for i in range(tokens)],
                delay,
                on_first,
            )
        await write(b"".join(tail))
        await resp.write_eof()


def _raise_nofile() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


async def _serve(port: int, reuse_port: bool) -> None:
    server = Server()
    runner = web.AppRunner(server.app(), access_log=None, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", port, backlog=4096, reuse_port=reuse_port)
    await site.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    print(f"llm_server pid {os.getpid()} listening on 127.0.0.1:{port}", flush=True)
    await stop.wait()
    await runner.cleanup()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--workers", type=int, default=1, help="processes on the port")
    args = parser.parse_args()
    _raise_nofile()
    children: list[subprocess.Popen[bytes]] = []
    if args.workers > 1:
        for _ in range(args.workers - 1):
            children.append(
                subprocess.Popen(
                    [sys.executable, __file__, "--port", str(args.port), "--workers", "0"]
                )
            )
    try:
        asyncio.run(_serve(args.port, reuse_port=args.workers != 1))
    finally:
        for child in children:
            child.terminate()
        for child in children:
            try:
                child.wait(timeout=5)
            except subprocess.TimeoutExpired:
                child.kill()


if __name__ == "__main__":
    main()
