"""The phases of a run (imports, start-up, CPU per token, concurrency) and the variants measured.

Each phase starts the processes it needs and returns the JSON-ready figures ``report.py`` reads.
"""

from __future__ import annotations

import json
import os
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from environment import PEERS_PY
from processes import (
    HERE,
    MAIN_PY,
    ROOT,
    LLMServer,
    Service,
    free_port,
    gc_collections,
    listen_overflows,
    log,
    rss_mib,
    stop_process,
    wait_http,
)
from scenario import ideal_seconds

SERVE = str(Path(sys.executable).parent / "agent-executor")

# name -> (label for the tables, which venv runs it)
VARIANTS: dict[str, tuple[str, str]] = {
    "floor": ("(a) floor: raw aiohttp + json.loads", "main"),
    "floor_orjson": ("(a') raw aiohttp + orjson", "main"),
    "ours": ("(b) ours: execute_stream(), OpenAICompatModel", "main"),
    "ours_litellm": ("(c) ours on LiteLLMModel", "main"),
    "service": ("(d) our service, end to end (SSE)", "main"),
    "openai_sdk": ("(e) openai SDK loop", "peers"),
    "pydantic_ai": ("(e) pydantic-ai run_stream_events", "peers"),
    "openai_agents": ("(e) OpenAI Agents SDK run_streamed", "peers"),
    "langgraph": ("(e) LangGraph create_react_agent", "peers"),
}
# Slow clients are not run at the highest concurrency unless asked (--all-at-max).
SLOW = {"ours_litellm", "openai_sdk", "pydantic_ai", "openai_agents", "langgraph"}

IMPORTS: list[tuple[str, str, str]] = [
    ("aiohttp (floor)", "main", "import aiohttp"),
    ("agent_executor (ours)", "main", "import agent_executor"),
    ("server.cli (our service)", "main", "import server.cli"),
    ("litellm", "main", "import litellm"),
    ("openai", "peers", "import openai"),
    ("pydantic_ai (+ openai model)", "peers", "import pydantic_ai, pydantic_ai.models.openai"),
    ("agents (OpenAI Agents SDK)", "peers", "import agents"),
    (
        "langgraph.prebuilt + langchain_openai",
        "peers",
        "import langgraph.prebuilt, langchain_openai",
    ),
]

IMPORT_SNIPPET = (
    "import time, resource; t = time.perf_counter(); {stmt}; dt = time.perf_counter() - t; "
    "import sys; print(dt, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, "
    "'litellm' in sys.modules)"
)


def summary(values: list[float]) -> dict[str, Any] | None:
    values = [v for v in values if v is not None]
    if not values:
        return None
    ordered = sorted(values)
    if len(ordered) >= 4:
        q1, _, q3 = statistics.quantiles(ordered, n=4, method="inclusive")
    else:
        q1, q3 = ordered[0], ordered[-1]
    return {
        "median": statistics.median(ordered),
        "q1": q1,
        "q3": q3,
        "min": ordered[0],
        "max": ordered[-1],
        "n": len(ordered),
    }


def run_worker(
    variant: str, base_url: str, job: dict[str, Any], timeout: float, peers_ok: bool
) -> dict[str, Any]:
    python = str(PEERS_PY) if VARIANTS[variant][1] == "peers" else MAIN_PY
    if VARIANTS[variant][1] == "peers" and not peers_ok:
        return {"variant": variant, "failed": True, "error": "peers venv not available"}
    cmd = [
        python,
        str(HERE / "worker.py"),
        "--variant",
        variant,
        "--base-url",
        base_url,
        "--job",
        json.dumps(job),
    ]
    env = dict(os.environ)
    env.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        done = subprocess.run(cmd, capture_output=True, timeout=timeout, env=env, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"variant": variant, "failed": True, "error": f"worker timed out after {timeout} s"}
    lines = [line for line in done.stdout.decode(errors="replace").splitlines() if line.strip()]
    try:
        result: dict[str, Any] = json.loads(lines[-1])
    except (IndexError, ValueError):
        return {
            "variant": variant,
            "failed": True,
            "error": f"worker exited {done.returncode} without a result",
            "stderr": done.stderr.decode(errors="replace")[-2000:],
        }
    return result


def phase_imports(repeats: int, peers_ok: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    env = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True")
    for label, venv, stmt in IMPORTS:
        python = str(PEERS_PY) if venv == "peers" else MAIN_PY
        if venv == "peers" and not peers_ok:
            out[label] = {"failed": "peers venv not available"}
            continue
        times, rss, litellm = [], [], None
        for _ in range(repeats):
            done = subprocess.run(
                [python, "-c", IMPORT_SNIPPET.format(stmt=stmt)],
                capture_output=True,
                timeout=120,
                env=env,
                cwd=ROOT,
            )
            if done.returncode != 0:
                out[label] = {"failed": done.stderr.decode(errors="replace")[-500:]}
                break
            seconds, maxrss, has_litellm = done.stdout.decode().split()
            times.append(float(seconds))
            rss.append(int(maxrss) / 1024)
            litellm = has_litellm == "True"
        else:
            out[label] = {
                "seconds": statistics.median(times),
                "samples": times,
                "max_rss_mib": statistics.median(rss),
                "imports_litellm": litellm,
            }
    return out


def phase_startup(repeats: int, llm: LLMServer, log_dir: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    check = subprocess.run(
        [MAIN_PY, "-c", "import sys, server.cli; print('litellm' in sys.modules)"],
        capture_output=True,
        timeout=60,
        cwd=ROOT,
    )
    out["litellm_imported_by_server_cli"] = check.stdout.decode().strip() == "True"
    setups = {
        "demo": [SERVE, "serve"],
        "fast path (--model openai/bench --api-base ...)": [
            SERVE,
            "serve",
            "--model",
            "openai/bench",
            "--api-base",
            llm.base_url,
            "--tools",
            str(HERE / "bench_tools.py"),
        ],
    }
    for name, base_cmd in setups.items():
        samples, rss = [], []
        error = None
        for _ in range(repeats):
            port = free_port()
            with (log_dir / f"startup-{port}.log").open("wb") as f:
                proc = subprocess.Popen(
                    [*base_cmd, "--port", str(port)], stdout=f, stderr=subprocess.STDOUT, cwd=ROOT
                )
                try:
                    samples.append(wait_http(f"http://127.0.0.1:{port}/api/health", 30, proc))
                    rss.append(rss_mib(proc.pid))
                except (TimeoutError, RuntimeError) as exc:
                    error = str(exc)
                finally:
                    stop_process(proc)
        out[name] = {
            "command": shlex.join([Path(base_cmd[0]).name, *base_cmd[1:], "--port", "P"]),
            "ready_s": summary(samples),
            "samples": samples,
            "rss_mib_at_ready": statistics.median([r for r in rss if r]) if rss else None,
            "error": error,
        }
    return out


def phase_cpu(
    variants: list[str],
    cfg: dict[str, Any],
    llm: LLMServer,
    log_dir: Path,
    peers_ok: bool,
    deadline: float,
) -> dict[str, Any]:
    results: dict[str, dict[str, Any]] = {
        v: {"cpu_us_per_token": [], "paced_cpu_us_per_token": [], "latency": [], "errors": []}
        for v in variants
    }
    service = Service(log_dir, llm, 100, *cfg["service_args"]) if "service" in variants else None
    try:
        for rep in range(cfg["reps"]):
            order = variants[rep % len(variants) :] + variants[: rep % len(variants)]
            if rep % 2:
                order.reverse()
            for variant in order:
                if time.time() > deadline:
                    results[variant]["errors"].append("skipped: time budget used up")
                    continue
                prefix = f"{variant}-r{rep}"
                job = _cpu_job(prefix, cfg)
                if variant == "service":
                    assert service is not None
                    job.update(service_url=service.url, service_pid=service.proc.pid)
                started = time.perf_counter()
                res = run_worker(variant, llm.base_url, job, cfg["worker_timeout"], peers_ok)
                log(f"cpu rep {rep} {variant}: {time.perf_counter() - started:.1f} s")
                _record_cpu(results[variant], variant, res, partial(llm.stats, prefix + "l."))
    finally:
        if service is not None:
            service.stop()
    for slot in results.values():
        slot["summary"] = _cpu_summary(slot)
    return results


def _cpu_job(prefix: str, cfg: dict[str, Any]) -> dict[str, Any]:
    """The worker's job for one round of the CPU phase."""
    return {
        "mode": "cpu",
        "prefix": prefix,
        "warmup": cfg["warmup"],
        "latency_runs": cfg["latency_runs"],
        "latency_tokens": cfg["latency_tokens"],
        "n1": cfg["n1"],
        "n2": cfg["n2"],
        "pairs": cfg["pairs"],
        "paced_pairs": cfg["paced_pairs"],
        "paced_n1": cfg["paced_n1"],
        "paced_n2": cfg["paced_n2"],
        "paced_delay_ms": cfg["paced_delay_ms"],
    }


def _record_cpu(
    slot: dict[str, Any],
    variant: str,
    res: dict[str, Any],
    stats: Callable[[], dict[str, dict[str, float]]],
) -> None:
    """Add one worker's CPU-phase result to its variant's samples."""
    if res.get("failed"):
        slot["errors"].append(res.get("error"))
        slot.setdefault("failure_detail", res.get("traceback") or res.get("stderr"))
        return
    slot["versions"] = res.get("versions")
    slot["pool"] = res.get("pool")
    slot["cpu_us_per_token"] += res["cpu_us_per_token"]
    slot["paced_cpu_us_per_token"] += res.get("paced_cpu_us_per_token", [])
    if res.get("cyclic_garbage_per_run") is not None:
        slot.setdefault("cyclic_garbage_per_run", []).append(res["cyclic_garbage_per_run"])
    if variant == "service":
        slot.setdefault("client_cpu_us_per_token", []).extend(res["client_cpu_us_per_token"])
        slot.setdefault("paced_client_cpu_us_per_token", []).extend(
            res.get("paced_client_cpu_us_per_token", [])
        )
    server_stats = stats()
    for run in res["latency"]:
        server = server_stats.get(run["run"], {})
        slot["latency"].append(_latency(run, server))


def _cpu_summary(slot: dict[str, Any]) -> dict[str, Any]:
    """Medians and quartiles of a variant's CPU-phase samples."""
    return {
        "cpu_us_per_token": summary(slot["cpu_us_per_token"]),
        "paced_cpu_us_per_token": summary(slot["paced_cpu_us_per_token"]),
        "client_cpu_us_per_token": summary(slot.get("client_cpu_us_per_token", [])),
        "paced_client_cpu_us_per_token": summary(slot.get("paced_client_cpu_us_per_token", [])),
        "ttft_ms": summary([x["ttft_ms"] for x in slot["latency"]]),
        "turnaround_ms": summary([x["turnaround_ms"] for x in slot["latency"]]),
        "pre_request_ms": summary([x["pre_request_ms"] for x in slot["latency"]]),
        "delivery_ms": summary([x["delivery_ms"] for x in slot["latency"]]),
        "connection_reused": sum(x["connection_reused"] for x in slot["latency"]),
        "cyclic_garbage_per_run": summary(slot.get("cyclic_garbage_per_run", [])),
        "latency_runs": len(slot["latency"]),
    }


def _latency(run: dict[str, Any], server: dict[str, float]) -> dict[str, Any]:
    def ms(a: float | None, b: float | None) -> float | None:
        return None if a is None or b is None else (b - a) * 1000

    return {
        "ttft_ms": ms(run["t0"], run["first"]),
        "pre_request_ms": ms(run["t0"], server.get("req1")),
        "turnaround_ms": ms(server.get("tool_done"), server.get("req2")),
        "delivery_ms": ms(server.get("first_text"), run["first"]),
        "connection_reused": bool(
            server.get("port1") and server.get("port1") == server.get("port2")
        ),
    }


def phase_concurrency(
    variants: list[str],
    levels: list[int],
    cfg: dict[str, Any],
    llm: LLMServer,
    log_dir: Path,
    peers_ok: bool,
    deadline: float,
    all_at_max: bool,
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    ideal = ideal_seconds(cfg["conc_tokens"], cfg["conc_delay_ms"])
    top = max(levels)
    for level in levels:
        out[str(level)] = {}
        for variant in variants:
            if level == top and top > 1000 and variant in SLOW and not all_at_max:
                out[str(level)][variant] = {"skipped": "slow client: run with --all-at-max"}
                continue
            if time.time() > deadline:
                out[str(level)][variant] = {"skipped": "time budget used up"}
                continue
            limit = cfg["conc_time_limit"].get(level, cfg["conc_time_limit"]["default"])
            job = {
                "mode": "concurrency",
                "streams": level,
                "tokens": cfg["conc_tokens"],
                "delay_ms": cfg["conc_delay_ms"],
                "time_limit": limit,
            }
            service = None
            started = time.perf_counter()
            try:
                if variant == "service":
                    service = Service(log_dir, llm, level, *cfg["service_args"])
                    job.update(service_url=service.url, service_pid=service.proc.pid)
                llm_cpu0 = llm.cpu()
                overflows = listen_overflows()
                collections = gc_collections(service.url) if service is not None else []
                res = run_worker(variant, llm.base_url, job, limit + 120, peers_ok)
                res["llm_server_cpu_s"] = llm.cpu() - llm_cpu0
                res["listen_overflows"] = listen_overflows() - overflows
                if service is not None:
                    res["service_ready_s"] = service.ready_s
                    after = gc_collections(service.url)
                    if collections and after:
                        pairs = zip(collections, after, strict=True)
                        res["gc_collections"] = [b - a for a, b in pairs]
            except (TimeoutError, RuntimeError) as exc:
                res = {"failed": True, "error": f"service did not start: {exc}"}
            finally:
                if service is not None:
                    service.stop()
            res["ideal_s"] = ideal
            out[str(level)][variant] = res
            log(
                f"concurrency {level} {variant}: wall {res.get('wall_s', float('nan')):.2f} s, "
                f"done {res.get('completed')}, failed {res.get('failed')}, "
                f"unfinished {res.get('unfinished')} ({time.perf_counter() - started:.1f} s)"
            )
            time.sleep(1)  # let sockets in TIME_WAIT and the servers settle
    return out
