"""The benchmark harness: ``python -m benchmarks.run`` (or ``python benchmarks/run.py``).

Starts the lean OpenAI-compatible LLM server (``llm_server.py``) as its own process and
measures every variant in processes of their own (``worker.py``), interleaved across
repetitions, against the same server and scenario (one user turn with one tool call). Peers run
from a separate venv, ``benchmarks/.venv-peers``, created from ``requirements-peers.txt`` when
missing. Everything talks to 127.0.0.1 only. Results: ``benchmarks/results/<timestamp>.json``
and ``latest.json``, and a markdown table printed at the end. See ``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import hashlib
import json
import os
import platform
import shlex
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from scenario import ideal_seconds  # noqa: E402

PEERS_VENV = HERE / ".venv-peers"
PEERS_PY = PEERS_VENV / "bin" / "python"
PEERS_REQUIREMENTS = HERE / "requirements-peers.txt"
MAIN_PY = sys.executable
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


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def http_get(url: str, timeout: float = 5.0) -> tuple[int, bytes]:
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        return resp.status, resp.read()


def wait_http(url: str, deadline_s: float, proc: subprocess.Popen[bytes] | None = None) -> float:
    """Poll ``url`` until it answers 200; seconds waited (raises on timeout or early exit)."""
    start = time.perf_counter()
    while time.perf_counter() - start < deadline_s:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode} before answering {url}")
        with contextlib.suppress(OSError):
            status, _ = http_get(url, timeout=1)
            if status == 200:
                return time.perf_counter() - start
        time.sleep(0.005)
    raise TimeoutError(f"{url} did not answer within {deadline_s} s")


def stop_process(proc: subprocess.Popen[bytes], grace: float = 10) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


def proc_cpu_seconds(pid: int) -> float:
    total = 0
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            with (
                contextlib.suppress(OSError, ValueError, IndexError),
                open(f"/proc/{pid}/task/{task}/schedstat") as f,
            ):
                total += int(f.read().split()[0])
    return total / 1e9


def child_pids(pid: int) -> list[int]:
    with contextlib.suppress(OSError), open(f"/proc/{pid}/task/{pid}/children") as f:
        return [int(p) for p in f.read().split()]
    return []


def rss_mib(pid: int) -> float | None:
    with contextlib.suppress(OSError), open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return None


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


# --------------------------------------------------------------------------- #
# Environment: machine, peers venv, processes
# --------------------------------------------------------------------------- #


def machine_info() -> dict[str, Any]:
    cpu = "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem = None
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem = round(int(line.split()[1]) / 1024 / 1024, 1)
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gib": mem,
        "kernel": platform.release(),
        "python": platform.python_version(),
        "event_loop": "asyncio (default selector loop) everywhere",
    }


def git_state() -> dict[str, Any]:
    """The commit measured, and whether the work tree differed from it (read-only git)."""

    def git(*args: str) -> str:
        try:
            return subprocess.run(
                ["git", *args], capture_output=True, text=True, timeout=20, cwd=ROOT
            ).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            return ""

    changed = [
        line[3:]
        for line in git("status", "--porcelain", "--untracked-files=no").splitlines()
        if not line[3:].startswith("benchmarks/")
    ]
    return {"commit": git("rev-parse", "--short", "HEAD"), "modified_files": changed}


def listen_overflows() -> int:
    """The kernel's TcpExt ListenOverflows counter (SYNs dropped on a full accept queue)."""
    with contextlib.suppress(OSError, ValueError):
        lines = [line.split() for line in Path("/proc/net/netstat").read_text().splitlines()]
        for names, values in zip(lines[::2], lines[1::2], strict=False):
            if names[0] == "TcpExt:" and "ListenOverflows" in names:
                return int(values[names.index("ListenOverflows")])
    return -1


def ensure_peers(log_dir: Path) -> tuple[bool, str]:
    """Create ``.venv-peers`` from requirements-peers.txt if missing or out of date."""
    digest = hashlib.sha256(PEERS_REQUIREMENTS.read_bytes()).hexdigest()
    marker = PEERS_VENV / ".requirements.sha256"
    if PEERS_PY.exists() and marker.exists() and marker.read_text().strip() == digest:
        return True, "present"
    log(f"creating {PEERS_VENV} from {PEERS_REQUIREMENTS.name} (a few minutes, once)")
    out = log_dir / "peers-install.log"
    try:
        with out.open("wb") as f:
            if not PEERS_PY.exists():
                base = getattr(sys, "_base_executable", sys.executable)
                subprocess.run(
                    [base, "-m", "venv", str(PEERS_VENV)], check=True, stdout=f, stderr=f
                )
            subprocess.run(
                [str(PEERS_PY), "-m", "pip", "install", "-q", "-r", str(PEERS_REQUIREMENTS)],
                check=True,
                stdout=f,
                stderr=f,
                timeout=1200,
            )
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as exc:
        tail = out.read_text(errors="replace")[-1500:] if out.exists() else ""
        return False, f"peers venv could not be installed: {exc}\n{tail}"
    marker.write_text(digest)
    return True, "installed"


class LLMServer:
    def __init__(self, log_dir: Path, workers: int) -> None:
        self.port = free_port()
        self.workers = workers
        self.log = (log_dir / f"llm-server-{self.port}.log").open("wb")
        self.proc = subprocess.Popen(
            [
                MAIN_PY,
                str(HERE / "llm_server.py"),
                "--port",
                str(self.port),
                "--workers",
                str(workers),
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        wait_http(f"http://127.0.0.1:{self.port}/bench/health", 20, self.proc)
        if workers > 1:
            deadline = time.time() + 10
            while len(child_pids(self.proc.pid)) < workers - 1 and time.time() < deadline:
                time.sleep(0.05)
            time.sleep(0.5)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def pids(self) -> list[int]:
        return [self.proc.pid, *child_pids(self.proc.pid)]

    def cpu(self) -> float:
        return sum(proc_cpu_seconds(p) for p in self.pids())

    def stats(self, prefix: str) -> dict[str, dict[str, float]]:
        _, body = http_get(f"http://127.0.0.1:{self.port}/bench/stats?prefix={prefix}", 10)
        return json.loads(body)

    def stop(self) -> None:
        stop_process(self.proc)
        self.log.close()


class Service:
    """``python -m server`` on the fast path to the LLM server, with the benchmark's tool.

    ``wrapper`` goes in front of the command (``benchmarks/instructions.py`` runs the service
    under valgrind, which also needs longer to start and to stop: ``ready_s``, ``stop_grace``).
    """

    def __init__(
        self,
        log_dir: Path,
        llm: LLMServer,
        max_concurrency: int,
        *extra: str,
        wrapper: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
        ready_s: float = 30,
        stop_grace: float = 20,
    ) -> None:
        self.port = free_port()
        self.log = (log_dir / f"service-{self.port}.log").open("wb")
        self.stop_grace = stop_grace
        self.cmd = [
            *wrapper,
            MAIN_PY,
            "-m",
            "server",
            "--port",
            str(self.port),
            "--model",
            "openai/bench",
            "--api-base",
            llm.base_url,
            "--tools",
            str(HERE / "bench_tools.py"),
            "--max-concurrency",
            str(max_concurrency),
            *extra,
        ]
        self.proc = subprocess.Popen(
            self.cmd, stdout=self.log, stderr=subprocess.STDOUT, cwd=ROOT, env=env
        )
        self.ready_s = wait_http(f"{self.url}/api/health", ready_s, self.proc)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        stop_process(self.proc, grace=self.stop_grace)
        self.log.close()


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


# --------------------------------------------------------------------------- #
# Phases
# --------------------------------------------------------------------------- #


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
                job = {
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
                if variant == "service":
                    assert service is not None
                    job.update(service_url=service.url, service_pid=service.proc.pid)
                started = time.perf_counter()
                res = run_worker(variant, llm.base_url, job, cfg["worker_timeout"], peers_ok)
                log(f"cpu rep {rep} {variant}: {time.perf_counter() - started:.1f} s")
                slot = results[variant]
                if res.get("failed"):
                    slot["errors"].append(res.get("error"))
                    slot.setdefault("failure_detail", res.get("traceback") or res.get("stderr"))
                    continue
                slot["versions"] = res.get("versions")
                slot["pool"] = res.get("pool")
                slot["cpu_us_per_token"] += res["cpu_us_per_token"]
                slot["paced_cpu_us_per_token"] += res.get("paced_cpu_us_per_token", [])
                if res.get("cyclic_garbage_per_run") is not None:
                    slot.setdefault("cyclic_garbage_per_run", []).append(
                        res["cyclic_garbage_per_run"]
                    )
                if variant == "service":
                    slot.setdefault("client_cpu_us_per_token", []).extend(
                        res["client_cpu_us_per_token"]
                    )
                    slot.setdefault("paced_client_cpu_us_per_token", []).extend(
                        res.get("paced_client_cpu_us_per_token", [])
                    )
                stats = llm.stats(prefix + "l.")
                for run in res["latency"]:
                    server = stats.get(run["run"], {})
                    slot["latency"].append(_latency(run, server))
    finally:
        if service is not None:
            service.stop()
    for slot in results.values():
        slot["summary"] = {
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
    return results


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
                res = run_worker(variant, llm.base_url, job, limit + 120, peers_ok)
                res["llm_server_cpu_s"] = llm.cpu() - llm_cpu0
                res["listen_overflows"] = listen_overflows() - overflows
                if service is not None:
                    res["service_ready_s"] = service.ready_s
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


# --------------------------------------------------------------------------- #
# Report
# --------------------------------------------------------------------------- #


def _fmt(value: float | None, digits: int = 1) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _ratio(value: float | None, base: float | None) -> str:
    if value is None or not base:
        return "–"
    return f"{value / base:.2f}×"


def markdown(results: dict[str, Any]) -> str:
    cpu = results.get("cpu", {})
    conc = results.get("concurrency", {})
    imports = results.get("imports", {})
    floor = cpu.get("floor", {}).get("summary", {})
    floor_cpu = (floor.get("cpu_us_per_token") or {}).get("median")
    floor_paced = (floor.get("paced_cpu_us_per_token") or {}).get("median")
    floor_ttft = (floor.get("ttft_ms") or {}).get("median")
    floor_turn = (floor.get("turnaround_ms") or {}).get("median")
    cfg = results["config"]
    headline = "1000" if "1000" in conc else (max(conc, key=int) if conc else None)
    floor_wall = (conc.get(headline, {}).get("floor") or {}).get("wall_s") if headline else None
    import_of = {
        "floor": "aiohttp (floor)",
        "floor_orjson": "aiohttp (floor)",
        "ours": "agent_executor (ours)",
        "ours_litellm": "litellm",
        "service": "server.cli (our service)",
        "openai_sdk": "openai",
        "pydantic_ai": "pydantic_ai (+ openai model)",
        "openai_agents": "agents (OpenAI Agents SDK)",
        "langgraph": "langgraph.prebuilt + langchain_openai",
    }
    lines = [
        f"CPU: {cfg['n1']} vs {cfg['n2']} tokens without delay (bulk) and {cfg['paced_n1']} vs "
        f"{cfg['paced_n2']} tokens {cfg['paced_delay_ms']} ms apart (paced: one chunk per read); "
        "median [IQR]. TTFT and tool turnaround: medians, added to the floor's. "
        f"Concurrency: {cfg['conc_tokens']} tokens {cfg['conc_delay_ms']} ms apart after the "
        f"tool turn (ideal {ideal_seconds(cfg['conc_tokens'], cfg['conc_delay_ms']):.2f} s).",
        "",
        "| variant | CPU µs/token, bulk | × floor | CPU µs/token, paced | × floor "
        "| TTFT ms (added) | tool turnaround ms (added) "
        f"| {headline} streams: wall s (× floor) | failed | KiB/stream | import s |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for variant, (label, _venv) in VARIANTS.items():
        if variant not in cpu and not any(variant in lvl for lvl in conc.values()):
            continue
        s = cpu.get(variant, {}).get("summary", {})
        c = s.get("cpu_us_per_token") or {}
        p = s.get("paced_cpu_us_per_token") or {}
        t = (s.get("ttft_ms") or {}).get("median")
        r = (s.get("turnaround_ms") or {}).get("median")
        cell_cpu = (
            f"{_fmt(c.get('median'))} [{_fmt(c.get('q1'))}–{_fmt(c.get('q3'))}]" if c else "failed"
        )
        cell_paced = (
            f"{_fmt(p.get('median'))} [{_fmt(p.get('q1'))}–{_fmt(p.get('q3'))}]" if p else "–"
        )
        added_t = (
            f"{_fmt(t, 2)} ({'+' if t - floor_ttft >= 0 else ''}{t - floor_ttft:.2f})"
            if t is not None and floor_ttft is not None
            else "–"
        )
        added_r = (
            f"{_fmt(r, 2)} ({'+' if r - floor_turn >= 0 else ''}{r - floor_turn:.2f})"
            if r is not None and floor_turn is not None
            else "–"
        )
        h = (conc.get(headline, {}) if headline else {}).get(variant) or {}
        if "wall_s" in h:
            unfinished = h.get("unfinished") or 0
            if unfinished:
                wall_cell = f"> {h['time_limit_s']:.0f} (≥ {_ratio(h['time_limit_s'], floor_wall)})"
            else:
                wall_cell = f"{h['wall_s']:.2f} ({_ratio(h['wall_s'], floor_wall)})"
            failed_cell = f"{h['failed']}" + (f" + {unfinished} unfinished" if unfinished else "")
            rss_cell = _fmt(h.get("rss_per_stream_kib"), 0)
        else:
            wall_cell = h.get("skipped") or h.get("error") or "–"
            failed_cell = rss_cell = "–"
        imp = imports.get(import_of[variant], {})
        imp_cell = _fmt(imp.get("seconds"), 2) if "seconds" in imp else "–"
        if "errors" in cpu.get(variant, {}) and cpu[variant]["errors"] and not c:
            cell_cpu = f"failed: {str(cpu[variant]['errors'][0])[:60]}"
        lines.append(
            f"| {label} | {cell_cpu} | {_ratio(c.get('median'), floor_cpu)} | {cell_paced} "
            f"| {_ratio(p.get('median'), floor_paced)} | {added_t} | {added_r} | {wall_cell} "
            f"| {failed_cell} | {rss_cell} | {imp_cell} |"
        )
    notes = []
    for variant, slot in cpu.items():
        s = slot.get("summary", {})
        garbage = (s.get("cyclic_garbage_per_run") or {}).get("median")
        runs = s.get("latency_runs")
        if runs and variant != "service":  # the service's figures would be its client's
            notes.append(
                f"{variant}: {s.get('connection_reused')}/{runs} follow-ups on the same connection"
                + (
                    f", {garbage:.0f} objects of cyclic garbage per conversation"
                    if garbage is not None
                    else ""
                )
            )
    if notes:
        lines += [
            "",
            "Connection reuse and reference cycles (client process): " + "; ".join(notes) + ".",
        ]
    if "service" in cpu:
        s = cpu["service"]["summary"]
        lines += [
            "",
            "Service CPU is the service process's (model chunk in → SSE frame out); its client "
            "(plain SSE parser) used "
            f"{_fmt((s.get('client_cpu_us_per_token') or {}).get('median'))} µs/token bulk, "
            f"{_fmt((s.get('paced_client_cpu_us_per_token') or {}).get('median'))} µs/token paced.",
        ]
    if conc:
        lines += [
            "",
            "| streams | variant | wall s | × ideal | × floor | done / failed / unfinished "
            "| client CPU s | client GC s (full GCs, longest pause ms) "
            "| service CPU s (its GCs, generation 0 / 1 / 2) "
            "| LLM server CPU s | peak RSS MiB | KiB/stream | TTFT p50 s | pool |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for level, by_variant in conc.items():
            fw = (by_variant.get("floor") or {}).get("wall_s")
            for variant, res in by_variant.items():
                if "wall_s" not in res:
                    reason = res.get("skipped") or res.get("error") or "failed"
                    lines.append(f"| {level} | {variant} | {reason} |" + " |" * 11)
                    continue
                service = variant == "service"
                client_cpu = res["client_cpu_s"] if service else res["cpu_s"]
                gcs = res.get("client_gc") or {}
                gc_cell = (
                    f"{sum(gcs['seconds']):.2f} ({gcs['collections'][2]}, "
                    f"{gcs['longest_pause_s'] * 1000:.0f})"
                    if gcs
                    else "–"
                )
                service_cell = "–"
                if service:
                    service_cell = _fmt(res["cpu_s"], 2)
                    if res.get("service_gc_collections"):
                        service_cell += " ({} / {} / {})".format(*res["service_gc_collections"])
                wall = f"{res['wall_s']:.2f}"
                if res["unfinished"]:
                    wall = f"> {res['time_limit_s']:.0f}"
                bound = "≥ " if res["unfinished"] else ""
                lines.append(
                    f"| {level} | {variant} | {wall} "
                    f"| {bound}{res['wall_s'] / res['ideal_s']:.2f}× "
                    f"| {bound}{_ratio(res['wall_s'], fw)} "
                    f"| {res['completed']} / {res['failed']} / {res['unfinished']} "
                    f"| {client_cpu:.2f} | {gc_cell} | {service_cell} "
                    f"| {_fmt(res.get('llm_server_cpu_s'), 2)} "
                    f"| {res['peak_rss_kib'] / 1024:.0f} | {res['rss_per_stream_kib']:.1f} "
                    f"| {_fmt(res.get('ttft_s_p50'), 2)} | {res.get('pool', '')} |"
                )
    start = results.get("startup", {})
    if start:
        lines += ["", "| start-up | ready s (median) | RSS MiB at ready |", "|---|---|---|"]
        for s in start.values():
            if isinstance(s, dict):
                med = (s.get("ready_s") or {}).get("median")
                lines.append(
                    f"| `{s['command']}` | {_fmt(med, 3)} | {_fmt(s.get('rss_mib_at_ready'), 0)} |"
                )
        lines.append(
            f"\n`import server.cli` imports litellm: {start.get('litellm_imported_by_server_cli')}"
        )
    if imports:
        lines += [
            "",
            "| import | s (median) | max RSS MiB | litellm imported |",
            "|---|---|---|---|",
        ]
        for label, imp in imports.items():
            if "seconds" in imp:
                lines.append(
                    f"| `{label}` | {imp['seconds']:.2f} | {imp['max_rss_mib']:.0f} "
                    f"| {imp['imports_litellm']} |"
                )
            else:
                lines.append(f"| `{label}` | failed | | |")
    return "\n".join(lines)


# --------------------------------------------------------------------------- #
# Main
# --------------------------------------------------------------------------- #


def config(args: argparse.Namespace) -> dict[str, Any]:
    quick = args.quick
    cfg: dict[str, Any] = {
        "reps": args.reps or (2 if quick else 5),
        "warmup": 10,
        "latency_runs": 10 if quick else 30,
        "latency_tokens": 20,
        "n1": 200,
        "n2": 2200,
        "pairs": 2 if quick else 3,
        "paced_pairs": 1 if quick else 2,
        "paced_n1": 50,
        "paced_n2": 300,
        "paced_delay_ms": 2,
        "worker_timeout": 240,
        "conc_tokens": 100,
        "conc_delay_ms": 20,
        "conc_time_limit": {100: 30, 1000: 32, 5000: 75, "default": 60},
        "import_repeats": 1 if quick else 3,
        "startup_repeats": 2 if quick else 5,
        "llm_workers": args.llm_workers,
        "service_args": shlex.split(args.service_args),
    }
    return cfg


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.run", description=(__doc__ or "").splitlines()[0]
    )
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (~2 minutes)")
    parser.add_argument(
        "--only",
        help="comma-separated variants (the floor is always measured too): " + ", ".join(VARIANTS),
    )
    parser.add_argument(
        "--concurrency",
        help="comma-separated stream counts (default 100,1000,5000; --quick: 100)",
    )
    parser.add_argument(
        "--phases",
        default="imports,startup,cpu,concurrency",
        help="comma-separated subset of imports,startup,cpu,concurrency",
    )
    parser.add_argument("--reps", type=int, help="processes per variant in the CPU phase")
    parser.add_argument(
        "--all-at-max",
        action="store_true",
        help="also run litellm and the peers at the highest concurrency above 1000",
    )
    parser.add_argument(
        "--llm-workers", type=int, default=1, help="processes of the LLM server (SO_REUSEPORT)"
    )
    parser.add_argument(
        "--service-args",
        default="",
        help="extra flags for the service, e.g. '--gc-threshold 0' (Python's GC defaults)",
    )
    parser.add_argument("--budget-minutes", type=float, default=14.0, help="hard time budget")
    parser.add_argument("--out", default=str(HERE / "results" / "latest.json"))
    args = parser.parse_args(argv)

    started = time.time()
    deadline = started + args.budget_minutes * 60
    cfg = config(args)
    variants = list(VARIANTS)
    if args.only:
        wanted = [v.strip() for v in args.only.split(",") if v.strip()]
        unknown = [v for v in wanted if v not in VARIANTS]
        if unknown:
            parser.error(f"unknown variants: {', '.join(unknown)}")
        variants = [v for v in VARIANTS if v in wanted or v == "floor"]
    levels = [
        int(x)
        for x in (args.concurrency or ("100" if args.quick else "100,1000,5000")).split(",")
        if x.strip()
    ]
    phases = {p.strip() for p in args.phases.split(",")}
    log_dir = Path(tempfile.mkdtemp(prefix="agent-executor-bench-"))
    log(f"logs in {log_dir}")

    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

    peers_ok, peers_status = True, "not needed"
    if any(VARIANTS[v][1] == "peers" for v in variants) or "imports" in phases:
        peers_ok, peers_status = ensure_peers(log_dir)
        if not peers_ok:
            log(peers_status)

    results: dict[str, Any] = {
        "meta": {
            "command": shlex.join(
                [Path(sys.executable).name, "-m", "benchmarks.run", *(argv or sys.argv[1:])]
            ),
            "started": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "machine": machine_info(),
            "peers_venv": peers_status,
            "nofile_limit": resource.getrlimit(resource.RLIMIT_NOFILE)[0],
            "log_dir": str(log_dir),
            "git_at_start": git_state(),
        },
        "config": {k: v for k, v in cfg.items() if k != "conc_time_limit"}
        | {"conc_time_limit": {str(k): v for k, v in cfg["conc_time_limit"].items()}},
        "variants": {v: VARIANTS[v][0] for v in variants},
        "concurrency_levels": levels,
    }
    llm = LLMServer(log_dir, workers=1)
    conc_llm: LLMServer | None = None
    try:
        if "imports" in phases:
            log("phase: import times")
            results["imports"] = phase_imports(cfg["import_repeats"], peers_ok)
        if "startup" in phases:
            log("phase: service start-up")
            results["startup"] = phase_startup(cfg["startup_repeats"], llm, log_dir)
        if "cpu" in phases:
            log(f"phase: CPU per token, TTFT, tool turnaround ({cfg['reps']} rounds)")
            results["cpu"] = phase_cpu(variants, cfg, llm, log_dir, peers_ok, deadline)
        if "concurrency" in phases and levels:
            log(f"phase: concurrency {levels}")
            conc_llm = llm if cfg["llm_workers"] == 1 else LLMServer(log_dir, cfg["llm_workers"])
            results["concurrency"] = phase_concurrency(
                variants, levels, cfg, conc_llm, log_dir, peers_ok, deadline, args.all_at_max
            )
    finally:
        llm.stop()
        if conc_llm is not None and conc_llm is not llm:
            conc_llm.stop()
    versions: dict[str, str] = {}
    for slot in results.get("cpu", {}).values():
        versions.update(slot.get("versions") or {})
    for level in results.get("concurrency", {}).values():
        for res in level.values():
            versions.update(res.get("versions") or {})
    results["meta"]["versions"] = dict(sorted(versions.items()))
    start_git, end_git = results["meta"]["git_at_start"], git_state()
    results["meta"]["git_at_end"] = end_git
    if end_git != start_git:
        changed = subprocess.run(
            ["git", "diff", "--name-only", start_git["commit"], end_git["commit"], "--",
             "agent_executor", "server"],
            capture_output=True, text=True, cwd=ROOT, timeout=20,
        ).stdout.split()  # fmt: skip
        changed += end_git["modified_files"] + start_git["modified_files"]
        results["meta"]["library_changed_during_run"] = sorted(set(changed))
        if changed:
            log(f"warning: library code changed during the run: {', '.join(sorted(set(changed)))}")
    results["meta"]["duration_s"] = round(time.time() - started, 1)
    results["markdown"] = markdown(results)

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%S")
    text = json.dumps(results, indent=1, default=str)
    (out.parent / f"{stamp}.json").write_text(text)
    out.write_text(text)
    print(results["markdown"])
    print(
        f"\nmachine: {results['meta']['machine']}\nversions: {results['meta']['versions']}\n"
        f"took {results['meta']['duration_s']} s; results in {out} and {out.parent / stamp}.json"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
