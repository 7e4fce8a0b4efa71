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
import datetime as dt
import json
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from environment import ensure_peers, git_state, machine_info  # noqa: E402
from phases import (  # noqa: E402
    VARIANTS,
    phase_concurrency,
    phase_cpu,
    phase_imports,
    phase_startup,
)
from processes import (  # noqa: E402
    MAIN_PY,
    ROOT,
    LLMServer,
    Service,
    free_port,
    log,
    raise_nofile,
    stop_process,
    wait_http,
)
from report import markdown  # noqa: E402

# What the other scripts here import from ``benchmarks.run`` (it was all one module).
__all__ = [
    "MAIN_PY",
    "ROOT",
    "LLMServer",
    "Service",
    "config",
    "free_port",
    "main",
    "stop_process",
    "wait_http",
]


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


def _parser() -> argparse.ArgumentParser:
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
    return parser


def _variants(args: argparse.Namespace, parser: argparse.ArgumentParser) -> list[str]:
    """The variants to measure (``--only``; the floor always)."""
    variants = list(VARIANTS)
    if args.only:
        wanted = [v.strip() for v in args.only.split(",") if v.strip()]
        unknown = [v for v in wanted if v not in VARIANTS]
        if unknown:
            parser.error(f"unknown variants: {', '.join(unknown)}")
        variants = [v for v in VARIANTS if v in wanted or v == "floor"]
    return variants


def _start_results(
    argv: list[str] | None,
    cfg: dict[str, Any],
    variants: list[str],
    levels: list[int],
    log_dir: Path,
    peers_status: str,
    nofile: int,
) -> dict[str, Any]:
    """The results' header: how the run was started, on what, with which configuration."""
    return {
        "meta": {
            "command": shlex.join(
                [Path(sys.executable).name, "-m", "benchmarks.run", *(argv or sys.argv[1:])]
            ),
            "started": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "machine": machine_info(),
            "peers_venv": peers_status,
            "nofile_limit": nofile,
            "log_dir": str(log_dir),
            "git_at_start": git_state(),
        },
        "config": {k: v for k, v in cfg.items() if k != "conc_time_limit"}
        | {"conc_time_limit": {str(k): v for k, v in cfg["conc_time_limit"].items()}},
        "variants": {v: VARIANTS[v][0] for v in variants},
        "concurrency_levels": levels,
    }


def _run_phases(
    results: dict[str, Any],
    args: argparse.Namespace,
    cfg: dict[str, Any],
    variants: list[str],
    levels: list[int],
    phases: set[str],
    log_dir: Path,
    peers_ok: bool,
    deadline: float,
) -> None:
    """Run the phases asked for, against one LLM server (or a second one with more workers)."""
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


def _finish_meta(results: dict[str, Any]) -> None:
    """The versions measured, and whether the library's code changed while the run went on."""
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


def _write(results: dict[str, Any], out: Path) -> None:
    """Write the JSON (``out`` and a timestamped copy next to it) and print the report."""
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


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)

    started = time.time()
    deadline = started + args.budget_minutes * 60
    cfg = config(args)
    variants = _variants(args, parser)
    levels = [
        int(x)
        for x in (args.concurrency or ("100" if args.quick else "100,1000,5000")).split(",")
        if x.strip()
    ]
    phases = {p.strip() for p in args.phases.split(",")}
    log_dir = Path(tempfile.mkdtemp(prefix="agent-executor-bench-"))
    log(f"logs in {log_dir}")

    nofile = raise_nofile()
    peers_ok, peers_status = True, "not needed"
    if any(VARIANTS[v][1] == "peers" for v in variants) or "imports" in phases:
        peers_ok, peers_status = ensure_peers(log_dir)
        if not peers_ok:
            log(peers_status)

    results = _start_results(argv, cfg, variants, levels, log_dir, peers_status, nofile)
    _run_phases(results, args, cfg, variants, levels, phases, log_dir, peers_ok, deadline)
    _finish_meta(results)
    results["meta"]["duration_s"] = round(time.time() - started, 1)
    results["markdown"] = markdown(results)
    _write(results, Path(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
