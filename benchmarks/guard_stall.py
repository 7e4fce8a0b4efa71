"""How long the event loop stalls while the injection guard scores a long text, in one line each.

    python benchmarks/guard_stall.py [--sizes 1000,5000,20000,100000] [--rounds 5]

A task that wants to run every millisecond (what every other stream of the service does
between its chunks) records the longest gap between its turns while ``InjectionGuard.assess``
scores a benign text of each size as a tool result, and the time the scoring took: once as
shipped (texts above ``THREAD_ABOVE`` characters are scored in a worker thread) and once with
the scoring called inline on the loop, as it was before. The texts are benign rows of
``tests/data/injection_public.jsonl.gz`` joined by blank lines, fresh each round; median over
``--rounds``.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "data"))
from corpus_rows import concatenated, read_rows  # noqa: E402

from agent_executor.guards.injection import InjectionGuard  # noqa: E402
from agent_executor.guards.injection.guard import THREAD_ABOVE  # noqa: E402


def _texts(size: int, count: int) -> list[str]:
    rows = read_rows(ROOT / "tests" / "data" / "injection_public.jsonl.gz")
    benign = [row["text"] for row in rows if row["label"] == "benign"]
    random.Random(size).shuffle(benign)
    return concatenated(benign, size)[:count]


async def _stall(guard: InjectionGuard, text: str, inline: bool) -> tuple[float, float]:
    """(longest gap between a 1 ms ticker's turns, scoring time), in milliseconds."""
    gaps: list[float] = []

    async def ticker() -> None:
        last = time.perf_counter()
        while True:
            await anyio.sleep(0.001)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    async with anyio.create_task_group() as group:
        group.start_soon(ticker)
        await anyio.sleep(0.01)
        gaps.clear()
        started = time.perf_counter()
        if inline:
            guard.score(text, "tool")
        else:
            await guard.assess(text, "tool")
        took = time.perf_counter() - started
        await anyio.sleep(0.005)
        group.cancel_scope.cancel()
    return max(gaps) * 1e3, took * 1e3


async def _main(sizes: list[int], rounds: int) -> None:
    guard = InjectionGuard()
    guard.score("warm up the learned layer's word cache with a few words", "tool")
    print(f"THREAD_ABOVE = {THREAD_ABOVE:,} characters; median of {rounds} rounds")
    print(
        "| characters | inline: loop stalled ms | inline: scoring ms | shipped: loop stalled ms"
        " | shipped: scoring ms |"
    )
    print("|---:|---:|---:|---:|---:|")
    for size in sizes:
        texts = _texts(size, 2 * rounds)
        inline = [await _stall(guard, text, True) for text in texts[:rounds]]
        shipped = [await _stall(guard, text, False) for text in texts[rounds:]]
        cells = [
            statistics.median(v) for v in (*zip(*inline, strict=True), *zip(*shipped, strict=True))
        ]
        print(f"| {size:,} | " + " | ".join(f"{cell:.1f}" for cell in cells) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,5000,20000,100000")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    anyio.run(_main, [int(s) for s in args.sizes.split(",")], args.rounds)


if __name__ == "__main__":
    main()
