"""What the injection guard's scoring costs per text, in instructions, here and at another commit.

    python benchmarks/guard_instructions.py --base HEAD~2 [--short 300] [--medium 60]

Timed CPU per message moves by 30-50% from one minute to the next on this shared VM, more than
a change to the rules does; instructions do not. For each tree (the working tree, and
``--base`` unpacked with ``git archive`` into a temporary directory), three processes run
``score_text`` under ``valgrind --tool=callgrind`` (``PYTHONHASHSEED=0``): each imports the
guard and scores 200 benign texts of about 100 characters to warm the learned layer's cache;
one stops there, one then scores ``--short`` further texts of 100 characters, one ``--medium``
texts of 1,000 characters. The difference over the first, divided by the number of texts, is
what one text costs: imports, rule compilation and the warm-up cancel out. The texts are benign
rows of ``tests/data/injection_public.jsonl.gz``, shuffled once with a fixed seed, the same in
both trees. About 2 minutes. Needs ``valgrind`` and ``git``.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import subprocess
import sys
import tarfile
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "data" / "injection_public.jsonl.gz"
sys.path.insert(0, str(CORPUS.parent))
from corpus_rows import read_rows  # noqa: E402

WARMUP = 200
_TOTAL_RE = re.compile(rb"^(?:summary|totals):\s*(\d+)", re.M)


def _texts() -> tuple[list[str], list[str]]:
    rows = read_rows(CORPUS)
    benign = [row["text"] for row in rows if row["label"] == "benign"]
    random.Random(1).shuffle(benign)
    short = [text[:100] for text in benign if 100 <= len(text) < 1000]
    medium = [text[:1000] for text in benign if len(text) >= 1000]
    return short, medium


def score(tree: str, kind: str, count: int) -> None:
    """The measured process: warm up, then score ``count`` texts of ``kind``."""
    sys.path.insert(0, tree)
    from agent_executor.guards.injection.scoring import score_text

    short, medium = _texts()
    for text in short[:WARMUP]:
        score_text(text)
    texts = {"none": [], "short": short[WARMUP : WARMUP + count], "medium": medium[:count]}
    for text in texts[kind]:
        score_text(text)


def _count(tree: Path, kind: str, count: int, work: Path) -> int:
    out = work / f"{tree.name}-{kind}-{os.urandom(3).hex()}.out"
    cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "--quiet"]
    cmd += [sys.executable, str(Path(__file__).resolve()), "--score", str(tree), kind, str(count)]
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    subprocess.run(cmd, check=True, cwd=ROOT, env=env, capture_output=True, timeout=1200)
    found = _TOTAL_RE.search(out.read_bytes())
    if found is None:
        raise RuntimeError(f"no instruction total in {out}")
    return int(found.group(1))


def unpack(revision: str, into: Path, paths: tuple[str, ...] = ("agent_executor",)) -> Path:
    """``paths`` as they are at ``revision``, unpacked into ``into/base`` (its path)."""
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
    return tree


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", help="a git revision to compare with (required)")
    parser.add_argument("--short", type=int, default=300)
    parser.add_argument("--medium", type=int, default=60)
    parser.add_argument("--score", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.score:
        score(args.score[0], args.score[1], int(args.score[2]))
        return
    if not args.base:
        parser.error("--base is required")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        trees = {"working tree": ROOT, args.base: unpack(args.base, work)}
        jobs = [
            (name, kind, count)
            for name in trees
            for kind, count in (("none", 0), ("short", args.short), ("medium", args.medium))
        ]
        with ThreadPoolExecutor(max_workers=2) as pool:
            totals = dict(
                zip(
                    jobs,
                    pool.map(lambda job: _count(trees[job[0]], job[1], job[2], work), jobs),
                    strict=True,
                )
            )
    print("| tree | instructions per 100-character text | per 1,000-character text |")
    print("|---|---|---|")
    for name in trees:
        base = totals[(name, "none", 0)]
        per_short = (totals[(name, "short", args.short)] - base) / args.short
        per_medium = (totals[(name, "medium", args.medium)] - base) / args.medium
        print(f"| {name} | {per_short:,.0f} | {per_medium:,.0f} |")


if __name__ == "__main__":
    main()
