"""Which of many word-anchored regular expressions can match a text, decided by its words.

The injection guard runs dozens of rules on the "words view" of a text (word characters
separated by whitespace). Most texts match none of them, and running every rule, or one big
alternation of all of them, costs about half a microsecond per character with ``re``. But a
rule that starts at a word boundary (``\\b``) can only match at the start of a word, and its
first literal letters say which words those can be: ``\\b(?:ignore|disregard) ...`` needs a word
starting ``igno`` or ``disr``. :class:`WordGate` reads those first letters off each compiled
pattern (its parse tree) once, and then picks the rules worth running for a text from the
words and word starts it finds there.

The same reading gives more: each word that follows a run of whitespace in a pattern must
occur too (``ignore ... previous ... instructions``), so :meth:`WordGate.runnable` skips a rule
unless all of them do, and :meth:`WordGate.finditer` tries a rule only at the words it can start
with instead of at every character. :class:`LiteralGate` does the like for patterns of the
punctuated text: the literal strings a match must contain (``<|``, ``://``, one of ``ai,`` and
``llm,``) are looked for before the pattern runs.

Both gates find every word and string they know in one pass over the text, with an
Aho-Corasick automaton (pyahocorasick, in C): some 700 of them, where a substring search per
string, or a set of the text's words and their prefixes, cost several times more
(docs/benchmarks.md, "Injection guard").

The gates are conservative: a rule whose start cannot be proved anchored to a word, or whose
letters cannot be read (a character class, a wildcard, an optional prefix that may be empty),
always runs. So a pattern may run for nothing, but never fails to run where it matches.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import ahocorasick

try:
    from re import _constants as _c  # type: ignore[attr-defined]
    from re import _parser as _p  # type: ignore[attr-defined]
except ImportError:  # Python 3.10
    import sre_constants as _c
    import sre_parse as _p

__all__ = ["LiteralGate", "Tokens", "WordGate"]

_OPEN, _WORD, _PREFIX = 0, 1, 2  # still reading; the word must equal / start with the text
_WORD_CHAR = re.compile(r"\w")
_SPACE_CATEGORIES = frozenset({_c.CATEGORY_SPACE, _c.CATEGORY_LINEBREAK})

_State = tuple[str, bool, int]  # (letters read, anchored at a word start, _OPEN/_WORD/_PREFIX)
_Clause = tuple[frozenset[str], frozenset[str]]  # one of these whole words or word prefixes
_Needs = tuple[tuple[frozenset[str], ...], ...]  # any alternative: all of its clauses
_REPEATS = (_c.MAX_REPEAT, _c.MIN_REPEAT, getattr(_c, "POSSESSIVE_REPEAT", _c.MAX_REPEAT))
_ZERO_WIDTH = (_c.AT, _c.ASSERT, _c.ASSERT_NOT)
_ATOMIC = getattr(_c, "ATOMIC_GROUP", None)  # (?>...): Python 3.11 and later
_MAX_CLAUSES = 3
_NONE: frozenset[int] = frozenset()
_MAX_CLASS_CHARS = 10


class _Ungated(Exception):
    """The pattern can start somewhere its first letters do not tell."""


class WordGate:
    """Picks, among ``patterns``, those that can match somewhere in a words-view text.

    ``candidates(words)`` expects a text whose only non-word characters are whitespace (the
    injection guard's words view); for such a text it returns the indices of every pattern
    that can match in it, and usually far fewer than all of them.
    """

    __slots__ = (
        "_always",
        "_by_key",
        "_by_prefix",
        "_by_word",
        "_common",
        "_lengths",
        "_needs",
        "_patterns",
        "_start_keys",
        "_starts",
        "_words",
    )

    def __init__(self, patterns: Sequence[re.Pattern[str]], prefix_chars: int = 4) -> None:
        always: set[int] = set()
        by_word: dict[str, set[int]] = {}
        by_prefix: dict[str, set[int]] = {}
        starts_of: list[_Clause | None] = []
        for index, pattern in enumerate(patterns):
            starts = _first_letters(pattern, prefix_chars)
            starts_of.append(None if starts is None else _clause(starts))
            if starts is None:
                always.add(index)
                continue
            for text, kind in starts:
                (by_word if kind == _WORD else by_prefix).setdefault(text, set()).add(index)
        self._always = frozenset(always)
        self._by_word = {word: frozenset(found) for word, found in by_word.items()}
        self._by_prefix = {prefix: frozenset(found) for prefix, found in by_prefix.items()}
        self._lengths = tuple(sorted({len(prefix) for prefix in by_prefix}))
        self._patterns = tuple(patterns)
        self._starts = tuple(starts_of)
        needs = [_word_needs(pattern, prefix_chars) for pattern in patterns]
        clauses = [c for alts in needs for alt in alts or () for c in alt]
        clauses += [c for c in self._starts if c is not None]
        needles = {f" {w} ": w for words, _ in clauses for w in words}
        needles.update((f" {p}", "*" + p) for _, prefixes in clauses for p in prefixes)
        # Short common words as keys (``a``, ``the``, ``you``) are found in the text's set of
        # words; the automaton would report each of their occurrences.
        common = {key for key in needles.values() if key[0] != "*" and _common(key)}
        self._words = _automaton({n: k for n, k in needles.items() if k not in common})
        self._common = frozenset(common)
        self._start_keys = tuple(None if c is None else _tagged(c) for c in self._starts)
        self._needs = tuple(
            None if alts is None else tuple(tuple(map(_tagged, alt)) for alt in alts)
            for alts in needs
        )
        by_key: dict[str, set[int]] = {}
        for index, start in enumerate(self._starts):
            for key in () if start is None else _tagged(start):
                by_key.setdefault(key, set()).add(index)
        self._by_key = {key: frozenset(found) for key, found in by_key.items()}

    @property
    def always(self) -> frozenset[int]:
        """The patterns that run for every text (their first letters could not be read)."""
        return self._always

    def candidates(self, words: str) -> set[int]:
        """Indices of the patterns that can match in ``words``."""
        found = set(self._always)
        by_word, by_prefix, lengths = self._by_word, self._by_prefix, self._lengths
        for token in set(words.split()):
            hit = by_word.get(token)
            if hit is not None:
                found |= hit
            for length in lengths:
                hit = by_prefix.get(token[:length])
                if hit is not None:
                    found |= hit
        return found

    def tokens(self, words: str) -> Tokens:
        """Where the gate's words and prefixes occur in a words-view text, found in one pass
        and read by :meth:`runnable` and :meth:`finditer`."""
        return Tokens(words, self._words, self._common)

    def runnable(self, tokens: Tokens) -> list[int]:
        """Indices, in order, of the patterns that can match: every word they need is there.

        Stricter than :meth:`candidates`: besides the first word, each word that follows a
        run of whitespace in a pattern (``ignore ... previous ... instructions``) must occur.
        """
        present = tokens.present
        found = set(self._always)
        for key in present:
            found |= self._by_key.get(key, _NONE)
        needs_of = self._needs
        out = []
        for index in sorted(found):
            needs = needs_of[index]
            if needs is None:
                out.append(index)
                continue
            for alt in needs:
                for clause in alt:
                    if clause.isdisjoint(present):
                        break
                else:
                    out.append(index)
                    break
        return out

    def finditer(self, index: int, tokens: Tokens) -> Iterator[re.Match[str]]:
        """The matches of pattern ``index`` in the text, as ``finditer`` finds them.

        A gated pattern is tried only at the starts of the words its first letters allow,
        which gives the same non-overlapping matches as a scan of every position.
        """
        pattern, starts = self._patterns[index], self._start_keys[index]
        if starts is None:
            yield from pattern.finditer(tokens.text)
            return
        positions = tokens.starts(starts)
        if len(positions) > _SCAN_ABOVE:
            # A common first word ("you", "the"): one scan in C beats a match per occurrence.
            yield from pattern.finditer(tokens.text)
            return
        end = 0
        for position in positions:
            if position < end:
                continue
            match = pattern.match(tokens.text, position)
            if match is not None:
                yield match
                end = max(match.end(), position + 1)


_SCAN_ABOVE = 24
"""Word starts above which a gated pattern scans the whole text instead."""


class Tokens:
    """The gate's keys found in a words-view text (``present``): whole words as they are,
    word prefixes marked with a leading ``*`` (a character no word contains).

    One pass of the automaton finds them, except short common words (``a``, ``the``,
    ``you``), which it would report dozens of times in a long text: those are read off the
    text's set of words. Where a key's words start is looked up only for the rules that run.
    """

    __slots__ = ("_padded", "present", "text")

    def __init__(self, text: str, automaton: Any, common: frozenset[str]) -> None:
        self.text = text
        # A words view separates its words by spaces and newlines only; each needle starts
        # with the space before its word, whose offset in the padded text is the word's
        # offset in ``text``.
        padded = self._padded = f" {text} ".replace("\n", " ")
        present = {key for _, key in automaton.iter(padded)} if automaton is not None else set()
        present.update(common.intersection(text.split()))
        self.present = present

    def starts(self, keys: frozenset[str]) -> list[int]:
        """Offsets, in order, of the words that are one of ``keys`` (see :func:`_tagged`);
        more than ``_SCAN_ABOVE`` of them once there are that many."""
        padded = self._padded
        found: set[int] = set()
        for key in keys & self.present:
            needle = f" {key[1:]}" if key[0] == "*" else f" {key} "
            offset = padded.find(needle)
            while offset >= 0:
                found.add(offset)
                if len(found) > _SCAN_ABOVE:
                    return sorted(found)
                offset = padded.find(needle, offset + 1)
        return sorted(found)


class LiteralGate:
    """Picks, among ``patterns``, those whose necessary substrings all occur in a text.

    Read off each pattern's parse tree: the literal runs a match must contain (``<|``, one of
    ``system``/``admin``/..., ``://``). One pass of an Aho-Corasick automaton (pyahocorasick,
    in C) finds which of them a text holds, whatever its length, so the guard no longer
    searches the text once per string. Strings found in most texts (``:``, ``,``, ``at``,
    ``the``) stay out of the automaton, which would report every occurrence; they are
    looked for with ``in``, and only for the patterns the rarer strings leave in play. Each
    alternative of a pattern is keyed by the clause with the fewest such common strings
    (``exfiltrate``/``forward``/... rather than ``at``/``to``), so an ordinary text holds no
    key and costs the one pass. A pattern with nothing to read runs for every text.
    """

    __slots__ = ("_always", "_automaton", "_by_key", "_common_keys", "_needs")

    def __init__(self, patterns: Sequence[re.Pattern[str]]) -> None:
        needs_of = [_literal_needs(pattern) for pattern in patterns]
        self._always = frozenset(i for i, needs in enumerate(needs_of) if needs is None)
        by_key: dict[str, set[int]] = {}
        for index, needs in enumerate(needs_of):
            for alt in needs or ():
                for string in min(alt, key=_key_cost):
                    by_key.setdefault(string, set()).add(index)
        self._by_key = {key: frozenset(found) for key, found in by_key.items()}
        self._common_keys = tuple(sorted(key for key in by_key if _common(key)))
        strings = {s for needs in needs_of for alt in needs or () for c in alt for s in c}
        self._automaton = _automaton({s: s for s in sorted(strings) if not _common(s)})
        # Each clause with its common strings, which the automaton does not report.
        self._needs = tuple(
            None
            if needs is None
            else tuple(tuple((c, tuple(s for s in c if _common(s))) for c in alt) for alt in needs)
            for needs in needs_of
        )

    def candidates(self, text: str) -> list[int]:
        """Indices, in order, of the patterns that can match in ``text``."""
        automaton = self._automaton
        present = {s for _, s in automaton.iter(text)} if automaton is not None else set()
        present.update(key for key in self._common_keys if key in text)
        found = set(self._always)
        by_key = self._by_key
        for key in present:
            hit = by_key.get(key)
            if hit is not None:
                found |= hit

        needs_of = self._needs
        return [
            index
            for index in sorted(found)
            if (needs := needs_of[index]) is None
            or any(
                all(
                    not clause.isdisjoint(present) or any(s in text for s in common)
                    for clause, common in alt
                )
                for alt in needs
            )
        ]


def _common(string: str) -> bool:
    """A string most texts hold (``:``, ``at``, ``the``): searched with ``in``, not the
    automaton, which would report each of its occurrences."""
    stripped = string.strip()
    return len(stripped) < 2 or (len(stripped) <= 3 and stripped.isascii() and stripped.isalpha())


def _automaton(needles: dict[str, str]) -> Any:
    """An Aho-Corasick automaton that reports each needle as its key (``None`` if there
    are no needles: pyahocorasick cannot search with an empty one)."""
    if not needles:
        return None
    automaton = ahocorasick.Automaton()
    for needle, key in needles.items():
        automaton.add_word(needle, key)
    automaton.make_automaton()
    return automaton


def _clause(starts: set[tuple[str, int]]) -> _Clause:
    words = frozenset(text for text, kind in starts if kind == _WORD)
    return words, frozenset(text for text, kind in starts if kind != _WORD)


def _tagged(clause: _Clause) -> frozenset[str]:
    """A clause as one set of keys: whole words as they are, prefixes after a ``*``."""
    return clause[0] | frozenset("*" + prefix for prefix in clause[1])


def _parsed(pattern: re.Pattern[str]) -> list[tuple[Any, Any]] | None:
    if pattern.flags & re.IGNORECASE:
        return None
    try:
        return list(_p.parse(pattern.pattern, pattern.flags))
    except Exception:  # fail open: no gate
        return None


def _alternatives(items: list[tuple[Any, Any]], anchored: bool) -> list[tuple[Any, bool]]:
    """The top-level alternatives of a pattern (through groups), and whether ``\\b`` leads."""
    content = [(op, arg) for op, arg in items if op not in _ZERO_WIDTH]
    if len(content) == 1:
        leading = items[: items.index(content[0])]
        anchored = anchored or (_c.AT, _c.AT_BOUNDARY) in leading
        op, arg = content[0]
        if op is _c.SUBPATTERN and not arg[1] & re.IGNORECASE:
            return _alternatives(list(arg[-1]), anchored)
        if op is _c.BRANCH:
            return [alt for body in arg[1] for alt in _alternatives(list(body), anchored)]
    return [(items, anchored)]


def _word_needs(pattern: re.Pattern[str], limit: int) -> tuple[tuple[_Clause, ...], ...] | None:
    """For each alternative, the words that begin it and that follow its runs of whitespace."""
    items = _parsed(pattern)
    if items is None:
        return None
    out: list[tuple[_Clause, ...]] = []
    for alt, anchored in _alternatives(items, False):
        slots = [(0, anchored)] + [(i + 1, True) for i, item in enumerate(alt) if _spaces(item)]
        clauses: list[_Clause] = []
        for start, slot_anchored in slots:
            found = _letters_from(alt[start:], slot_anchored, limit)
            if found is not None:
                clauses.append(_clause(found))
        out.append(tuple(clauses))
    return tuple(out)


def _spaces(item: tuple[Any, Any]) -> bool:
    """Whether ``item`` is ``\\s+`` (one or more whitespace characters)."""
    op, arg = item
    if op not in _REPEATS or arg[0] < 1:
        return False
    body = list(arg[2])
    return body == [(_c.IN, [(_c.CATEGORY, _c.CATEGORY_SPACE)])]


def _literal_needs(pattern: re.Pattern[str]) -> _Needs | None:
    """For each alternative, the sets of strings one of which any match must contain."""
    items = _parsed(pattern)
    if items is None:
        return None
    out: list[tuple[frozenset[str], ...]] = []
    for alt, _ in _alternatives(items, False):
        found = {_minimal(clause) for clause in _literals(alt)}
        clauses = sorted(found, key=_selectivity, reverse=True)[:_MAX_CLAUSES]
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
    common = any(map(_common, clause))
    return common, -min(map(len, clause)), len(clause), tuple(sorted(clause))


def _literals(items: Iterable[tuple[Any, Any]]) -> list[frozenset[str]]:
    """Clauses (sets of strings, one of which occurs in every match) of a sequence.

    Adjacent items that match few strings (literals, small classes, branches and optional
    parts of those) are read together: ``(?:ai|llm)s? ?,`` needs one of ``ai,``, ``ais ,``,
    ``llm,``, ... rather than ``,`` alone, which most texts hold. Every stretch of such a run
    whose strings are few and never empty is a clause.
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
        if op is _c.SUBPATTERN and not arg[1] & re.IGNORECASE:
            out += _literals(arg[-1])
        elif op is _ATOMIC:
            out += _literals(arg)
        elif op is _c.BRANCH:
            picks = [max(_literals(body), key=_selectivity, default=None) for body in arg[1]]
            if all(pick is not None for pick in picks):
                out.append(frozenset().union(*(pick for pick in picks if pick is not None)))
        elif op in _REPEATS and arg[0] >= 1:
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
    if op is _c.LITERAL:
        return frozenset(chr(arg))
    if op in _ZERO_WIDTH:
        return _EMPTY  # consumes nothing: the letters either side stay adjacent
    if op is _c.IN:
        chars = _class_chars(arg)
        return frozenset(chars) if chars else None
    if op is _c.SUBPATTERN and not arg[1] & re.IGNORECASE:
        return _finite_sequence(arg[-1])
    if op is _ATOMIC:
        return _finite_sequence(arg)
    if op is _c.BRANCH:
        union: set[str] = set()
        for body in arg[1]:
            strings = _finite_sequence(body)
            if strings is None or len(union | strings) > _MAX_STRINGS:
                return None
            union |= strings
        return frozenset(union)
    if op in _REPEATS and arg[1] <= 2:
        body = _finite_sequence(arg[2])
        if body is None:
            return None
        found: set[str] = set()
        power = _EMPTY
        for count in range(arg[1] + 1):
            if count >= arg[0]:
                found |= power
            joined = _product(power, body) if count < arg[1] else power
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
        if op is _c.LITERAL:
            chars.append(chr(arg))
        elif op is _c.RANGE and arg[1] - arg[0] < _MAX_CLASS_CHARS:
            chars.extend(chr(code) for code in range(arg[0], arg[1] + 1))
        else:
            return None
    return chars if len(chars) <= _MAX_CLASS_CHARS else None


def _first_letters(pattern: re.Pattern[str], limit: int) -> set[tuple[str, int]] | None:
    """The (letters, _WORD or _PREFIX) a match of ``pattern`` begins with, or None if unknown."""
    items = _parsed(pattern)
    return None if items is None else _letters_from(items, False, limit)


def _letters_from(
    items: Iterable[tuple[Any, Any]], anchored: bool, limit: int
) -> set[tuple[str, int]] | None:
    try:
        states = _sequence(items, {("", anchored, _OPEN)}, limit)
        return {(text, _PREFIX if kind == _OPEN else kind) for text, _, kind in _end(states)}
    except _Ungated:
        return None
    except Exception:  # an opcode this reader does not know: fail open, never wrong
        return None


def _sequence(items: Iterable[tuple[Any, Any]], states: set[_State], limit: int) -> set[_State]:
    for op, arg in items:
        if all(kind != _OPEN for _, _, kind in states):
            break
        states = _item(op, arg, states, limit)
    return states


def _item(op: Any, arg: Any, states: set[_State], limit: int) -> set[_State]:
    if op is _c.AT:
        if arg is _c.AT_BOUNDARY:
            return {_boundary(state) for state in states}
        return states
    if op in (_c.ASSERT, _c.ASSERT_NOT):
        return states  # zero width: skipping a condition only lets more texts through
    if op is _c.LITERAL:
        return _read(states, (chr(arg),), limit)
    if op is _c.IN:
        return _char_class(arg, states, limit)
    if op is _c.SUBPATTERN:
        return _sequence(arg[-1], states, limit)
    if op is _c.BRANCH:
        out: set[_State] = set()
        for alternative in arg[1]:
            out |= _sequence(alternative, states, limit)
        return out
    if op in (_c.MAX_REPEAT, _c.MIN_REPEAT, getattr(_c, "POSSESSIVE_REPEAT", _c.MAX_REPEAT)):
        low, high, body = arg
        if high == 0:
            return states
        once = _stop(_sequence(body, states, limit), _PREFIX)  # more repeats may follow
        return once | states if low == 0 else once
    return _stop(states, _PREFIX)


def _boundary(state: _State) -> _State:
    text, anchored, kind = state
    if kind != _OPEN:
        return state
    if not text:
        return (text, True, kind)
    return (text, anchored, _WORD)  # \b after letters: the word ends here


def _read(states: set[_State], chars: Iterable[str], limit: int) -> set[_State]:
    out: set[_State] = set()
    for text, anchored, kind in states:
        if kind != _OPEN:
            out.add((text, anchored, kind))
            continue
        for ch in chars:
            if not _WORD_CHAR.match(ch):
                if not text:
                    raise _Ungated
                out.add((text, anchored, _WORD))
            elif not anchored:
                raise _Ungated
            else:
                longer = text + ch
                out.add((longer, anchored, _OPEN if len(longer) < limit else _PREFIX))
    return out


def _char_class(members: Any, states: set[_State], limit: int) -> set[_State]:
    chars: list[str] = []
    for op, arg in members:
        if op is _c.LITERAL:
            chars.append(chr(arg))
        elif op is _c.RANGE and arg[1] - arg[0] < 16:
            chars.extend(chr(code) for code in range(arg[0], arg[1] + 1))
        elif op is _c.CATEGORY and arg in _SPACE_CATEGORIES:
            chars.append(" ")
        else:
            return _stop(states, _PREFIX)
    return _read(states, chars, limit)


def _stop(states: set[_State], kind: int) -> set[_State]:
    """Stop reading: what was read so far must start (``_PREFIX``) the word."""
    out: set[_State] = set()
    for text, anchored, state_kind in states:
        if state_kind == _OPEN:
            if not text:
                raise _Ungated
            out.add((text, anchored, kind))
        else:
            out.add((text, anchored, state_kind))
    return out


def _end(states: set[_State]) -> set[_State]:
    return _stop(states, _PREFIX)
