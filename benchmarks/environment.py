"""What a run records about where it ran (machine, git state) and the peers' venv it needs."""

from __future__ import annotations

import contextlib
import hashlib
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

from processes import HERE, ROOT, log

PEERS_VENV = HERE / ".venv-peers"
PEERS_PY = PEERS_VENV / "bin" / "python"
PEERS_REQUIREMENTS = HERE / "requirements-peers.txt"


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
