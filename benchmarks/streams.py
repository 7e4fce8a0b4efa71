"""Many streams through one service process, against the floor in the same run: one line.

    python benchmarks/streams.py --streams 9000 --runs 3
    python benchmarks/streams.py --where 1000          # what 1,000 open streams hold, by line

The first form runs the concurrency scenario of ``benchmarks.run`` (a model streaming 100 tokens
20 ms apart after one tool turn) ``--runs`` times, the floor (raw aiohttp reading the model
directly) and the service back to back in each run, and prints per run and as medians: the
service's wall time over the floor's, the service's peak memory per open stream over the idle
service (KiB), and failures. The second runs the service under ``tracemalloc``
(``traced_service.py``), opens ``--where`` streams of 400 tokens, waits until every one holds
its permit and has had a second to stream, and prints what those streams hold over the idle
service per stream, grouped by file and line (``--group filename`` by file; ``--group
traceback --frames 6`` by the allocation's last six calls).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
import urllib.request
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from phases import phase_concurrency  # noqa: E402
from processes import MAIN_PY, ROOT, LLMServer, Service, log, raise_nofile  # noqa: E402

_IN_FLIGHT = b"agent_executor_in_flight_requests "
_REFUSED = "HTTP 503"
_REQUEST_ID = re.compile(r', "request_id": "?[0-9a-f]*"?.*')


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    raise_nofile()
    with tempfile.TemporaryDirectory(prefix="agent-executor-streams-") as tmp:
        log_dir = Path(tmp)
        llm = LLMServer(log_dir, args.llm_workers)
        try:
            if args.where:
                _where(args, llm, log_dir)
            else:
                _ratio(args, llm, log_dir)
        finally:
            llm_proc = llm.proc
            llm_proc.terminate()
            llm_proc.wait(timeout=10)
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python benchmarks/streams.py", description=(__doc__ or "").splitlines()[0]
    )
    parser.add_argument("--streams", type=int, default=9000, help="concurrent streams (9000)")
    parser.add_argument("--runs", type=int, default=3, help="runs, medians printed (3)")
    parser.add_argument("--service-args", default="", help="extra flags for the service")
    parser.add_argument("--llm-workers", type=int, default=1, help="LLM server processes (1)")
    parser.add_argument(
        "--where", type=int, metavar="N", help="trace the memory of N open streams instead"
    )
    parser.add_argument("--group", choices=("lineno", "filename", "traceback"), default="lineno")
    parser.add_argument(
        "--frames", type=int, default=1, help="frames kept per allocation (--group traceback)"
    )
    parser.add_argument("--top", type=int, default=25, help="lines of the --where table (25)")
    return parser


def _config(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "conc_tokens": 100,
        "conc_delay_ms": 20,
        "conc_time_limit": {"default": max(60, args.streams // 90)},
        "service_args": shlex.split(args.service_args),
    }


def _ratio(args: argparse.Namespace, llm: LLMServer, log_dir: Path) -> None:
    cfg = _config(args)
    rows = []
    seen: set[Path] = set()
    for run in range(1, args.runs + 1):
        out = phase_concurrency(
            ["floor", "service"],
            [args.streams],
            cfg,
            llm,
            log_dir,
            peers_ok=False,
            deadline=time.time() + 3600,
            all_at_max=False,
        )[str(args.streams)]
        floor, service = out["floor"], out["service"]
        errors: dict[str, int] = {**floor.get("errors", {})}
        for kind, count in service.get("errors", {}).items():
            kind = _REQUEST_ID.sub("", kind)
            errors[kind] = errors.get(kind, 0) + count
        refused = sum(n for kind, n in errors.items() if _REFUSED in kind and "overloaded" in kind)
        row = {
            "floor_s": floor.get("wall_s", float("nan")),
            "service_s": service.get("wall_s", float("nan")),
            "kib": service.get("rss_per_stream_kib", float("nan")),
            "cpu_s": service.get("cpu_s") or float("nan"),
            "refused": refused,
            "failed": (floor.get("failed") or 0) + (service.get("failed") or 0) - refused,
            "unfinished": (floor.get("unfinished") or 0) + (service.get("unfinished") or 0),
        }
        collections = service.get("gc_collections")
        row["ratio"] = row["service_s"] / row["floor_s"]
        rows.append(row)
        print(_line(f"run {run}", args.streams, row), flush=True)
        if collections:
            print(f"  service's garbage collections (generations 0/1/2): "
                  f"{'/'.join(map(str, collections))}", flush=True)  # fmt: skip
        for kind, count in sorted(errors.items(), key=lambda item: -item[1]):
            print(f"  {count} x {kind}", flush=True)
        print(f"  service log: {_log_findings(log_dir, seen)}", flush=True)
    median = {key: statistics.median(r[key] for r in rows) for key in rows[0]}
    median["failed"] = sum(r["failed"] for r in rows)
    median["refused"] = sum(r["refused"] for r in rows)
    median["unfinished"] = sum(r["unfinished"] for r in rows)
    print(_line(f"median of {len(rows)}", args.streams, median), flush=True)


def _line(label: str, streams: int, row: dict[str, float]) -> str:
    return (
        f"{label}: {streams} streams: service {row['service_s']:.2f} s / floor "
        f"{row['floor_s']:.2f} s = {row['ratio']:.2f}x the floor (service CPU "
        f"{row['cpu_s']:.1f} s), "
        f"{row['kib']:.1f} KiB/stream, {int(row['failed'])} failed, "
        f"{int(row['refused'])} refused 503 overloaded, {int(row['unfinished'])} unfinished"
    )


def _log_findings(log_dir: Path, seen: set[Path]) -> str:
    """What the service logs of the last run say that they should not: tracebacks, internal
    errors (a refusal is a warning at most)."""
    tracebacks = internal = 0
    for path in sorted(log_dir.glob("service-*.log")):
        if path in seen:
            continue
        seen.add(path)
        text = path.read_text(errors="replace")
        tracebacks += text.count("Traceback (most recent call last)")
        internal += text.count("internal_error")
    return f"{tracebacks} tracebacks, {internal} lines naming internal_error"


def _where(args: argparse.Namespace, llm: LLMServer, log_dir: Path) -> None:
    snap = log_dir / "snapshot"
    service = Service(
        log_dir,
        llm,
        args.where,
        *shlex.split(args.service_args),
        wrapper=(MAIN_PY, str(HERE / "traced_service.py"), str(snap), str(args.frames)),
        ready_s=60,
    )
    ready = log_dir / "ready"
    job = {
        "mode": "concurrency",
        "streams": args.where,
        "tokens": 400,
        "delay_ms": 20,
        "time_limit": 300,
        "service_url": service.url,
        "service_pid": service.proc.pid,
        "ready_file": str(ready),
        "pause_s": 5.0,
    }
    command = [MAIN_PY, str(HERE / "worker.py"), "--variant", "service"]
    worker = subprocess.Popen(
        [*command, "--base-url", llm.base_url, "--job", json.dumps(job)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
    )
    try:
        _wait(lambda: ready.exists(), 120, "the worker's warm-up")
        idle = _snapshot(service, snap)
        log(f"idle snapshot taken; waiting for {args.where} streams to hold their permits")
        _wait(
            lambda: worker.poll() is not None or _in_flight(service.url) >= args.where,
            600,
            "the streams to open",
        )
        if worker.poll() is not None:
            raise RuntimeError(f"the worker ended before {args.where} streams were open")
        time.sleep(1.0)
        busy = _snapshot(service, snap)
        log("snapshot with the streams open taken")
    finally:
        worker.terminate()
        worker.wait(timeout=30)
        service.stop()
    _report(busy, idle, args.where, args.group, args.top)


def _snapshot(service: Service, target: Path) -> tracemalloc.Snapshot:
    done = Path(f"{target}.done")
    done.unlink(missing_ok=True)
    service.proc.send_signal(signal.SIGUSR1)
    _wait(done.exists, 120, "the snapshot")
    return tracemalloc.Snapshot.load(str(target))


def _report(
    busy: tracemalloc.Snapshot, idle: tracemalloc.Snapshot, streams: int, group: str, top: int
) -> None:
    stats = busy.compare_to(idle, group)
    total = sum(s.size_diff for s in stats)
    print(
        f"{streams} open streams hold {total / 1024 / streams:.1f} KiB each in traced "
        f"allocations ({total / 2**20:.1f} MiB over the idle service), by {group}:"
    )
    print("| bytes/stream | objects/stream | where |")
    print("|---:|---:|---|")
    for stat in stats[:top]:
        frames = stat.traceback if group == "traceback" else stat.traceback[:1]
        where = " < ".join(_place(frame, group) for frame in reversed(frames))
        print(f"| {stat.size_diff / streams:,.0f} | {stat.count_diff / streams:.2f} | {where} |")


def _place(frame: tracemalloc.Frame, group: str) -> str:
    where = frame.filename.replace(str(ROOT) + "/", "").replace(sys.prefix + "/", "")
    return where if group == "filename" else f"{where}:{frame.lineno}"


def _in_flight(url: str) -> float:
    """Runs holding a permit now (0 while a saturated service is slow to answer)."""
    try:
        with urllib.request.urlopen(f"{url}/metrics", timeout=30) as resp:
            body = resp.read()
    except OSError:
        return 0.0
    for line in body.splitlines():
        if line.startswith(_IN_FLIGHT):
            return float(line[len(_IN_FLIGHT) :])
    return 0.0


def _wait(ready: Any, seconds: float, what: str) -> None:
    deadline = time.time() + seconds
    while not ready():
        if time.time() > deadline:
            raise TimeoutError(f"gave up waiting for {what} after {seconds:.0f} s")
        time.sleep(0.1)


if __name__ == "__main__":
    sys.exit(main())
