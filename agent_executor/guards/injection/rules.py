"""The phrase rules of the injection score, read from ``rules.json`` once at import.

The rules are data, not code: the table is what grows with every new attack phrasing, and it
reads best as patterns alone, without the code that runs them. ``rules.json`` says how its
entries are written (its ``about``); this module joins, expands and compiles them, and runs
them on a text: the word rules only where :class:`~.word_gate.WordGate` says the words they
need occur, and only at the words they can start with; the rules of the punctuated text only
when :class:`~.literal_gate.LiteralGate` finds the strings they need.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any, Final, TypeAlias

from .categories import RULE_CATEGORIES
from .literal_gate import LiteralGate
from .normalisation import normalise
from .word_gate import WordGate

__all__ = [
    "COMPACT",
    "COMPACT_GATE",
    "FOLLOW_RE",
    "NORM_GATE",
    "NORM_RULES",
    "QUESTION_RE",
    "RULES",
    "RULES_FILE",
    "TOPIC_RE",
    "WORD_GATE",
    "WORD_RULES",
    "Rule",
    "match_compact",
    "match_rules",
    "words",
]

RULES_FILE: Final = "rules.json"

_PLACEHOLDER_RE = re.compile(r"\{([A-Z][A-Z0-9_]*)\}")

_Pattern: TypeAlias = "str | list[str]"  # one string, or pieces joined as they are
_Expand: TypeAlias = Callable[[_Pattern], str]


@dataclass(frozen=True, slots=True)
class Rule:
    """One pattern, the category it signals and how strongly (a weight in (0, 1))."""

    category: str
    weight: float
    pattern: re.Pattern[str]
    on_words: bool  # True: matched against the text with punctuation turned into spaces
    non_latin: bool = False  # True: can only match text with letters of another script


def words(*alternatives: str) -> str:
    r"""Alternatives for the words view: a space in a pattern matches any run of whitespace."""
    body = "|".join(f"(?:{alt})" for alt in alternatives)
    return rf"\b(?:{body})\b".replace(" ", r"\s+")


def _joined(pattern: _Pattern) -> str:
    """A pattern written as one string or as a list of pieces."""
    return pattern if isinstance(pattern, str) else "".join(pattern)


def _expander(fragments: Mapping[str, _Pattern]) -> _Expand:
    """A function that replaces every ``{NAME}`` in a pattern by the fragment ``NAME``."""
    joined = {name: _joined(fragment) for name, fragment in fragments.items()}

    def expand(pattern: _Pattern) -> str:
        return _PLACEHOLDER_RE.sub(lambda m: joined[m.group(1)], _joined(pattern))

    return expand


def _rule(entry: Mapping[str, Any], expand: _Expand) -> Rule:
    category, weight = entry["category"], float(entry["weight"])
    if category not in RULE_CATEGORIES or not 0.0 < weight < 1.0:
        raise ValueError(f"{RULES_FILE}: bad category or weight in {entry!r}")
    if "words" in entry:
        pattern = words(*(expand(alternative) for alternative in entry["words"]))
        return Rule(category, weight, re.compile(pattern), on_words=True)
    if "native" in entry:
        native = re.compile(normalise(expand(entry["native"])))
        return Rule(
            category, weight, native, on_words=False, non_latin=entry.get("non_latin", False)
        )
    return Rule(category, weight, re.compile(expand(entry["text"])), on_words=False)


def _load() -> dict[str, Any]:
    text = resources.files(__package__).joinpath(RULES_FILE).read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


_DATA = _load()
_expand = _expander(_DATA["fragments"])

RULES: Final = tuple(
    _rule(entry, _expand) for section in _DATA["sections"] for entry in section["rules"]
)
"""Every phrase rule, in file order."""
WORD_RULES: Final = tuple(rule for rule in RULES if rule.on_words)
NORM_RULES: Final = tuple(rule for rule in RULES if not rule.on_words and not rule.non_latin)
SCRIPT_RULES: Final = tuple(rule for rule in RULES if rule.non_latin)
"""Rules written in another script than Latin: never run on an ASCII text."""
SCRIPT_GATE: Final = LiteralGate([rule.pattern for rule in SCRIPT_RULES])
WORD_GATE: Final = WordGate([rule.pattern for rule in WORD_RULES])
"""Picks the word rules worth running from the words of a text (most texts need few or none)."""
NORM_GATE: Final = LiteralGate([rule.pattern for rule in NORM_RULES])
"""Picks the rules of the normalised view worth running from the strings they need."""
NORM_STARTS: Final = WordGate([rule.pattern for rule in NORM_RULES])
"""Where each rule of the normalised view can start (those that start with a word), read off
the words view: a picked rule is tried there instead of at every character of a long text."""

COMPACT: Final[tuple[tuple[str, float, re.Pattern[str]], ...]] = tuple(
    (entry["category"], float(entry["weight"]), re.compile(_expand(entry["letters"])))
    for entry in _DATA["compact"]
)
"""Key phrases matched in the letters-only text (catches ``i g n o r e``, ``i.g.n.o.r.e``)."""
COMPACT_GATE: Final = LiteralGate([pattern for _, _, pattern in COMPACT])

TOPIC_RE: Final = re.compile(words(*map(_expand, _DATA["cues"]["topic"])))
"""Text *about* injection (questions, code, research) rather than an attempt at it."""
QUESTION_RE: Final = re.compile(words(*map(_expand, _DATA["cues"]["question"])))
FOLLOW_RE: Final = re.compile(words(*map(_expand, _DATA["cues"]["follow"])))
"""A request to act on what was quoted: cancels the discount for discussion."""

del _DATA


def match_rules(
    norm: str, words_text: str, split: list[str] | None = None
) -> Iterator[tuple[str, float, int, int]]:
    """``(category, weight, start, end)`` of every rule match in a text's two views
    (``split``: the words of ``words_text``, if the caller has them)."""
    tokens = WORD_GATE.tokens(words_text, split)
    for index in WORD_GATE.runnable(tokens):
        rule = WORD_RULES[index]
        for match in WORD_GATE.finditer(index, tokens):
            yield rule.category, rule.weight, match.start(), match.end()
    norm_tokens = None  # made for the first picked rule: most texts pick none
    for index in NORM_GATE.candidates(norm):
        rule = NORM_RULES[index]
        if norm_tokens is None:
            norm_tokens = NORM_STARTS.tokens(words_text, split)
        for match in NORM_STARTS.finditer(index, norm_tokens, norm):
            yield rule.category, rule.weight, match.start(), match.end()
    if norm.isascii():  # the rules in other scripts cannot match
        return
    for index in SCRIPT_GATE.candidates(norm):
        rule = SCRIPT_RULES[index]
        for match in rule.pattern.finditer(norm):
            yield rule.category, rule.weight, match.start(), match.end()


def match_compact(letters: str) -> Iterator[tuple[str, float]]:
    """``(category, weight)`` of every compact rule found in a letters-only text."""
    for index in COMPACT_GATE.candidates(letters):
        category, weight, pattern = COMPACT[index]
        if pattern.search(letters):
            yield category, weight
