"""A real PostgreSQL server on 127.0.0.1 for tests (Debian package ``postgresql``).

The tests create the cluster (``initdb`` into a fresh temporary folder), start ``postgres`` on
a free port and remove both afterwards. Debian keeps the programs in
``/usr/lib/postgresql/<version>/bin``, off the ``PATH``; they are looked for on the ``PATH``
first, then there. PostgreSQL refuses to run as root, so when the tests run as root (as CI
does) both programs run as the ``postgres`` system user the package creates. Skipped locally
without the programs; in CI (``CI=true``) that fails the test, since ``.ci/run`` installs them.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest

from .server_helpers import free_port

SYSTEM_USER = "postgres"


def find_programs() -> Path | None:
    """The folder holding ``initdb`` and ``postgres``, or ``None``."""
    found = shutil.which("postgres")
    if found is not None:
        folder = Path(found).resolve().parent
        if (folder / "initdb").exists():
            return folder
    versions = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/postgres"),
        key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0,
    )
    return versions[-1].parent if versions else None


def require_postgres() -> Path:
    """The programs' folder; skip without them, except in CI, where they must be installed."""
    folder = find_programs()
    if folder is None:
        message = "PostgreSQL is not installed (Debian package 'postgresql')"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return folder


class PostgresServer:
    """One throw-away cluster and its ``postgres`` process; ``dsn`` connects as superuser."""

    def __init__(self, programs: Path) -> None:
        self.programs = programs
        self.port = free_port()
        self.dsn = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        self._as_user: dict[str, Any] = {}
        owner = None
        if os.geteuid() == 0:
            try:
                account = pwd.getpwnam(SYSTEM_USER)
            except KeyError:
                raise RuntimeError(
                    f"PostgreSQL will not run as root, and there is no {SYSTEM_USER!r} user "
                    "to run it as (Debian's postgresql package creates one)"
                ) from None
            owner = (account.pw_uid, account.pw_gid)
            self._as_user = {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": []}
        self.workdir = Path(tempfile.mkdtemp(prefix="agent-executor-pg-"))
        if owner is not None:
            os.chown(self.workdir, *owner)
        self.data = self.workdir / "data"
        self.log = self.workdir / "postgres.log"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Create the cluster and start the server; wait until it accepts connections."""
        self._initdb()
        self._run()

    def restart(self) -> None:
        """Stop the server and start it again on the same cluster and port."""
        self._stop_process()
        self._run()

    def _initdb(self) -> None:
        subprocess.run(
            [
                str(self.programs / "initdb"),
                "-D",
                str(self.data),
                "-U",
                "postgres",
                "--auth=trust",
                "--no-sync",
                "--no-locale",
                "--encoding=UTF8",
            ],
            check=True,
            capture_output=True,
            cwd=self.workdir,
            **self._as_user,
        )

    def _run(self) -> None:
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [
                    str(self.programs / "postgres"),
                    "-D",
                    str(self.data),
                    "-h",
                    "127.0.0.1",
                    "-p",
                    str(self.port),
                    "-k",
                    str(self.workdir),
                    "-c",
                    "fsync=off",
                    "-c",
                    "synchronous_commit=off",
                    "-c",
                    "full_page_writes=off",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.workdir,
                **self._as_user,
            )
        self._wait_ready()

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + 30
        while True:
            try:
                psycopg.connect(self.dsn, connect_timeout=2).close()
                return
            except psycopg.OperationalError:
                assert self.process is not None
                if time.monotonic() > deadline or self.process.poll() is not None:
                    raise RuntimeError(
                        f"postgres did not start:\n{self.log.read_text(errors='replace')}"
                    ) from None
                time.sleep(0.05)

    def stop(self) -> None:
        """Stop the server and remove the cluster."""
        self._stop_process()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def _stop_process(self) -> None:
        """Fast shutdown: open connections are closed."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)  # PostgreSQL's "fast" shutdown
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None


@contextmanager
def postgres_server() -> Iterator[PostgresServer]:
    """A started server on a fresh cluster, stopped and removed afterwards."""
    server = PostgresServer(require_postgres())
    try:
        server.start()
        yield server
    finally:
        server.stop()
