"""Trains the learned layer of InjectionGuard (``agent_executor/guards/injection/weights.json``).

    python tests/data/train_injection_model.py          # retrain on every source and write
    python tests/data/train_injection_model.py --check  # retrain and compare with the file

Reads the two corpora: ``injection_public.jsonl.gz`` (texts nobody here wrote; see
``collect_public_corpora.py`` and ``SOURCES.md``) and ``injection_corpus.jsonl`` (written for
this project; its obfuscated attacks are left to the rules, which decode them). Training is
deterministic: scikit-learn's ``liblinear`` logistic regression, balanced class weights, no
random state involved; the same inputs give the same file.

``train(rows)`` is also what ``benchmarks/injection_eval.py`` calls for the cross-source
evaluation: it retrains with one whole source left out and scores that source.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import re
import sys
import zlib
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT))

from agent_executor.guards.injection import learned  # noqa: E402
from agent_executor.guards.injection.learned import MODEL_FILE, Model, training_features  # noqa: E402
from agent_executor.guards.injection.normalisation import normalise, window  # noqa: E402
from agent_executor.guards.injection.scoring import score_text  # noqa: E402

PUBLIC = HERE / "injection_public.jsonl.gz"
OURS = HERE / "injection_corpus.jsonl"
OUT = Path(learned.__file__).with_name(MODEL_FILE)

C = 1.0
"""Inverse regularisation strength (liblinear, L2)."""
OPERATING_POINT = 0.7
"""The fitted probability at which the layer flags. The shipped bias is shifted by its logit,
so the layer's score crosses the guard's default threshold 0.5 exactly there (chosen on the
cross-source table in docs/guards.md: below it, false positives on unseen benign sources
climb faster than detection on unseen attack sources)."""
HELD_OUT = "promptfoo"
"""The attack source of the acceptance figure: forum-style jailbreak templates (DAN, developer
mode, dual responses), the kind the guard missed most, kept whole out of training."""
FOLDS = 5
MAX_FEATURES = 12_000
"""Features kept in the shipped table, the largest weights first (keeps the file small)."""
MIN_WEIGHT = 0.02
WINDOW = 20_000
MARKER = 1.0
"""The value of a structural marker (``#persona``, ...): not divided by the text's size."""


def load_rows() -> list[dict[str, str]]:
    """Every labelled row with a ``source``: public sources by name, ours as ``ours``."""
    public = gzip.decompress(PUBLIC.read_bytes()).decode("utf-8")
    rows = [json.loads(line) for line in public.split("\n") if line]
    for line in OURS.read_text(encoding="utf-8").split("\n"):
        if not line:
            continue
        row = json.loads(line)
        if row["category"].startswith("obfuscated"):
            continue
        rows.append({**row, "source": "ours", "kind": row["category"], "origin": "ours"})
    return rows


def _feature_dict(text: str) -> dict[str, float]:
    found = training_features(normalise(window(text, WINDOW)))
    words = [f for f in found if not f.startswith("#")]
    value = 1.0 / math.sqrt(max(1, len(words)))
    out = dict.fromkeys(words, value)
    out.update((f, MARKER) for f in found if f.startswith("#"))
    return out


def train(rows: Iterable[dict[str, str]]) -> Model:
    """A model fitted on ``rows`` (needs scikit-learn; inference does not)."""
    from sklearn.feature_extraction import DictVectorizer
    from sklearn.linear_model import LogisticRegression

    rows = list(rows)
    vectorizer = DictVectorizer()
    matrix = vectorizer.fit_transform([_feature_dict(r["text"]) for r in rows])
    matrix.indices = matrix.indices.astype("int32")  # liblinear takes 32-bit indices only
    matrix.indptr = matrix.indptr.astype("int32")
    labels = [1 if r["label"] == "attack" else 0 for r in rows]
    fit = LogisticRegression(C=C, solver="liblinear", class_weight="balanced", max_iter=1000)
    fit.fit(matrix, labels)
    names = vectorizer.get_feature_names_out()
    ranked = sorted(
        ((str(name), float(w)) for name, w in zip(names, fit.coef_[0], strict=True)),
        key=lambda item: (-abs(item[1]), item[0]),
    )
    kept = {name: round(w, 4) for name, w in ranked[:MAX_FEATURES] if abs(w) >= MIN_WEIGHT}
    shift = math.log(OPERATING_POINT / (1.0 - OPERATING_POINT))
    bias = round(float(fit.intercept_[0]) - shift, 4)
    return Model.from_json({"bias": bias, "weights": kept})


# --------------------------------------------------------------------------- evaluation

_WORD_RE = re.compile(r"[a-z0-9]+")


def _shingles(text: str) -> set[tuple[str, ...]]:
    words = _WORD_RE.findall(text.lower())
    return {tuple(words[i : i + 5]) for i in range(max(1, len(words) - 4))}


class _ShingleIndex:
    """The 5-word shingles of every row and, per shingle, the rows that have it."""

    def __init__(self, rows: Sequence[dict[str, str]]) -> None:
        self.rows = rows  # kept, so the id the cache is keyed on stays this list's
        self.shingles = [_shingles(r["text"]) for r in rows]
        self.rows_with: dict[tuple[str, ...], list[int]] = defaultdict(list)
        for i, grams in enumerate(self.shingles):
            for gram in grams:
                self.rows_with[gram].append(i)


_INDEXES: dict[int, _ShingleIndex] = {}


def _index(rows: Sequence[dict[str, str]]) -> _ShingleIndex:
    """The shingle index of ``rows``, built once per list (every held-out run reuses it)."""
    index = _INDEXES.get(id(rows))
    if index is None or index.rows is not rows:
        index = _INDEXES[id(rows)] = _ShingleIndex(rows)
    return index


def near_duplicates(rows: Sequence[dict[str, str]], targets: Iterable[int]) -> set[int]:
    """Rows sharing half or more of their 5-word shingles with a target row (targets too).

    Templates travel between collections (a DAN prompt is in PyRIT and in promptfoo); a
    source kept out of training must take its copies elsewhere with it, or the figure says
    how well the model remembers, not how well it generalises.
    """
    index = _index(rows)
    shingles, rows_with = index.shingles, index.rows_with
    found = set()
    for i in targets:
        shared: Counter[int] = Counter()
        for gram in shingles[i]:
            if len(rows_with[gram]) < 200:  # boilerplate n-grams say nothing about copying
                shared.update(rows_with[gram])
        for j, count in shared.items():
            if count >= 0.5 * min(len(shingles[i]), len(shingles[j])):
                found.add(j)
    return found


def group_of(row: dict[str, str]) -> str:
    """Who wrote a benign row: a repository, a contributor, a document, a package file."""
    origin = row["origin"]
    if row["source"] == "github-issues":
        match = re.search(r"github\.com/([^/]+/[^/]+)", origin)
        return match.group(1) if match else origin
    return f"{row['source']}:{origin}"


def rules_score(text: str) -> float:
    return score_text(text, learned=False).score


def combined(model: Model, text: str) -> float:
    """What the guard scores with ``model`` as its learned layer: the larger of the two."""
    return max(rules_score(text), model.probability(normalise(window(text, WINDOW))))


def held_out_attacks(rows: Sequence[dict[str, str]], source: str) -> list[float]:
    """Scores of ``source``'s attacks by a model trained without it or its near-copies."""
    targets = [i for i, r in enumerate(rows) if r["source"] == source and r["label"] == "attack"]
    drop = near_duplicates(rows, targets) | {i for i, r in enumerate(rows) if r["source"] == source}
    model = train(r for i, r in enumerate(rows) if i not in drop)
    return [combined(model, rows[i]["text"]) for i in targets]


def held_out_benign(rows: Sequence[dict[str, str]], folds: int = FOLDS) -> list[float]:
    """Scores of every benign row by a model that saw nothing by the same author.

    Benign rows are split into ``folds`` by :func:`group_of` (a CRC of the group, so the split
    is stable); each fold is scored by a model trained on everything else.
    """
    benign = [i for i, r in enumerate(rows) if r["label"] == "benign"]
    fold = {i: zlib.crc32(group_of(rows[i]).encode()) % folds for i in benign}
    scores: dict[int, float] = {}
    for k in range(folds):
        targets = [i for i in benign if fold[i] == k]
        drop = near_duplicates(rows, targets)
        model = train(r for i, r in enumerate(rows) if i not in drop)
        scores.update((i, combined(model, rows[i]["text"])) for i in targets)
    return [scores[i] for i in benign]


def to_json(model: Model) -> str:
    weights = {
        (" ".join(key) if isinstance(key, tuple) else key): weight
        for key, weight in sorted(model.weights.items(), key=lambda kv: str(kv[0]))
    }
    return json.dumps({"bias": model.bias, "weights": weights}, separators=(",", ":")) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="fail if the file is stale")
    args = parser.parse_args(argv)
    text = to_json(train(load_rows()))
    if args.check:
        same = OUT.exists() and OUT.read_text(encoding="utf-8") == text
        print("up to date" if same else f"{OUT} differs from a retrain")
        return 0 if same else 1
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT} ({len(text) // 1024} KiB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
