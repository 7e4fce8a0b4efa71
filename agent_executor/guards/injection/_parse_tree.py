"""Reading compiled regular expressions: the parse trees the rules' gates read, and the
automaton they search a text with."""

from __future__ import annotations

import re
from operator import itemgetter
from typing import Any

import ahocorasick

try:
    from re import _constants as sre  # type: ignore[attr-defined]
    from re import _parser as _sre_parse  # type: ignore[attr-defined]
except ImportError:  # Python 3.10
    import sre_constants as sre
    import sre_parse as _sre_parse

__all__ = [
    "ATOMIC",
    "MAX_CLAUSES",
    "REPEATS",
    "ZERO_WIDTH",
    "alternatives",
    "automaton",
    "found_in",
    "is_common",
    "parsed",
    "sre",
]

REPEATS = (sre.MAX_REPEAT, sre.MIN_REPEAT, getattr(sre, "POSSESSIVE_REPEAT", sre.MAX_REPEAT))
ZERO_WIDTH = (sre.AT, sre.ASSERT, sre.ASSERT_NOT)
ATOMIC = getattr(sre, "ATOMIC_GROUP", None)  # (?>...): Python 3.11 and later
MAX_CLAUSES = 3
"""Clauses kept per alternative of a pattern: its most selective."""


def is_common(string: str) -> bool:
    """A string most texts hold (``:``, ``at``, ``the``): searched with ``in``, not the
    automaton, which would report each of its occurrences."""
    stripped = string.strip()
    return len(stripped) < 2 or (len(stripped) <= 3 and stripped.isascii() and stripped.isalpha())


def automaton(needles: dict[str, str]) -> Any:
    """An Aho-Corasick automaton that reports each needle as its key (``None`` if there
    are no needles: pyahocorasick cannot search with an empty one)."""
    if not needles:
        return None
    found = ahocorasick.Automaton()
    for needle, key in needles.items():
        found.add_word(needle, key)
    found.make_automaton()
    return found


_KEY = itemgetter(1)


def found_in(searcher: Any, text: str) -> set[str]:
    """The keys of the needles an :func:`automaton` finds in ``text`` (none without one)."""
    return set() if searcher is None else set(map(_KEY, searcher.iter(text)))


def parsed(pattern: re.Pattern[str]) -> list[tuple[Any, Any]] | None:
    if pattern.flags & re.IGNORECASE:
        return None
    try:
        return list(_sre_parse.parse(pattern.pattern, pattern.flags))
    except Exception:  # fail open: no gate
        return None


def alternatives(items: list[tuple[Any, Any]], anchored: bool) -> list[tuple[Any, bool]]:
    """The top-level alternatives of a pattern (through groups), and whether ``\\b`` leads."""
    content = [(op, arg) for op, arg in items if op not in ZERO_WIDTH]
    if len(content) == 1:
        leading = items[: items.index(content[0])]
        anchored = anchored or (sre.AT, sre.AT_BOUNDARY) in leading
        op, arg = content[0]
        if op is sre.SUBPATTERN and not arg[1] & re.IGNORECASE:
            return alternatives(list(arg[-1]), anchored)
        if op is sre.BRANCH:
            return [alt for body in arg[1] for alt in alternatives(list(body), anchored)]
    return [(items, anchored)]
