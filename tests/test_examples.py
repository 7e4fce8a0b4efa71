"""The runnable examples run offline, as a newcomer would start them, and print what they claim."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def run_example(name: str) -> subprocess.CompletedProcess[str]:
    # Without LLM_MODEL the examples use the offline DemoModel, whatever the caller's shell has.
    env = {key: value for key, value in os.environ.items() if key != "LLM_MODEL"}
    env["PYTHONIOENCODING"] = "utf-8"  # the answers contain "°C", whatever the locale
    return subprocess.run(
        [sys.executable, str(EXAMPLES / name)],
        capture_output=True,
        encoding="utf-8",
        env=env,
        timeout=60,
        check=False,
    )


# Longer than the subprocess timeout, so a hang fails with TimeoutExpired, not a killed worker.
@pytest.mark.timeout(90)
def test_embedding_example_runs_offline() -> None:
    done = run_example("embedding.py")

    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "execute(): " in out and "(Europe/Paris)" in out
    streamed = out.split("execute_stream(): ", 1)[1]
    assert "[tool start] get_weather {'city': 'Paris'}" in streamed
    assert "[tool end] get_weather: success" in streamed
    assert "In Paris it is" in streamed and "°C" in streamed
    assert "[error]" not in out
    assert "session 'trip-1' holds 8 messages" in out
