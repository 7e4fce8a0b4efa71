"""CPU per token counted in instructions (callgrind): the measure this shared VM cannot blur.

    python benchmarks/instructions.py [--tokens 200,5200] [--variants floor,ours,service]
    python benchmarks/instructions.py --conversations 5,25 --variants service

Timed CPU per token (``benchmarks.run``) moves by ±30% between processes on a shared 2-core VM:
a process lands on a fast or a slow core for its whole life, so medians of a few processes
flip ratios. Instructions do not depend on that. For each variant, two processes run under
``valgrind --tool=callgrind`` and do exactly the same work except for the length of one answer:
set-up, three warm-up conversations, then one conversation of ``n1`` or of ``n2`` tokens (bulk:
the model server sends each turn in one write). The difference of their totals over
``n2 - n1`` is the instructions per extra token; imports, set-up and per-request work cancel
out. For the service, the service process runs under callgrind and a plain SSE client (not
counted) drives it. ``PYTHONHASHSEED=0`` everywhere; each variant is measured ``--repeat``
times to show how repeatable the count is (the number of socket reads per conversation still
varies a little with timing).

``--conversations c1,c2`` counts per conversation instead: the two processes serve ``c1`` or
``c2`` conversations of 100 tokens (``--conversation-tokens``) after the warm-ups, one after the
other on kept-alive connections, and the difference over ``c2 - c1`` is what one whole
conversation costs (the request, guards, both model turns, the tool, the answer's tokens, the
bookkeeping): what decides throughput when thousands of short conversations run at once.

Takes about 3 minutes on 2 cores (valgrind runs Python ~50x slower). Needs ``valgrind``.
Prints a markdown table; ``--out FILE`` also writes the JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

from benchmarks import variants, worker  # noqa: E402
from benchmarks.run import MAIN_PY, ROOT, LLMServer, Service, stop_process  # noqa: E402

VARIANTS = {
    "floor": "(a) floor: raw aiohttp + json.loads",
    "floor_orjson": "(a') raw aiohttp + orjson",
    "ours": "(b) ours: execute_stream(), OpenAICompatModel",
    "service": "(d) our service, end to end (SSE): the service process",
    "service_v1": "(d') our service, /v1/chat/completions stream: the service process",
}
_SERVICE = {"service": "ServiceClient", "service_v1": "ServiceV1Client"}
WARMUP = 3
_TOTAL_RE = re.compile(rb"^(?:summary|totals):\s*(\d+)", re.M)


def _valgrind(out_file: Path) -> tuple[str, ...]:
    return ("valgrind", "--tool=callgrind", f"--callgrind-out-file={out_file}", "--quiet")


def _instructions(out_file: Path) -> int:
    found = _TOTAL_RE.search(out_file.read_bytes())
    if found is None:
        raise RuntimeError(f"no instruction total in {out_file}")
    return int(found.group(1))


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONHASHSEED": "0"}


def measure_client(variant: str, base_url: str, tokens: int, work: Path, runs: int = 1) -> int:
    """Instructions of a whole client process whose last ``runs`` conversations have
    ``tokens`` tokens."""
    out = work / f"{variant}-{tokens}-{os.urandom(3).hex()}.out"
    cmd = [*_valgrind(out), MAIN_PY, str(Path(__file__).resolve())]
    cmd += ["--drive", variant, "--base-url", base_url, "--drive-tokens", str(tokens)]
    cmd += ["--drive-runs", str(runs)]
    subprocess.run(cmd, check=True, cwd=ROOT, env=_env(), capture_output=True, timeout=600)
    return _instructions(out)


def measure_service(
    llm: LLMServer, tokens: int, work: Path, variant: str = "service", runs: int = 1
) -> int:
    """Instructions of a whole service process that served warm-ups and ``runs``
    conversations."""
    out = work / f"{variant}-{tokens}-{os.urandom(3).hex()}.out"
    service = Service(
        work, llm, 10, wrapper=_valgrind(out), env=_env(), ready_s=300, stop_grace=120
    )
    try:
        drive = [MAIN_PY, str(Path(__file__).resolve()), "--drive", variant]
        drive += ["--base-url", llm.base_url, "--service-url", service.url]
        drive += ["--drive-tokens", str(tokens), "--drive-runs", str(runs)]
        subprocess.run(drive, check=True, cwd=ROOT, env=_env(), capture_output=True, timeout=600)
    finally:
        service.stop()  # SIGTERM: callgrind writes its totals as the process exits
    return _instructions(out)


async def drive(
    variant: str, base_url: str, tokens: int, service_url: str | None, runs: int = 1
) -> None:
    """The measured process's work (or, for the service, its client's): warm-up, ``runs``
    answers."""
    client: worker.Variant
    if variant in _SERVICE:
        client = getattr(variants, _SERVICE[variant])()
        job: dict[str, Any] = {"service_url": service_url}
    else:
        client = worker.VARIANTS[variant]()
        job = {}
    await client.setup(base_url, 10, job)
    try:
        for i in range(WARMUP):
            await worker.checked_run(client, f"warm{i}", 20, 0)
        for i in range(runs):
            await worker.checked_run(client, f"measured{i}", tokens, 0)
    finally:
        await client.close()


def _work(n: int, per_conversation: bool, args: argparse.Namespace) -> tuple[int, int]:
    """(tokens per measured conversation, measured conversations) of one process."""
    return (args.conversation_tokens, n) if per_conversation else (n, 1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--tokens", default="200,5200", help="n1,n2")
    parser.add_argument(
        "--conversations", help="c1,c2: count per conversation instead of per token"
    )
    parser.add_argument("--conversation-tokens", type=int, default=100)
    parser.add_argument("--variants", default="floor,floor_orjson,ours,service")
    parser.add_argument("--repeat", type=int, default=2, help="measurements per variant")
    parser.add_argument("--out", help="also write the JSON here")
    parser.add_argument("--drive", help=argparse.SUPPRESS)
    parser.add_argument("--base-url", help=argparse.SUPPRESS)
    parser.add_argument("--service-url", help=argparse.SUPPRESS)
    parser.add_argument("--drive-tokens", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--drive-runs", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.drive:
        asyncio.run(
            drive(args.drive, args.base_url, args.drive_tokens, args.service_url, args.drive_runs)
        )
        return 0
    if shutil.which("valgrind") is None:
        print("valgrind is not installed (Debian: apt-get install valgrind)", file=sys.stderr)
        return 2
    per_conversation = args.conversations is not None
    n1, n2 = (int(x) for x in (args.conversations or args.tokens).split(","))
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        parser.error(f"unknown variants: {', '.join(unknown)}")
    work = Path(tempfile.mkdtemp(prefix="agent-executor-instructions-"))
    llm = LLMServer(work, 1)
    jobs = [(v, n) for _ in range(args.repeat) for v in variants for n in (n1, n2)]
    try:
        with ThreadPoolExecutor(max_workers=2) as pool:
            futures = [
                pool.submit(measure_service, llm, tokens, work, v, runs)
                if v in _SERVICE
                else pool.submit(measure_client, v, llm.base_url, tokens, work, runs)
                for v, n in jobs
                for tokens, runs in [_work(n, per_conversation, args)]
            ]
            counts = [f.result() for f in futures]
    finally:
        stop_process(llm.proc)
    per_token: dict[str, list[float]] = {v: [] for v in variants}
    for i in range(0, len(jobs), 2):
        variant = jobs[i][0]
        per_token[variant].append((counts[i + 1] - counts[i]) / (n2 - n1))
    floor = statistics.median(per_token["floor"]) if "floor" in per_token else None
    unit = "conversation" if per_conversation else "token"
    compared = (
        f"{n1} vs {n2} conversations of {args.conversation_tokens} tokens"
        if per_conversation
        else f"{n1} vs {n2} tokens"
    )
    lines = [
        f"Instructions per extra {unit} (callgrind; {compared}, bulk; "
        f"{args.repeat} measurements each):",
        "",
        f"| variant | instructions/{unit} | measurements | × floor |",
        "|---|---|---|---|",
    ]
    for variant, values in per_token.items():
        med = statistics.median(values)
        ratio = f"{med / floor:.2f}×" if floor else "–"
        shown = ", ".join(f"{v:,.0f}" for v in values)
        lines.append(f"| {VARIANTS[variant]} | {med:,.0f} | {shown} | {ratio} |")
    print("\n".join(lines))
    if args.out:
        Path(args.out).write_text(
            json.dumps({"tokens": [n1, n2], "per_token": per_token, "markdown": lines}, indent=1)
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
