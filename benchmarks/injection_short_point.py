"""Whether the learned layer's operating point for short texts is what holds short attacks back.

    python benchmarks/injection_short_point.py [--shifts 0,0.5,1]
    python benchmarks/injection_short_point.py --shifts "" --bias=-0.5,0.5 [--reader tool]

The learned layer flags a text of fewer than ``SHORT_WORDS`` words only with more evidence than
a longer one (``Model.short_shift``, a logit of at least log 4: a probability of 0.8). This
script repeats the cross-source protocol of ``injection_eval.py`` (each attack source scored by
a model trained without it, each benign fold by one trained without its authors) and scores
every text once per short shift: the model's own, and each of ``--shifts`` in its place (0:
short texts held to the same point as long ones). Reported per shift: attacks detected (all,
and the short kind of ``injection_eval.KINDS``), benign messages flagged (all, and those of 15
words or fewer), and the benign sources over 4%. With the model's own shift
the figures are ``injection_eval.py``'s rows "all but ours-languages": the rows written here
(``training.WRITTEN_HERE``) are trained on but not counted. About 3 minutes on two cores.

``--bias`` moves the whole operating point instead: each model's bias moved by each logit (its
short shift as it is), a curve of detection against benign texts flagged that compares two
feature sets at the same false-positive rate, not only at the point each one's training
chooses. ``--reader tool`` runs the protocol of tool results instead of messages.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from injection_eval import KINDS, rate

from agent_executor.guards.injection.learned import Model, Reader
from agent_executor.guards.injection.scoring import score_text

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "data"))
import train_injection_model as training  # noqa: E402

SHORT = KINDS["short (3-15 words)"]
OWN = "own"


def _variants(model: Model, shifts: Iterable[float], biases: Iterable[float]) -> dict[str, Model]:
    """``model`` with each short shift in place of its own, with its bias moved by each of
    ``biases``, and as it is (under ``OWN``)."""
    data = json.loads(training.to_json(model))
    out = {OWN: model}
    for shift in shifts:
        out[str(shift)] = Model.from_json({**data, "short_shift": shift})
    for bias in biases:
        out[f"bias {bias:+}"] = Model.from_json({**data, "bias": model.bias + bias})
    return out


def _groups(row: dict[str, str]) -> Iterator[str]:
    """The counts a scored row adds to: its label, its label's short ones, a benign source."""
    label = row["label"]
    yield label
    if SHORT(row) if label == "attack" else len(row["text"].split()) <= 15:
        yield f"{label} short"
    if label == "benign":
        yield f"source {row['source']}"


def sweep(
    shifts: Sequence[float], biases: Sequence[float] = (), reader: Reader = "user"
) -> list[str]:
    """The markdown table of every shift and bias (see the module docstring)."""
    rows = training.load_rows()
    hits: dict[str, Counter[str]] = defaultdict(Counter)
    totals: Counter[str] = Counter()
    for model, index in training.protocol_models(rows, reader):
        index = [i for i in index if rows[i]["source"] != training.WRITTEN_HERE]
        totals.update(group for i in index for group in _groups(rows[i]))
        for name, variant in _variants(model, shifts, biases).items():
            for i in index:
                if score_text(rows[i]["text"], reader=reader, model=variant).score >= 0.5:
                    hits[name].update(_groups(rows[i]))

    def share(name: str, group: str) -> str:
        return rate(hits[name][group], totals[group])

    lines = [
        "| variant | attacks detected | short attacks detected | benign flagged "
        "| benign, ≤ 15 words | benign sources over 4% |",
        "|---|---|---|---|---|---|",
    ]
    for name in hits:
        over = sorted(
            f"{group.removeprefix('source ')} {found}/{totals[group]}"
            for group, found in hits[name].items()
            if group.startswith("source ") and found > 0.04 * totals[group]
        )
        lines.append(
            f"| {name} | {share(name, 'attack')} | {share(name, 'attack short')} "
            f"| {share(name, 'benign')} | {share(name, 'benign short')} "
            f"| {', '.join(over) or '-'} |"
        )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shifts", default="0,0.5,1", help="comma-separated logits")
    parser.add_argument("--bias", default="", help="comma-separated logits")
    parser.add_argument("--reader", choices=("user", "tool"), default="user")
    args = parser.parse_args(argv)
    shifts, biases = ([float(v) for v in text.split(",") if v] for text in (args.shifts, args.bias))
    print("\n".join(sweep(shifts, biases, args.reader)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
