"""Where the per-token time goes in (b) ``execute_stream()`` and (d) the service.

    python benchmarks/profile_hotpath.py [--bulk-runs 20] [--streams 1000] [--out FILE]

Two views, both against the benchmark's LLM server:

- **bulk** (cProfile, CPU-time clock): runs of 2,200 and of 200 tokens without delay, profiled
  separately and subtracted per function, so per-request work cancels out and what is left is
  the cost of the extra tokens. (b) is profiled in this process; (d) runs twice as
  ``python -m cProfile -m server`` (one process per token count, stopped with SIGTERM). cProfile
  slows Python calls down, so times are also shown scaled to the CPU per token measured without
  it (``≈µs``).
- **load** (py-spy, sampling, needs ``pip install py-spy``; for profiling only): the worker
  process of (b), and the service process of (d), while ``--streams`` conversations run at
  once with 100 tokens 20 ms apart (the concurrency scenario: one chunk per read). Self time per
  function and per area, converted to µs per streamed chunk from the process's CPU time.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import json
import pstats
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import worker  # noqa: E402
from run import MAIN_PY, LLMServer, Service, free_port, wait_http  # noqa: E402
from scenario import ARG_FRAGMENTS  # noqa: E402

Key = tuple[str, int, str]

# --------------------------------------------------------------------------- #
# bulk: cProfile difference of two token counts
# --------------------------------------------------------------------------- #


def _per_function(stats: pstats.Stats) -> dict[Key, tuple[float, int]]:
    return {k: (v[2], v[1]) for k, v in stats.stats.items()}  # type: ignore[attr-defined]


def _diff(big: pstats.Stats, small: pstats.Stats, extra: int) -> list[tuple[Key, float, float]]:
    b, s = _per_function(big), _per_function(small)
    rows = []
    for key, (tt, calls) in b.items():
        tt0, calls0 = s.get(key, (0.0, 0))
        rows.append((key, (tt - tt0) / extra * 1e6, (calls - calls0) / extra))
    rows.sort(key=lambda r: -r[1])
    return rows


OURS = ("agent_executor/", "server/", "tenacity/", "logging/", "prometheus_client/", "pydantic/")


def _cumulative(
    big: pstats.Stats, small: pstats.Stats | None, extra: int
) -> list[tuple[Key, float]]:
    """Inclusive time per call site of our code (and a few libraries it leans on)."""
    b = {k: v[3] for k, v in big.stats.items()}  # type: ignore[attr-defined]
    s = {k: v[3] for k, v in small.stats.items()} if small else {}  # type: ignore[attr-defined]
    rows = [
        (k, (ct - s.get(k, 0.0)) / extra * 1e6)
        for k, ct in b.items()
        if any(m in k[0] for m in OURS)
    ]
    rows.sort(key=lambda r: -r[1])
    return rows


def _cumulative_report(rows: list[tuple[Key, float]], scale: float, unit: str, top: int) -> str:
    out = [
        "",
        f"| our code, inclusive (nested calls overlap) | µs/{unit} profiled | ≈µs/{unit} |",
        "|---|---|---|",
    ]
    for key, us in rows[:top]:
        out.append(f"| `{_name(key)}` | {us:.1f} | {us * scale:.1f} |")
    return "\n".join(out)


def _short(path: str) -> str:
    parts = Path(path).parts
    for anchor in ("site-packages", "main", "python3.11", "lib"):
        if anchor in parts:
            i = len(parts) - 1 - parts[::-1].index(anchor)
            return "/".join(parts[i + 1 :])
    return path


def _name(key: Key) -> str:
    path, line, func = key
    return func if path == "~" else f"{_short(path)}:{line}({func})"


def _bulk_report(
    title: str, rows: list[tuple[Key, float, float]], measured_us: float, top: int
) -> str:
    total = sum(r[1] for r in rows if r[1] > 0)
    scale = measured_us / total if total else 0
    out = [
        f"\n### {title}",
        f"profiled {total:.1f} µs/token; measured without the profiler {measured_us:.2f} "
        f"µs/token (scale {scale:.2f})\n",
        "| function (self time) | calls/token | µs/token profiled | ≈µs/token | share |",
        "|---|---|---|---|---|",
    ]
    for key, us, calls in rows[:top]:
        out.append(
            f"| `{_name(key)}` | {calls:.2f} | {us:.2f} | {us * scale:.2f} | {us / total:.0%} |"
        )
    return "\n".join(out)


async def _runs(variant: worker.Variant, n: int, runs: int) -> None:
    for _ in range(runs):
        await variant.run("-", n, 0)


async def bulk_ours(base_url: str, n1: int, n2: int, runs: int) -> tuple:
    variant = worker.VARIANTS["ours"]()
    await variant.setup(base_url, 100, {})
    await _runs(variant, n2, 3)
    gc.collect()
    measured = {}
    for n in (n1, n2):
        c0 = time.process_time()
        await _runs(variant, n, runs)
        measured[n] = time.process_time() - c0
    profiles = {}
    for n in (n1, n2):
        gc.collect()
        prof = cProfile.Profile(time.process_time)
        prof.enable()
        await _runs(variant, n, runs)
        prof.disable()
        profiles[n] = pstats.Stats(prof)
    await variant.close()
    extra = runs * (n2 - n1)
    return _diff(profiles[n2], profiles[n1], extra), (measured[n2] - measured[n1]) / extra * 1e6


# The service under cProfile with the CPU-time clock (python -m cProfile uses wall time).
SERVICE_UNDER_CPROFILE = """
import cProfile, runpy, sys, time
out = sys.argv[1]
sys.argv = ["server", *sys.argv[2:]]
prof = cProfile.Profile(time.process_time)
prof.enable()
try:
    runpy.run_module("server", run_name="__main__")
except SystemExit:
    pass
finally:
    prof.disable()
    prof.dump_stats(out)
"""


def bulk_service(llm: LLMServer, log_dir: Path, n1: int, n2: int, runs: int) -> tuple:
    profiles = {}
    for n in (n1, n2):
        port = free_port()
        out = log_dir / f"service-{n}.prof"
        cmd = [
            MAIN_PY, "-c", SERVICE_UNDER_CPROFILE, str(out), "--port", str(port),
            "--model", "openai/bench", "--api-base", llm.base_url,
            "--tools", str(HERE / "bench_tools.py"),
        ]  # fmt: skip
        with (log_dir / f"service-{n}.log").open("wb") as log:
            proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
            wait_http(f"http://127.0.0.1:{port}/api/health", 60, proc)

            async def drive(port: int = port, n: int = n) -> None:
                client = worker.ServiceClient()
                await client.setup(llm.base_url, 100, {"service_url": f"http://127.0.0.1:{port}"})
                await _runs(client, n2, 3)  # warm-up (the same in both processes)
                await _runs(client, n, runs)
                await client.close()

            asyncio.run(drive())
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)
        profiles[n] = pstats.Stats(str(out))
    measured = {}
    service = Service(log_dir, llm, 100)
    try:

        async def drive_plain() -> None:
            client = worker.ServiceClient()
            await client.setup(llm.base_url, 100, {"service_url": service.url})
            await _runs(client, n2, 3)
            for n in (n1, n2):
                c0 = worker.proc_cpu_seconds(service.proc.pid)
                await _runs(client, n, runs)
                measured[n] = worker.proc_cpu_seconds(service.proc.pid) - c0
            await client.close()

        asyncio.run(drive_plain())
    finally:
        service.stop()
    extra = runs * (n2 - n1)
    return _diff(profiles[n2], profiles[n1], extra), (measured[n2] - measured[n1]) / extra * 1e6


# --------------------------------------------------------------------------- #
# load: py-spy while N conversations stream at 20 ms per token
# --------------------------------------------------------------------------- #

AREAS = [
    ("agent_executor/models/openai_compat.py", "model client (OpenAICompatModel)"),
    ("agent_executor/", "executor (turn loop, events, tools, run)"),
    ("server/", "service (routes, SSE writer)"),
    ("benchmarks/", "benchmark client code"),
    ("aiohttp/", "aiohttp (HTTP parser, streams, client/server)"),
    ("asyncio/", "asyncio event loop, transports (incl. send/recv)"),
    ("selectors.py", "asyncio event loop, transports (incl. send/recv)"),
    ("anyio/", "anyio (cancel scopes, streams)"),
    ("prometheus_client/", "prometheus-client"),
    ("pydantic", "pydantic"),
    ("logging/", "logging"),
    ("tenacity/", "tenacity"),
    ("opentelemetry/", "opentelemetry"),
]


def _area(frame: str) -> str:
    for needle, area in AREAS:
        if needle in frame:
            return area
    return "other"


def _parse_raw(path: Path) -> tuple[Counter[str], Counter[str], Counter[str], int]:
    """py-spy raw output → self samples per function, per area, inclusive per function."""
    self_fn: Counter[str] = Counter()
    areas: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = 0
    for line in path.read_text().splitlines():
        stack, _, count_s = line.rpartition(" ")
        if not stack:
            continue
        count = int(count_s)
        frames = stack.split(";")
        total += count
        leaf = frames[-1]
        func, _, loc = leaf.partition(" (")
        file = loc.rsplit(":", 1)[0]
        self_fn[f"{_short(file)}({func})"] += count
        areas[_area(file)] += count
        for frame in set(frames):
            func, _, loc = frame.partition(" (")
            inclusive[f"{_short(loc.rsplit(':', 1)[0])}({func})"] += count
    return self_fn, areas, inclusive, total


def _load_report(title: str, raw: Path, cpu_s: float, chunks: int, top: int) -> str:
    self_fn, areas, inclusive, total = _parse_raw(raw)
    per_chunk = cpu_s / chunks * 1e6
    out = [
        f"\n### {title}",
        f"{total} samples; process CPU {cpu_s:.2f} s for {chunks} streamed chunks = "
        f"{per_chunk:.1f} µs per chunk (all per-request work included)\n",
        "| area (self time) | share | ≈µs/chunk |",
        "|---|---|---|",
    ]
    for area, n in areas.most_common():
        out.append(f"| {area} | {n / total:.0%} | {n / total * per_chunk:.1f} |")
    out += ["", "| function (self time) | share | ≈µs/chunk |", "|---|---|---|"]
    for fn, n in self_fn.most_common(top):
        out.append(f"| `{fn}` | {n / total:.1%} | {n / total * per_chunk:.2f} |")
    wanted = [
        "_chunks",
        "_convert",
        "_consume",
        "stream_turn",
        "run_calls",
        "execute_stream",
        "pump",
        "send",
        "_write",
        "frame",
        "data_received",
        "buffer_updated",
        "_run_once",
        "select",
    ]
    out += ["", "| function (inclusive) | share | ≈µs/chunk |", "|---|---|---|"]
    for fn, n in inclusive.most_common():
        name = fn.rsplit("(", 1)[-1].rstrip(")")
        if name in wanted and (
            "agent_executor" in fn
            or "server/" in fn
            or name in ("data_received", "_run_once", "select")
        ):
            out.append(f"| `{fn}` | {n / total:.0%} | {n / total * per_chunk:.1f} |")
    return "\n".join(out)


def _spy(pid: int, out: Path, rate: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            "py-spy",
            "record",
            "--pid",
            str(pid),
            "--rate",
            str(rate),
            "--format",
            "raw",
            "--nonblocking",
            "-o",
            str(out),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _stop_spy(spy: subprocess.Popen[bytes]) -> None:
    if spy.poll() is None:
        spy.send_signal(signal.SIGINT)
    spy.wait(timeout=60)


def load_profiles(llm: LLMServer, log_dir: Path, streams: int, rate: int, top: int) -> str:
    tokens, delay = 100, 20
    chunks = streams * (tokens + len(ARG_FRAGMENTS))
    report = ""
    # (b): py-spy on the worker, attached after its warm-up
    ready = log_dir / "ready"
    job = {
        "mode": "concurrency", "streams": streams, "tokens": tokens, "delay_ms": delay,
        "time_limit": 120, "ready_file": str(ready), "pause_s": 1.5,
    }  # fmt: skip
    cmd = [MAIN_PY, str(HERE / "worker.py"), "--variant", "ours", "--base-url", llm.base_url]
    proc = subprocess.Popen([*cmd, "--job", json.dumps(job)], stdout=subprocess.PIPE)
    while not ready.exists() and proc.poll() is None:
        time.sleep(0.05)
    raw = log_dir / "ours-load.txt"
    spy = _spy(proc.pid, raw, rate)
    stdout, _ = proc.communicate(timeout=300)
    _stop_spy(spy)
    res = json.loads(stdout.decode().strip().splitlines()[-1])
    report += _load_report(
        f"(b) execute_stream(), {streams} streams, 20 ms/token: the worker process "
        f"(wall {res['wall_s']:.2f} s)",
        raw,
        res["cpu_s"],
        chunks,
        top,
    )
    # (d): py-spy on the service process for the whole client run
    service = Service(log_dir, llm, streams)
    try:
        raw = log_dir / "service-load.txt"
        spy = _spy(service.proc.pid, raw, rate)
        time.sleep(0.5)
        job = {
            "mode": "concurrency", "streams": streams, "tokens": tokens, "delay_ms": delay,
            "time_limit": 120, "service_url": service.url, "service_pid": service.proc.pid,
        }  # fmt: skip
        cmd = [MAIN_PY, str(HERE / "worker.py"), "--variant", "service"]
        done = subprocess.run(
            [*cmd, "--base-url", llm.base_url, "--job", json.dumps(job)],
            capture_output=True,
            timeout=300,
        )
        _stop_spy(spy)
        res = json.loads(done.stdout.decode().strip().splitlines()[-1])
    finally:
        service.stop()
    report += _load_report(
        f"(d) service process, {streams} streams, 20 ms/token (wall {res['wall_s']:.2f} s)",
        raw,
        res["cpu_s"],
        chunks,
        top,
    )
    return report


async def per_request_ours(base_url: str, runs: int) -> tuple[pstats.Stats, float]:
    variant = worker.VARIANTS["ours"]()
    await variant.setup(base_url, 100, {})
    await _runs(variant, 1, 20)
    gc.collect()
    c0 = time.process_time()
    await _runs(variant, 1, runs)
    measured = (time.process_time() - c0) / runs * 1e6
    prof = cProfile.Profile(time.process_time)
    prof.enable()
    await _runs(variant, 1, runs)
    prof.disable()
    await variant.close()
    return pstats.Stats(prof), measured


def _profiled_service(
    llm: LLMServer, log_dir: Path, tokens: int, runs: int, tag: str
) -> pstats.Stats:
    """A service process under cProfile (CPU clock) serving ``runs`` conversations."""
    port = free_port()
    out = log_dir / f"service-{tag}.prof"
    cmd = [
        MAIN_PY, "-c", SERVICE_UNDER_CPROFILE, str(out), "--port", str(port),
        "--model", "openai/bench", "--api-base", llm.base_url,
        "--tools", str(HERE / "bench_tools.py"),
    ]  # fmt: skip
    with (log_dir / f"service-{tag}.log").open("wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        wait_http(f"http://127.0.0.1:{port}/api/health", 60, proc)

        async def drive() -> None:
            client = worker.ServiceClient()
            await client.setup(llm.base_url, 100, {"service_url": f"http://127.0.0.1:{port}"})
            await _runs(client, tokens, 5)  # warm-up, the same in every process
            await _runs(client, tokens, runs)
            await client.close()

        asyncio.run(drive())
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    return pstats.Stats(str(out))


def per_request_service(llm: LLMServer, log_dir: Path, runs: int) -> tuple:
    """Two service processes (``runs`` and ``2 * runs`` conversations), subtracted."""
    small = _profiled_service(llm, log_dir, 1, runs, "conv-small")
    big = _profiled_service(llm, log_dir, 1, 2 * runs, "conv-big")
    service = Service(log_dir, llm, 100)
    measured = 0.0
    try:

        async def drive_plain() -> None:
            nonlocal measured
            client = worker.ServiceClient()
            await client.setup(llm.base_url, 100, {"service_url": service.url})
            await _runs(client, 1, 20)
            c0 = worker.proc_cpu_seconds(service.proc.pid)
            await _runs(client, 1, runs)
            measured = (worker.proc_cpu_seconds(service.proc.pid) - c0) / runs * 1e6
            await client.close()

        asyncio.run(drive_plain())
    finally:
        service.stop()
    return big, small, measured


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bulk-runs", type=int, default=20)
    parser.add_argument("--streams", type=int, default=1000, help="0 skips the load profiles")
    parser.add_argument("--rate", type=int, default=250, help="py-spy samples per second")
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument(
        "--per-request", type=int, default=300, help="conversations of 1 token (0 skips)"
    )
    parser.add_argument("--out", help="also write the report to this file")
    args = parser.parse_args()
    log_dir = Path(tempfile.mkdtemp(prefix="agent-executor-profile-"))
    llm = LLMServer(log_dir, workers=1)
    n1, n2 = 200, 2200
    report = "## Bulk: 200 vs 2,200 tokens without delay (cProfile, CPU clock)"
    try:
        rows, measured = asyncio.run(bulk_ours(llm.base_url, n1, n2, args.bulk_runs))
        report += _bulk_report(
            "(b) execute_stream() on OpenAICompatModel", rows, measured, args.top
        )
        rows, measured = bulk_service(llm, log_dir, n1, n2, args.bulk_runs)
        report += _bulk_report("(d) service process", rows, measured, args.top)
        if args.per_request:
            report += (
                "\n\n## Per conversation: runs of 1 token (tool turn, two model requests, set-up; "
                "cProfile, CPU clock)"
            )
            stats, measured = asyncio.run(per_request_ours(llm.base_url, args.per_request))
            n = args.per_request
            rows = sorted(
                ((k, v[2] / n * 1e6, v[1] / n) for k, v in stats.stats.items()),  # type: ignore[attr-defined]
                key=lambda r: -r[1],
            )
            total = sum(r[1] for r in rows)
            report += _bulk_report(
                "(b) execute_stream() on OpenAICompatModel", rows, measured, args.top
            ).replace("/token", "/conversation")
            report += _cumulative_report(
                _cumulative(stats, None, n), measured / total, "conversation", args.top
            )
            big, small, measured = per_request_service(llm, log_dir, n)
            rows = _diff(big, small, n)
            total = sum(r[1] for r in rows if r[1] > 0)
            report += _bulk_report("(d) service process", rows, measured, args.top).replace(
                "/token", "/conversation"
            )
            report += _cumulative_report(
                _cumulative(big, small, n), measured / total, "conversation", args.top
            )
        if args.streams and shutil.which("py-spy"):
            report += "\n\n## Load: 100 tokens 20 ms apart, one chunk per read (py-spy)"
            report += load_profiles(llm, log_dir, args.streams, args.rate, args.top)
        elif args.streams:
            report += "\n\n(load profiles skipped: py-spy is not installed)"
    finally:
        llm.stop()
    print(report)
    if args.out:
        Path(args.out).write_text(report + "\n")


if __name__ == "__main__":
    main()
