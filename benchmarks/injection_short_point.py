"""Whether the learned layer's operating point for short texts is what holds short attacks back.

    python benchmarks/injection_short_point.py [--shifts 0,0.5,1]

The learned layer flags a text of fewer than ``SHORT_WORDS`` words only with more evidence than
a longer one (``Model.short_shift``, a logit of at least log 4: a probability of 0.8). This
script repeats the cross-source protocol of ``injection_eval.py`` (each attack source scored by
a model trained without it, each benign fold by one trained without its authors) and scores
every text once per short shift: the model's own, and each of ``--shifts`` in its place (0:
short texts held to the same point as long ones). Reported per shift: attacks detected (all,
and the short kind of ``injection_eval.KINDS``), benign messages flagged (all, and those of 15
words or fewer), and the benign sources over 4%. With the model's own shift
the figures are ``injection_eval.py``'s. Messages only. About 3 minutes on two cores.
"""

from __future__ import annotations

import argparse
import json
import sys
import zlib
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

from injection_eval import KINDS, rate

from agent_executor.guards.injection.learned import Model
from agent_executor.guards.injection.scoring import score_text

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "data"))
import train_injection_model as training  # noqa: E402

SHORT = KINDS["short (3-15 words)"]
OWN = "own"


def _variants(model: Model, shifts: Iterable[float]) -> dict[str, Model]:
    """``model`` with each short shift in place of its own (and as it is, under ``OWN``)."""
    data = json.loads(training.to_json(model))
    out = {OWN: model}
    for shift in shifts:
        out[str(shift)] = Model.from_json({**data, "short_shift": shift})
    return out


def sweep(shifts: Sequence[float]) -> list[str]:
    """The markdown table of every shift (see the module docstring)."""
    rows = [r for r in training.load_rows() if r["reader"] == "user"]
    counts: dict[str, Counter[str]] = {}
    by_source: dict[tuple[str, str], Counter[str]] = {}

    def count(model: Model, index: Iterable[int]) -> None:
        for name, variant in _variants(model, shifts).items():
            found = counts.setdefault(name, Counter())
            for i in index:
                row = rows[i]
                hit = score_text(row["text"], model=variant).score >= 0.5
                label = row["label"]
                found[label] += hit
                found[f"{label} of"] += 1
                short = SHORT(row) if label == "attack" else len(row["text"].split()) <= 15
                if short:
                    found[f"{label} short"] += hit
                    found[f"{label} short of"] += 1
                if label == "benign":
                    source = by_source.setdefault((name, row["source"]), Counter())
                    source["hit"] += hit
                    source["of"] += 1

    for source in sorted({r["source"] for r in rows if r["label"] == "attack"}):
        model = training.held_out(rows, [source], "user")
        count(
            model,
            [i for i, r in enumerate(rows) if r["source"] == source and r["label"] == "attack"],
        )
    benign = [i for i, r in enumerate(rows) if r["label"] == "benign"]
    fold = {i: zlib.crc32(training.group_of(rows[i]).encode()) % training.FOLDS for i in benign}
    for k in range(training.FOLDS):
        targets = [i for i in benign if fold[i] == k]
        drop = training.near_duplicates(rows, targets)
        count(training.train((r for i, r in enumerate(rows) if i not in drop), "user"), targets)

    lines = [
        "| short shift | attacks detected | short attacks detected | benign flagged "
        "| benign, ≤ 15 words | benign sources over 4% |",
        "|---|---|---|---|---|---|",
    ]
    for name, c in counts.items():
        over = sorted(
            f"{source} {s['hit']}/{s['of']}"
            for (n, source), s in by_source.items()
            if n == name and s["hit"] > 0.04 * s["of"]
        )
        lines.append(
            f"| {name} | {rate(c['attack'], c['attack of'])} "
            f"| {rate(c['attack short'], c['attack short of'])} "
            f"| {rate(c['benign'], c['benign of'])} "
            f"| {rate(c['benign short'], c['benign short of'])} | {', '.join(over) or '-'} |"
        )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shifts", default="0,0.5,1", help="comma-separated logits")
    args = parser.parse_args(argv)
    print("\n".join(sweep([float(s) for s in args.shifts.split(",")])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
