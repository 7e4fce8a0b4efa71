"""Reading compiled regular expressions: the parse trees the rules' gates read, and the
automaton they search a text with."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from importlib import import_module
from operator import itemgetter
from typing import Any, Final, Protocol

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
    "NATIVE",
    "REPEATS",
    "ZERO_WIDTH",
    "Chooser",
    "Gate",
    "Searcher",
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


class Searcher(Protocol):
    """What the gates ask of an automaton of ``(needle, key)`` pairs."""

    def found(self, text: str) -> set[str]:
        """The keys whose needles occur in ``text``."""
        ...

    def iter(self, text: str) -> Iterable[tuple[int, str]]:
        """``(end, key)`` of every occurrence, ``end`` the index of its last character."""
        ...


def is_common(string: str) -> bool:
    """A string most texts hold (``:``, ``at``, ``the``): searched with ``in``, not the
    automaton, which would report each of its occurrences."""
    stripped = string.strip()
    return len(stripped) < 2 or (len(stripped) <= 3 and stripped.isascii() and stripped.isalpha())


class _Automaton:
    """pyahocorasick's automaton behind :class:`_scan_native.Strings`' two methods: the
    search where the C part was not built."""

    __slots__ = ("_automaton",)

    def __init__(self, pairs: Iterable[tuple[str, str]]) -> None:
        self._automaton = ahocorasick.Automaton()
        for needle, key in pairs:
            self._automaton.add_word(needle, key)
        self._automaton.make_automaton()

    def found(self, text: str) -> set[str]:
        return set(map(_KEY, self._automaton.iter(text)))

    def iter(self, text: str) -> Iterator[tuple[int, str]]:
        return self._automaton.iter(text)  # type: ignore[no-any-return]


def _native() -> Any:
    """``_scan_native``, built from ``_scan_native.c`` at install; ``None`` where no compiler
    was there (pyahocorasick searches instead, and the gates choose in Python)."""
    try:
        return import_module(f"{__package__}._scan_native")
    except ImportError:
        return None


class Chooser(Protocol):
    """What :class:`~.word_gate.WordGate` asks of ``_scan_native.Gate``."""

    def runnable(self, present: Iterable[str]) -> list[int]:
        """The patterns, in order, that the keys in ``present`` let run."""
        ...


_module: Final = _native()
_Strings: Final[Callable[[list[tuple[str, str]]], Searcher] | None] = getattr(
    _module, "Strings", None
)
Gate: Final[Callable[..., Chooser] | None] = getattr(_module, "Gate", None)
"""``_scan_native.Gate`` (``None`` where the C part was not built)."""
NATIVE: Final = _Strings is not None
"""Whether the gates search in C (``_scan_native``), as installs with a compiler do."""


def automaton(needles: dict[str, str], native: bool = True) -> Searcher | None:
    """An Aho-Corasick automaton that reports each needle as its key (``None`` if there are
    no needles). In C where it was built (``native=False``: pyahocorasick's, which the tests
    compare it with)."""
    if not needles:
        return None
    pairs = list(needles.items())
    return _Strings(pairs) if native and _Strings is not None else _Automaton(pairs)


_KEY = itemgetter(1)


def found_in(searcher: Searcher | None, text: str) -> set[str]:
    """The keys of the needles an :func:`automaton` finds in ``text`` (none without one)."""
    return set() if searcher is None else searcher.found(text)


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
