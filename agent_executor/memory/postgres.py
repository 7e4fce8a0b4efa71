"""Long-term memory on PostgreSQL (the ``[postgres]`` extra): a user's facts in one table,
found by full-text search.

Each fact is a row (user, id, text, time) with a stored generated ``tsvector`` under a GIN
index; a recall matches the facts of that user only that share any word of the query
(``to_tsvector`` lexemes: stemmed, stop words dropped), ranked by ``ts_rank_cd``, newest first
on ties. With ``embeddings`` (an OpenAI-compatible ``/v1/embeddings`` endpoint) each fact is
also stored with its vector, and a recall ranks the user's facts by the dot product with the
query's vector too (those at ``min_similarity`` or more: an unrelated fact is not a memory),
the two rankings merged by reciprocal rank fusion (a fact either finds well comes first; one
both find, before all). Every replica of a service can share the table.
"""

from __future__ import annotations

import re
from types import TracebackType
from typing import Any

from .._extras import requires_extra
from .._postgres import LazyPool, fused
from ..retrieval.embeddings import Embeddings
from .facts import Fact, new_fact

__all__ = ["PostgresMemoryStore"]

_IDENTIFIER_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_$]*$")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS {table} (
    user_id text NOT NULL,
    id text NOT NULL,
    body text NOT NULL,
    created_at double precision NOT NULL,
    tsv tsvector GENERATED ALWAYS AS (to_tsvector({config}::regconfig, body)) STORED,
    PRIMARY KEY (user_id, id)
);
ALTER TABLE {table} ADD COLUMN IF NOT EXISTS embedding float8[];
CREATE INDEX IF NOT EXISTS {tsv_index} ON {table} USING gin (tsv);
"""

_NEAREST = """
SELECT id, body, created_at FROM (
    SELECT id, body, created_at,
        (SELECT sum(e * q) FROM unnest(embedding, %(vector)s::float8[]) AS v(e, q)) AS score
    FROM {table}
    WHERE user_id = %(user)s AND embedding IS NOT NULL
) AS scored
WHERE score >= %(similarity)s
ORDER BY score DESC, created_at DESC
LIMIT %(limit)s
"""

_RECALL = """
SELECT id, body, created_at FROM {table}
WHERE user_id = %(user)s AND tsv @@ replace(
    plainto_tsquery({config}::regconfig, %(query)s)::text, ' & ', ' | ')::tsquery
ORDER BY ts_rank_cd(tsv, replace(
    plainto_tsquery({config}::regconfig, %(query)s)::text, ' & ', ' | ')::tsquery) DESC,
    created_at DESC
LIMIT %(limit)s
"""


class PostgresMemoryStore:
    """:class:`~agent_executor.memory.facts.MemoryStore` on PostgreSQL (see the module
    docstring). ``dsn`` is a libpq connection string or URL; the table is created on first
    use; :meth:`aclose` (or ``async with``) closes the connection pool."""

    def __init__(
        self,
        dsn: str,
        *,
        table: str = "agent_facts",
        config: str = "english",
        timeout: float = 10.0,
        embeddings: Embeddings | None = None,
        min_similarity: float = 0.2,
    ) -> None:
        with requires_extra("postgres", "PostgresMemoryStore"):
            import psycopg_pool
            from psycopg import sql

        if not all(_IDENTIFIER_RE.match(part) for part in table.split(".")):
            raise ValueError(f"not a table name: {table!r}")
        self._sql = sql
        self.dsn, self.table, self.config = dsn, table, config
        self.embeddings = embeddings
        self.min_similarity = min_similarity
        self._pool = LazyPool(
            psycopg_pool.AsyncConnectionPool,
            dsn,
            min_size=1,
            max_size=4,
            timeout=timeout,
            setup=self._create,
        )

    async def remember(self, user_id: str, text: str) -> Fact:
        fact = new_fact(text)
        vector = None
        if self.embeddings is not None:
            [vector] = await self.embeddings.embed([fact.text])
        statement = self._statement(
            "INSERT INTO {table} (user_id, id, body, created_at, embedding) "
            "VALUES (%(user)s, %(id)s, %(body)s, %(at)s, %(vector)s)"
        )
        values = {
            "user": user_id, "id": fact.id, "body": fact.text, "at": fact.created_at,
            "vector": vector,
        }  # fmt: skip
        await self._execute(statement, values)
        return fact

    async def recall(self, user_id: str, query: str, limit: int = 5) -> list[Fact]:
        if not query.strip() or limit < 1:
            return []
        values: dict[str, Any] = {"user": user_id, "query": query, "limit": limit}
        by_words = _facts(await self._execute(self._statement(_RECALL), values))
        if self.embeddings is None:
            return by_words
        [values["vector"]] = await self.embeddings.embed([query])
        values["similarity"] = self.min_similarity
        by_meaning = _facts(await self._execute(self._statement(_NEAREST), values))
        return _fused([by_words, by_meaning], limit)

    async def facts(self, user_id: str) -> list[Fact]:
        rows = await self._execute(
            self._statement(
                "SELECT id, body, created_at FROM {table} WHERE user_id = %(user)s "
                "ORDER BY created_at"
            ),
            {"user": user_id},
        )
        return _facts(rows)

    async def forget(self, user_id: str, fact_id: str | None = None) -> int:
        """Forget one fact, or every fact of the user; how many were forgotten."""
        where = "user_id = %(user)s" + ("" if fact_id is None else " AND id = %(id)s")
        rows = await self._execute(
            self._statement(f"DELETE FROM {{table}} WHERE {where} RETURNING id"),
            {"user": user_id, "id": fact_id},
        )
        return len(rows)

    def _statement(self, text: str) -> Any:
        sql = self._sql
        return sql.SQL(text).format(
            table=sql.Identifier(*self.table.split(".")), config=sql.Literal(self.config)
        )

    async def _execute(self, statement: Any, values: dict[str, Any]) -> list[Any]:
        pool = await self._pool.get()
        async with pool.connection() as conn:
            cursor = await conn.execute(statement, values)
            return list(await cursor.fetchall()) if cursor.description else []

    async def _create(self, conn: Any) -> None:
        """The table and its index, on the pool's first connection."""
        name = self.table.replace(".", "_")
        await conn.execute(
            self._sql.SQL(_SCHEMA).format(
                table=self._sql.Identifier(*self.table.split(".")),
                config=self._sql.Literal(self.config),
                tsv_index=self._sql.Identifier(f"{name}_tsv_idx"),
            )
        )

    async def aclose(self) -> None:
        await self._pool.aclose()

    async def __aenter__(self) -> PostgresMemoryStore:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()


def _facts(rows: list[Any]) -> list[Fact]:
    return [Fact(id=id_, text=body, created_at=at) for id_, body, at in rows]


def _fused(rankings: list[list[Fact]], limit: int) -> list[Fact]:
    """Reciprocal rank fusion of several rankings of facts, the newer first on equal scores."""
    return [fact for fact, _ in fused(rankings, _fact_id, limit, tie=_newest_first)]


def _fact_id(fact: Fact) -> str:
    return fact.id


def _newest_first(fact: Fact) -> float:
    return -fact.created_at
