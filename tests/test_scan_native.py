"""The gates' string search in C (``_scan_native.c``) against pyahocorasick's.

The rules' and the learned layer's gates find the strings their patterns need with one
Aho-Corasick automaton per gate: the C one where the install compiled it, pyahocorasick's
where it could not. Both must report the same keys, and the same occurrences in the same
order, for every text: checked here with the automata of the shipped gates (their needles
recorded as the gates are built) on every third row of the public corpora of ``tests/data``
(texts nobody here wrote, in fourteen languages and several scripts) in the views the gates
search, and on generated needles and texts whose characters take one, two and four bytes in CPython.
Under CI the extension must have been built: a failed build would otherwise leave every test
here comparing pyahocorasick with itself.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_executor.guards.injection import _parse_tree, learned, literal_gate, word_gate
from agent_executor.guards.injection._parse_tree import Searcher, automaton
from agent_executor.guards.injection.normalisation import clean, fold, letters_only, words_view
from agent_executor.guards.injection.rules import rule_set

DATA = Path(__file__).parent / "data"
sys.path.insert(0, str(DATA))
from corpus_rows import read_rows  # noqa: E402

native = pytest.mark.skipif(
    not _parse_tree.NATIVE and not os.environ.get("CI"), reason="the C part was not built here"
)


def test_the_c_part_is_built_under_ci() -> None:
    if os.environ.get("CI"):
        assert _parse_tree.NATIVE, "hatch_build.py did not compile _scan_native.c"


def _shipped_needles(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, str]]:
    """The needles of every shipped gate's automaton, recorded while the gates are built
    again from the shipped patterns."""
    rules = rule_set()  # built before the recording starts, if it was not yet
    recorded: list[dict[str, str]] = []

    def recording(needles: dict[str, str], native: bool = True) -> Searcher | None:
        recorded.append(dict(needles))
        return automaton(needles, native)

    monkeypatch.setattr(word_gate, "automaton", recording)
    monkeypatch.setattr(literal_gate, "automaton", recording)
    word_gate.WordGate([rule.pattern for rule in rules.word_rules])
    word_gate.WordGate([rule.pattern for rule in rules.norm_rules])
    literal_gate.LiteralGate([rule.pattern for rule in rules.norm_rules])
    literal_gate.LiteralGate([rule.pattern for rule in rules.script_rules])
    literal_gate.LiteralGate([pattern for _, _, pattern in rules.compact])
    literal_gate.LiteralGate([re.compile(pattern) for _, pattern in learned.STRUCTURE.values()])
    return [needles for needles in recorded if needles]


def _views(text: str) -> list[str]:
    """The texts the gates search: the normal form, its words view padded as ``Tokens``
    pads it, and its letters; and the raw text."""
    norm = fold(clean(text))
    return [text, norm, f" {words_view(norm)} ".replace("\n", " "), letters_only(norm)]


@native
def test_both_find_the_same_in_every_public_text(monkeypatch: pytest.MonkeyPatch) -> None:
    automata = [
        (automaton(needles), automaton(needles, native=False))
        for needles in _shipped_needles(monkeypatch)
    ]
    assert len(automata) == 6
    assert all(type(in_c) is not type(in_python) for in_c, in_python in automata)
    texts = [
        row["text"] for path in sorted(DATA.glob("injection_*.jsonl.gz")) for row in read_rows(path)
    ][::3]  # 12,000 texts, some 50,000 views: 7 s
    found = 0
    for number, text in enumerate(texts):
        for view in _views(text):
            for in_c, in_python in automata[number % 2 :: 2]:  # half each: every text searched
                assert in_c is not None and in_python is not None
                keys = in_c.found(view)
                assert keys == in_python.found(view)
                found += bool(keys)
                if number % 50 == 0:
                    assert list(in_c.iter(view)) == list(in_python.iter(view))
    assert len(texts) > 10_000
    assert found > 30_000  # most views hold some needle: the search is not trivially empty


_CHARS = "ab \u00e9\u4e2d\U0001f600"
"""Characters of one, two and four bytes in CPython's strings, and a space."""


@native
@settings(max_examples=400, deadline=None)
@given(
    needles=st.dictionaries(
        st.text(_CHARS, min_size=1, max_size=5),
        st.sampled_from(["k1", "k2", "k3", "k4"]),
        min_size=1,
    ),
    texts=st.lists(st.text(_CHARS + "xy", max_size=40), min_size=1, max_size=5),
)
def test_both_find_the_same_for_any_needles(needles: dict[str, str], texts: list[str]) -> None:
    in_c, in_python = automaton(needles), automaton(needles, native=False)
    assert in_c is not None and in_python is not None
    for text in texts:
        occurrences = list(in_python.iter(text))
        assert list(in_c.iter(text)) == occurrences
        assert in_c.found(text) == {key for _, key in occurrences}


@native
def test_a_needle_inside_another_and_at_the_ends_are_each_found() -> None:
    in_c = automaton({"she": "she", "he": "he", "hers": "hers", "e": "e", "x": "x"})
    assert in_c is not None
    assert in_c.found("ushers") == {"she", "he", "hers", "e"}
    assert list(in_c.iter("ushers")) == [(3, "she"), (3, "he"), (3, "e"), (5, "hers")]
    assert in_c.found("x") == {"x"}
    assert in_c.found("") == set()


@native
@pytest.mark.parametrize(
    ("pairs", "error"),
    [
        ([("", "k")], ValueError),
        ([("ab", "k", "extra")], TypeError),
        ([b"ab"], TypeError),
        ([(b"ab", "k")], ValueError),
    ],
)
def test_bad_needles_are_refused(pairs: list[Any], error: type[Exception]) -> None:
    from agent_executor.guards.injection._scan_native import Strings

    with pytest.raises(error):
        Strings(pairs)


@native
def test_a_text_that_is_not_a_string_is_refused() -> None:
    in_c = automaton({"ab": "ab"})
    assert in_c is not None
    with pytest.raises(TypeError):
        in_c.found(b"ab")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        in_c.iter(None)  # type: ignore[arg-type]


@native
def test_an_automaton_never_initialised_raises_instead_of_crashing() -> None:
    from agent_executor.guards.injection._scan_native import Strings

    bare = Strings.__new__(Strings)
    with pytest.raises(ValueError, match="not initialised"):
        bare.found("ab")
    with pytest.raises(ValueError, match="not initialised"):
        bare.iter("ab")
