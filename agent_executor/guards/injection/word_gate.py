"""Which of many word-anchored regular expressions can match a text, decided by its words.

The injection guard runs dozens of rules on the "words view" of a text (word characters
separated by whitespace). Most texts match none of them, and running every rule, or one big
alternation of all of them, costs about half a microsecond per character with ``re``. But a
rule that starts at a word boundary (``\\b``) can only match at the start of a word, and its
first literal letters say which words those can be: ``\\b(?:ignore|disregard) ...`` needs a word
starting ``igno`` or ``disr``. :class:`WordGate` reads those first letters off each compiled
pattern (its parse tree) once, and then picks the rules worth running for a text from the
text's words with a few dictionary look-ups per word.

The gate is conservative: a rule it cannot prove anchored to a word start, or whose first
letters it cannot read (a character class, a wildcard, an optional prefix that may be empty), is
always a candidate. So a pattern may run for nothing, but never fails to run where it matches.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

try:
    from re import _constants as _c  # type: ignore[attr-defined]
    from re import _parser as _p  # type: ignore[attr-defined]
except ImportError:  # Python 3.10
    import sre_constants as _c
    import sre_parse as _p

__all__ = ["WordGate"]

_OPEN, _WORD, _PREFIX = 0, 1, 2  # still reading; the word must equal / start with the text
_WORD_CHAR = re.compile(r"\w")
_SPACE_CATEGORIES = frozenset({_c.CATEGORY_SPACE, _c.CATEGORY_LINEBREAK})

_State = tuple[str, bool, int]  # (letters read, anchored at a word start, _OPEN/_WORD/_PREFIX)


class _Ungated(Exception):
    """The pattern can start somewhere its first letters do not tell."""


class WordGate:
    """Picks, among ``patterns``, those that can match somewhere in a words-view text.

    ``candidates(words)`` expects a text whose only non-word characters are whitespace (the
    injection guard's words view); for such a text it returns the indices of every pattern
    that can match in it, and usually far fewer than all of them.
    """

    __slots__ = ("_always", "_by_prefix", "_by_word", "_lengths")

    def __init__(self, patterns: Sequence[re.Pattern[str]], prefix_chars: int = 4) -> None:
        always: set[int] = set()
        by_word: dict[str, set[int]] = {}
        by_prefix: dict[str, set[int]] = {}
        for index, pattern in enumerate(patterns):
            starts = _first_letters(pattern, prefix_chars)
            if starts is None:
                always.add(index)
                continue
            for text, kind in starts:
                (by_word if kind == _WORD else by_prefix).setdefault(text, set()).add(index)
        self._always = frozenset(always)
        self._by_word = {word: frozenset(found) for word, found in by_word.items()}
        self._by_prefix = {prefix: frozenset(found) for prefix, found in by_prefix.items()}
        self._lengths = tuple(sorted({len(prefix) for prefix in by_prefix}))

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


def _first_letters(pattern: re.Pattern[str], limit: int) -> set[tuple[str, int]] | None:
    """The (letters, _WORD or _PREFIX) a match of ``pattern`` begins with, or None if unknown."""
    if pattern.flags & re.IGNORECASE:
        return None
    try:
        states = _sequence(_p.parse(pattern.pattern, pattern.flags), {("", False, _OPEN)}, limit)
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
