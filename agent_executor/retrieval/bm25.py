"""``BM25Retriever``: BM25 over passages held in memory, no server (the ``[retrieval]`` extra).

Scoring is the ``bm25s`` library's (sparse matrices over numpy); words are lower-cased, English
stop words dropped and, with PyStemmer, stemmed (Snowball), the same way for the passages and
the query. Identifiers keep their underscores (``output_blocked`` is one word).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio

from .._extras import requires_extra
from .base import Passage
from .documents import load_folder

__all__ = ["BM25Retriever"]


class BM25Retriever:
    """Ranks passages held in memory with BM25; indexes them when created.

    ``stemmer`` is a Snowball language for PyStemmer (``None``: no stemming), ``stopwords``
    a language of ``bm25s`` (``en``, ``de``, ``fr``, ...), a list of words, or ``None``;
    ``k1``, ``b`` and ``method`` (``lucene``, ``robertson``, ``atire``, ``bm25l``,
    ``bm25+``) are BM25's. Indexing runs in the calling thread (about a second per 10 MB of
    text); a search runs in a worker thread. Passages that share no word with the query are
    never returned.
    """

    def __init__(
        self,
        passages: Sequence[Passage],
        *,
        stemmer: str | None = "english",
        stopwords: str | list[str] | None = "en",
        k1: float = 1.5,
        b: float = 0.75,
        method: str = "lucene",
    ) -> None:
        with requires_extra("retrieval", "BM25Retriever"):
            import bm25s
            import Stemmer
        self._bm25s = bm25s
        self._stemmer = None if stemmer is None else Stemmer.Stemmer(stemmer)
        self._stopwords = stopwords
        # PyStemmer's stemmers are not thread-safe, and searches run in worker threads.
        self._lock = threading.Lock()
        self.passages: tuple[Passage, ...] = tuple(passages)
        tokens = self._tokens(
            [f"{p.title}\n{p.text}" if p.title else p.text for p in self.passages]
        )
        self._vocabulary = frozenset(token for words in tokens for token in words)
        self._index: Any = bm25s.BM25(k1=k1, b=b, method=method)
        if self.passages:
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
        with self._lock:
            [words] = self._tokens([query])
        # Words the index has never seen are left out (they cannot match anything).
        known = [word for word in words if word in self._vocabulary]
        if not known:
            return []
        ranks, scores = self._index.retrieve(
            [known], k=min(k, len(self.passages)), show_progress=False, n_threads=1
        )
        return [
            replace(self.passages[int(rank)], score=float(score))
            for rank, score in zip(ranks[0], scores[0], strict=True)
            if score > 0
        ]

    def _tokens(self, texts: list[str]) -> list[list[str]]:
        """Each text's words as the index reads them. ``bm25s.tokenize`` keeps no state
        between calls, so queries never grow a vocabulary (a tokenizer object would remember
        every word it was ever asked about)."""
        tokens: list[list[str]] = self._bm25s.tokenize(
            texts,
            stopwords=self._stopwords,
            stemmer=self._stemmer,
            return_ids=False,
            show_progress=False,
        )
        return tokens
