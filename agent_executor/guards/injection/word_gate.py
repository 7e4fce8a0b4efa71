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
Aho-Corasick automaton (``_scan_native.c``, or pyahocorasick where that was not built): some
1,700 of them, where a substring search per string, or a set of the text's words and their
prefixes, cost several times more (docs/benchmarks.md, "Injection guard"). Which word rules
then run is chosen in C too, where it was built (``_scan_native.Gate``).

The gates are conservative: a rule whose start cannot be proved anchored to a word, or whose
letters cannot be read (a character class, a wildcard, an optional prefix that may be empty),
always runs. So a pattern may run for nothing, but never fails to run where it matches.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from ._parse_tree import (
    NATIVE,
    REPEATS,
    ZERO_WIDTH,
    Chooser,
    Gate,
    Searcher,
    alternatives,
    automaton,
    found_in,
    is_common,
    parsed,
    sre,
)
from .literal_gate import LiteralGate

__all__ = ["NATIVE", "LiteralGate", "Tokens", "WordGate"]

_OPEN, _WORD, _PREFIX = 0, 1, 2  # still reading; the word must equal / start with the text
_WORD_CHAR = re.compile(r"\w")
_SPACE_CATEGORIES = frozenset({sre.CATEGORY_SPACE, sre.CATEGORY_LINEBREAK})

_State = tuple[str, bool, int]  # (letters read, anchored at a word start, _OPEN/_WORD/_PREFIX)
_Clause = tuple[frozenset[str], frozenset[str]]  # one of these whole words or word prefixes


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
        "_gate",
        "_keys",
        "_lengths",
        "_needs",
        "_patterns",
        "_start_keys",
        "_starts",
        "_unkeyed",
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
        common = {key for key in needles.values() if key[0] != "*" and is_common(key)}
        self._words = automaton({n: k for n, k in needles.items() if k not in common})
        self._common = frozenset(common)
        self._start_keys = tuple(None if c is None else _tagged(c) for c in self._starts)
        self._needs = tuple(
            None if alts is None else tuple(_rarest_first(alt) for alt in alts) for alts in needs
        )
        self._by_key, self._unkeyed = _index(self._start_keys, self._needs)
        self._keys = frozenset(self._by_key)
        self._gate = _native_gate(self._start_keys, self._needs, self._by_key, self._unkeyed)

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

    def tokens(self, words: str, split: list[str] | None = None) -> Tokens:
        """Where the gate's words and prefixes occur in a words-view text, found in one pass
        and read by :meth:`runnable` and :meth:`finditer` (``split``: its words, if known)."""
        return Tokens(words, self._words, self._common, split)

    def runnable(self, tokens: Tokens) -> list[int]:
        """Indices, in order, of the patterns that can match: every word they need is there.

        Stricter than :meth:`candidates`: besides the first word, each word that follows a
        run of whitespace in a pattern (``ignore ... previous ... instructions``) must occur.
        Only the patterns keyed by a word of the text (see :func:`_index`) are looked at.
        Where ``_scan_native`` was built the choice is made there, over key numbers: the sets
        of strings cost a 100-character text a fifth of its time (docs/benchmarks.md).
        """
        present = tokens.present
        if self._gate is not None:
            return self._gate.runnable(present)
        hits = present & self._keys
        if not hits and not self._unkeyed:
            return []
        found = self._unkeyed.union(*map(self._by_key.__getitem__, hits))
        needs_of, start_keys, missing = self._needs, self._start_keys, present.isdisjoint
        out = []
        for index in sorted(found):
            needs, start = needs_of[index], start_keys[index]
            if start is not None and missing(start):
                continue  # its first word is not there
            if needs is None:
                out.append(index)
                continue
            for alt in needs:
                for clause in alt:
                    if missing(clause):
                        break
                else:
                    out.append(index)
                    break
        return out

    def finditer(
        self, index: int, tokens: Tokens, text: str | None = None
    ) -> Iterator[re.Match[str]]:
        """The matches of pattern ``index`` in the text, as ``finditer`` finds them.

        A gated pattern is tried only at the starts of the words its first letters allow,
        which gives the same non-overlapping matches as a scan of every position. ``text``,
        if given, is what the pattern runs on instead of the words view ``tokens`` was made
        from: the normalised text that view was made of (punctuation there is one space
        here, so its words start at the same offsets).
        """
        pattern, starts = self._patterns[index], self._start_keys[index]
        text = tokens.text if text is None else text
        if starts is None:
            yield from pattern.finditer(text)
            return
        limit = max(_SCAN_ABOVE, len(text) // _CHARS_PER_START)
        positions = tokens.starts(starts, limit)
        if len(positions) > limit:
            # A first word on every few characters: one scan in C beats a match per start.
            yield from pattern.finditer(text)
            return
        end = 0
        for position in positions:
            if position < end:
                continue
            match = pattern.match(text, position)
            if match is not None:
                yield match
                end = max(match.end(), position + 1)


_OFFSETS_ABOVE = 4_000
"""Texts longer than this (characters) read their first words' offsets off one more pass of
the automaton; shorter ones find them one by one: per 1,000-character text the pass cost 2%
more instructions, per 20,000-character text it saved 6% (``guard_instructions.py``)."""
_SCAN_ABOVE = 24
_CHARS_PER_START = 16
"""A gated pattern scans the whole text instead of trying each start once it has more than
``_SCAN_ABOVE`` starts and more than one per ``_CHARS_PER_START`` characters. A scan tries
the pattern at every character, and in a long text most rules' first words occur somewhere:
with a fixed bound of 24 starts, a 20,000-character text scanned for most word rules and
spent 15 ms in them, against 5 ms tried at their starts (docs/benchmarks.md)."""


class Tokens:
    """The gate's keys found in a words-view text (``present``): whole words as they are,
    word prefixes marked with a leading ``*`` (a character no word contains).

    One pass of the automaton finds them, except short common words (``a``, ``the``,
    ``you``), which it would report dozens of times in a long text: those are read off the
    text's set of words. Where a key's words start is looked up only for the rules that run.
    """

    __slots__ = ("_automaton", "_offsets", "_padded", "present", "text")

    def __init__(
        self,
        text: str,
        automaton: Searcher | None,
        common: frozenset[str],
        split: list[str] | None = None,
    ) -> None:
        self.text = text
        # A words view separates its words by spaces and newlines only; each needle starts
        # with the space before its word, whose offset in the padded text is the word's
        # offset in ``text``.
        padded = self._padded = f" {text} ".replace("\n", " ")
        present = found_in(automaton, padded)
        present.update(common.intersection(text.split() if split is None else split))
        self.present = present
        self._automaton = automaton
        self._offsets: dict[str, list[int]] | None = None

    def starts(self, keys: frozenset[str], limit: int) -> list[int]:
        """Offsets, in order, of the words that are one of ``keys`` (see :func:`_tagged`);
        more than ``limit`` of them once there are that many."""
        padded = self._padded
        found: set[int] = set()
        known = self._offsets_of() if len(padded) > _OFFSETS_ABOVE else {}
        for key in keys & self.present:
            offsets = known.get(key)
            if offsets is not None:
                found.update(offsets)
                if len(found) > limit:
                    break
                continue
            needle = f" {key[1:]}" if key[0] == "*" else f" {key} "  # a common word
            offset = padded.find(needle)
            while offset >= 0:
                found.add(offset)
                if len(found) > limit:
                    return sorted(found)
                offset = padded.find(needle, offset + 1)
        return sorted(found)

    def _offsets_of(self) -> dict[str, list[int]]:
        """Where each key the automaton knows occurs, read in one more pass of it when a rule
        first asks. Rules share first words, and a long text holds each many times: looking
        them up one ``find`` at a time took a sixth of the instructions of a 20,000-character
        text. In a short one the finds cost less than the pass (see ``_OFFSETS_ABOVE``)."""
        offsets = self._offsets
        if offsets is None:
            offsets = self._offsets = {}
            for end, key in () if self._automaton is None else self._automaton.iter(self._padded):
                # the needle is " word " or " prefix": its offset is that of the space
                size = len(key) if key[0] == "*" else len(key) + 2
                found = offsets.get(key)
                if found is None:
                    offsets[key] = [end - size + 1]
                else:
                    found.append(end - size + 1)
        return offsets


def _index(
    starts: Sequence[frozenset[str] | None],
    needs: Sequence[tuple[tuple[frozenset[str], ...], ...] | None],
) -> tuple[dict[str, frozenset[int]], frozenset[int]]:
    """The patterns keyed by the rarest clause of each alternative (its first, see
    :func:`_rarest_first`), where :meth:`WordGate.runnable` starts: one of those keys is in
    any text a pattern can match. A pattern with no needs is keyed by its first words, and
    one with no first words either by nothing: it is always looked at (the second set)."""
    by_key: dict[str, set[int]] = {}
    unkeyed: set[int] = set()
    for index, (start, alts) in enumerate(zip(starts, needs, strict=True)):
        for keys in [start] if alts is None else [alt[0] if alt else start for alt in alts]:
            if keys is None:
                unkeyed.add(index)
            for key in keys or ():
                by_key.setdefault(key, set()).add(index)
    return {key: frozenset(found) for key, found in by_key.items()}, frozenset(unkeyed)


def _native_gate(
    starts: Sequence[frozenset[str] | None],
    needs: Sequence[tuple[tuple[frozenset[str], ...], ...] | None],
    by_key: dict[str, frozenset[int]],
    unkeyed: frozenset[int],
) -> Chooser | None:
    """:meth:`WordGate.runnable`'s choice in C (``_scan_native.Gate``), over key numbers
    instead of sets of strings (``None`` where the C part was not built)."""
    if Gate is None:
        return None
    keys = sorted(  # by_key's keys are among these: each is a start or a needed clause's
        {k for c in starts if c is not None for k in c}
        | {k for alts in needs if alts is not None for alt in alts for c in alt for k in c}
    )
    number = {key: n for n, key in enumerate(keys)}
    return Gate(
        keys,
        [None if c is None else [number[k] for k in c] for c in starts],
        [
            None if alts is None else [[[number[k] for k in c] for c in alt] for alt in alts]
            for alts in needs
        ],
        [sorted(by_key.get(key, ())) for key in keys],
        sorted(unkeyed),
    )


def _clause(starts: set[tuple[str, int]]) -> _Clause:
    words = frozenset(text for text, kind in starts if kind == _WORD)
    return words, frozenset(text for text, kind in starts if kind != _WORD)


def _rarest_first(alt: Sequence[_Clause]) -> tuple[frozenset[str], ...]:
    """An alternative's clauses as keys, those least likely in a text first (see
    :func:`_odds`). :meth:`WordGate.runnable` looks only at the patterns whose first clause
    is in a text, and stops at the first clause missing from it: this order decides how many
    it reads."""
    tagged = [_tagged(clause) for clause in alt]
    return tuple(sorted(tagged, key=lambda keys: (sum(map(_odds, keys)), sorted(keys))))


_FREQUENT_WORDS = (
    "the of and to a in is you that it for on are with as be this was have or at not your from"
    " by all but we can if will an they my me do what so no one which there their any about"
    " would should must now i"
)
_FREQUENT = frozenset(_FREQUENT_WORDS.split())
"""The most frequent English words (``decoding._COMMON_WORDS`` without its imperatives)."""
_USUAL_WORDS = (
    "he his her she him them us our its then than also just only even more most much many"
    " some other such each every both few those these here where why when how who into over"
    " after back well way first new two up out get go say make know take see come think look"
    " want give use find tell ask work need help write create provide explain list describe"
    " using sure please following based information example act user task content system"
    " develop application data code file name question answer text generate"
)
_USUAL = frozenset(_USUAL_WORDS.split())
"""Other words most texts and prompts hold."""


def _odds(key: str) -> int:
    """How likely a text is to hold a key, roughly: 100 for one of the most frequent English
    words (or a prefix of one), 10 for another usual word, 1 for any other. Only the order of
    the clauses depends on it, never which patterns can match."""
    if key[0] != "*":
        return 100 if key in _FREQUENT else 10 if key in _USUAL else 1
    prefix = key[1:]
    if any(word.startswith(prefix) for word in _FREQUENT):
        return 100
    return 10 if any(word.startswith(prefix) for word in _USUAL) else 1


def _tagged(clause: _Clause) -> frozenset[str]:
    """A clause as one set of keys: whole words as they are, prefixes after a ``*``."""
    return clause[0] | frozenset("*" + prefix for prefix in clause[1])


def _word_needs(pattern: re.Pattern[str], limit: int) -> tuple[tuple[_Clause, ...], ...] | None:
    """For each alternative, the words that begin it and that follow its runs of whitespace."""
    items = parsed(pattern)
    if items is None:
        return None
    out: list[tuple[_Clause, ...]] = []
    for alt, anchored in alternatives(items, False):
        slots = [(0, anchored)]
        after_space = False
        for i, item in enumerate(alt):
            after_space = _after_space(item, after_space)
            if after_space:
                slots.append((i + 1, True))
        clauses: list[_Clause] = []
        for start, slot_anchored in slots:
            found = _letters_from(alt[start:], slot_anchored, limit)
            if found is not None:
                clauses.append(_clause(found))
        out.append(tuple(clauses))
    return tuple(out)


def _after_space(item: tuple[Any, Any], before: bool) -> bool:
    """Whether a match is sure to stand just after whitespace once ``item`` has matched
    (``before``: whether it was before it), so that a word starts there.

    True after ``\\s+``, and after ``(?:\\w+\\s+){0,5}`` and its like, which end in whitespace
    when they match anything: the words after them in a pattern must occur in a text too,
    as the words after ``\\s+`` must. Anything this does not read is not sure (False).
    """
    op, arg = item
    if op in ZERO_WIDTH:
        return before
    if op is sre.IN:
        return list(arg) == [(sre.CATEGORY, sre.CATEGORY_SPACE)]
    if op is sre.SUBPATTERN:
        return _sequence_after_space(arg[-1], before)
    if op is sre.BRANCH:
        return all(_sequence_after_space(body, before) for body in arg[1])
    if op in REPEATS:
        low, high, body = arg
        if high == 0:
            return before
        if not _sequence_after_space(body, False):
            return False
        return True if low >= 1 else before
    return False


def _sequence_after_space(items: Iterable[tuple[Any, Any]], before: bool) -> bool:
    for item in items:
        before = _after_space(item, before)
    return before


def _first_letters(pattern: re.Pattern[str], limit: int) -> set[tuple[str, int]] | None:
    """The (letters, _WORD or _PREFIX) a match of ``pattern`` begins with, or None if unknown."""
    items = parsed(pattern)
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
    if op is sre.AT:
        if arg is sre.AT_BOUNDARY:
            return {_boundary(state) for state in states}
        return states
    if op in (sre.ASSERT, sre.ASSERT_NOT):
        return states  # zero width: skipping a condition only lets more texts through
    if op is sre.LITERAL:
        return _read(states, (chr(arg),), limit)
    if op is sre.IN:
        return _char_class(arg, states, limit)
    if op is sre.SUBPATTERN:
        return _sequence(arg[-1], states, limit)
    if op is sre.BRANCH:
        out: set[_State] = set()
        for alternative in arg[1]:
            out |= _sequence(alternative, states, limit)
        return out
    if op in REPEATS:
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
        if op is sre.LITERAL:
            chars.append(chr(arg))
        elif op is sre.RANGE and arg[1] - arg[0] < 16:
            chars.extend(chr(code) for code in range(arg[0], arg[1] + 1))
        elif op is sre.CATEGORY and arg in _SPACE_CATEGORIES:
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
