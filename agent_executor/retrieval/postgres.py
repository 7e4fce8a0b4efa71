"""``PostgresRetriever``: PostgreSQL full-text search (the ``[postgres]`` extra, psycopg 3).

One table holds the passages; a stored generated ``tsvector`` column (title weighted ``A``,
text ``B``) carries a GIN index, so a query reads only the rows that contain its words. The
ranking is ``ts_rank_cd`` (cover density: how close together the query's words are), or
``ts_rank`` (how often they occur) with ``ranking="frequency"``, both divided by the log of
the passage's length. Ranking reads every passage that matches, so its cost grows with how
many passages share a word with the query (docs/retrieval.md has figures). Every replica of
a service can share the table, and PostgreSQL's own replication scales reads past one machine.

A question rarely has all of its words in one passage, so by default (``match="any"``) a
query matches passages with *any* of its words (the words are the query's ``to_tsvector``
lexemes: stemmed, stop words dropped) and the ranking sorts out the best;
``match="websearch"`` hands the query to ``websearch_to_tsquery`` instead (every word must
appear; ``"quoted phrases"``, ``or`` and ``-word`` work as on a web search engine).

With ``embeddings`` (an OpenAI-compatible ``/v1/embeddings`` endpoint), each passage is also
stored with its vector (a ``float8[]`` column, length 1), and ``search`` chooses ``"vector"``
(the dot product of the query's vector with every stored one, computed by the server: exact,
no index, so its cost grows with the table; pgvector's indexes would serve millions of rows but
it is not packaged here) or ``"hybrid"`` (the default with embeddings: both searches, merged by
reciprocal rank fusion, so a passage either finds well comes first and one both find comes
before all).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

import anyio

from .._extras import requires_extra
from .._postgres import LazyPool, fused
from .base import Passage
from .documents import load_folder
from .embeddings import Embeddings

__all__ = ["PostgresRetriever"]

_IDENTIFIER_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_$]*$")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS {table} (
    id bigserial PRIMARY KEY,
    document text NOT NULL,
    source text NOT NULL,
    title text,
    body text NOT NULL,
    metadata jsonb NOT NULL DEFAULT '{{}}',
    tsv tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector({config}::regconfig, coalesce(title, '')), 'A')
        || setweight(to_tsvector({config}::regconfig, body), 'B')
    ) STORED
);
CREATE INDEX IF NOT EXISTS {tsv_index} ON {table} USING gin (tsv);
CREATE INDEX IF NOT EXISTS {document_index} ON {table} (document);
ALTER TABLE {table} ADD COLUMN IF NOT EXISTS embedding float8[];
"""

# Any of the query's lexemes, each quoted as tsquery text wants it (quotes doubled,
# backslashes escaped); no lexeme at all is the empty query, which matches nothing.
_ANY_WORD = """(
    SELECT coalesce(string_agg(
        '''' || replace(replace(lexeme, '\\', '\\\\'), '''', '''''') || '''', ' | '
    ), '')::tsquery
    FROM unnest(to_tsvector({config}::regconfig, %(query)s))
)"""
_ALL_WORDS = "websearch_to_tsquery({config}::regconfig, %(query)s)"

_RANKINGS = {"cover_density": "ts_rank_cd", "frequency": "ts_rank"}

_NEAREST = """
SELECT body, source, title, metadata,
    (SELECT sum(e * q) FROM unnest(embedding, %(vector)s::float8[]) AS v(e, q)) AS score
FROM {table}
WHERE embedding IS NOT NULL
ORDER BY score DESC NULLS LAST, id
LIMIT %(k)s
"""

Search = Literal["text", "vector", "hybrid"]

_SEARCH = """
SELECT body, source, title, metadata, {rank}(tsv, query, 1) AS score
FROM {table}, {query} AS q(query)
WHERE tsv @@ query
ORDER BY score DESC, id
LIMIT %(k)s
"""


class PostgresRetriever:
    """Passages in a PostgreSQL table, found by full-text search.

    ``dsn`` is a libpq connection string or URL; ``table`` may be ``schema.table``;
    ``config`` is the text-search configuration (``english``, ``simple``, ``german``, ...);
    ``match`` and ``ranking`` choose the query and the ranking (see the module).
    Connections come from a pool of ``min_size`` to ``max_size``, opened at the first use;
    :meth:`aclose` (or ``async with``) closes it. The table and its indexes are created on
    the first :meth:`add` or :meth:`index_folder` (:meth:`setup` does it explicitly).
    """

    def __init__(
        self,
        dsn: str,
        *,
        table: str = "agent_passages",
        config: str = "english",
        match: Literal["any", "websearch"] = "any",
        ranking: Literal["cover_density", "frequency"] = "cover_density",
        min_size: int = 1,
        max_size: int = 8,
        timeout: float = 10.0,
        embeddings: Embeddings | None = None,
        search: Search | None = None,
    ) -> None:
        with requires_extra("postgres", "PostgresRetriever"):
            import psycopg_pool
            from psycopg import sql
            from psycopg.types.json import Jsonb

        self._sql = sql
        self._jsonb = Jsonb
        if match not in ("any", "websearch"):
            raise ValueError(f"match must be 'any' or 'websearch', not {match!r}")
        if ranking not in _RANKINGS:
            raise ValueError(f"ranking must be 'cover_density' or 'frequency', not {ranking!r}")
        parts = table.split(".")
        if not 1 <= len(parts) <= 2 or not all(_IDENTIFIER_RE.match(p) for p in parts):
            raise ValueError(f"not a table name: {table!r}")
        self.dsn, self.table, self.config, self.match = dsn, table, config, match
        self.ranking = ranking
        self.embeddings = embeddings
        self.search: Search = search or ("text" if embeddings is None else "hybrid")
        if self.search not in ("text", "vector", "hybrid"):
            raise ValueError(f"search must be 'text', 'vector' or 'hybrid', not {search!r}")
        if self.search != "text" and embeddings is None:
            raise ValueError(f"search={self.search!r} needs embeddings")
        self._pool = LazyPool(
            psycopg_pool.AsyncConnectionPool,
            dsn,
            min_size=min_size,
            max_size=max_size,
            timeout=timeout,
        )
        self._ready = False

    async def retrieve(self, query: str, *, k: int) -> list[Passage]:
        """The ``k`` best passages for ``query``, best first."""
        if k < 1 or not query.strip():
            return []
        if self.search == "text":
            return await self._text(query, k)
        nearest = await self._nearest(query, k)
        if self.search == "vector":
            return nearest
        ranked = fused([await self._text(query, k), nearest], _identity, k)
        return [replace(passage, score=score) for passage, score in ranked]

    async def _text(self, query: str, k: int) -> list[Passage]:
        sql = self._sql
        words = _ANY_WORD if self.match == "any" else _ALL_WORDS
        statement = sql.SQL(_SEARCH).format(
            table=self._table(),
            query=sql.SQL(words).format(config=sql.Literal(self.config)),
            rank=sql.SQL(_RANKINGS[self.ranking]),
        )
        pool = await self._pool.get()
        async with pool.connection() as conn:
            cursor = await conn.execute(statement, {"query": query, "k": k})
            rows = await cursor.fetchall()
        return _passages(rows)

    async def _nearest(self, query: str, k: int) -> list[Passage]:
        assert self.embeddings is not None
        [vector] = await self.embeddings.embed([query])
        statement = self._sql.SQL(_NEAREST).format(table=self._table())
        pool = await self._pool.get()
        async with pool.connection() as conn:
            cursor = await conn.execute(statement, {"vector": vector, "k": k})
            rows = await cursor.fetchall()
        return _passages(rows)

    async def setup(self) -> None:
        """Create the table and its indexes if they do not exist."""
        if self._ready:
            return
        sql = self._sql
        name = self.table.replace(".", "_")
        statement = sql.SQL(_SCHEMA).format(
            table=self._table(),
            config=sql.Literal(self.config),
            tsv_index=sql.Identifier(f"{name}_tsv_idx"),
            document_index=sql.Identifier(f"{name}_document_idx"),
        )
        pool = await self._pool.get()
        async with pool.connection() as conn:
            await conn.execute(statement)
        self._ready = True

    async def add(self, passages: Iterable[Passage], *, replace: bool = False) -> int:
        """Store ``passages`` (in one transaction); with ``replace``, first remove what is
        stored of their documents (``metadata["path"]``, else the source before ``#``).
        Returns how many were stored. With embeddings, their vectors are stored too."""
        kept = list(passages)
        vectors: list[list[float] | None] = [None] * len(kept)
        if self.embeddings is not None and kept:
            vectors = list(await self.embeddings.embed([_embedded(p) for p in kept]))
        rows = [
            (_document(p), p.source, p.title, p.text, self._jsonb(p.metadata), vector)
            for p, vector in zip(kept, vectors, strict=True)
        ]
        await self.setup()
        sql, table = self._sql, self._table()
        pool = await self._pool.get()
        async with pool.connection() as conn, conn.transaction(), conn.cursor() as cursor:
            if replace:
                documents = sorted({row[0] for row in rows})
                await cursor.execute(
                    sql.SQL("DELETE FROM {} WHERE document = ANY(%s)").format(table), [documents]
                )
            await cursor.executemany(
                sql.SQL(
                    "INSERT INTO {} (document, source, title, body, metadata, embedding) "
                    "VALUES (%s, %s, %s, %s, %s, %s)"
                ).format(table),
                rows,
            )
        return len(rows)

    async def index_folder(
        self,
        path: str | Path,
        *,
        glob: str = "**/*.md",
        max_chars: int = 1200,
        relative_to: str | Path | None = None,
    ) -> int:
        """Store the passages of every file under ``path`` matching ``glob`` (see
        :func:`~agent_executor.retrieval.load_folder`), replacing what was stored of those
        files before; returns how many passages were stored."""
        passages = await anyio.to_thread.run_sync(
            lambda: load_folder(path, glob=glob, max_chars=max_chars, relative_to=relative_to)
        )
        return await self.add(passages, replace=True)

    async def aclose(self) -> None:
        """Close the connection pool (a later call opens a new one)."""
        await self._pool.aclose()

    async def __aenter__(self) -> PostgresRetriever:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    def _table(self) -> Any:
        return self._sql.Identifier(*self.table.split("."))


def _passages(rows: list[Any]) -> list[Passage]:
    return [
        Passage(text=body, source=source, title=title, metadata=metadata, score=float(score))
        for body, source, title, metadata, score in rows
    ]


def _identity(passage: Passage) -> tuple[str, str]:
    """What makes two passages the same when rankings are fused: source and text."""
    return passage.source, passage.text


def _embedded(passage: Passage) -> str:
    """What of a passage is embedded: its heading path and its text."""
    return f"{passage.title}\n\n{passage.text}" if passage.title else passage.text


def _document(passage: Passage) -> str:
    path = passage.metadata.get("path")
    return str(path) if path is not None else passage.source.split("#", 1)[0]
