"""Helpers for service tests: run an app on 127.0.0.1, or the real CLI in a subprocess."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import httpx
from aiohttp.test_utils import TestServer

from agent_executor import AgentExecutor
from server import Settings, create_app
from server.runs import RunRelay

ROOT = Path(__file__).resolve().parent.parent


@asynccontextmanager
async def serve(
    executor_or_agents: AgentExecutor | Mapping[str, AgentExecutor],
    settings: Settings | None = None,
    relay: RunRelay | None = None,
) -> AsyncIterator[httpx.AsyncClient]:
    """The app on a real 127.0.0.1 socket, and an httpx client pointed at it."""
    app = create_app(executor_or_agents, settings, relay=relay)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    try:
        async with httpx.AsyncClient(base_url=str(server.make_url("")), timeout=10) as client:
            yield client
    finally:
        await server.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def service_process(
    *args: str, env: Mapping[str, str] | None = None
) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """``python -m server`` on a free port; yields the process and its base URL.

    Its output is a pipe, which a test may read as it goes. Past the pipe's 64 KiB (a few
    hundred requests' log lines) unread, the service's log writer waits, and past 10,000
    more lines they are dropped (its requests go on): a test that reads only at the end of
    thousands of requests starts its service with :func:`logged_process`.
    """
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "server", "--port", str(port), *args],
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(process, base)
        yield process, base
    finally:
        stop(process)


def logged_process(argv: list[str], **popen: Any) -> subprocess.Popen[str]:
    """``argv`` started in ``ROOT`` with its output (stdout and stderr) in a file, which
    ``process.stdout`` reads from the start (what has been written so far; it does not wait
    for more).

    Not a pipe: a pipe holds 64 KiB, and one that the test reads only once the process has
    ended fills up while a busy service logs (a line per request, two per run). The service
    goes on serving (its lines wait in a writer thread), but past 10,000 waiting lines it
    drops them, and the test that reads them at the end would miss tracebacks.
    """
    fd, path = tempfile.mkstemp(prefix="service-", suffix=".log")
    try:
        process = subprocess.Popen(
            argv, cwd=ROOT, stdout=fd, stderr=subprocess.STDOUT, text=True, **popen
        )
        process.stdout = open(path, encoding="utf-8", errors="replace")  # noqa: SIM115 (stop)
    finally:
        os.close(fd)
        os.unlink(path)  # read through the open file; nothing left behind
    return process


def stop(process: subprocess.Popen[str]) -> None:
    """SIGTERM (SIGKILL after 15 s) to a service process still running; its output closed."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    if process.stdout is not None:
        process.stdout.close()


def _wait_healthy(process: subprocess.Popen[str], base: str) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if process.poll() is not None:
            output = process.stdout.read() if process.stdout else ""
            raise RuntimeError(f"the service exited early ({process.returncode}):\n{output}")
        try:
            if httpx.get(f"{base}/api/health", timeout=0.5).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    raise RuntimeError("the service did not become healthy within 20 s")


def resume_body(pending: Mapping[str, Any], *, approved: bool = True) -> dict[str, Any]:
    """The chat request that resumes session ``s`` in json mode, deciding its one pending call."""
    decision = {
        "call_id": pending["call_id"],
        "approved": approved,
        "approval_token": pending["approval_token"],
    }
    return {"session_id": "s", "events": "json", "approvals": [decision]}
