"""The fast model client's HTTP against aiohttp's client, on the same streams: one line each.

    python benchmarks/model_http.py --streams 3000 --rounds 3

Starts the benchmark's model server (``llm_server.py``: 100 text deltas 20 ms apart), then,
alternating, a fresh process per client and round that opens ``--streams`` streams at once and
reads each to its end, the way ``OpenAICompatModel`` reads one (bytes split into lines,
``data:`` payloads decoded with orjson):

- ``aiohttp``: one ``aiohttp.ClientSession`` with a ``TCPConnector`` sized to the streams, the
  response's ``content.iter_any()`` (the model client up to commit ``abd43b4``);
- ``ours``: ``agent_executor.models._http.ConnectionPool`` and ``Response.read()``.

Printed per client (medians of the rounds): peak RSS per open stream over the process before
the burst (KiB), and the process's CPU per received chunk (µs). The model server runs in its
own process, so neither figure counts it.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from processes import MAIN_PY, ROOT, LLMServer, log, raise_nofile  # noqa: E402
from procfs import rss_kib  # noqa: E402

_BODY = json.dumps(
    {
        "model": "bench-t100-d20",
        "messages": [
            {"role": "user", "content": "[bench run=http tokens=100 delay=20]"},
            {"role": "tool", "content": "sunny", "tool_call_id": "c1"},
        ],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
).encode()
_HEADERS = {"Content-Type": "application/json", "Accept": "text/event-stream"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python benchmarks/model_http.py", description=(__doc__ or "").splitlines()[0]
    )
    parser.add_argument("--streams", type=int, default=3000, help="streams at once (3000)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, medians printed (3)")
    parser.add_argument("--client", choices=("aiohttp", "ours"), help=argparse.SUPPRESS)
    parser.add_argument("--base-url", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    raise_nofile()
    if args.client:
        print(json.dumps(asyncio.run(_burst(args.client, args.base_url, args.streams))))
        return 0
    results: dict[str, list[dict[str, float]]] = {"aiohttp": [], "ours": []}
    with tempfile.TemporaryDirectory(prefix="agent-executor-model-http-") as tmp:
        llm = LLMServer(Path(tmp), 1)
        try:
            for round_ in range(args.rounds):
                order = ("aiohttp", "ours") if round_ % 2 == 0 else ("ours", "aiohttp")
                for client in order:
                    command = [MAIN_PY, __file__, "--client", client, "--streams"]
                    out = subprocess.run(
                        [*command, str(args.streams), "--base-url", llm.base_url],
                        cwd=ROOT,
                        check=True,
                        capture_output=True,
                    )
                    row = json.loads(out.stdout)
                    results[client].append(row)
                    log(f"round {round_ + 1} {client}: {row}")
        finally:
            llm.proc.terminate()
            llm.proc.wait(timeout=10)
    for client, rows in results.items():
        kib = statistics.median(r["kib_per_stream"] for r in rows)
        cpu = statistics.median(r["cpu_us_per_chunk"] for r in rows)
        print(
            f"{client}: {args.streams} streams, {kib:.1f} KiB per open stream, "
            f"{cpu:.2f} µs CPU per chunk (medians of {len(rows)})"
        )
    return 0


async def _burst(client: str, base_url: str, streams: int) -> dict[str, float]:
    url = f"{base_url}/chat/completions"
    if client == "aiohttp":
        import aiohttp

        connector = aiohttp.TCPConnector(limit=streams + 1, limit_per_host=0)
        session = aiohttp.ClientSession(connector=connector)

        async def one() -> int:
            response = await session.post(url, data=_BODY, headers=_HEADERS)
            async with response:
                return await _lines(response.content.iter_any())

        close = session.close
    else:
        from agent_executor.models._connections import ConnectionPool
        from agent_executor.models._http import Response

        pool = ConnectionPool(url, headers=_HEADERS, limit=streams + 1)

        async def reads(response: Response) -> object:
            while data := await response.read():
                yield data

        async def one() -> int:
            response = await pool.post(_BODY)
            try:
                return await _lines(reads(response))
            finally:
                response.release()

        close = pool.aclose
    await one()  # warm-up: imports, the first connection
    gc.collect()
    before = rss_kib()
    cpu0 = time.process_time()
    counts = await asyncio.gather(*(one() for _ in range(streams)))
    cpu = time.process_time() - cpu0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    await close()
    return {
        "kib_per_stream": (peak - before) / streams,
        "cpu_us_per_chunk": cpu / sum(counts) * 1e6,
        "chunks_per_stream": sum(counts) / streams,
    }


async def _lines(pieces: object) -> int:
    """What the model client does with the body: lines, ``data:`` payloads, orjson."""
    import orjson

    count = 0
    pending = b""
    async for data in pieces:  # type: ignore[attr-defined]
        lines = (pending + data).split(b"\n") if pending else data.split(b"\n")
        pending = lines.pop()
        for line in lines:
            if line.startswith(b"data:"):
                payload = line[5:].strip()
                if payload and payload != b"[DONE]":
                    orjson.loads(payload)
                    count += 1
    return count


if __name__ == "__main__":
    sys.exit(main())
