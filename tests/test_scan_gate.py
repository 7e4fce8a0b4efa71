"""Which word rules may run, chosen in C (``_scan_native.Gate``) against the Python choice.

:meth:`WordGate.runnable` picks the rules whose words a text holds. Where the install compiled
``_scan_native.c`` the choice is made there, over key numbers; elsewhere Python makes it over
sets of strings. Both must pick the same rules, in the same order, for every text: checked
here with the two shipped word gates on every third row of the public corpora of
``tests/data`` (texts nobody here wrote, in fourteen languages) and their leetspeak readings,
and with gates built from generated patterns on generated texts.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_executor.guards.injection import _parse_tree
from agent_executor.guards.injection.normalisation import clean, fold, leet_readings, words_view
from agent_executor.guards.injection.rules import rule_set
from agent_executor.guards.injection.scoring import _known_words
from agent_executor.guards.injection.word_gate import Tokens, WordGate

DATA = Path(__file__).parent / "data"
sys.path.insert(0, str(DATA))
from corpus_rows import read_rows  # noqa: E402

native = pytest.mark.skipif(
    _parse_tree.Gate is None and not os.environ.get("CI"), reason="the C part was not built here"
)


def test_the_c_gate_is_built_under_ci() -> None:
    if os.environ.get("CI"):
        assert _parse_tree.Gate is not None, "hatch_build.py did not compile _scan_native.c"


@contextmanager
def _in_python(gate: WordGate) -> Iterator[None]:
    """``gate`` choosing as an install without the C part does."""
    chooser = gate._gate
    gate._gate = None
    try:
        yield
    finally:
        gate._gate = chooser


def _both(gate: WordGate, tokens: Tokens) -> tuple[list[int], list[int]]:
    in_c = gate.runnable(tokens)
    with _in_python(gate):
        in_python = gate.runnable(tokens)
    return in_c, in_python


@native
def test_both_choose_the_same_rules_for_every_public_text() -> None:
    rules = rule_set()
    gates = (rules.word_gate, rules.norm_starts)
    assert all(gate._gate is not None for gate in gates)
    texts = [
        row["text"] for path in sorted(DATA.glob("injection_*.jsonl.gz")) for row in read_rows(path)
    ][::3]
    chosen = 0
    for text in texts:
        norm = fold(clean(text))
        for view in [norm, *leet_readings(norm, _known_words, 99)]:
            words = words_view(view)
            for gate in gates:
                in_c, in_python = _both(gate, gate.tokens(words))
                assert in_c == in_python, words[:200]
                chosen += bool(in_c)
    assert len(texts) > 10_000
    assert chosen > 10_000  # many texts hold some rule's words: the choice is not always empty


_WORDS = ["ignore", "ignored", "all", "previous", "prior", "rules", "you", "now", "dan", "sys"]


@st.composite
def _patterns(draw: st.DrawFn) -> list[re.Pattern[str]]:
    """Patterns over a few words: alternatives, optional words, prefixes, gaps of words,
    anchored at a word start or not."""
    out = []
    for _ in range(draw(st.integers(1, 12))):
        body = ""
        for number in range(draw(st.integers(1, 4))):
            if number:
                body += draw(st.sampled_from([r"\s+", r"\s+(?:\w+\s+){0,2}", " "]))
            words = draw(st.lists(st.sampled_from(_WORDS), min_size=1, max_size=3, unique=True))
            body += "(?:" + "|".join(words) + ")" + draw(st.sampled_from(["", "?", r"\w*"]))
        out.append(re.compile((r"\b" if draw(st.booleans()) else "") + body))
    return out


@native
@settings(max_examples=300, deadline=None)
@given(
    patterns=_patterns(),
    texts=st.lists(
        st.lists(st.sampled_from([*_WORDS, "the", "a", "ignorex", "prio"]), max_size=12).map(
            " ".join
        ),
        min_size=1,
        max_size=5,
    ),
)
def test_both_choose_the_same_for_any_patterns(
    patterns: list[re.Pattern[str]], texts: list[str]
) -> None:
    gate = WordGate(patterns)
    for text in texts:
        in_c, in_python = _both(gate, gate.tokens(text))
        assert in_c == in_python


@native
def test_a_gate_of_more_patterns_and_keys_than_fit_on_the_stack_chooses_the_same() -> None:
    from agent_executor.guards.injection._scan_native import Gate

    keys = [f"k{n}" for n in range(5_000)]
    starts = [[n, (n + 1) % 5_000] for n in range(5_000)]
    needs = [None if n % 2 else [[[(n + 7) % 5_000]]] for n in range(5_000)]
    keyed = [[n] for n in range(5_000)]
    gate = Gate(keys, starts, needs, keyed, [4_999])
    # 0: k0 starts it, k7 is its need; 3 and 7 need nothing more; 4,998 lacks k5; 4,999 is
    # looked at always and k0 starts it
    assert gate.runnable({"k0", "k7", "k4998", "k3"}) == [0, 3, 7, 4_999]
    assert gate.runnable(["k4999"]) == [4_999]
    assert gate.runnable(set()) == []


@native
@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ((["a"], [None], [None], [[]], [1]), ValueError),  # a pattern that does not exist
        ((["a"], [[1]], [None], [[0]], []), ValueError),  # a key that does not exist
        ((["a"], [None, None], [None], [[0]], []), ValueError),  # needs not per pattern
        ((["a"], [None], [None], [], []), ValueError),  # keyed not per key
        ((["a"], [None], [[["x"]]], [[0]], []), TypeError),
        ((["a"], [None], [None], [[0]]), TypeError),
    ],
)
def test_bad_gates_are_refused(arguments: tuple[Any, ...], error: type[Exception]) -> None:
    from agent_executor.guards.injection._scan_native import Gate

    with pytest.raises(error):
        Gate(*arguments)


@native
def test_a_gate_never_initialised_or_initialised_twice_raises_instead_of_crashing() -> None:
    from agent_executor.guards.injection._scan_native import Gate

    bare = Gate.__new__(Gate)
    with pytest.raises(ValueError, match="not initialised"):
        bare.runnable({"a"})
    gate = Gate(["a"], [None], [None], [[0]], [])
    with pytest.raises(RuntimeError, match="once"):
        gate.__init__(["a"], [None], [None], [[0]], [])  # type: ignore[misc]
    assert gate.runnable({"a"}) == [0]
    with pytest.raises(TypeError):
        gate.runnable(3)  # type: ignore[arg-type]
