"""The retrieval vocabulary: :class:`Passage` and the :class:`Retriever` protocol."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..results import Source

__all__ = ["Passage", "Retriever"]


@dataclass(frozen=True, slots=True)
class Passage:
    """A piece of a document a retriever found: its ``text`` and where it comes from.

    ``source`` is a path (with a ``#heading`` anchor for Markdown sections), a URL or an id;
    ``score`` is the retriever's relevance score (higher is better; comparable only within one
    retriever); ``title`` the heading path of the section; ``metadata`` anything else
    (the built-in loaders put the file's ``path`` and the section's first ``line`` there).
    """

    text: str
    source: str
    score: float = 0.0
    title: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def cite(self) -> Source:
        """The passage as the ``done`` event lists it (no text)."""
        return Source(source=self.source, title=self.title, score=round(self.score, 6))


@runtime_checkable
class Retriever(Protocol):
    """Finds the passages most relevant to a query, best first, at most ``k`` of them.

    A retriever returns only passages that match the query at all (an empty list is a fine
    answer) and raises on failure (a store that is down); it must be safe to call from
    concurrent runs.
    """

    async def retrieve(self, query: str, *, k: int) -> list[Passage]: ...
