"""What the prompt-injection guard costs per message, measured through the running service.

``InjectionGuard`` (rules plus the learned layer) scores every user message before the model
sees it. This script measures that cost where it is paid: in the service process, for real
texts of three sizes (about 100 characters, 1,000 characters and 20,000 characters; the texts
are benign rows of ``tests/data/injection_public.jsonl.gz``, cut or concatenated), plus attack
rows of 1,000 characters.

How
---
Two services run side by side on 127.0.0.1, ``python -m server --model demo`` with the guard
(the default) and with ``--no-injection-guard``; otherwise identical: one agent without tools
(an ``--agents`` file with ``"tools": []``, so that no message triggers a tool call and no tool
result is screened), ``--max-message-chars`` above 20,000, ``LOG_LEVEL=WARNING``, no rate limit
(the default), ``--max-concurrency`` above the number of clients. After a warm-up with texts
disjoint from the measured ones (the learned layer caches per-word weights: steady state is
what matters), each round sends, for each set, the same batch of texts to both services at
once (``--schedule together``, the default: both see the same machine load, which on a busy
2-core machine moves the per-message CPU by 10-20 % from one minute to the next), or to one
and then the other, the order alternating from round to round (``--schedule alternate``, noisier);
each text is the ``message`` of ``POST /api/chat``, from ``--clients`` concurrent clients per
service (64: the demo model paces its words, about 1.5 s per answer, so a few clients would
leave the service idle). Every round uses texts no earlier round has sent, so a round sees new
texts with a warm vocabulary, as a service does.

The figure is CPU time of the service process, not wall time: the sum over its threads of
``/proc/<pid>/task/*/schedstat`` (nanosecond resolution; ``utime + stime`` of
``/proc/<pid>/stat`` counts in 10 ms ticks, too coarse for a batch of short texts, and is
recorded as a cross-check). A batch during which a thread of the service started or ended (the
guard scores texts over 2,000 characters in worker threads, which end when idle) is read from
``/proc/<pid>/stat``, since schedstat loses the CPU of a thread that has ended. CPU time does
not count the time the service waits for the demo model's paced words or for a core on a loaded
machine, so it stays put when wall times do not.

Reading it
----------
- ``guard on`` / ``guard off``: service CPU per message (median over rounds), everything the
  service does for the request (HTTP, run, demo model, JSON answer).
- ``guard cost``: the median over rounds of (on − off) per message, with the smallest and
  largest round in brackets (the spread: a range that includes 0 means the cost is below what
  this run could resolve). ``per 1,000 chars`` divides it by the text's length.
- ``in the service``: the guard's own time on the service's request path, read from the
  service's ``agent_executor_guard_duration_seconds{guard="injection",target="request"}``
  histogram before and after each batch: the median of every round's observations pooled
  (interpolated inside its bucket, as ``histogram_quantile`` does; the buckets around the
  targets are 50, 100, 200, 300 and 500 µs) and, in brackets, the exact mean. Unlike on − off it
  is not blurred by the other 99% of the request's CPU, and it counts what the guard costs in
  the service's process (its caches, its collector), not in a quiet one. on − off also counts
  what the guard's allocations cost the rest of the service (more collections), so both
  are reported and the target is judged by each.
- ``score_text``: for reference, the median CPU time of one call of
  ``agent_executor.guards.injection.scoring.score_text`` in this process over the same texts,
  each scored once after a warm-up (what the guard computes, without the service around it).
- Attack texts are mostly refused, and a refused run skips the model, so on − off mixes the
  guard's cost with the work it saves; their row gives the guard-on CPU per message alone, an
  upper bound of the guard's cost (it includes the whole request), and the share refused.
- Benign texts that the guard flags in this process are left out (a refused message skips the
  model, which would hide the guard's cost); the count is printed, and benign refusals by the
  service are counted too (they should be 0).

Against another commit
----------------------
``--base REV`` runs a third service with the guard of that revision (``git archive`` of its
``agent_executor`` and ``server``, its C parts compiled as an install does), sent the same
texts at the same time as the other two, so that the two guards see the same machine load
(run one after the other, on this shared machine the runs moved by more than a change to the
guard does). A second table gives, per kind of benign text, the base's and this tree's guard
time in the service (pooled, and round by round) and on − off. The base's on − off is taken
against this tree's guard-off service: where the two trees differ outside the guard, that
difference is in it too.

``python benchmarks/guard_cost.py`` (about 2 minutes; ``--quick``: under a minute;
``--rounds N``; ``--base REV``: a third more). Prints a markdown table for
docs/benchmarks.md and writes ``benchmarks/results/guard_cost.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import platform
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

sys.path.insert(0, str(ROOT / "tests" / "data"))
from corpus_rows import concatenated, read_rows  # noqa: E402

from agent_executor.guards.injection.scoring import score_text  # noqa: E402
from benchmarks.processes import free_port, log, stop_process, wait_http  # noqa: E402
from benchmarks.procfs import proc_cpu_seconds  # noqa: E402

CORPUS = ROOT / "tests" / "data" / "injection_public.jsonl.gz"
DEFAULT_OUT = HERE / "results" / "guard_cost.json"
SEED = 20_241_126
THRESHOLD = 0.5
"""``InjectionGuard``'s default threshold: a benign text scoring this or more is left out."""
LONG_CHARS = 20_000
SETTLE_S = 0.2
"""Pause before and after a batch, so that no response is half-counted."""
TARGET_SHORT_US = 100.0
TARGET_PER_1K_US = 300.0
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
"""What ``InputValidationGuard`` refuses; rows holding it are not used."""
_SERVICE_ENV_DROP = (
    "AGENT_API_KEYS",
    "AGENT_TOOLS",
    "AGENT_APPROVAL_SECRET",
    "REDIS_URL",
    "LLM_MODEL",
    "LLM_BASE_URL",
    "LLM_API_KEY",
    "LLM_TEMPERATURE",
    "HOST",
    "PORT",
)
"""Environment variables the service reads that would change what is measured."""


@dataclass(frozen=True)
class TextSet:
    """One kind of text: its texts per round (index 0 is the warm-up) and what it measures."""

    key: str
    label: str
    chars: int
    benign: bool
    rounds: list[list[str]]
    excluded: int = 0
    """Benign candidates left out because the guard flags them in this process."""
    score_us: list[float] = field(default_factory=list)
    """In-process ``score_text`` CPU µs of each measured text (first scoring after warm-up)."""


@dataclass
class Batch:
    messages: int
    cpu_s: float
    stat_cpu_s: float
    wall_s: float
    ok: int
    refused: int
    errors: dict[str, int]
    threads_changed: bool
    guard_buckets: dict[float, float] = field(default_factory=dict)
    """The injection guard's own timing in the service over the batch: ``le`` → count of
    ``agent_executor_guard_duration_seconds{guard="injection",target="request"}`` (cumulative)."""
    guard_seconds: float = 0.0

    @property
    def us_per_message(self) -> float:
        """CPU per message: schedstat's, unless a thread started or ended during the batch.

        schedstat is read per live thread, so a worker thread that exits during a batch (the
        guard scores long texts in threads, which exit when idle) takes all its CPU with it,
        and the batch can come out negative; ``/proc/<pid>/stat`` counts exited threads too.
        """
        seconds = self.stat_cpu_s if self.threads_changed else self.cpu_s
        return seconds / self.messages * 1e6


# --- texts -------------------------------------------------------------------------------


def _split(texts: list[str], warm: int, per_round: int, rounds: int, what: str) -> list[list[str]]:
    """``texts`` as [warm-up, round 1, ..., round N], disjoint; fewer per round if short."""
    if len(texts) < warm + rounds * per_round:
        per_round = max(1, (len(texts) - warm) // rounds)
        log(f"{what}: only {len(texts)} texts; {per_round} per round")
    out = [texts[:warm]]
    for r in range(rounds):
        start = warm + r * per_round
        out.append(texts[start : start + per_round])
    return out


def _timed_scores(texts: list[str]) -> list[tuple[float, float]]:
    """(score, CPU µs) of each text, scored once."""
    out = []
    for text in texts:
        start = time.thread_time_ns()
        score = score_text(text).score
        out.append((score, (time.thread_time_ns() - start) / 1000))
    return out


def distinct_texts(texts: list[str], chars: int) -> list[str]:
    """``texts`` without those whose first ``chars`` characters an earlier one has: the
    guard keeps the scores of texts it has seen (``cache_size``), and every text measured
    here is to be scored, as a new message is (the corpus repeats templates: 198 of 352
    attack texts cut to 1,000 characters were repeats)."""
    seen: set[str] = set()
    out = []
    for text in texts:
        if text[:chars] not in seen:
            seen.add(text[:chars])
            out.append(text)
    return out


def build_sets(sizes: dict[str, tuple[int, int]], rounds: int) -> list[TextSet]:
    """The four sets; ``sizes`` maps a set's key to (warm-up texts, texts per round).

    The benign rows are shuffled once and divided so that no row feeds two sets: rows of
    100–999 characters give the 100-character texts, rows of 1,000 or more the 1,000-character
    texts (their first 1,000) and, from what is left of them, the 20,000-character texts.
    """
    rng = random.Random(SEED)
    rows = [r for r in read_rows(CORPUS) if not _CONTROL_RE.search(r["text"])]
    rng.shuffle(rows)
    benign = [r["text"] for r in rows if r["label"] == "benign"]
    attack = [r["text"] for r in rows if r["label"] == "attack"]

    warm_m, n_m = sizes["medium"]
    big = distinct_texts([t for t in benign if len(t) >= 1000], 1000)
    medium_rows = big[: warm_m + rounds * n_m]
    long_parts = [t[1000:] for t in medium_rows if len(t) > 1000] + big[len(medium_rows) :]
    candidates = {
        "short": distinct_texts([t[:100] for t in benign if 100 <= len(t) < 1000], 100),
        "medium": [t[:1000] for t in medium_rows],
        "long": concatenated(long_parts, LONG_CHARS),
        "attack": distinct_texts([t[:1000] for t in attack if len(t) >= 1000], 1000),
    }
    labels = {
        "short": ("benign, 100 chars", 100, True),
        "medium": ("benign, 1,000 chars", 1000, True),
        "long": ("benign, 20,000 chars", LONG_CHARS, True),
        "attack": ("attack, 1,000 chars", 1000, False),
    }
    # Warm this process's caches on every set's warm-up texts before timing anything.
    split_texts = {
        key: _split(texts, sizes[key][0], sizes[key][1], rounds, key)
        for key, texts in candidates.items()
    }
    for parts in split_texts.values():
        _timed_scores(parts[0])
    sets = []
    for key, parts in split_texts.items():
        label, chars, is_benign = labels[key]
        measured = [t for part in parts[1:] for t in part]
        scores = dict(zip(measured, _timed_scores(measured), strict=True))
        excluded = 0
        if is_benign:
            kept = [[t for t in part if scores[t][0] < THRESHOLD] for part in parts[1:]]
            excluded = sum(len(p) for p in parts[1:]) - sum(len(p) for p in kept)
            parts = [[t for t in parts[0] if score_text(t).score < THRESHOLD], *kept]
        score_us = [scores[t][1] for part in parts[1:] for t in part]
        sets.append(TextSet(key, label, chars, is_benign, parts, excluded, score_us))
    return sets


# --- the services ------------------------------------------------------------------------


def _stat_cpu_seconds(pid: int) -> float:
    """utime + stime of ``/proc/<pid>/stat`` (every thread, exited ones too; 10 ms ticks)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _threads(pid: int) -> frozenset[str]:
    with contextlib.suppress(OSError):
        return frozenset(os.listdir(f"/proc/{pid}/task"))
    return frozenset()


class GuardService:
    """``python -m server --model demo`` with or without the injection guard."""

    def __init__(
        self,
        guard: bool,
        agents_file: Path,
        log_dir: Path,
        max_concurrency: int,
        root: Path = ROOT,
        label: str = "",
    ):
        self.guard = guard
        self.label = label or ("on" if guard else "off")
        self.port = free_port()
        self.log_path = log_dir / f"service-{self.label}-{self.port}.log"
        self.cmd = [
            sys.executable,
            "-m",
            "server",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--model",
            "demo",
            "--agents",
            str(agents_file),
            "--max-message-chars",
            str(4 * LONG_CHARS),
            "--max-body-bytes",
            str(4 * 1024 * 1024),
            "--max-concurrency",
            str(max_concurrency),
            "--request-timeout",
            "120",
        ]
        if not guard:
            self.cmd.append("--no-injection-guard")
        env = {k: v for k, v in os.environ.items() if k not in _SERVICE_ENV_DROP}
        env["LOG_LEVEL"] = "WARNING"
        self._log = self.log_path.open("wb")
        self.proc = subprocess.Popen(
            self.cmd, cwd=root, env=env, stdout=self._log, stderr=subprocess.STDOUT
        )
        try:
            wait_http(f"{self.url}/api/health", 60, self.proc)
        except Exception:
            self.stop()
            raise RuntimeError(f"the service did not start; see {self.log_path}") from None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def name(self) -> str:
        return self.label

    def stop(self) -> None:
        stop_process(self.proc)
        self._log.close()


async def _post(session: aiohttp.ClientSession, url: str, text: str) -> str:
    """``ok``, ``refused`` (injection_detected) or an error code."""
    async with session.post(url, json={"message": text}) as resp:
        body = await resp.read()
    if resp.status == 200:
        return "ok"
    try:
        code = str(json.loads(body)["error"]["code"])
    except (ValueError, KeyError, TypeError):
        code = f"http_{resp.status}"
    return "refused" if code == "injection_detected" else code


_GUARD_SERIES = "agent_executor_guard_duration_seconds"


async def guard_histogram(
    session: aiohttp.ClientSession, service: GuardService
) -> tuple[dict[float, float], float]:
    """The service's histogram of the injection guard's time on requests: buckets and sum."""
    async with session.get(f"{service.url}/metrics") as resp:
        text = await resp.text()
    buckets: dict[float, float] = {}
    seconds = 0.0
    for family in text_string_to_metric_families(text):
        if family.name != _GUARD_SERIES:
            continue
        for sample in family.samples:
            labels = sample.labels
            if labels.get("guard") != "injection" or labels.get("target") != "request":
                continue
            if sample.name.endswith("_bucket"):
                buckets[float(labels["le"])] = sample.value
            elif sample.name.endswith("_sum"):
                seconds = sample.value
    return buckets, seconds


def histogram_median(buckets: dict[float, float]) -> float | None:
    """The median of cumulative ``le`` → count buckets, interpolated inside its bucket as
    Prometheus' ``histogram_quantile`` does (``None`` without observations)."""
    bounds = sorted(buckets)
    total = buckets[bounds[-1]] if bounds else 0.0
    if total <= 0:
        return None
    rank, lower, below = total / 2, 0.0, 0.0
    for bound in bounds:
        count = buckets[bound]
        if count >= rank:
            if math.isinf(bound):
                return lower
            return lower + (bound - lower) * (rank - below) / max(count - below, 1e-12)
        lower, below = bound, count
    return lower


async def run_batches(
    session: aiohttp.ClientSession, services: list[GuardService], texts: list[str], clients: int
) -> dict[str, Batch]:
    """Send ``texts`` to each of ``services`` at the same time, ``clients`` concurrent
    clients each; each service's CPU over the same interval."""
    outcomes: dict[str, dict[str, int]] = {s.name: {} for s in services}

    async def client(service: GuardService, queue: list[str]) -> None:
        url = f"{service.url}/api/chat"
        counts = outcomes[service.name]
        while queue:
            outcome = await _post(session, url, queue.pop())
            counts[outcome] = counts.get(outcome, 0) + 1

    pids = {s.name: s.proc.pid for s in services}
    await asyncio.sleep(SETTLE_S)  # let the previous batch's last responses finish
    threads = {name: _threads(pid) for name, pid in pids.items()}
    before = {name: (proc_cpu_seconds(pid), _stat_cpu_seconds(pid)) for name, pid in pids.items()}
    guarded = [s for s in services if s.guard]
    histograms = {s.name: await guard_histogram(session, s) for s in guarded}
    wall0 = time.perf_counter()
    queues = {s.name: list(reversed(texts)) for s in services}
    await asyncio.gather(
        *(client(s, queues[s.name]) for s in services for _ in range(min(clients, len(texts))))
    )
    wall = time.perf_counter() - wall0
    await asyncio.sleep(SETTLE_S)  # and this batch's, after their bodies were sent
    after = {name: (proc_cpu_seconds(pid), _stat_cpu_seconds(pid)) for name, pid in pids.items()}
    for service in guarded:  # read after the CPU, so the scrape is not in the batch's CPU
        (b0, s0), (b1, s1) = histograms[service.name], await guard_histogram(session, service)
        histograms[service.name] = ({le: b1[le] - b0.get(le, 0.0) for le in b1}, s1 - s0)
    batches = {}
    for name, pid in pids.items():
        counts = outcomes[name]
        buckets, guard_seconds = histograms.get(name, ({}, 0.0))
        batches[name] = Batch(
            messages=len(texts),
            cpu_s=after[name][0] - before[name][0],
            stat_cpu_s=after[name][1] - before[name][1],
            wall_s=wall,
            ok=counts.get("ok", 0),
            refused=counts.get("refused", 0),
            errors={k: v for k, v in counts.items() if k not in ("ok", "refused")},
            threads_changed=_threads(pid) != threads[name],
            guard_buckets=buckets,
            guard_seconds=guard_seconds,
        )
    return batches


async def measure(
    sets: list[TextSet],
    on: GuardService,
    off: GuardService,
    rounds: int,
    clients: int,
    together: bool,
    base: GuardService | None = None,
) -> dict[str, list[dict[str, Batch]]]:
    """Warm the services, then ``rounds`` rounds per set: every service at once
    (``together``), or one after the other, the order alternating from round to round.
    ``base`` (``--base``) is a guarded service of another tree, sent the same texts."""
    results: dict[str, list[dict[str, Batch]]] = {s.key: [] for s in sets}
    timeout = aiohttp.ClientTimeout(total=300)
    services = [on, off] if base is None else [on, off, base]
    connector = aiohttp.TCPConnector(limit=len(services) * clients)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        log("warm-up")
        for text_set in sets:
            await run_batches(session, services, text_set.rounds[0], clients)
        for r in range(1, rounds + 1):
            order = services if r % 2 else services[::-1]
            for text_set in sets:
                texts = text_set.rounds[r]
                if together:
                    batches = await run_batches(session, order, texts, clients)
                else:
                    batches = {}
                    for service in order:
                        batches.update(await run_batches(session, [service], texts, clients))
                results[text_set.key].append(batches)
                b_on, b_off = batches["on"], batches["off"]
                also = "" if base is None else f", base {batches['base'].us_per_message:8.0f}"
                log(
                    f"round {r}/{rounds} {text_set.key:6} n={len(texts):3}: on "
                    f"{b_on.us_per_message:8.0f} µs/msg ({b_on.wall_s:4.1f} s), off "
                    f"{b_off.us_per_message:8.0f} µs/msg ({b_off.wall_s:4.1f} s), diff "
                    f"{b_on.us_per_message - b_off.us_per_message:+7.0f}{also}"
                )
    return results


# --- the report --------------------------------------------------------------------------


def summarise(text_set: TextSet, rounds: list[dict[str, Batch]]) -> dict[str, Any]:
    on = [b["on"].us_per_message for b in rounds]
    off = [b["off"].us_per_message for b in rounds]
    diffs = [a - b for a, b in zip(on, off, strict=True)]
    cost = statistics.median(diffs)
    batches = [b for r in rounds for b in r.values()]
    stat_gap = max((abs(b.cpu_s - b.stat_cpu_s) / max(b.cpu_s, 1e-9) for b in batches), default=0.0)
    return {
        "set": text_set.key,
        "label": text_set.label,
        "chars": text_set.chars,
        "benign": text_set.benign,
        "messages_per_round": [r["on"].messages for r in rounds],
        "benign_excluded": text_set.excluded,
        "on_us_per_message": statistics.median(on),
        "off_us_per_message": statistics.median(off),
        "cost_us_per_message": cost,
        "cost_min": min(diffs),
        "cost_max": max(diffs),
        "cost_rounds": diffs,
        "on_rounds": on,
        "off_rounds": off,
        "cost_us_per_1k_chars": cost / (text_set.chars / 1000),
        "in_service_us_median": _in_service_median(rounds),
        "in_service_us_mean": _in_service_mean(rounds),
        "score_text_us_median": statistics.median(text_set.score_us),
        "score_text_us_per_1k_chars": statistics.median(text_set.score_us)
        / (text_set.chars / 1000),
        "refused_on": sum(r["on"].refused for r in rounds),
        "refused_off": sum(r["off"].refused for r in rounds),
        "messages": sum(r["on"].messages for r in rounds),
        "errors": _merged_errors(batches),
        "threads_changed": any(b.threads_changed for b in batches),
        "schedstat_vs_stat_max_rel_gap": stat_gap,
        "batches": [{k: _batch_dict(v) for k, v in r.items()} for r in rounds],
        "in_service_us_round_medians": _round_medians(rounds, "on"),
        **(_base_figures(rounds, off) if "base" in rounds[0] else {}),
    }


def _base_figures(rounds: list[dict[str, Batch]], off: list[float]) -> dict[str, Any]:
    """The ``--base`` service's figures, measured as the tree's own are."""
    on = [b["base"].us_per_message for b in rounds]
    return {
        "base_on_us_per_message": statistics.median(on),
        "base_cost_us_per_message": statistics.median(a - b for a, b in zip(on, off, strict=True)),
        "base_in_service_us_median": _in_service_median(rounds, "base"),
        "base_in_service_us_mean": _in_service_mean(rounds, "base"),
        "base_in_service_us_round_medians": _round_medians(rounds, "base"),
    }


def _round_medians(rounds: list[dict[str, Batch]], name: str) -> list[float | None]:
    """Each round's median µs of the guard's own timing in service ``name``."""
    medians = [histogram_median(r[name].guard_buckets) for r in rounds]
    return [None if m is None else m * 1e6 for m in medians]


def _in_service_median(rounds: list[dict[str, Batch]], name: str = "on") -> float | None:
    """Median µs of the guard's own timing in service ``name``, all rounds' observations
    pooled."""
    pooled: dict[float, float] = {}
    for r in rounds:
        for le, count in r[name].guard_buckets.items():
            pooled[le] = pooled.get(le, 0.0) + count
    median = histogram_median(pooled)
    return None if median is None else median * 1e6


def _in_service_mean(rounds: list[dict[str, Batch]], name: str = "on") -> float | None:
    count = sum(r[name].guard_buckets.get(math.inf, 0.0) for r in rounds)
    return sum(r[name].guard_seconds for r in rounds) / count * 1e6 if count else None


def _merged_errors(batches: list[Batch]) -> dict[str, int]:
    merged: dict[str, int] = {}
    for b in batches:
        for code, n in b.errors.items():
            merged[code] = merged.get(code, 0) + n
    return merged


def _batch_dict(b: Batch) -> dict[str, Any]:
    return {
        "messages": b.messages,
        "cpu_s": b.cpu_s,
        "stat_cpu_s": b.stat_cpu_s,
        "wall_s": b.wall_s,
        "ok": b.ok,
        "refused": b.refused,
        "errors": b.errors,
        "threads_changed": b.threads_changed,
        "guard_buckets": {str(le): n for le, n in b.guard_buckets.items()},
        "guard_seconds": b.guard_seconds,
    }


def markdown(rows: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    head = (
        "| texts | msgs × rounds | guard on µs/msg | guard off µs/msg | guard cost µs/msg "
        "[min–max] | per 1,000 chars | in the service: median (mean) µs | "
        "`score_text` µs (in-process) | refused (on) | target |"
    )
    lines = [head, "|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        per_round = row["messages_per_round"]
        msgs = f"{per_round[0]} × {len(per_round)}"
        refused = f"{row['refused_on']}/{row['messages']}"
        score = f"{row['score_text_us_median']:,.0f}"
        inside = (
            "—"
            if row["in_service_us_median"] is None
            else f"{row['in_service_us_median']:,.0f} ({row['in_service_us_mean']:,.0f})"
        )
        if row["benign"]:
            cost = (
                f"**{row['cost_us_per_message']:,.0f}** "
                f"[{row['cost_min']:,.0f} – {row['cost_max']:,.0f}]"
            )
            per_1k = f"{row['cost_us_per_1k_chars']:,.0f}" if row["chars"] >= 1000 else "—"
        else:
            cost = f"≤ {row['on_us_per_message']:,.0f} (upper bound: guard-on CPU per message)"
            per_1k = "—"
        target = ""
        per_k = 1000 / row["chars"]
        if row["set"] == "short":
            target = f"≤ {TARGET_SHORT_US:.0f} µs/msg: " + _verdicts(row, 1.0, TARGET_SHORT_US)
        elif row["set"] == "long":
            target = f"≤ {TARGET_PER_1K_US:.0f} µs per 1,000 chars: " + _verdicts(
                row, per_k, TARGET_PER_1K_US
            )
        lines.append(
            f"| {row['label']} | {msgs} | {row['on_us_per_message']:,.0f} | "
            f"{row['off_us_per_message']:,.0f} | {cost} | {per_1k} | {inside} | {score} | "
            f"{refused} | "
            f"{target} |"
        )
    notes = [
        "",
        f"Service CPU time (schedstat) per message, `POST /api/chat`, demo model without tools, "
        f"{meta['clients']} concurrent clients per service; median of {meta['rounds']} rounds "
        f"({'the services at once' if meta['schedule'] == 'together' else 'one after the other'}"
        f"), fresh texts each round after a warm-up. {meta['machine']}; "
        f"commit {meta['commit']}{' (modified)' if meta['dirty'] else ''}.",
    ]
    for row in rows:
        if row["benign"] and row["benign_excluded"]:
            notes.append(
                f"- {row['label']}: {row['benign_excluded']} benign texts left out "
                "(flagged by the guard in-process)."
            )
        if row["benign"] and row["refused_on"]:
            notes.append(
                f"- {row['label']}: the service refused {row['refused_on']} benign texts; "
                "the cost is biased low."
            )
        if row["errors"]:
            notes.append(f"- {row['label']}: errors {row['errors']}.")
        if row["threads_changed"]:
            notes.append(
                f"- {row['label']}: the service's threads changed during a batch; that batch's "
                "CPU is read from /proc/<pid>/stat (10 ms ticks), which counts exited threads."
            )
    return "\n".join(lines + notes + _base_table(rows, meta))


def _base_table(rows: list[dict[str, Any]], meta: dict[str, Any]) -> list[str]:
    """With ``--base``: that tree's guard beside this one's, measured in the same batches."""
    if not meta.get("base"):
        return []
    lines = [
        "",
        f"`{meta['base']}` → this tree, sent the same texts at the same time (`--base`): "
        "the guard's own time in the service, median µs of all rounds pooled and of each "
        "round, and on − off CPU per message (median of the rounds).",
        "",
        "| texts | in the service | each round | on − off |",
        "|---|---|---|---|",
    ]
    for row in rows:
        if not row["benign"]:
            continue
        old, new = row["base_in_service_us_median"], row["in_service_us_median"]
        inside = "—" if old is None or new is None else f"{old:,.0f} → **{new:,.0f}**"
        each = ", ".join(
            "—" if a is None or b is None else f"{a:,.0f} → {b:,.0f}"
            for a, b in zip(
                row["base_in_service_us_round_medians"],
                row["in_service_us_round_medians"],
                strict=True,
            )
        )
        lines.append(
            f"| {row['label']} | {inside} | {each} | "
            f"{row['base_cost_us_per_message']:,.0f} → **{row['cost_us_per_message']:,.0f}** |"
        )
    return lines


def _verdicts(row: dict[str, Any], scale: float, target: float) -> str:
    """Met or missed, by the service's own timing of the guard (its median) and by on − off."""
    inside = row["in_service_us_median"]
    by_timing = "no timing" if inside is None else _met(inside * scale <= target)
    by_cpu = _met(row["cost_us_per_message"] * scale <= target)
    return f"in the service {by_timing}, on − off {by_cpu}"


def _met(ok: bool) -> str:
    return "met" if ok else "MISSED"


def _git() -> tuple[str, bool]:
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = bool(
            subprocess.run(
                ["git", "status", "--porcelain", "--", "agent_executor", "server"],
                cwd=ROOT,
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
        )
    except (OSError, subprocess.CalledProcessError):
        return "unknown", False
    return commit, dirty


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, help="on/off rounds (default 5; --quick: 2)")
    parser.add_argument("--quick", action="store_true", help="fewer texts and rounds (< 1 min)")
    parser.add_argument("--clients", type=int, default=64, help="concurrent clients per service")
    parser.add_argument(
        "--schedule",
        choices=("together", "alternate"),
        default="together",
        help="send each round's texts to both services at once (default: the same machine "
        "load for both), or to one then the other, alternating the order",
    )
    parser.add_argument(
        "--base",
        metavar="REV",
        help="also run the guard of this git revision (its agent_executor and server, C parts "
        "built) in a third service, sent the same texts at the same time",
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON results")
    args = parser.parse_args(argv)
    rounds = args.rounds or (2 if args.quick else 5)
    if rounds < 1 or args.clients < 1:
        parser.error("--rounds and --clients must be positive")
    # (warm-up texts, texts per round); the demo model takes ~1.5 s per answer (paced words),
    # so a batch of n texts takes about ceil(n / clients) × 1.5 s of wall time.
    if args.quick:
        sizes = {"short": (64, 128), "medium": (32, 64), "long": (4, 12), "attack": (16, 32)}
    else:
        sizes = {"short": (128, 256), "medium": (64, 128), "long": (8, 20), "attack": (32, 64)}

    started = time.perf_counter()
    log("loading texts and timing score_text in-process")
    sets = build_sets(sizes, rounds)
    for s in sets:
        log(
            f"{s.key}: warm-up {len(s.rounds[0])}, per round "
            f"{[len(p) for p in s.rounds[1:]]}, excluded {s.excluded}"
        )
    commit, dirty = _git()
    meta: dict[str, Any] = {
        "clients": args.clients,
        "rounds": rounds,
        "schedule": args.schedule,
        "quick": args.quick,
        "commit": commit,
        "dirty": dirty,
        "machine": f"{os.cpu_count()} CPUs, Python {platform.python_version()}",
        "load_average_start": os.getloadavg(),
        "base": args.base,
    }
    with tempfile.TemporaryDirectory(prefix="guard-cost-") as tmp:
        agents_file = Path(tmp) / "agents.json"
        agents_file.write_text(json.dumps({"default": "bench", "agents": {"bench": {"tools": []}}}))
        log_dir = Path(tmp)
        services: list[GuardService] = []
        try:
            services.append(GuardService(True, agents_file, log_dir, 2 * args.clients))
            services.append(GuardService(False, agents_file, log_dir, 2 * args.clients))
            if args.base:
                from benchmarks.guard_instructions import unpack

                tree = unpack(args.base, Path(tmp), ("agent_executor", "server"))
                services.append(
                    GuardService(True, agents_file, log_dir, 2 * args.clients, tree, "base")
                )
            on, off, *base = services
            meta["service_cmd"] = on.cmd
            results = asyncio.run(
                measure(
                    sets,
                    on,
                    off,
                    rounds,
                    args.clients,
                    args.schedule == "together",
                    base[0] if base else None,
                )
            )
        finally:
            for service in services:
                service.stop()
            for service in services:
                tail = service.log_path.read_text(errors="replace").strip().splitlines()[-5:]
                if tail:
                    log(f"service {service.name} log ends: " + " | ".join(tail))
    meta["load_average_end"] = os.getloadavg()
    meta["seconds"] = round(time.perf_counter() - started, 1)
    rows = [summarise(s, results[s.key]) for s in sets]
    table = markdown(rows, meta)
    print(table)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"meta": meta, "sets": rows}, indent=2) + "\n")
    log(f"done in {meta['seconds']} s; wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
