"""What Redis adds to one run: conversation load + append and a rate-limit check.

Runs the same conversation turns through ``AgentExecutor.execute()`` on a ``ScriptedModel``
(no network besides Redis) with the in-memory parts, then with the Redis parts, interleaved in
rounds, and prints the median wall time per run and the difference. It starts its own
``redis-server`` on a free 127.0.0.1 port (Debian package ``redis-server``).

    python benchmarks/redis_overhead.py [--runs 2000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import shutil
import socket
import statistics
import subprocess
import tempfile
import time

import redis

from agent_executor import (
    AgentCommand,
    AgentExecutor,
    InMemoryConversationStore,
    RateLimitGuard,
    ScriptedModel,
)
from agent_executor.redis import RedisConversationStore, RedisRateLimitStorage


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _executor(url: str | None, runs: int) -> AgentExecutor:
    if url is None:
        memory: object = InMemoryConversationStore(max_sessions=runs * 2)
        guard = RateLimitGuard("1000000/minute")
    else:
        memory = RedisConversationStore(url)
        guard = RateLimitGuard("1000000/minute", storage=RedisRateLimitStorage(url))
    return AgentExecutor(
        model=ScriptedModel(["Sure, noted."] * (runs + 1)),
        memory=memory,  # type: ignore[arg-type]
        guards=[guard],
        metrics=None,
    )


async def _round(url: str | None, runs: int, tag: str) -> float:
    """Median microseconds per run over ``runs`` runs, ten sessions of growing history."""
    executor = _executor(url, runs)
    samples = []
    try:
        for i in range(runs):
            command = AgentCommand(
                user_prompt=f"message {i}", user_id="bench", session_id=f"{tag}-{i % 10}"
            )
            started = time.perf_counter()
            result = await executor.execute(command)
            samples.append(time.perf_counter() - started)
            if not result.success:
                raise RuntimeError(f"run failed: {result.error}")
    finally:
        await executor.aclose()
    return statistics.median(samples) * 1e6


async def _main(url: str, runs: int, rounds: int) -> None:
    local, shared = [], []
    for n in range(rounds):
        local.append(await _round(None, runs, f"mem{n}"))
        shared.append(await _round(url, runs, f"redis{n}"))
    version = redis.Redis.from_url(url).info("server")["redis_version"]
    print(
        f"machine: {platform.machine()}, {platform.processor() or 'cpu'}, python "
        f"{platform.python_version()}, redis-server {version}, redis-py {redis.__version__}"
    )
    print(f"{rounds} rounds x {runs} runs, median of each round's median (µs per run):")
    print(f"  in-memory store + rate limit: {statistics.median(local):8.0f}  {sorted(local)}")
    print(f"  Redis store + rate limit:     {statistics.median(shared):8.0f}  {sorted(shared)}")
    added = statistics.median(shared) - statistics.median(local)
    print(f"  added by Redis: {added:.0f} µs per run (3 round trips: GCRA, load, append)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    program = shutil.which("redis-server")
    if program is None:
        raise SystemExit("redis-server is not installed (Debian package 'redis-server')")
    port = _free_port()
    with tempfile.TemporaryDirectory() as workdir:
        server = subprocess.Popen(
            [program, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--dir", workdir],
            stdout=subprocess.DEVNULL,
        )
        try:
            url = f"redis://127.0.0.1:{port}/0"
            client = redis.Redis.from_url(url)
            for _ in range(100):
                try:
                    client.ping()
                    break
                except redis.ConnectionError:
                    time.sleep(0.05)
            asyncio.run(_main(url, args.runs, args.rounds))
        finally:
            server.terminate()
            server.wait(10)


if __name__ == "__main__":
    main()
