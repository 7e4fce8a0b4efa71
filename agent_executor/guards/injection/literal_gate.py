"""Which of many regular expressions can match a text, decided by the strings they need.

The rules of the punctuated text (and the learned layer's jailbreak markers) are gated by
the literal strings every match must contain, read off each compiled pattern's parse tree
once: ``<|``, ``://``, one of ``ai,`` and ``llms ,``. One pass of an Aho-Corasick automaton
finds which of them a text holds; a pattern runs only when every clause of one of its
alternatives is there. See :mod:`.word_gate` for the rules that match word by word.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from ._parse_tree import (
    ATOMIC,
    MAX_CLAUSES,
    REPEATS,
    ZERO_WIDTH,
    alternatives,
    automaton,
    found_in,
    is_common,
    parsed,
    sre,
)

__all__ = ["LiteralGate"]

_Needs = tuple[tuple[frozenset[str], ...], ...]  # any alternative: all of its clauses
_Clauses = tuple[tuple[tuple[frozenset[str], tuple[str, ...]], ...], ...]  # and their common
_MAX_CLASS_CHARS = 10


class LiteralGate:
    """Picks, among ``patterns``, those whose necessary substrings all occur in a text.

    Read off each pattern's parse tree: the literal runs a match must contain (``<|``, one of
    ``system``/``admin``/..., ``://``). One pass of an Aho-Corasick automaton (in C, see
    ``_parse_tree.automaton``) finds which of them a text holds, whatever its length, so the
    guard no longer searches the text once per string. Strings found in most texts (``:``,
    ``,``, ``at``, ``the``) stay out of the automaton, which would report every occurrence;
    they are looked for with ``in``, and only for the patterns the rarer strings leave in play. Each
    alternative of a pattern is keyed by a clause without such common strings where it has
    one (``exfiltrate``/``forward``/... rather than ``at``/``to``), so an ordinary text holds
    no key and costs the one pass. A pattern with nothing to read runs for every text.
    """

    __slots__ = ("_always", "_automaton", "_by_key", "_common_keys", "_keys", "_needs")

    def __init__(self, patterns: Sequence[re.Pattern[str]]) -> None:
        needs_of = [_literal_needs(pattern) for pattern in patterns]
        self._always = frozenset(i for i, needs in enumerate(needs_of) if needs is None)
        by_key: dict[str, set[int]] = {}
        for index, needs in enumerate(needs_of):
            for alt in needs or ():
                for string in min(alt, key=_key_cost):
                    by_key.setdefault(string, set()).add(index)
        self._by_key = {key: frozenset(found) for key, found in by_key.items()}
        self._keys = frozenset(self._by_key)
        self._common_keys = tuple(sorted(key for key in by_key if is_common(key)))
        strings = {s for needs in needs_of for alt in needs or () for c in alt for s in c}
        self._automaton = automaton({s: s for s in sorted(strings) if not is_common(s)})
        # Each clause with its common strings, which the automaton does not report.
        self._needs = tuple(
            None
            if needs is None
            else tuple(
                tuple((c, tuple(s for s in c if is_common(s))) for c in alt) for alt in needs
            )
            for needs in needs_of
        )

    def candidates(self, text: str) -> list[int]:
        """Indices, in order, of the patterns that can match in ``text``."""
        present = found_in(self._automaton, text)
        for key in self._common_keys:
            if key in text:
                present.add(key)
        hits = present & self._keys
        if not hits and not self._always:
            return []
        found = self._always.union(*map(self._by_key.__getitem__, hits))
        needs_of = self._needs
        out = []
        for index in sorted(found):
            needs = needs_of[index]
            if needs is None or _satisfied(needs, present, text):
                out.append(index)
        return out


def _satisfied(needs: _Clauses, present: set[str], text: str) -> bool:
    """Whether every clause of one alternative of ``needs`` is in ``text``: one of its strings
    the automaton found (``present``), or one of its common strings."""
    for alt in needs:
        for clause, common in alt:
            if clause.isdisjoint(present) and not any(map(text.__contains__, common)):
                break
        else:
            return True
    return False


def _literal_needs(pattern: re.Pattern[str]) -> _Needs | None:
    """For each alternative, the sets of strings one of which any match must contain."""
    items = parsed(pattern)
    if items is None:
        return None
    out: list[tuple[frozenset[str], ...]] = []
    for alt, _ in alternatives(items, False):
        found = {_minimal(clause) for clause in _literals(alt)}
        clauses = sorted(found, key=_selectivity, reverse=True)[:MAX_CLAUSES]
        if not clauses:
            return None
        out.append(tuple(sorted(clauses, key=len)))  # fewest searches first
    return tuple(out)


def _minimal(clause: frozenset[str]) -> frozenset[str]:
    """``clause`` without the strings that contain another of its strings (``ignorer`` beside
    ``ignore``): one of them occurs exactly when one of the rest does, in fewer searches."""
    return frozenset(s for s in clause if not any(o != s and o in s for o in clause))


def _selectivity(clause: frozenset[str]) -> tuple[int, int, tuple[str, ...]]:
    return min(map(len, clause)), -len(clause), tuple(sorted(clause))


def _key_cost(clause: frozenset[str]) -> tuple[bool, int, int, tuple[str, ...]]:
    """Which clause of an alternative keys it (the smallest): none of its strings found in
    most texts (``:``, ``at`` would let most texts through), the shortest of them as long
    as can be."""
    common = any(map(is_common, clause))
    return common, -min(map(len, clause)), len(clause), tuple(sorted(clause))


def _literals(items: Iterable[tuple[Any, Any]]) -> list[frozenset[str]]:
    """Clauses (sets of strings, one of which occurs in every match) of a sequence.

    Adjacent items that match few strings (literals, small classes, branches and optional
    parts of those) are read together: ``(?:ai|llm)s? ?,`` needs one of ``ai,``, ``ais ,``,
    ``llm,``, ... rather than ``,`` alone, which most texts hold (see :func:`_stretches`).
    """
    out: list[frozenset[str]] = []
    run: list[frozenset[str]] = []
    for op, arg in items:
        strings = _finite(op, arg)
        if strings is not None:
            run.append(strings)
            continue
        out += _stretches(run)
        run = []
        if op is sre.SUBPATTERN and not arg[1] & re.IGNORECASE:
            out += _literals(arg[-1])
        elif op is ATOMIC:
            out += _literals(arg)
        elif op is sre.BRANCH:
            picks = [max(_literals(body), key=_selectivity, default=None) for body in arg[1]]
            if all(pick is not None for pick in picks):
                out.append(frozenset().union(*(pick for pick in picks if pick is not None)))
        elif op in REPEATS and arg[0] >= 1:
            out += _literals(arg[2])
    return out + _stretches(run)


def _stretches(run: list[frozenset[str]]) -> list[frozenset[str]]:
    """The clauses of a run of items that each match few strings: the strings of each
    longest stretch of it that match few and never the empty string. (A stretch inside
    another needs less of a text, so it is not read.)"""
    out = []
    reached = -1
    for first in range(len(run)):
        strings, last = _EMPTY, first - 1
        for item in run[first:]:
            joined = _product(strings, item)
            if joined is None:
                break
            strings, last = joined, last + 1
        if last > reached and "" not in strings:
            out.append(strings)
            reached = last
    return out


_EMPTY = frozenset({""})
_MAX_STRINGS = 64
"""Strings a run of items may stand for before it is cut into clauses of its own."""


def _product(left: frozenset[str], right: frozenset[str]) -> frozenset[str] | None:
    """Every string of ``left`` followed by one of ``right`` (``None`` if too many)."""
    if len(left) * len(right) > _MAX_STRINGS:
        return None
    return frozenset(a + b for a in left for b in right)


def _finite(op: Any, arg: Any) -> frozenset[str] | None:
    """The strings one item of a parse tree matches, if it matches few (else ``None``)."""
    if op is sre.LITERAL:
        return frozenset(chr(arg))
    if op in ZERO_WIDTH:
        return _EMPTY  # consumes nothing: the letters either side stay adjacent
    if op is sre.IN:
        chars = _class_chars(arg)
        return frozenset(chars) if chars else None
    if op is sre.SUBPATTERN and not arg[1] & re.IGNORECASE:
        return _finite_sequence(arg[-1])
    if op is ATOMIC:
        return _finite_sequence(arg)
    if op is sre.BRANCH:
        union: set[str] = set()
        for body in arg[1]:
            strings = _finite_sequence(body)
            if strings is None:
                return None
            union |= strings
        return frozenset(union) if len(union) <= _MAX_STRINGS else None
    if op in REPEATS and arg[1] <= 2:
        low, high, body = arg[0], arg[1], _finite_sequence(arg[2])
        if body is None:
            return None
        found: set[str] = set()
        power = _EMPTY
        for count in range(high + 1):
            if count >= low:
                found |= power
            if count < high:
                joined = _product(power, body)
                if joined is None:
                    return None
                power = joined
        return frozenset(found) if len(found) <= _MAX_STRINGS else None
    return None


def _finite_sequence(items: Iterable[tuple[Any, Any]]) -> frozenset[str] | None:
    run = _EMPTY
    for op, arg in items:
        strings = _finite(op, arg)
        joined = None if strings is None else _product(run, strings)
        if joined is None:
            return None
        run = joined
    return run


def _class_chars(members: Any) -> list[str] | None:
    chars: list[str] = []
    for op, arg in members:
        if op is sre.LITERAL:
            chars.append(chr(arg))
        elif op is sre.RANGE and arg[1] - arg[0] < _MAX_CLASS_CHARS:
            chars.extend(chr(code) for code in range(arg[0], arg[1] + 1))
        else:
            return None
    return chars if len(chars) <= _MAX_CLASS_CHARS else None
