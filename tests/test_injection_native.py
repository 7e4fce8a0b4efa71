"""The learned layer's window sums in C (``_learned_native.c``) against the Python ones.

``learned.Model`` sums a text's word, n-gram and pair weights in C where the install compiled
the extension, and in Python where it could not. Both must give the same value for every
text: checked here on every row of the public corpora of ``tests/data`` (texts nobody here
wrote, in fourteen languages and several scripts, long enough to be read in windows), each
under one of the two shipped models in turn, and on generated words and weights
(hypothesis), where every feature a word has is in the table. Under CI the extension must
have been built: a failed build would otherwise leave every test here comparing Python with
itself.
"""

from __future__ import annotations

import json
import os
import sys
from importlib import resources
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_executor.guards.injection import learned
from agent_executor.guards.injection.learned import MODEL_FILES, Model, Reader
from agent_executor.guards.injection.normalisation import clean, fold
from agent_executor.guards.injection.scoring import score_text

DATA = Path(__file__).parent / "data"
sys.path.insert(0, str(DATA))
from corpus_rows import read_rows  # noqa: E402

native = pytest.mark.skipif(
    not learned.NATIVE and not os.environ.get("CI"), reason="the C part was not built here"
)


def _models(reader: Reader) -> tuple[Model, Model]:
    text = resources.files(learned.__package__).joinpath(MODEL_FILES[reader]).read_text()
    data = json.loads(text)
    return Model.from_json(data), Model.from_json(data, native=False)


def _public_texts() -> list[str]:
    texts = []
    for path in sorted(DATA.glob("injection_*.jsonl.gz")):
        texts += [row["text"] for row in read_rows(path)]
    return texts


def test_the_c_part_is_built_under_ci() -> None:
    if os.environ.get("CI"):
        assert learned.NATIVE, "hatch_build.py did not compile _learned_native.c"


@native
@pytest.mark.parametrize("reader", ["user", "tool"])
def test_c_and_python_sum_every_public_text_alike(reader: Reader) -> None:
    in_c, in_python = _models(reader)
    texts = _public_texts()[reader == "tool" :: 2]  # half each: every text under one model
    windowed = 0
    for text in texts:
        norm = fold(clean(text))
        words = learned.tokens(norm)
        windowed += len(words) > in_c.window
        assert in_c.logit(norm, words) == pytest.approx(in_python.logit(norm, words), abs=1e-9)
    assert len(texts) > 15_000
    assert windowed > 500  # long texts, read in windows, are among them


@native
def test_the_guard_scores_alike_with_either() -> None:
    in_c, in_python = _models("user")
    for text in _public_texts()[::20]:
        assert score_text(text, model=in_c).score == pytest.approx(
            score_text(text, model=in_python).score, abs=1e-6
        )


_LETTERS = st.sampled_from("ab\u00e9\u0436\u4e2d\U0001f600<>")
_WORDS = st.text(_LETTERS, min_size=1, max_size=45)


@native
@settings(max_examples=300, deadline=None)
@given(
    words=st.lists(_WORDS, min_size=3, max_size=40),
    window=st.integers(min_value=1, max_value=12),
    bias=st.floats(-2, 2),
    scale=st.floats(0.01, 3),
)
def test_c_and_python_agree_on_any_words(
    words: list[str], window: int, bias: float, scale: float
) -> None:
    # Every feature of the first words gets a weight, so the sums are made of table hits:
    # their own features, their n-grams, the overlong words' shared one, the pairs.
    weights: dict[str | tuple[str, str], float] = {"=#long": -scale}
    for index, word in enumerate(words[: len(words) // 2]):
        for feature in learned.window_features([word], []):
            weights[feature] = scale * ((index % 5) - 2)
        weights[(word, words[index + 1])] = scale
    weights["#persona"] = 1.0  # markers are the Python model's: the table skips them
    norm = " ".join(words)
    in_c = Model(bias, weights, window)
    in_python = Model(bias, dict(weights), window, native=False)
    assert in_c.logit(norm, words) == pytest.approx(in_python.logit(norm, words), abs=1e-9)


@native
def test_windows_long_words_and_repeats() -> None:
    weights: dict[str | tuple[str, str], float] = {
        "=#long": 0.5,
        "=ignore": 1.0,
        "<ig": 0.25,
        ("ignore", "rules"): 2.0,
    }
    long_a, long_b = "x" * 41, "y" * 50
    cases = [
        ["ignore", "rules", "ignore", "rules"],  # repeats count once, words and pairs
        [long_a, long_b, long_a, "ignore"],  # two overlong words: two words, one feature
        ["a"] * 300 + ["ignore", "rules"] + ["b"] * 300,  # the instruction in the middle
        ["ignore", "rules"] + ["c"] * 10,
    ]
    for window in (1, 2, 3, 7, 256):
        in_c = Model(0.0, weights, window)
        in_python = Model(0.0, weights, window, native=False)
        for words in cases:
            norm = " ".join(words)
            assert in_c.logit(norm, words) == pytest.approx(in_python.logit(norm, words))


@native
def test_bad_arguments_are_refused() -> None:
    table = Model(0.0, {"=a": 1.0})._native
    assert table is not None
    with pytest.raises(TypeError):
        table.best(["a", 1], 4)  # type: ignore[list-item]
    with pytest.raises(TypeError):
        table.best(("a", "b"), 4)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        table.best([], 4)
    with pytest.raises(ValueError):
        table.best(["a"], 0)
    with pytest.raises(RuntimeError):
        type(table).__new__(type(table)).best(["a"], 1)
