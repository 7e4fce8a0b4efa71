"""Retrieval: passages from documents given to the model with their sources.

- :class:`Retriever` (protocol) finds :class:`Passage` s for a query.
- :class:`BM25Retriever` ranks passages held in memory (``[retrieval]`` extra: ``bm25s``);
  :class:`PostgresRetriever` searches a PostgreSQL table with full-text search (``[postgres]``
  extra: ``psycopg``), by words, by vectors from an OpenAI-compatible embeddings endpoint
  (:class:`OpenAIEmbeddings`) or both. Both import their packages only when created.
- :class:`RetrievalHook` adds the passages for the user's question to the model's request,
  screened like tool results, and records their sources for the ``done`` event.
- :func:`load_folder` and :func:`split_document` cut documents into passages.

See docs/retrieval.md.
"""

from .base import Passage, Retriever
from .bm25 import BM25Retriever
from .documents import load_folder, split_document
from .embeddings import Embeddings, OpenAIEmbeddings
from .hook import DEFAULT_INSTRUCTIONS, QueryFunction, RetrievalHook, latest_user_message
from .postgres import PostgresRetriever

__all__ = [
    "DEFAULT_INSTRUCTIONS",
    "BM25Retriever",
    "Embeddings",
    "OpenAIEmbeddings",
    "Passage",
    "PostgresRetriever",
    "QueryFunction",
    "RetrievalHook",
    "Retriever",
    "latest_user_message",
    "load_folder",
    "split_document",
]
