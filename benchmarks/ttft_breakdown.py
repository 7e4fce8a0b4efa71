"""Where the service's added time to first token goes: one hop, the guards, the rest.

The main harness (``benchmarks.run``) compares the service with a client that talks to the
model server directly, so the service's figure includes a whole extra HTTP hop. This script
measures, interleaved in one run against the same local model server (one tool turn, then one
token), the time to first token of:

- ``floor``: raw aiohttp client straight to the model server;
- ``ours``: ``execute_stream()`` in the client process (no HTTP hop, no guards);
- ``relay``: the floor's client code behind a minimal aiohttp SSE endpoint (this file run with
  ``--relay``): the cost of the hop itself, with no validation, guards, hooks or metrics;
- ``service``: ``agent-executor serve`` as shipped (input validation and injection guards on);
- ``service, no injection guard``: the same with ``--no-injection-guard``.

    python benchmarks/ttft_breakdown.py [--rounds 7] [--runs 100] [--tokens 1]

Prints a markdown table: the median of the per-round medians and what each adds to the floor.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

from benchmarks import worker  # noqa: E402
from benchmarks.run import (  # noqa: E402
    MAIN_PY,
    ROOT,
    LLMServer,
    Service,
    free_port,
    stop_process,
    wait_http,
)
from benchmarks.scenario import now, run_id  # noqa: E402


def _relay_app(llm_base: str) -> Any:
    """The floor's client behind ``POST /api/chat/stream``, writing each text delta as SSE."""
    from aiohttp import web

    floor = worker.Floor(use_orjson=False)

    class _Sink(list[str]):
        def __init__(self, queue: asyncio.Queue[str | None]) -> None:
            super().__init__()
            self.queue = queue

        def append(self, text: str) -> None:
            self.queue.put_nowait(text)

    async def chat(request: web.Request) -> web.StreamResponse:
        body = json.loads(await request.read())
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        queue: asyncio.Queue[str | None] = asyncio.Queue()
        sink = _Sink(queue)

        async def drive() -> None:
            await floor.converse([{"role": "user", "content": body["message"]}], sink)
            queue.put_nowait(None)

        task = asyncio.ensure_future(drive())
        while (text := await queue.get()) is not None:
            await response.write(b"data: " + text.encode() + b"\n\n")
        await task
        await response.write(b"event: done\ndata: \n\n")
        return response

    async def health(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def start(app: web.Application) -> None:
        await floor.setup(llm_base, 100, {})

    async def stop(app: web.Application) -> None:
        await floor.close()

    app = web.Application()
    app.router.add_post("/api/chat/stream", chat)
    app.router.add_get("/api/health", health)
    app.on_startup.append(start)
    app.on_cleanup.append(stop)
    return app


def _start(cmd: list[str], port: int) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_http(f"http://127.0.0.1:{port}/api/health", 30, proc)
    return proc


async def _median_ttft_ms(variant: worker.Variant, runs: int, tokens: int) -> float:
    samples = []
    for _ in range(runs):
        started = now()
        _, first = await variant.run(run_id("ttft"), tokens, 0)
        if first is None:
            raise RuntimeError("no text arrived")
        samples.append((first - started) * 1000)
    return statistics.median(samples)


async def _measure(
    variants: dict[str, worker.Variant], rounds: int, runs: int, tokens: int
) -> dict[str, Any]:
    for variant in variants.values():
        for _ in range(20):  # warm-up: imports, connections, caches
            await variant.run("warm", 1, 0)
    results: dict[str, list[float]] = {name: [] for name in variants}
    order = list(variants)
    for r in range(rounds):
        for name in order if r % 2 == 0 else order[::-1]:
            results[name].append(await _median_ttft_ms(variants[name], runs, tokens))
    return results


async def _main(args: argparse.Namespace, llm: LLMServer, urls: dict[str, str]) -> None:
    variants: dict[str, worker.Variant] = {"floor": worker.Floor(use_orjson=False)}
    variants["ours"] = worker.Ours(litellm=False)
    for name in urls:
        variants[name] = worker.ServiceClient()
    for name, variant in variants.items():
        await variant.setup(llm.base_url, 100, {"service_url": urls.get(name, "")})
    try:
        results = await _measure(variants, args.rounds, args.runs, args.tokens)
    finally:
        for variant in variants.values():
            await variant.close()
    floor = statistics.median(results["floor"])
    print(f"{args.rounds} rounds x {args.runs} runs (one tool turn, then {args.tokens} tokens)\n")
    print("| variant | TTFT ms | added to the floor | per-round medians |")
    print("|---|---|---|---|")
    for name, values in results.items():
        median = statistics.median(values)
        rounds = ", ".join(f"{v:.2f}" for v in values)
        print(f"| {name} | {median:.2f} | {median - floor:+.2f} | {rounds} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--tokens", type=int, default=1, help="text tokens after the tool turn")
    parser.add_argument("--relay", nargs=2, metavar=("PORT", "LLM_URL"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.relay:
        from aiohttp import web

        web.run_app(_relay_app(args.relay[1]), host="127.0.0.1", port=int(args.relay[0]))
        return
    log_dir = Path(tempfile.mkdtemp(prefix="ttft-"))
    llm = LLMServer(log_dir, workers=1)
    relay: subprocess.Popen[bytes] | None = None
    services: list[Service] = []
    try:
        relay_port = free_port()
        relay = _start([MAIN_PY, __file__, "--relay", str(relay_port), llm.base_url], relay_port)
        services = [
            Service(log_dir, llm, 100),
            Service(log_dir, llm, 100, "--no-injection-guard"),
        ]
        urls = {
            "relay": f"http://127.0.0.1:{relay_port}",
            "service": services[0].url,
            "service, no injection guard": services[1].url,
        }
        asyncio.run(_main(args, llm, urls))
    finally:
        if relay is not None:
            stop_process(relay)
        for service in services:
            service.stop()
        llm.stop()


if __name__ == "__main__":
    main()
