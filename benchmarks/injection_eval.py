"""Measure InjectionGuard's heuristic on the labelled corpus: detection and false positives.

    python benchmarks/injection_eval.py                  # the table in docs/guards.md
    python benchmarks/injection_eval.py --errors dev     # also list the dev split's mistakes

Reads ``tests/data/injection_corpus.jsonl`` (see ``tests/data/build_injection_corpus.py``) and
prints, for the held-out ``test`` split and for all examples: the detection rate on attacks
(overall and per category), the false-positive rate on benign examples (overall and per
category), and the mean time to score one message. Everything but the timing is
deterministic and machine-independent. Offline; no model is involved.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from agent_executor.injection import InjectionGuard

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "data" / "injection_corpus.jsonl"


def load(path: Path = CORPUS) -> list[dict[str, str]]:
    """The corpus rows: ``text``, ``label`` (attack/benign), ``category``, ``split``."""
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def rate(hits: int, total: int) -> str:
    return f"{hits}/{total} = {100 * hits / total:5.1f}%" if total else "-"


def report(rows: Sequence[dict[str, str]], flagged: Sequence[bool], title: str) -> list[str]:
    """Table lines for ``rows`` (and whether each was flagged)."""
    by_category: dict[tuple[str, str], list[bool]] = defaultdict(list)
    for row, hit in zip(rows, flagged, strict=True):
        by_category[(row["label"], row["category"])].append(hit)
    attacks = [hit for row, hit in zip(rows, flagged, strict=True) if row["label"] == "attack"]
    benign = [hit for row, hit in zip(rows, flagged, strict=True) if row["label"] == "benign"]
    lines = [
        f"### {title}",
        "",
        "| set | flagged |",
        "|---|---|",
        f"| **attacks: detection rate** | **{rate(sum(attacks), len(attacks))}** |",
    ]
    for (label, category), hits in sorted(by_category.items()):
        if label == "attack":
            lines.append(f"| attack / {category} | {rate(sum(hits), len(hits))} |")
    lines.append(f"| **benign: false-positive rate** | **{rate(sum(benign), len(benign))}** |")
    for (label, category), hits in sorted(by_category.items()):
        if label == "benign":
            lines.append(f"| benign / {category} | {rate(sum(hits), len(hits))} |")
    return [*lines, ""]


def timing(guard: InjectionGuard, texts: Sequence[str], rounds: int = 5) -> float:
    """Mean microseconds to score one text (best of ``rounds`` passes over ``texts``)."""
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        for text in texts:
            guard.score(text)
        best = min(best, time.perf_counter() - started)
    return best / len(texts) * 1e6


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threshold", type=float, default=0.5)
    parser.add_argument("--errors", choices=("dev", "test", "all"), help="list mistakes")
    args = parser.parse_args(argv)

    guard = InjectionGuard(threshold=args.threshold)
    rows = load()
    scores = [guard.score(row["text"]) for row in rows]
    flagged = [s.score >= guard.threshold for s in scores]
    held_out = [i for i, row in enumerate(rows) if row["split"] == "test"]
    dev = [i for i, row in enumerate(rows) if row["split"] == "dev"]

    print(f"InjectionGuard heuristic, threshold {guard.threshold}, corpus {CORPUS.name}")
    print(f"{len(rows)} examples: {len(dev)} dev, {len(held_out)} held-out test\n")
    for title, index in (
        ("held-out test split", held_out),
        ("dev split", dev),
        ("all examples", range(len(rows))),
    ):
        print("\n".join(report([rows[i] for i in index], [flagged[i] for i in index], title)))
    lengths = sorted(len(row["text"]) for row in rows)
    print(
        f"mean scoring time: {timing(guard, [row['text'] for row in rows]):.0f} µs per message "
        f"(median length {lengths[len(lengths) // 2]} characters; machine-dependent)"
    )
    long_text = "All good here. " * 1400  # 21,000 characters: the scan window is full
    print(f"a 21,000-character message: {timing(guard, [long_text], rounds=3) / 1000:.1f} ms")

    if args.errors:
        print(f"\nmistakes ({args.errors} split):")
        for row, verdict, hit in zip(rows, scores, flagged, strict=True):
            wrong = hit != (row["label"] == "attack")
            if wrong and (args.errors == "all" or row["split"] == args.errors):
                kind = "missed" if row["label"] == "attack" else "false positive"
                print(f"- {kind} [{row['category']}] {verdict.score:.2f} {verdict.reasons}")
                print(f"  {row['text']!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
