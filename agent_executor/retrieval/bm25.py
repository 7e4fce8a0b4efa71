"""``BM25Retriever``: BM25 over passages held in memory, no server (the ``[retrieval]`` extra).

Scoring is the ``bm25s`` library's (sparse matrices over numpy); words are lower-cased, English
stop words dropped and, with PyStemmer, stemmed (Snowball), the same way for the passages and
the query. Identifiers keep their underscores (``output_blocked`` is one word).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio

from .base import Passage, import_extra
from .documents import load_folder

__all__ = ["BM25Retriever"]

_FEATURE = "BM25Retriever"


class BM25Retriever:
    """Ranks passages held in memory with BM25; indexes them when created.

    ``stemmer`` is a Snowball language for PyStemmer (``None``: no stemming), ``stopwords``
    a language code of ``bm25s`` or a list of words; ``k1``, ``b`` and ``method`` (``lucene``,
    ``robertson``, ``atire``, ``bm25l``, ``bm25+``) are BM25's. Indexing runs in the calling
    thread (about a second per 10 MB of text); a search runs in a worker thread. Passages
    that share no word with the query are never returned.
    """

    def __init__(
        self,
        passages: Sequence[Passage],
        *,
        stemmer: str | None = "english",
        stopwords: str | list[str] = "en",
        k1: float = 1.5,
        b: float = 0.75,
        method: str = "lucene",
    ) -> None:
        bm25s = import_extra("bm25s", "retrieval", _FEATURE)
        tokenization = import_extra("bm25s.tokenization", "retrieval", _FEATURE)
        stem = None
        if stemmer is not None:
            stem = import_extra("Stemmer", "retrieval", _FEATURE).Stemmer(stemmer).stemWord
        self.passages: tuple[Passage, ...] = tuple(passages)
        self._tokenizer: Any = tokenization.Tokenizer(stemmer=stem, stopwords=stopwords)
        self._index: Any = bm25s.BM25(k1=k1, b=b, method=method)
        texts = [f"{p.title}\n{p.text}" if p.title else p.text for p in self.passages]
        tokens = self._tokenizer.tokenize(texts, return_as="ids", show_progress=False)
        self._index.index(tokens, show_progress=False)

    @classmethod
    def from_folder(
        cls,
        path: str | Path,
        *,
        glob: str = "**/*.md",
        max_chars: int = 1200,
        relative_to: str | Path | None = None,
        **options: Any,
    ) -> BM25Retriever:
        """Index every file under ``path`` matching ``glob``, cut into passages of at most
        ``max_chars`` characters (see :func:`~agent_executor.retrieval.load_folder`);
        ``options`` go to the constructor."""
        passages = load_folder(path, glob=glob, max_chars=max_chars, relative_to=relative_to)
        return cls(passages, **options)

    async def retrieve(self, query: str, *, k: int) -> list[Passage]:
        """The ``k`` best passages for ``query``, best first (searched in a worker thread)."""
        return await anyio.to_thread.run_sync(self.search, query, k)

    def search(self, query: str, k: int) -> list[Passage]:
        """The ``k`` best passages for ``query``, best first (synchronous)."""
        if k < 1 or not self.passages:
            return []
        tokens = self._tokenizer.tokenize(
            [query], update_vocab=False, return_as="ids", show_progress=False
        )
        ranks, scores = self._index.retrieve(
            tokens, k=min(k, len(self.passages)), show_progress=False, n_threads=1
        )
        return [
            replace(self.passages[int(rank)], score=float(score))
            for rank, score in zip(ranks[0], scores[0], strict=True)
            if score > 0
        ]
