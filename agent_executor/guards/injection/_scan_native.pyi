"""The gates in C (``_scan_native.c``): the string search (see ``_parse_tree.automaton``) and
the word gate's choice of rules (``word_gate.WordGate.runnable``)."""

from collections.abc import Iterable, Sequence
from typing import Generic, TypeVar

_K = TypeVar("_K")

class Strings(Generic[_K]):
    """An Aho-Corasick automaton of ``(needle, key)`` pairs, in one block."""

    def __init__(self, pairs: Iterable[tuple[str, _K]]) -> None: ...
    def found(self, text: str) -> set[_K]:
        """The keys whose needles occur in ``text``."""

    def iter(self, text: str) -> list[tuple[int, _K]]:
        """``(end, key)`` of every occurrence, ``end`` the index of its last character."""

class Gate:
    """Which of a gate's patterns the keys a text holds let run, over key numbers."""

    def __init__(
        self,
        keys: Sequence[str],
        starts: Sequence[Sequence[int] | None],
        needs: Sequence[Sequence[Sequence[Sequence[int]]] | None],
        keyed: Sequence[Sequence[int]],
        unkeyed: Sequence[int],
    ) -> None: ...
    def runnable(self, present: Iterable[str]) -> list[int]:
        """The patterns, in order, that the keys in ``present`` let run."""
