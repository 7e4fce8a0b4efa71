"""What the injection guard's scoring costs per text, in instructions, here and at another commit.

    python benchmarks/guard_instructions.py --base HEAD~2 [--short 300] [--medium 60] [--long 0]

Timed CPU per message moves by 30-50% from one minute to the next on this shared VM, more than
a change to the rules does; instructions do not. For each tree (the working tree's
``agent_executor`` copied, and ``--base`` unpacked with ``git archive``, into a temporary
directory, each with the guard's C parts compiled as an install does), three processes run
``score_text`` under ``valgrind --tool=callgrind`` (``PYTHONHASHSEED=0``): each imports the
guard and scores 200 benign texts of about 100 characters to warm the learned layer's cache;
one stops there, one then scores ``--short`` further texts of 100 characters, one ``--medium``
texts of 1,000 characters (and, with ``--long N``, one N texts of 20,000 characters: benign
rows joined, as ``guard_cost.py`` makes them). The difference over the first, divided by the
number of texts, is what one text costs: imports, rule compilation and the warm-up cancel out.
The texts are benign rows of ``tests/data/injection_public.jsonl.gz``, shuffled once with a
fixed seed, the same in both trees; with ``--texts outside-ascii``, the benign rows of every
corpus whose 100 or 1,000 characters hold a character outside ASCII (curly quotes, accents,
other scripts), which take the normal form's slower paths; with ``--reader tool``, scored as
tool results (the tool model and the rules of tool results). About 2 minutes (each long text
adds about half a minute). Needs ``valgrind`` and ``git``.

``--evict MB`` counts what the guard costs in a busy service, where the rest of each request
(HTTP, the run, the other streams) has pushed its tables and code out of the CPU's caches: in
a quiet process a 100-character text takes about 50 µs, through the service three times that
(docs/benchmarks.md). The processes then run under ``valgrind --tool=cachegrind`` with its
cache simulation (last level ``--ll-kib``, default 2,048 KiB, the per-core L2 of the machines
these figures come from), and overwrite a buffer of ``MB`` MiB before each text; the controls
overwrite it as often without scoring. Besides instructions, each text's last-level misses are
reported, data and instructions apart: what a cold text costs beyond its instructions, and
what a change to the layout of the guard's data moves. About 5 minutes.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Literal, NamedTuple

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "data" / "injection_public.jsonl.gz"
sys.path.insert(0, str(CORPUS.parent))
from corpus_rows import read_rows  # noqa: E402

sys.path.insert(0, str(ROOT))
from hatch_build import build_native  # noqa: E402

WARMUP = 200
LONG_CHARS = 20_000
_TOTAL_RE = re.compile(rb"^(?:summary|totals):\s*(\d+)", re.M)


def _texts(texts: str = "benign") -> tuple[list[str], list[str], list[str]]:
    """Short, medium and long texts: benign rows of the public corpus (``benign``), or benign rows
    of every corpus whose cut holds a character outside ASCII (``outside-ascii``: curly
    quotes, accents, other scripts)."""
    paths = [CORPUS] if texts == "benign" else sorted(CORPUS.parent.glob("injection_*.jsonl.gz"))
    rows = [row for path in paths for row in read_rows(path)]
    benign = [row["text"] for row in rows if row["label"] == "benign"]
    random.Random(1).shuffle(benign)
    short = [text[:100] for text in benign if 100 <= len(text) < 1000]
    medium = [text[:1000] for text in benign if len(text) >= 1000]
    if texts == "outside-ascii":
        short = [text for text in short if not text.isascii()]
        medium = [text for text in medium if not text.isascii()]
    joined = "\n\n".join(benign)
    long = [joined[i : i + LONG_CHARS] for i in range(0, len(joined) - LONG_CHARS, LONG_CHARS)]
    return short, medium, long


def score(
    tree: str,
    kind: str,
    count: int,
    evict_mib: int = 0,
    texts_of: str = "benign",
    reader: str = "user",
) -> None:
    """The measured process: warm up, then score ``count`` texts of ``kind`` (``none``:
    score nothing) as ``reader`` reads them, overwriting ``evict_mib`` MiB before each text
    if asked."""
    sys.path.insert(0, tree)
    from agent_executor.guards.injection.scoring import score_text

    read: Literal["user", "tool"] = "tool" if reader == "tool" else "user"

    short, medium, long = _texts(texts_of)
    for text in short[:WARMUP]:
        score_text(text, reader=read)
    texts = {
        "none": [""] * count,
        "short": short[WARMUP : WARMUP + count],
        "medium": medium,
        "long": long,
    }
    buffer = bytearray(evict_mib << 20)
    fill = bytes(len(buffer))
    for text in texts[kind][:count]:
        if evict_mib:
            buffer[:] = fill
        if text:
            score_text(text, reader=read)


_EVENTS_RE = re.compile(rb"^events:\s*(.+)$", re.M)
_SUMMARY_RE = re.compile(rb"^summary:\s*(.+)$", re.M)


def _count(
    tree: Path, kind: str, count: int, work: Path, evict: int, ll_kib: int, texts: str, reader: str
) -> Counts:
    out = work / f"{tree.name}-{kind}-{os.urandom(3).hex()}.out"
    if evict:
        cmd = ["valgrind", "--tool=cachegrind", "--cache-sim=yes", f"--LL={ll_kib << 10},16,64"]
        cmd += [f"--cachegrind-out-file={out}", "--quiet"]
    else:
        cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "--quiet"]
    cmd += [sys.executable, str(Path(__file__).resolve()), "--score", str(tree), kind, str(count)]
    cmd += [str(evict), texts, reader]
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    subprocess.run(cmd, check=True, cwd=ROOT, env=env, capture_output=True, timeout=1800)
    data = out.read_bytes()
    if not evict:
        found = _TOTAL_RE.search(data)
        if found is None:
            raise RuntimeError(f"no instruction total in {out}")
        return Counts(int(found.group(1)), 0, 0)
    events, summary = _EVENTS_RE.search(data), _SUMMARY_RE.search(data)
    if events is None or summary is None:
        raise RuntimeError(f"no event summary in {out}")
    totals = dict(zip(events.group(1).split(), map(int, summary.group(1).split()), strict=True))
    return Counts(totals[b"Ir"], totals[b"DLmr"] + totals[b"DLmw"], totals[b"ILmr"])


class Counts(NamedTuple):
    """A process's instructions and, with ``--evict``, its last-level misses."""

    instructions: int
    data_misses: int
    code_misses: int

    def per_text(self, control: Counts, texts: int) -> Counts:
        return Counts(*(round((a - b) / texts) for a, b in zip(self, control, strict=True)))


def copied(into: Path) -> Path:
    """The working tree's ``agent_executor``, copied into ``into/working`` and built there as
    :func:`unpack` builds the other tree: measured from the checkout itself, the same code
    counted about 2,500 more instructions per 100-character text (another path, other
    allocations), which is more than most changes this compares."""
    tree = into / "working"
    shutil.copytree(
        ROOT / "agent_executor",
        tree / "agent_executor",
        ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.pyd"),
    )
    return _built(tree)


def unpack(revision: str, into: Path, paths: tuple[str, ...] = ("agent_executor",)) -> Path:
    """``paths`` as they are at ``revision``, unpacked into ``into/base`` (its path), with the
    guard's C parts compiled there, those that revision has (as an install would: a checkout
    holds no compiled file, and the tree would otherwise be measured in Python)."""
    archive = subprocess.run(
        ["git", "archive", "--format=tar", revision, *paths],
        cwd=ROOT,
        check=True,
        capture_output=True,
    ).stdout
    tree = into / "base"
    tree.mkdir()
    with tempfile.TemporaryFile() as raw:
        raw.write(archive)
        raw.seek(0)
        with tarfile.open(fileobj=raw) as tar:
            tar.extractall(tree, filter="data")
    return _built(tree)


def _built(tree: Path) -> Path:
    """``tree``, with the guard's C parts compiled in it, those it has (as an install would)."""
    build_native(str(tree))
    return tree


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", help="a git revision to compare with (required)")
    parser.add_argument("--short", type=int, default=300)
    parser.add_argument("--medium", type=int, default=60)
    parser.add_argument("--long", type=int, default=0, help="texts of 20,000 characters")
    parser.add_argument(
        "--evict", type=int, default=0, metavar="MB", help="MiB overwritten before each text"
    )
    parser.add_argument("--ll-kib", type=int, default=2048, help="simulated last-level cache")
    parser.add_argument(
        "--texts",
        choices=("benign", "outside-ascii"),
        default="benign",
        help="the public corpus's benign rows, or every corpus's that hold non-ASCII text",
    )
    parser.add_argument(
        "--reader",
        choices=("user", "tool"),
        default="user",
        help="score the texts as a user's messages (default) or as tool results",
    )
    parser.add_argument("--score", nargs=6, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.score:
        tree, kind, count, evict, texts, reader = args.score
        score(tree, kind, int(count), int(evict), texts, reader)
        return
    if not args.base:
        parser.error("--base is required")
    if args.evict < 0 or args.ll_kib < 1:
        parser.error("--evict must be 0 or more and --ll-kib positive")
    sizes = {"short": args.short, "medium": args.medium}
    if args.long:
        sizes["long"] = args.long
    # Without eviction one control serves both kinds; with it, each kind has its own, which
    # overwrites the buffer as often as that kind does.
    controls = {kind: ("none", count if args.evict else 0) for kind, count in sizes.items()}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        trees = {"working tree": copied(work), args.base: unpack(args.base, work)}
        jobs = sorted(
            {(name, *job) for name in trees for job in [*sizes.items(), *controls.values()]}
        )
        with ThreadPoolExecutor(max_workers=2) as pool:
            totals = dict(
                zip(
                    jobs,
                    pool.map(
                        lambda job: _count(
                            trees[job[0]],
                            job[1],
                            job[2],
                            work,
                            args.evict,
                            args.ll_kib,
                            args.texts,
                            args.reader,
                        ),
                        jobs,
                    ),
                    strict=True,
                )
            )
    if args.evict:
        print(f"{args.evict} MiB overwritten before each text; last level {args.ll_kib:,} KiB")
        print(
            "| tree | per 100-character text: instructions, last-level misses (data + code) "
            "| per 1,000-character text |"
        )
    else:
        long = " per 20,000-character text |" if args.long else ""
        print(f"| tree | instructions per 100-character text | per 1,000-character text |{long}")
    print("|---|---|---|" + ("---|" if args.long else ""))
    for name in trees:
        cells = []
        for kind, count in sizes.items():
            control = (name, *controls[kind])
            each = totals[(name, kind, count)].per_text(totals[control], count)
            cell = f"{each.instructions:,}"
            if args.evict:
                cell += f", {each.data_misses:,} + {each.code_misses:,}"
            cells.append(cell)
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
