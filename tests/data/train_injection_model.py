"""Trains the learned layer of InjectionGuard (``weights.json`` and ``weights_tools.json``).

    python tests/data/train_injection_model.py          # retrain on every source and write
    python tests/data/train_injection_model.py --check  # retrain and compare with the files

Reads the corpora (texts nobody here wrote; see ``SOURCES.md``): ``injection_public.jsonl.gz``
(jailbreak templates and hard benign texts), ``injection_multilingual.jsonl.gz`` (attacks and
ordinary requests in thirteen languages), ``injection_direct.jsonl.gz`` (short direct attacks,
forged turns, exfiltration, encoded attacks; short benign messages),
``injection_indirect.jsonl.gz`` (instructions planted in tool outputs; benign tool outputs),
``injection_overdefense.jsonl.gz`` (NotInject: benign prompts full of attack words, measured
only; see ``EVAL_ONLY``), ``injection_phrasings.jsonl.gz`` (short injections in seven languages,
Italian and Portuguese among them, and a Turkish guardrail's test set), and
``injection_corpus.jsonl`` (written for this project, the ``ours`` source) and
``injection_languages.jsonl`` (short attacks and look-alikes in thirteen languages, written for
this project, the ``ours-languages`` source; ``build_language_corpus.py``). Rows of kind
``encoded/...`` are never trained on: decoding them is the guard's readings' job, and they are
the table that says whether it works.

Two models: ``user`` (trained on what users send) and ``tool`` (trained on everything, with the
operating point chosen on tool outputs). Training is deterministic: scikit-learn's
``liblinear`` logistic regression, balanced class weights, a fixed random state (the dual
solver shuffles).

**The operating point is chosen without the rows it is reported on.** ``train(rows, reader)``
fits the model, then splits the same rows into ``INNER_FOLDS`` folds by author
(:func:`group_of`), scores each fold with a model fitted on the others, and sets the threshold
where ``TARGET_FP`` of those out-of-fold benign texts of the reader's kind would be flagged.
``benchmarks/injection_eval.py`` calls ``train`` with a whole source left out, so a source's
figure is measured with a threshold that never saw it either.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import multiprocessing
import os
import re
import sys
import zlib
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT))

from corpus_rows import read_rows  # noqa: E402

from agent_executor.guards.injection import learned  # noqa: E402
from agent_executor.guards.injection.learned import (  # noqa: E402
    MODEL_FILES,
    SHORT_WORDS,
    WINDOW_WORDS,
    Model,
    Reader,
    tokens,
    training_features,
)
from agent_executor.guards.injection.normalisation import normalise  # noqa: E402
from agent_executor.guards.injection.scoring import MAX_SCAN_CHARS, score_text  # noqa: E402

CORPORA = {
    "public": HERE / "injection_public.jsonl.gz",
    "multilingual": HERE / "injection_multilingual.jsonl.gz",
    "direct": HERE / "injection_direct.jsonl.gz",
    "indirect": HERE / "injection_indirect.jsonl.gz",
    "overdefense": HERE / "injection_overdefense.jsonl.gz",
    "phrasings": HERE / "injection_phrasings.jsonl.gz",
}
OURS = HERE / "injection_corpus.jsonl"
LANGUAGES = HERE / "injection_languages.jsonl"
WRITTEN_HERE = "ours-languages"
"""The source of ``LANGUAGES``: trained on and measured like any other, but left out of the
tables by kind and by language, whose figures are those of public sources."""
OUT = {reader: Path(learned.__file__).with_name(name) for reader, name in MODEL_FILES.items()}

Row = dict[str, str]

C = float(os.environ.get("INJECTION_C", "1.0"))
"""Inverse regularisation strength (liblinear, L2)."""
TARGET_FP = {
    "user": float(os.environ.get("INJECTION_FP_USER", "0.08")),
    "tool": float(os.environ.get("INJECTION_FP_TOOL", "0.035")),
}
"""Share of out-of-fold benign texts of the reader's kind the learned layer may flag, in every
benign source of at least ``MIN_SOURCE`` texts (the acceptance bound is per source)."""
TARGET_SHORT_FP = float(os.environ.get("INJECTION_FP_SHORT", "0.01"))
"""The same bound for texts of fewer than ``SHORT_WORDS`` words, stricter: everyday short
messages ("tell me everything", "ignore the typo above") are many, and the benign corpora hold
few of the kind that look like an attack."""
SHORT_MARGIN = math.log(0.8 / 0.2)
"""At least this much more evidence for a short text: the layer flags one at a probability of
0.8, not 0.5. The benign corpora hold few short everyday messages that look like an attack, so
the bound above alone leaves "tell me everything" or "ignore the typo above" flagged; 0.8 was
chosen on such messages written here, not on any corpus."""
MIN_SOURCE = 50
INNER_FOLDS = 3
FOLDS = 5
MAX_FEATURES = 40_000
"""Features kept in a shipped table, the largest weights first (keeps the files small)."""
MIN_WEIGHT = 0.02
HELD_OUT = "promptfoo"
"""The attack source of the first acceptance figure: forum-style jailbreak templates."""


def load_rows() -> list[Row]:
    """Every labelled row with ``source``, ``kind``, ``lang`` and ``reader`` (user or tool)."""
    rows: list[Row] = []
    for name, path in CORPORA.items():
        if not path.exists():
            continue
        for row in read_rows(path):
            if row["label"] not in ("attack", "benign"):
                continue
            row.setdefault("lang", "en")
            row["reader"] = "tool" if name == "indirect" else "user"
            rows.append(row)
    for row in read_rows(OURS):
        if row["category"].startswith("obfuscated"):
            continue
        rows.append(
            {
                **row,
                "source": "ours",
                "kind": row["category"],
                "origin": "ours",
                "lang": "en",
                "reader": "user",
            }
        )
    for row in read_rows(LANGUAGES):
        rows.append({**row, "source": WRITTEN_HERE, "origin": row["lang"], "reader": "user"})
    return rows


EVAL_ONLY = {"promptmap", "awesome-prompts-brasil", "notinject"}
"""Measured on, never trained on: the GPL-3.0 sources (the weights ship under the project's
licence), and NotInject, benign prompts built around attack words (``collect_overdefense.py``),
kept as a check of over-defense that nothing here was fitted to."""


def trainable(row: Row) -> bool:
    return row["source"] not in EVAL_ONLY and not row["kind"].startswith("encoded")


class _Store:
    """Every text's windows as rows of one sparse matrix over one vocabulary.

    Features are computed once per text; a fit takes its rows out of the matrix by index, so
    the dozens of retrains of the cross-source evaluation cost a solver run each, not a
    re-reading of the corpus.
    """

    def __init__(self) -> None:
        self.vocabulary: dict[str, int] = {}
        self.names: list[str] = []
        self.indptr: list[int] = [0]
        self.indices: list[int] = []
        self.data: list[float] = []
        self.spans: dict[tuple[int, str], tuple[int, int]] = {}
        self.lengths: dict[str, int] = {}
        self._matrix: Any = None

    def span(self, text: str, size: int) -> tuple[int, int]:
        """The matrix rows of ``text``'s windows of ``size`` words (added on first sight)."""
        found = self.spans.get((size, text))
        if found is not None:
            return found
        first = len(self.indptr) - 1
        vocabulary, names = self.vocabulary, self.names
        norm = normalise(text[:MAX_SCAN_CHARS])
        self.lengths[text] = len(tokens(norm))
        for window in training_features(norm, size):
            for name, value in window.items():
                index = vocabulary.get(name)
                if index is None:
                    index = vocabulary[name] = len(names)
                    names.append(name)
                self.indices.append(index)
                self.data.append(value)
            self.indptr.append(len(self.indices))
        self._matrix = None
        found = self.spans[size, text] = (first, len(self.indptr) - 1)
        return found

    def matrix(self) -> Any:
        if self._matrix is None or self._matrix.shape[1] != len(self.names):
            import numpy as np
            from scipy.sparse import csr_matrix

            self._matrix = csr_matrix(
                (
                    np.asarray(self.data),
                    np.asarray(self.indices, dtype=np.int32),
                    np.asarray(self.indptr, dtype=np.int32),
                ),
                shape=(len(self.indptr) - 1, len(self.names)),
            )
        return self._matrix


_STORE = _Store()


def _windows(rows: Sequence[Row], size: int) -> tuple[list[int], list[int], list[float]]:
    """Matrix rows, labels and sample weights of ``rows``' windows.

    A text weighs as much in all its windows as a short text in its one; a source of ``n``
    texts of a label weighs ``sqrt(n)``, so three thousand voice-assistant commands do not
    drown the two hundred hard negatives that teach the model something.
    """
    ids: list[int] = []
    labels: list[int] = []
    weights: list[float] = []
    sizes = Counter((r["source"], r["label"]) for r in rows)
    for row in rows:
        first, last = _STORE.span(row["text"], size)
        count = last - first
        share = 1.0 / math.sqrt(sizes[row["source"], row["label"]])
        ids += range(first, last)
        labels += [1 if row["label"] == "attack" else 0] * count
        weights += [share / count] * count
    return ids, labels, weights


def _fit(rows: Sequence[Row], size: int) -> tuple[Any, float]:
    """Coefficients (over the store's vocabulary) and intercept fitted on ``rows``' windows
    of ``size`` words."""
    from sklearn.linear_model import LogisticRegression

    ids, labels, weights = _windows(rows, size)
    matrix = _STORE.matrix()[ids]
    fit = LogisticRegression(
        C=C,
        solver="liblinear",
        dual=True,
        class_weight="balanced",
        max_iter=1000,
        random_state=0,
    )
    fit.fit(matrix, labels, sample_weight=weights)
    coef = fit.coef_[0]
    if len(coef) < len(_STORE.names):  # texts added after the matrix was taken
        import numpy as np

        coef = np.concatenate([coef, np.zeros(len(_STORE.names) - len(coef))])
    return coef, float(fit.intercept_[0])


def _model(
    coef: Any, intercept: float, size: int, shift: float = 0.0, short_shift: float = 0.0
) -> Model:
    import numpy as np

    order = np.lexsort((np.arange(len(coef)), -np.abs(coef)))[:MAX_FEATURES]
    names = _STORE.names
    kept = {names[i]: round(float(coef[i]), 4) for i in order if abs(coef[i]) >= MIN_WEIGHT}
    return Model.from_json(
        {
            "bias": round(intercept - shift, 4),
            "short_shift": round(short_shift, 4),
            "weights": kept,
            "window": size,
        }
    )


def _threshold(rows: Sequence[Row], reader: Reader) -> tuple[float, float]:
    """The decision values at which ``TARGET_FP`` of any source's out-of-fold benign texts
    are flagged: over all texts, and over short ones (fewer than ``SHORT_WORDS`` words).

    Short texts get their own point because a few words weigh more in them: "tell me
    everything" is one word pair from an extraction attempt.

    The rows written here (``WRITTEN_HERE``) are trained on but set no bound: one author's
    look-alikes, each kind of them in one fold (the account notices are all English), so out of
    fold they measure a kind the model never saw rather than an unseen author of a known kind;
    with the 32 notices among them the bound moved the whole point (docs/benchmarks.md).

    Out-of-fold values come straight from the matrix (the highest window of each text, the
    whole fitted table), which is what the shipped layer computes up to its pruning.
    """
    import numpy as np

    size = WINDOW_WORDS[reader]
    fold = [zlib.crc32(group_of(r).encode()) % INNER_FOLDS for r in rows]
    values: list[float] = []
    kept: list[Row] = []
    for k in range(INNER_FOLDS):
        coef, intercept = _fit([r for r, f in zip(rows, fold, strict=True) if f != k], size)
        scored = [
            r
            for r, f in zip(rows, fold, strict=True)
            if f == k
            and r["label"] == "benign"
            and r["reader"] == reader
            and r["source"] != WRITTEN_HERE
        ]
        if not scored:
            continue
        kept += scored
        ids, _, _ = _windows(scored, size)
        decisions = _STORE.matrix()[ids] @ coef + intercept
        position = 0
        for row in scored:
            first, last = _STORE.span(row["text"], size)
            values.append(float(np.max(decisions[position : position + last - first])))
            position += last - first
    by_source: dict[str, list[float]] = defaultdict(list)
    short_by_source: dict[str, list[float]] = defaultdict(list)
    for row, value in zip(kept, values, strict=True):
        by_source[row["source"]].append(value)
        if _STORE.lengths[row["text"]] < SHORT_WORDS:
            short_by_source[row["source"]].append(value)
    return _bound(by_source, TARGET_FP[reader]), _bound(short_by_source, TARGET_SHORT_FP)


def _bound(by_source: dict[str, list[float]], target: float) -> float:
    thresholds = [0.0]
    for found in by_source.values():
        if len(found) >= MIN_SOURCE:
            found.sort(reverse=True)
            thresholds.append(found[int(target * len(found))] + 1e-4)
    return max(thresholds)


def train(rows: Iterable[Row], reader: Reader = "user") -> Model:
    """A model for ``reader`` fitted on ``rows``, its operating point folded into the bias."""
    pool = [r for r in rows if trainable(r) and (reader == "tool" or r["reader"] == "user")]
    size = WINDOW_WORDS[reader]
    for row in pool:
        _STORE.span(row["text"], size)
    coef, intercept = _fit(pool, size)
    shift, short = _threshold(pool, reader)
    return _model(coef, intercept, size, shift, max(SHORT_MARGIN, short - shift))


# --------------------------------------------------------------------------- evaluation

_WORD_RE = re.compile(r"\w+")


def _shingles(text: str) -> set[tuple[str, ...]]:
    words = _WORD_RE.findall(text.lower())
    return {tuple(words[i : i + 5]) for i in range(max(1, len(words) - 4))}


class _ShingleIndex:
    """The 5-word shingles of every row and, per shingle, the rows that have it."""

    def __init__(self, rows: Sequence[Row]) -> None:
        self.rows = rows  # kept, so the id the cache is keyed on stays this list's
        self.shingles = [_shingles(r["text"]) for r in rows]
        self.rows_with: dict[tuple[str, ...], list[int]] = defaultdict(list)
        for i, grams in enumerate(self.shingles):
            for gram in grams:
                self.rows_with[gram].append(i)


_INDEXES: dict[int, _ShingleIndex] = {}


def _index(rows: Sequence[Row]) -> _ShingleIndex:
    """The shingle index of ``rows``, built once per list (every held-out run reuses it)."""
    index = _INDEXES.get(id(rows))
    if index is None or index.rows is not rows:
        index = _INDEXES[id(rows)] = _ShingleIndex(rows)
    return index


def near_duplicates(rows: Sequence[Row], targets: Iterable[int]) -> set[int]:
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


def group_of(row: Row) -> str:
    """Who wrote a row: a repository, a contributor, a document, a package file."""
    origin = row["origin"]
    if row["source"] == "github-issues":
        match = re.search(r"github\.com/([^/]+/[^/]+)", origin)
        return match.group(1) if match else origin
    return f"{row['source']}:{origin}"


def combined(model: Model, text: str, reader: Reader = "user") -> float:
    """What the guard scores with ``model`` as its learned layer."""
    return score_text(text, reader=reader, model=model).score


def held_out(rows: Sequence[Row], sources: Iterable[str], reader: Reader) -> Model:
    """A model for ``reader`` trained without ``sources`` and their near-copies elsewhere."""
    sources = set(sources)
    targets = [i for i, r in enumerate(rows) if r["source"] in sources]
    drop = near_duplicates(rows, targets) | set(targets)
    return train((r for i, r in enumerate(rows) if i not in drop), reader)


def held_out_attacks(rows: Sequence[Row], source: str, reader: Reader = "user") -> list[float]:
    """Scores of ``source``'s attacks by a model trained without it or its near-copies."""
    return list(_held_out_attacks(rows, source, reader).values())


def _held_out_attacks(rows: Sequence[Row], source: str, reader: Reader) -> dict[int, float]:
    """:func:`held_out_attacks` keyed by row index, in row order."""
    model = held_out(rows, [source], reader)
    return {i: combined(model, rows[i]["text"], reader) for i in _attacks(rows, source, reader)}


def _attacks(rows: Sequence[Row], source: str, reader: Reader) -> list[int]:
    """The indices of ``source``'s attacks on ``reader``, in row order."""
    return [
        i
        for i, r in enumerate(rows)
        if r["source"] == source and r["label"] == "attack" and r["reader"] == reader
    ]


def acceptance(rows: Sequence[Row], workers: int | None = None) -> dict[str, float]:
    """The figures ``tests/test_injection_learned.py`` holds, each on data its model never saw.

    Four retrains: the forum templates (``HELD_OUT``) and one indirect-injection publisher
    kept out whole, and one fold of benign authors for each reader. liblinear uses one core,
    so with ``workers`` of 2 or more (the default on two cores or more) each reader's two run
    in a process of their own: a process computes the features of its reader's window size
    once, where a shared pool had both processes compute both sizes (on two quiet cores:
    150 s of CPU against 215, 100 s against 112 of wall time; the features are most of a
    retrain).
    """
    jobs: list[tuple[str, str, Reader]] = [  # the longest first in each reader
        ("indirect (injecagent) kept out", "injecagent", "tool"),
        ("tool results: benign flagged, unseen authors", "", "tool"),
        (f"forum templates ({HELD_OUT}) kept out", HELD_OUT, "user"),
        ("messages: benign flagged, unseen authors", "", "user"),
    ]
    workers = workers or min(2, os.cpu_count() or 1)
    if workers == 1:
        return {title: _figure(rows, source, reader) for title, source, reader in jobs}
    context = multiprocessing.get_context("spawn")  # no fork of a process that may run threads
    with contextlib.ExitStack() as stack:
        pools = {
            reader: stack.enter_context(
                ProcessPoolExecutor(
                    1, mp_context=context, initializer=_keep_rows, initargs=(list(rows),)
                )
            )
            for reader in ("tool", "user")
        }
        futures = {
            title: pools[reader].submit(_figure_of_kept, source, reader)
            for title, source, reader in jobs
        }
        return {title: future.result() for title, future in futures.items()}


_kept: list[Row] = []


def _keep_rows(rows: list[Row]) -> None:
    _kept[:] = rows


def _figure_of_kept(source: str, reader: Reader) -> float:
    return _figure(_kept, source, reader)


def _figure(rows: Sequence[Row], source: str, reader: Reader) -> float:
    """Share of ``source``'s attacks detected with it kept out, or with ``source`` empty, the
    share of benign texts of fold 0 flagged by a model that never saw their authors."""
    if source:
        scores = held_out_attacks(rows, source, reader)
    else:
        scores = list(held_out_benign(rows, reader=reader, only_fold=0).values())
    return sum(score >= 0.5 for score in scores) / len(scores)


def held_out_benign(
    rows: Sequence[Row], folds: int = FOLDS, reader: Reader = "user", only_fold: int | None = None
) -> dict[int, float]:
    """Scores of every benign row of ``reader``'s kind by a model that never saw its author
    (see :func:`_benign_folds`)."""
    return {
        i: combined(model, rows[i]["text"], reader)
        for model, targets in _benign_folds(rows, folds, reader, only_fold)
        for i in targets
    }


def _benign_folds(
    rows: Sequence[Row], folds: int, reader: Reader, only_fold: int | None = None
) -> Iterator[tuple[Model, list[int]]]:
    """For each fold of the benign rows of ``reader``'s kind, a model trained on everything
    else, and the fold. Benign rows are split into ``folds`` by :func:`group_of` (a CRC of the
    group, so the split is stable)."""
    benign = [i for i, r in enumerate(rows) if r["label"] == "benign" and r["reader"] == reader]
    fold = {i: zlib.crc32(group_of(rows[i]).encode()) % folds for i in benign}
    for k in range(folds) if only_fold is None else [only_fold]:
        targets = [i for i in benign if fold[i] == k]
        drop = near_duplicates(rows, targets)
        yield train((r for i, r in enumerate(rows) if i not in drop), reader), targets


def protocol_models(
    rows: Sequence[Row], reader: Reader, sources: Iterable[str] | None = None
) -> Iterator[tuple[Model, list[int]]]:
    """Every model of the held-out protocol for ``reader``, with the rows it scores: for each
    attack source (those of ``sources``, or all), a model trained without the source and its
    near-copies, and the source's attacks; then one model per fold of benign authors."""
    attack_sources = sorted(
        {r["source"] for r in rows if r["label"] == "attack" and r["reader"] == reader}
    )
    for source in attack_sources:
        if sources is None or source in sources:
            yield held_out(rows, [source], reader), _attacks(rows, source, reader)
    yield from _benign_folds(rows, FOLDS, reader)


def evaluate(rows: Sequence[Row], sources: Iterable[str] | None = None) -> dict[int, float]:
    """Every row's score by a model that never saw it: the basis of every table.

    An attack is scored by the model of its reader trained without its whole source (and the
    source's near-copies elsewhere); a benign text by a model trained without its author's
    fold. ``sources`` limits the attack sources evaluated (all by default).
    """
    scores: dict[int, float] = {}
    for reader in ("user", "tool"):
        for model, index in protocol_models(rows, reader, sources):
            scores.update((i, combined(model, rows[i]["text"], reader)) for i in index)
    return scores


def to_json(model: Model) -> str:
    weights = {
        (" ".join(key) if isinstance(key, tuple) else key): weight
        for key, weight in sorted(model.weights.items(), key=lambda kv: str(kv[0]))
    }
    data: dict[str, Any] = {
        "bias": model.bias,
        "short_shift": model.short_shift,
        "window": model.window,
        "weights": weights,
    }
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="fail if a file is stale")
    args = parser.parse_args(argv)
    rows = load_rows()
    stale = 0
    for reader, path in OUT.items():
        text = to_json(train(rows, reader))
        if args.check:
            same = path.exists() and path.read_text(encoding="utf-8") == text
            print(f"{path.name}: " + ("up to date" if same else "differs from a retrain"))
            stale += not same
        else:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path} ({len(text.encode()) // 1024} KiB)")
    return 1 if stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
