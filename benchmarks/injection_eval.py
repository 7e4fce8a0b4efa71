"""Measure InjectionGuard: cross-source detection and false positives, cost per message.

    python benchmarks/injection_eval.py                  # the tables in docs/guards.md
    python benchmarks/injection_eval.py --quick          # one attack source kept out only
    python benchmarks/injection_eval.py --errors dev     # also list the dev split's mistakes

**Cross-source** (needs scikit-learn, a test dependency; about 15 minutes on two cores): every
attack source of ``tests/data/injection_*.jsonl.gz`` is kept whole out of training in turn,
with its near-copies in other sources, and its attacks are scored by the rules plus a learned
layer retrained without it (the model of their reader: messages or tool results, each with
an operating point chosen on out-of-fold training data, never on the source scored); benign
texts are scored by models that never saw their author (five folds grouped by repository,
contributor or document). Tables: per source, per kind (short, exfiltration, forgery,
encoded), per language. Then the cost of the learned layer on 1,000-character messages.

**Our corpus**: the rules alone on the hand-written ``tests/data/injection_corpus.jsonl``
(see ``tests/data/build_injection_corpus.py``): for the held-out ``test`` split and for all
examples, detection (overall and per category), false positives (overall and per category),
and the mean time to score one message. Everything but the timings is deterministic.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path

from agent_executor.guards.injection import InjectionGuard, normalise
from agent_executor.guards.injection import learned as learned_model

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "data" / "injection_corpus.jsonl"
sys.path.insert(0, str(ROOT / "tests" / "data"))
import train_injection_model as training  # noqa: E402


def _words(text: str) -> int:
    return len(text.split())


KINDS: dict[str, Callable[[dict[str, str]], bool]] = {
    "short (3-15 words)": lambda r: (
        3 <= _words(r["text"]) <= 15 and not r["kind"].startswith("encoded")
    ),
    "exfiltration": lambda r: "exfil" in r["kind"],
    "forgery (roles, delimiters)": lambda r: any(
        k in r["kind"] for k in ("forgery", "spoof", "context_termination", "system_mode")
    ),
    "encoded and transformed": lambda r: (
        r["kind"].startswith("encoded") or "obfusc" in r["kind"] or "encoding" in r["kind"]
    ),
}


def tables(rows: Sequence[dict[str, str]], scores: dict[int, float]) -> list[str]:
    """Markdown tables of held-out scores: per source, per kind, per language (the kinds and
    languages of public sources only: ``training.WRITTEN_HERE`` has its row per source)."""
    lines: list[str] = []

    def flagged(index: Sequence[int]) -> str:
        return rate(sum(scores[i] >= 0.5 for i in index), len(index))

    def totals(index: Sequence[int]) -> list[str]:
        others = [i for i in index if rows[i]["source"] != training.WRITTEN_HERE]
        but = f"| **all but {training.WRITTEN_HERE}** | **{flagged(others)}** |"
        return [f"| **all** | **{flagged(index)}** |", *([but] if others != index else [])]

    for reader, title in (("user", "messages"), ("tool", "tool results")):
        lines += [f"### {title}: attacks, each source kept out of training", "",
                  "| source | detected |", "|---|---|"]  # fmt: skip
        by_source: dict[str, list[int]] = defaultdict(list)
        for i, r in enumerate(rows):
            if i in scores and r["reader"] == reader:
                by_source[(r["label"], r["source"])].append(i)  # type: ignore[index]
        attacks = [i for (label, _), ix in by_source.items() if label == "attack" for i in ix]  # type: ignore[misc]
        for (label, source), index in sorted(by_source.items()):  # type: ignore[misc]
            if label == "attack":
                lines.append(f"| {source} | {flagged(index)} |")
        lines += totals(attacks)
        lines += ["", f"### {title}: benign, scored by models that never saw their author", "",
                  "| source | false positives |", "|---|---|"]  # fmt: skip
        benign = [i for (label, _), ix in by_source.items() if label == "benign" for i in ix]  # type: ignore[misc]
        for (label, source), index in sorted(by_source.items()):  # type: ignore[misc]
            if label == "benign":
                lines.append(f"| {source} | {flagged(index)} |")
        lines += [*totals(benign), ""]
    lines += ["### messages: attacks by kind (each scored with its source kept out)", "",
              "| kind | detected |", "|---|---|"]  # fmt: skip
    public = [i for i in scores if rows[i]["source"] != training.WRITTEN_HERE]
    user_attacks = [
        i for i in public if rows[i]["label"] == "attack" and rows[i]["reader"] == "user"
    ]
    for kind, test in KINDS.items():
        lines.append(f"| {kind} | {flagged([i for i in user_attacks if test(rows[i])])} |")
    lines += ["", "### messages by language", "",
              "| language | attacks detected | benign flagged |", "|---|---|---|"]  # fmt: skip
    languages = sorted({rows[i]["lang"] for i in public if rows[i]["reader"] == "user"})
    for lang in languages:
        mine = [i for i in public if rows[i]["lang"] == lang and rows[i]["reader"] == "user"]
        attack = [i for i in mine if rows[i]["label"] == "attack"]
        benign = [i for i in mine if rows[i]["label"] == "benign"]
        lines.append(f"| {lang} | {flagged(attack)} | {flagged(benign)} |")
    return [*lines, ""]


def cross_source(quick: bool) -> list[str]:
    """The cross-source tables (markdown)."""
    rows = training.load_rows()
    sources = {training.HELD_OUT} if quick else None
    scores = training.evaluate(rows, sources)
    return tables(rows, scores)


def _median_us(score: Callable[[str], object], texts: Sequence[str], rounds: int) -> float:
    costs = []
    for text in texts:
        started = time.perf_counter()
        for _ in range(rounds):
            score(text)
        costs.append((time.perf_counter() - started) / rounds * 1e6)
    costs.sort()
    return costs[len(costs) // 2]


def learned_cost(rounds: int = 20) -> list[str]:
    """Median µs of the learned layer on 1,000-character messages of each label.

    Two figures: what the layer adds inside the guard (it reads the normalised text the rules
    already made) and the layer on its own, normalisation included.
    """
    rows = training.load_rows()
    model = learned_model.load()
    lines = []
    for label in ("benign", "attack"):
        texts = [r["text"][:1000] for r in rows if r["label"] == label and len(r["text"]) >= 1000]
        texts = texts[:: max(1, len(texts) // 300)]
        added = _median_us(model.probability, [normalise(t) for t in texts], rounds)
        alone = _median_us(lambda t: model.probability(normalise(t)), texts, rounds)
        lines.append(
            f"learned layer, {len(texts)} {label} messages of 1,000 characters: median "
            f"{added:.0f} µs added to the guard, {alone:.0f} µs on its own with normalisation"
        )
    return lines


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
    parser.add_argument("--quick", action="store_true", help="acceptance figures only")
    args = parser.parse_args(argv)

    print("## cross-source evaluation\n")
    print("\n".join(cross_source(args.quick)))
    print("\n".join(learned_cost()))
    if args.quick:
        return 0
    print("\n## our corpus\n")

    guard = InjectionGuard(threshold=args.threshold, learned=False)
    rows = load()
    scores = [guard.score(row["text"]) for row in rows]
    flagged = [s.score >= guard.threshold for s in scores]
    held_out = [i for i, row in enumerate(rows) if row["split"] == "test"]
    dev = [i for i, row in enumerate(rows) if row["split"] == "dev"]

    print(f"InjectionGuard (rules only), threshold {guard.threshold}, {CORPUS.name}")
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
