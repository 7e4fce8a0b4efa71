"""The phrase rules of the injection score, read from ``rules.json`` once, on first use.

The rules are data, not code: the table is what grows with every new attack phrasing, and it
reads best as patterns alone, without the code that runs them. ``rules.json`` says how its
entries are written (its ``about``); this module joins, expands and compiles them, and runs
them on a text: the word rules only where :class:`~.word_gate.WordGate` says the words they
need occur, and only at the words they can start with; the rules of the punctuated text only
when :class:`~.literal_gate.LiteralGate` finds the strings they need. The rules of tool results
have gates of their own, built on the first tool result, so that a user's message pays nothing
for them; so do the rules in other scripts, built on the first text outside ASCII.

Compiling the rules and their gates takes over half a second, so it waits for the first
:func:`rule_set` (``InjectionGuard()`` asks for it, ``score_text`` on its first text):
``import agent_executor`` does not pay for a guard it may never build. The tables are also
module attributes (``RULES``, ``WORD_GATE``, ...), built on first access.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, Final, TypeAlias

from .categories import RULE_CATEGORIES
from .literal_gate import LiteralGate
from .normalisation import normalise
from .word_gate import WordGate

__all__ = [
    "RULES_FILE",
    "Rule",
    "RuleSet",
    "match_compact",
    "match_rules",
    "rule_set",
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
    tool_only: bool = False
    """True: a sign of injection only in a tool's result. A user may ask their assistant to
    send their files to an address; a web page or an e-mail that asks it is an attack."""


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
    reader = entry.get("reader", "any")
    if reader == "tool" and "text" in entry:
        text = re.compile(expand(entry["text"]))
        return Rule(category, weight, text, on_words=False, tool_only=True)
    if reader == "tool" and "native" in entry and entry.get("non_latin", False):
        native = re.compile(normalise(expand(entry["native"])))
        return Rule(category, weight, native, on_words=False, non_latin=True, tool_only=True)
    if reader != "any":
        raise ValueError(
            f"{RULES_FILE}: 'reader' is absent, or 'tool' on a 'text' or a non-Latin 'native'"
            f" rule: {entry!r}"
        )
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


@dataclass(frozen=True, slots=True)
class RuleSet:
    """The compiled rules and the gates that pick which of them run on a text."""

    rules: tuple[Rule, ...]
    """Every phrase rule, in file order."""
    word_rules: tuple[Rule, ...]
    norm_rules: tuple[Rule, ...]
    script_rules: tuple[Rule, ...]
    """Rules written in another script than Latin: never run on an ASCII text (their gate:
    :func:`_script_gates`, built on the first text outside ASCII)."""
    word_gate: WordGate
    """Picks the word rules worth running from the words of a text (most texts need few or
    none)."""
    norm_gate: LiteralGate
    """Picks the rules of the normalised view worth running from the strings they need."""
    norm_starts: WordGate
    """Where each rule of the normalised view can start (those that start with a word), read
    off the words view: a picked rule is tried there instead of at every character of a long
    text."""
    tool_rules: tuple[Rule, ...]
    """Rules of the normalised view that run on tool results only (their gates:
    :func:`_tool_gates`, built on the first tool result)."""
    tool_script_rules: tuple[Rule, ...]
    """The same in another script than Latin: never run on an ASCII text (their gate: the
    second of :func:`_script_gates`)."""
    compact: tuple[tuple[str, float, re.Pattern[str]], ...]
    """Key phrases matched in the letters-only text (catches ``i g n o r e``,
    ``i.g.n.o.r.e``)."""
    compact_gate: LiteralGate
    topic_re: re.Pattern[str]
    """Text *about* injection (questions, code, research) rather than an attempt at it."""
    question_re: re.Pattern[str]
    follow_re: re.Pattern[str]
    """A request to act on what was quoted: cancels the discount for discussion."""


@cache
def rule_set() -> RuleSet:
    """The rules of ``rules.json``, compiled once per process."""
    data = _load()
    expand = _expander(data["fragments"])
    rules = tuple(
        _rule(entry, expand) for section in data["sections"] for entry in section["rules"]
    )
    word_rules = tuple(rule for rule in rules if rule.on_words)
    norm_rules = tuple(
        rule for rule in rules if not (rule.on_words or rule.non_latin or rule.tool_only)
    )
    tool_rules = tuple(rule for rule in rules if rule.tool_only and not rule.non_latin)
    tool_script_rules = tuple(rule for rule in rules if rule.tool_only and rule.non_latin)
    script_rules = tuple(rule for rule in rules if rule.non_latin and not rule.tool_only)
    compact = tuple(
        (entry["category"], float(entry["weight"]), re.compile(expand(entry["letters"])))
        for entry in data["compact"]
    )
    cues = data["cues"]
    return RuleSet(
        rules=rules,
        word_rules=word_rules,
        norm_rules=norm_rules,
        script_rules=script_rules,
        word_gate=WordGate([rule.pattern for rule in word_rules]),
        norm_gate=LiteralGate([rule.pattern for rule in norm_rules]),
        norm_starts=WordGate([rule.pattern for rule in norm_rules]),
        tool_rules=tool_rules,
        tool_script_rules=tool_script_rules,
        compact=compact,
        compact_gate=LiteralGate([pattern for _, _, pattern in compact]),
        topic_re=re.compile(words(*map(expand, cues["topic"]))),
        question_re=re.compile(words(*map(expand, cues["question"]))),
        follow_re=re.compile(words(*map(expand, cues["follow"]))),
    )


def __getattr__(name: str) -> Any:
    """``RULES``, ``WORD_GATE``, ...: the fields of :func:`rule_set`, upper-cased (built on
    first access)."""
    if name.isupper() and name.lower() in RuleSet.__dataclass_fields__:
        return getattr(rule_set(), name.lower())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def match_rules(
    norm: str, words_text: str, split: list[str] | None = None, *, tool_result: bool = True
) -> Iterator[tuple[str, float, int, int]]:
    """``(category, weight, start, end)`` of every rule match in a text's two views
    (``split``: the words of ``words_text``, if the caller has them). Without ``tool_result``
    the rules that hold only in a tool's result are left out."""
    rules = rule_set()
    word_gate, word_rules = rules.word_gate, rules.word_rules
    tokens = word_gate.tokens(words_text, split)
    for index in word_gate.runnable(tokens):
        rule = word_rules[index]
        for match in word_gate.finditer(index, tokens):
            yield rule.category, rule.weight, match.start(), match.end()
    yield from _gated(rules.norm_rules, rules.norm_gate, rules.norm_starts, norm, words_text, split)
    if tool_result:
        gate, starts = _tool_gates()
        yield from _gated(rules.tool_rules, gate, starts, norm, words_text, split)
    if norm.isascii():  # the rules in other scripts cannot match
        return
    script_gate, tool_script_gate = _script_gates()
    yield from _scanned(rules.script_rules, script_gate, norm)
    if tool_result:
        yield from _scanned(rules.tool_script_rules, tool_script_gate, norm)


def _scanned(
    rules: tuple[Rule, ...], gate: LiteralGate, norm: str
) -> Iterator[tuple[str, float, int, int]]:
    """The matches of the rules in other scripts that ``gate`` picks, searched in the whole
    text (Chinese and Japanese have no spaces to start a rule at)."""
    for index in gate.candidates(norm):
        rule = rules[index]
        for match in rule.pattern.finditer(norm):
            yield rule.category, rule.weight, match.start(), match.end()


def _gated(
    rules: tuple[Rule, ...],
    gate: LiteralGate,
    starts: WordGate,
    norm: str,
    words_text: str,
    split: list[str] | None,
) -> Iterator[tuple[str, float, int, int]]:
    """The matches of the rules of the normalised view that ``gate`` picks, each tried where
    ``starts`` says it can start."""
    tokens = None  # made for the first picked rule: most texts pick none
    for index in gate.candidates(norm):
        rule = rules[index]
        if tokens is None:
            tokens = starts.tokens(words_text, split)
        for match in starts.finditer(index, tokens, norm):
            yield rule.category, rule.weight, match.start(), match.end()


@cache
def _tool_gates() -> tuple[LiteralGate, WordGate]:
    """The gates of the rules of tool results: built on the first tool result, so a process
    that screens none does not pay for them (36 ms)."""
    patterns = [rule.pattern for rule in rule_set().tool_rules]
    return LiteralGate(patterns), WordGate(patterns)


@cache
def _script_gates() -> tuple[LiteralGate, LiteralGate]:
    """The gates of the rules in other scripts, of any text and of tool results: built on the
    first text outside ASCII, so a process that reads none does not pay for them."""
    rules = rule_set()
    return (
        LiteralGate([rule.pattern for rule in rules.script_rules]),
        LiteralGate([rule.pattern for rule in rules.tool_script_rules]),
    )


def match_compact(letters: str) -> Iterator[tuple[str, float]]:
    """``(category, weight)`` of every compact rule found in a letters-only text."""
    rules = rule_set()
    compact = rules.compact
    for index in rules.compact_gate.candidates(letters):
        category, weight, pattern = compact[index]
        if pattern.search(letters):
            yield category, weight
