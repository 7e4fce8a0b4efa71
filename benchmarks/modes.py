"""The worker's modes: ``cpu`` (CPU per token, latency, cyclic garbage) and ``concurrency``."""

from __future__ import annotations

import asyncio
import gc
import os
import time
from typing import Any

from procfs import hwm_kib, proc_cpu_seconds, reset_hwm, rss_kib
from scenario import expected_text, now, run_id
from variants import RunFailure, Variant

__all__ = ["GCTimer", "checked_run", "concurrency_mode", "cpu_mode"]


async def checked_run(
    variant: Variant, rid: str, tokens: int, delay_ms: int
) -> tuple[float, float | None, float]:
    t0 = now()
    text, first = await variant.run(rid, tokens, delay_ms)
    end = now()
    if text != expected_text(tokens):
        raise RunFailure(
            f"wrong text: {len(text)} chars, expected {len(expected_text(tokens))}: {text[:80]!r}"
        )
    return t0, first, end


async def cpu_mode(variant: Variant, job: dict[str, Any]) -> dict[str, Any]:
    service_pid = job.get("service_pid")
    prefix = job["prefix"]
    out: dict[str, Any] = {"latency": [], "cpu_us_per_token": [], "client_cpu_us_per_token": []}
    for _ in range(job["warmup"]):
        await checked_run(variant, run_id(prefix + "w"), job["latency_tokens"], 0)
    await checked_run(variant, run_id(prefix + "w"), job["n2"], 0)
    # The first full collection after the imports can take tens of ms (proportional to the
    # heap the imports left); it would land in one measured run at random. Do it now, for
    # every variant alike; later collections happen at their natural rate.
    gc.collect()
    for _ in range(job["latency_runs"]):
        rid = run_id(prefix + "l")
        t0, first, end = await checked_run(variant, rid, job["latency_tokens"], 0)
        out["latency"].append({"run": rid, "t0": t0, "first": first, "end": end})
    out["cpu_us_per_token"], out["client_cpu_us_per_token"] = await _cpu_pairs(
        variant, prefix + "c", job["n1"], job["n2"], job["pairs"], 0, service_pid
    )
    out["cyclic_garbage_per_run"] = await _cyclic_garbage(variant, prefix + "g")
    if job.get("paced_pairs"):
        out["paced_cpu_us_per_token"], out["paced_client_cpu_us_per_token"] = await _cpu_pairs(
            variant,
            prefix + "p",
            job["paced_n1"],
            job["paced_n2"],
            job["paced_pairs"],
            job["paced_delay_ms"],
            service_pid,
        )
    return out


async def _cyclic_garbage(variant: Variant, prefix: str, runs: int = 5) -> float:
    """Objects per conversation that only the cyclic GC can free (reference cycles)."""
    gc.collect()
    gc.disable()
    try:
        for _ in range(runs):
            await checked_run(variant, run_id(prefix), 5, 0)
        await asyncio.sleep(0.05)
        return gc.collect() / runs
    finally:
        gc.enable()


class GCTimer:
    """Time spent in garbage collection, per generation (gc.callbacks)."""

    def __init__(self) -> None:
        self.count = [0, 0, 0]
        self.seconds = [0.0, 0.0, 0.0]
        self.longest = 0.0
        self._start = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        else:
            spent = time.perf_counter() - self._start
            generation = info["generation"]
            self.count[generation] += 1
            self.seconds[generation] += spent
            self.longest = max(self.longest, spent)


async def _cpu_pairs(
    variant: Variant,
    prefix: str,
    n1: int,
    n2: int,
    pairs: int,
    delay_ms: int,
    service_pid: int | None,
) -> tuple[list[float], list[float]]:
    """CPU µs per extra token: runs of n1 and n2 tokens (alternating order), difference."""
    samples: list[float] = []
    client_samples: list[float] = []
    for i in range(pairs):
        cost: dict[int, float] = {}
        client_cost: dict[int, float] = {}
        for n in (n1, n2) if i % 2 == 0 else (n2, n1):
            rid = run_id(prefix)
            c0 = time.process_time()
            s0 = proc_cpu_seconds(service_pid) if service_pid else 0.0
            await checked_run(variant, rid, n, delay_ms)
            client_cost[n] = time.process_time() - c0
            cost[n] = (proc_cpu_seconds(service_pid) - s0) if service_pid else client_cost[n]
        samples.append((cost[n2] - cost[n1]) / (n2 - n1) * 1e6)
        client_samples.append((client_cost[n2] - client_cost[n1]) / (n2 - n1) * 1e6)
    return samples, client_samples


async def concurrency_mode(variant: Variant, job: dict[str, Any]) -> dict[str, Any]:
    service_pid = job.get("service_pid")
    streams = job["streams"]
    await _warm_up(variant, job)
    usage = _Usage(service_pid)
    usage.start_memory()
    service_url = job.get("service_url")
    gc0 = await asyncio.to_thread(_service_gc_collections, service_url) if service_url else None
    usage.start_cpu()
    burst = _Burst(variant, job["tokens"], job["delay_ms"])
    gc_timer = GCTimer()
    gc.callbacks.append(gc_timer)
    started = now()
    pending = await burst.run(streams, job["time_limit"])
    wall = now() - started
    gc.callbacks.remove(gc_timer)
    usage.stop()
    for task in pending:
        task.cancel()
    if pending:
        await asyncio.wait(pending, timeout=10)
    service_gc = await _service_gc_since(service_url, gc0)
    durations, ttfts = sorted(burst.durations), sorted(burst.ttfts)
    return {
        "streams": streams,
        "completed": len(durations),
        "failed": sum(burst.errors.values()),
        "unfinished": len(pending),
        "errors": burst.errors,
        "wall_s": wall,
        "time_limit_s": job["time_limit"],
        "cpu_s": usage.cpu,
        "client_cpu_s": usage.client_cpu if service_pid else None,
        "baseline_rss_kib": usage.baseline,
        "peak_rss_kib": usage.peak,
        "hwm_reset": usage.hwm_reset,
        "rss_per_stream_kib": (usage.peak - usage.baseline) / streams,
        "client_peak_rss_kib": usage.client_peak if service_pid else None,
        "client_rss_per_stream_kib": (usage.client_peak - usage.client_baseline) / streams
        if service_pid
        else None,
        "client_gc": {
            "collections": gc_timer.count,
            "seconds": [round(x, 4) for x in gc_timer.seconds],
            "longest_pause_s": round(gc_timer.longest, 4),
        },
        "service_gc_collections": service_gc,
        "stream_s_p50": _pct(durations, 50),
        "stream_s_p99": _pct(durations, 99),
        "ttft_s_p50": _pct(ttfts, 50),
        "ttft_s_p99": _pct(ttfts, 99),
    }


async def _warm_up(variant: Variant, job: dict[str, Any]) -> None:
    await checked_run(variant, "-", 5, 0)  # warm-up: imports, first connection
    gc.collect()
    if job.get("ready_file"):  # lets a profiler attach before the burst (profile_hotpath.py)
        with open(job["ready_file"], "w") as ready:  # noqa: ASYNC230 - once, before the burst
            ready.write(str(os.getpid()))
        await asyncio.sleep(job.get("pause_s", 1.0))


class _Usage:
    """CPU and memory across the burst: of the process measured (the service's, or this one's)
    and of this client."""

    def __init__(self, service_pid: int | None) -> None:
        self.service_pid = service_pid
        self.target: int | str = service_pid or "self"

    def start_memory(self) -> None:
        self.baseline = rss_kib(self.target)
        self.hwm_reset = reset_hwm(self.target)
        self.client_baseline = rss_kib()
        if self.service_pid:
            reset_hwm()

    def start_cpu(self) -> None:
        self._cpu0 = self._cpu_now()
        self._client_cpu0 = time.process_time()

    def stop(self) -> None:
        self.cpu = self._cpu_now() - self._cpu0
        self.client_cpu = time.process_time() - self._client_cpu0
        self.peak = hwm_kib(self.target)
        self.client_peak = hwm_kib()

    def _cpu_now(self) -> float:
        return proc_cpu_seconds(self.service_pid) if self.service_pid else time.process_time()


class _Burst:
    """Conversations run at once; the durations and times to first text of those that finished,
    and the errors of those that failed."""

    def __init__(self, variant: Variant, tokens: int, delay_ms: int) -> None:
        self.variant, self.tokens, self.delay_ms = variant, tokens, delay_ms
        self.durations: list[float] = []
        self.ttfts: list[float] = []
        self.errors: dict[str, int] = {}

    async def run(self, streams: int, time_limit: float) -> set[asyncio.Future[None]]:
        """Start ``streams`` conversations; those still running after ``time_limit``."""
        tasks = [asyncio.ensure_future(self._one()) for _ in range(streams)]
        _done, pending = await asyncio.wait(tasks, timeout=time_limit)
        return pending

    async def _one(self) -> None:
        try:
            t0, first, end = await checked_run(self.variant, "-", self.tokens, self.delay_ms)
        except Exception as exc:
            key = f"{type(exc).__name__}: {str(exc)[:160]}"
            self.errors[key] = self.errors.get(key, 0) + 1
            return
        self.durations.append(end - t0)
        if first is not None:
            self.ttfts.append(first - t0)


async def _service_gc_since(service_url: str | None, gc0: list[int] | None) -> list[int] | None:
    """The service's collections per generation since ``gc0`` (``None`` if not known)."""
    if not service_url or gc0 is None:
        return None
    gc1 = await asyncio.to_thread(_service_gc_collections, service_url)
    return [b - a for a, b in zip(gc0, gc1, strict=True)] if gc1 is not None else None


def _service_gc_collections(service_url: str) -> list[int] | None:
    """The service's garbage collections so far, per generation, from its ``/metrics``
    (prometheus-client's ``python_gc_collections_total``); read before and after the burst."""
    import re
    import urllib.request

    try:
        with urllib.request.urlopen(service_url + "/metrics", timeout=10) as response:
            text = response.read().decode()
    except OSError:
        return None
    pattern = r'^python_gc_collections_total\{generation="(\d)"\} (\S+)$'
    found = dict(re.findall(pattern, text, re.M))
    if len(found) != 3:
        return None
    return [int(float(found[str(g)])) for g in range(3)]


def _pct(values: list[float], p: float) -> float | None:
    if not values:
        return None
    return values[min(len(values) - 1, int(len(values) * p / 100))]
