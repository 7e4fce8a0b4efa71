"""What the injection guard costs a chat client that sends the whole conversation every turn.

    python benchmarks/guard_history.py [--base REV] [--conversations 32] [--turns 20]

An OpenAI-compatible client (and the AI SDK's ``useChat``, LangChain's message lists) sends
every earlier message again with each request, and the guard judges every user message of
it. This script holds ``--conversations`` such conversations at once with a running service
(``python -m server --model demo``, one agent without tools, ``LOG_LEVEL=WARNING``), turn by
turn over ``POST /v1/chat/completions``: each request carries the conversation so far (the
user's messages are benign rows of ``tests/data/injection_public.jsonl.gz`` of about 100
characters, the assistant's are the service's answers) and a new question. After each turn
it reads the service's ``agent_executor_guard_duration_seconds{guard="injection",
target="request"}`` histogram (the guard's own time per request in the service, a wall
time: the median, interpolated inside its bucket as Prometheus' ``histogram_quantile`` does,
and the exact mean) and the service's CPU time (``schedstat`` of its threads, as
``guard_cost.py`` reads it). A service with ``--no-injection-guard`` holds the same
conversations at the same time: the guard's cost per request is the CPU per request of a
guarded service less that of the unguarded one (``on − off``), which also counts what a
wall time cannot tell apart (the turns the guard gives other tasks while it judges a long
history) and what it does not see (more garbage to collect).

With ``--base REV``, a third service runs the guard from that commit (``git archive`` of its
``agent_executor`` and ``server``), all three sent the same conversations at the same time,
so all see the same load.

The service's CPU per request moves by a few hundred µs from one turn to the next on a
shared 2-core machine, as much as re-scoring a history costs once its texts are in the CPU's
caches; so the same conversations are also judged in this process, by
``InjectionGuard.check`` alone, with the kept scores and with ``cache_size=0`` (thread CPU
time per check, median over the conversations). Writes
``benchmarks/results/guard_history.json``. About a minute for 20 turns.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "data"))
from corpus_rows import read_rows  # noqa: E402

from agent_executor import AgentCommand, AssistantMessage, Message, UserMessage  # noqa: E402
from agent_executor.context import RunContext  # noqa: E402
from agent_executor.guards.injection import InjectionGuard  # noqa: E402
from agent_executor.guards.injection.scoring import score_text  # noqa: E402
from benchmarks.guard_cost import (  # noqa: E402
    CORPUS,
    SEED,
    THRESHOLD,
    GuardService,
    distinct_texts,
    guard_histogram,
    histogram_median,
)
from benchmarks.guard_instructions import unpack  # noqa: E402
from benchmarks.processes import log  # noqa: E402
from benchmarks.procfs import proc_cpu_seconds  # noqa: E402

DEFAULT_OUT = HERE / "results" / "guard_history.json"
OFF = "guard off"
REPORTED_TURNS = (1, 2, 5, 10, 15, 20, 30, 50)
SETTLE_S = 0.2
"""Pause before reading a service's CPU, so that no response of the turn is half-counted."""


def _questions(conversations: int, turns: int) -> list[list[str]]:
    """Benign texts of 100 characters, a different one for every turn of every conversation
    (those the guard flags in this process are left out: one refusal would end a
    conversation, since every later request carries it; and repeats, which the guard would
    find kept)."""
    rows = [r["text"] for r in read_rows(CORPUS) if r["label"] == "benign"]
    random.Random(SEED).shuffle(rows)
    cut = distinct_texts([t[:100] for t in rows if 100 <= len(t) < 1000 and t.isprintable()], 100)
    texts = [t for t in cut if score_text(t).score < THRESHOLD]
    if len(texts) < conversations * turns:
        raise SystemExit(f"only {len(texts)} texts for {conversations} × {turns} questions")
    return [texts[c * turns : (c + 1) * turns] for c in range(conversations)]


async def _turn(
    session: aiohttp.ClientSession,
    service: GuardService,
    histories: list[list[dict[str, str]]],
    questions: list[str],
) -> dict[str, Any]:
    """One turn of every conversation with ``service``: its CPU and the guard's time."""
    before, seconds0 = await guard_histogram(session, service)
    await asyncio.sleep(SETTLE_S)
    cpu0 = proc_cpu_seconds(service.proc.pid)

    async def ask(history: list[dict[str, str]], question: str) -> None:
        history.append({"role": "user", "content": question})
        body = {"model": "default", "messages": history}
        async with session.post(f"{service.url}/v1/chat/completions", json=body) as resp:
            answer = await resp.json()
        if resp.status != 200:
            raise RuntimeError(f"{service.name}: HTTP {resp.status}: {answer}")
        history.append({"role": "assistant", "content": answer["choices"][0]["message"]["content"]})

    await asyncio.gather(*(ask(h, q) for h, q in zip(histories, questions, strict=True)))
    await asyncio.sleep(SETTLE_S)
    cpu_us = (proc_cpu_seconds(service.proc.pid) - cpu0) / len(questions) * 1e6
    after, seconds1 = await guard_histogram(session, service)
    buckets = {le: count - before.get(le, 0.0) for le, count in after.items()}
    requests = max(buckets.values(), default=0.0)
    median = histogram_median(buckets)
    return {
        "cpu_us": cpu_us,
        "median_us": None if median is None else median * 1e6,
        "mean_us": (seconds1 - seconds0) / requests * 1e6 if requests else None,
    }


async def measure(
    services: list[GuardService], questions: list[list[str]], turns: int
) -> dict[str, list[dict[str, Any]]]:
    results: dict[str, list[dict[str, Any]]] = {s.name: [] for s in services}
    histories: dict[str, list[list[dict[str, str]]]] = {
        s.name: [[] for _ in questions] for s in services
    }
    timeout = aiohttp.ClientTimeout(total=120)
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(timeout=timeout, connector=connector) as session:
        for turn in range(turns):
            asked = [q[turn] for q in questions]
            rows = await asyncio.gather(
                *(_turn(session, s, histories[s.name], asked) for s in services)
            )
            for service, row in zip(services, rows, strict=True):
                results[service.name].append(row)
            cpu = ", ".join(
                f"{s.name} {r['cpu_us']:,.0f}" for s, r in zip(services, rows, strict=True)
            )
            log(f"turn {turn + 1}: CPU µs per request: {cpu}")
    return results


async def in_process(questions: list[list[str]], turns: int) -> dict[str, list[float]]:
    """The guard's CPU time for each turn's check in this process (median µs over the
    conversations), with the kept scores (``kept_us``: the default ``cache_size``) and
    without (``unkept_us``: ``cache_size=0``)."""
    medians: dict[str, list[float]] = {}
    for name, guard in (("kept_us", InjectionGuard()), ("unkept_us", InjectionGuard(cache_size=0))):
        times: list[list[float]] = [[] for _ in range(turns)]
        for conversation in questions:
            history: list[Message] = []
            for turn, question in enumerate(conversation[:turns]):
                command = AgentCommand(user_prompt=question, messages=list(history))
                context = RunContext(command=command, request_id="bench", mode="execute")
                started = time.thread_time()
                await guard.check(context)
                times[turn].append((time.thread_time() - started) * 1e6)
                history += [UserMessage(content=question), AssistantMessage(content="Noted.")]
        medians[name] = [statistics.median(t) for t in times]
    return medians


def markdown(results: dict[str, list[dict[str, Any]]], turns: int) -> str:
    """Per reported turn: for each guarded service, on − off CPU and the guard's own time."""
    off = results[OFF]
    guarded = [name for name in results if name != OFF]
    head = "| turn (user messages per request) |"
    for name in guarded:
        head += f" {name}: on − off CPU µs | {name}: guard's time, median (mean) µs |"
    lines = [head, "|---:|" + "---:|---:|" * len(guarded)]
    for turn in [t for t in REPORTED_TURNS if t <= turns] or [turns]:
        cells = [f"| {turn} |"]
        for name in guarded:
            row = results[name][turn - 1]
            cost = row["cpu_us"] - off[turn - 1]["cpu_us"]
            cells.append(f" {cost:,.0f} | {row['median_us']:,.0f} ({row['mean_us']:,.0f}) |")
        lines.append("".join(cells))
    # A turn's on − off is the difference of two noisy CPU totals: the later half averaged.
    late = range(turns // 2, turns)
    cells = [f"| turns {late.start + 1}-{turns}, mean |"]
    for name in guarded:
        rows = [results[name][t] for t in late]
        cost = sum(r["cpu_us"] - off[t]["cpu_us"] for r, t in zip(rows, late, strict=True))
        median = sum(r["median_us"] for r in rows) / len(rows)
        mean = sum(r["mean_us"] for r in rows) / len(rows)
        cells.append(f" {cost / len(rows):,.0f} | {median:,.0f} ({mean:,.0f}) |")
    lines.append("".join(cells))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", help="also run a service from this git revision, side by side")
    parser.add_argument("--conversations", type=int, default=32)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    if args.conversations < 1 or args.turns < 1:
        parser.error("--conversations and --turns must be positive")
    questions = _questions(args.conversations, args.turns)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="guard-history-") as tmp:
        work = Path(tmp)
        agents_file = work / "agents.json"
        agents_file.write_text(json.dumps({"default": "bench", "agents": {"bench": {"tools": []}}}))
        trees = [("working tree", ROOT)]
        if args.base:
            trees.append((args.base, unpack(args.base, work, ("agent_executor", "server"))))
        services: list[GuardService] = []
        concurrency = 2 * args.conversations
        try:
            services.append(GuardService(False, agents_file, work, concurrency, ROOT, OFF))
            for label, root in trees:
                services.append(GuardService(True, agents_file, work, concurrency, root, label))
            results = asyncio.run(measure(services, questions, args.turns))
        finally:
            for service in services:
                service.stop()
    table = markdown(results, args.turns)
    print(table)
    local = asyncio.run(in_process(questions, args.turns))
    print("\nIn this process, the guard's CPU per check, median µs:\n")
    print("| turn | kept scores | `cache_size=0` |\n|---:|---:|---:|")
    for turn in [t for t in REPORTED_TURNS if t <= args.turns]:
        kept, unkept = local["kept_us"][turn - 1], local["unkept_us"][turn - 1]
        print(f"| {turn} | {kept:,.0f} | {unkept:,.0f} |")
    results["in process"] = [
        {name: times[turn] for name, times in local.items()} for turn in range(args.turns)
    ]
    meta = {
        "conversations": args.conversations,
        "turns": args.turns,
        "base": args.base,
        "seconds": round(time.perf_counter() - started, 1),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"meta": meta, "results": results}, indent=2) + "\n")
    log(f"done in {meta['seconds']} s; wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
