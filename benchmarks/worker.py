"""One measurement of one benchmark variant, in a process of its own.

    python benchmarks/worker.py --variant ours --base-url http://127.0.0.1:8500/v1 --job '{...}'

Run by ``benchmarks/run.py`` (the project's venv runs our variants and the floor, the peers'
venv runs the peers); it prints one JSON object on its last line of output. Only the standard
library is imported at module level: each variant imports its own client in ``setup``.

Modes (``job["mode"]``):

- ``cpu``: warm up, then ``latency_runs`` small runs (client timestamps for time to first token,
  the LLM server timestamps the same runs), then ``pairs`` runs of ``n1`` and ``n2`` tokens in
  alternating order, each timed with ``time.process_time()`` (for the service: the service
  process's CPU from ``/proc/<pid>/task/*/schedstat``, in ns).
- ``concurrency``: ``streams`` runs at once, ``tokens`` deltas ``delay_ms`` apart; wall time,
  failures, CPU, peak RSS (``VmHWM`` after resetting it through ``/proc/<pid>/clear_refs``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import time
import traceback
import warnings
from importlib import metadata
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from modes import checked_run, concurrency_mode, cpu_mode  # noqa: E402
from peers import LangGraph, OpenAIAgents, OpenAISDK, PydanticAI  # noqa: E402
from processes import raise_nofile  # noqa: E402
from procfs import proc_cpu_seconds  # noqa: E402
from variants import Floor, Ours, RunFailure, ServiceClient, Variant  # noqa: E402

warnings.filterwarnings("ignore")

# What the other scripts here use as ``worker.X`` (it was all one module).
__all__ = [
    "VARIANTS",
    "Floor",
    "Ours",
    "RunFailure",
    "ServiceClient",
    "Variant",
    "checked_run",
    "main",
    "proc_cpu_seconds",
]


def versions(*dists: str) -> dict[str, str]:
    out = {}
    for dist in dists:
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "not installed"
    return out


VARIANTS: dict[str, Any] = {
    "floor": lambda: Floor(use_orjson=False),
    "floor_orjson": lambda: Floor(use_orjson=True),
    "ours": lambda: Ours(litellm=False),
    "ours_litellm": lambda: Ours(litellm=True),
    "service": ServiceClient,
    "openai_sdk": OpenAISDK,
    "pydantic_ai": PydanticAI,
    "openai_agents": OpenAIAgents,
    "langgraph": LangGraph,
}


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    job = json.loads(args.job)
    variant: Variant = VARIANTS[args.variant]()
    concurrency = job.get("streams", job.get("pool", 100))
    t_setup = time.perf_counter()
    await variant.setup(args.base_url, concurrency, job)
    out: dict[str, Any] = {
        "variant": args.variant,
        "setup_s": time.perf_counter() - t_setup,
        "pool": variant.pool,
        "versions": versions(*variant.dists),
        "python": sys.version.split()[0],
    }
    try:
        if job["mode"] == "cpu":
            out.update(await cpu_mode(variant, job))
        else:
            out.update(await concurrency_mode(variant, job))
    finally:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(variant.close(), 10)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--variant", required=True, choices=sorted(VARIANTS))
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--job", required=True)
    args = parser.parse_args()
    raise_nofile()
    try:
        result = asyncio.run(main_async(args))
    except Exception as exc:
        result = {
            "variant": args.variant,
            "failed": True,
            "error": f"{type(exc).__name__}: {exc}",
            "traceback": traceback.format_exc()[-3000:],
        }
    sys.stdout.write("\n" + json.dumps(result) + "\n")
    sys.stdout.flush()
    # Some SDKs leave threads or sockets behind; the measurement is done, do not wait for them.
    os._exit(0)


if __name__ == "__main__":
    main()
