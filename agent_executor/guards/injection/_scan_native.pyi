"""The gates' string search in C (``_scan_native.c``); see ``_parse_tree.automaton``."""

from collections.abc import Iterable
from typing import Generic, TypeVar

_K = TypeVar("_K")

class Strings(Generic[_K]):
    """An Aho-Corasick automaton of ``(needle, key)`` pairs, in one block."""

    def __init__(self, pairs: Iterable[tuple[str, _K]]) -> None: ...
    def found(self, text: str) -> set[_K]:
        """The keys whose needles occur in ``text``."""

    def iter(self, text: str) -> list[tuple[int, _K]]:
        """``(end, key)`` of every occurrence, ``end`` the index of its last character."""
