"""A real ``redis-server`` on 127.0.0.1 for tests (Debian package ``redis-server``).

Skipped locally without it; in CI (``CI=true``) a missing server fails the test, since
``.ci/run`` installs it. The server keeps nothing on disk; :meth:`RedisServer.restart` stops it
and starts it again on the same port, as an operator restarting Redis would.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import redis

from .server_helpers import free_port


class RedisServer:
    """One ``redis-server`` process; ``url`` stays the same across restarts."""

    def __init__(self, program: str, workdir: Path) -> None:
        self.program = program
        self.workdir = workdir
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Start the server and wait until it answers PING."""
        self.process = subprocess.Popen(
            [
                self.program,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.workdir),
                "--protected-mode",
                "no",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        client = redis.Redis.from_url(self.url, socket_timeout=0.5)
        deadline = time.monotonic() + 10
        try:
            while True:
                try:
                    if client.ping():
                        return
                except redis.RedisError:
                    if time.monotonic() > deadline or self.process.poll() is not None:
                        raise RuntimeError("redis-server did not start") from None
                    time.sleep(0.05)
        finally:
            client.close()

    def stop(self) -> None:
        """Stop the server (its data is gone: it keeps nothing on disk)."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def flush(self) -> None:
        client = redis.Redis.from_url(self.url)
        try:
            client.flushall()
        finally:
            client.close()


def require_redis_server() -> str:
    """The ``redis-server`` path; skip without it, except in CI, where it must be installed."""
    path = shutil.which("redis-server")
    if path is None:
        message = "redis-server is not installed (Debian package 'redis-server')"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return path


@contextmanager
def redis_server(workdir: Path) -> Iterator[RedisServer]:
    """A started server, stopped afterwards."""
    server = RedisServer(require_redis_server(), workdir)
    server.start()
    try:
        yield server
    finally:
        server.stop()
