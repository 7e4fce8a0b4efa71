"""The processes the harness starts and watches: the LLM server, our service, and /proc readers.

``LLMServer`` and ``Service`` are also used by the other scripts here (``instructions.py``,
``ttft_breakdown.py``, ``profile_hotpath.py``), through ``benchmarks.run``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import resource
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MAIN_PY = sys.executable


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def raise_nofile() -> int:
    """Raise the soft limit of open files to the hard one; the limit now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


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


_GC_COLLECTIONS = re.compile(
    rb'^python_gc_collections_total\{generation="(\d)"\} ([0-9.e+]+)', re.M
)


def gc_collections(url: str) -> list[int]:
    """The service's garbage collections so far, per generation (0, 1, 2), from ``/metrics``
    (prometheus-client's own collector); empty if it cannot be read."""
    try:
        with urllib.request.urlopen(f"{url}/metrics", timeout=30) as resp:
            body = resp.read()
    except OSError:
        return []
    counts = {int(gen): int(float(n)) for gen, n in _GC_COLLECTIONS.findall(body)}
    return [counts[gen] for gen in sorted(counts)]


def listen_overflows() -> int:
    """The kernel's TcpExt ListenOverflows counter (SYNs dropped on a full accept queue)."""
    with contextlib.suppress(OSError, ValueError):
        lines = [line.split() for line in Path("/proc/net/netstat").read_text().splitlines()]
        for names, values in zip(lines[::2], lines[1::2], strict=False):
            if names[0] == "TcpExt:" and "ListenOverflows" in names:
                return int(values[names.index("ListenOverflows")])
    return -1


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
