"""``PostgresRetriever`` against a real PostgreSQL server that the tests start
(tests/postgres_server.py): the project's docs/ indexed with full-text search, and with vectors
from an OpenAI-compatible embeddings endpoint (the fake server's), the answer's passage found
by words, by vectors and by both, given to the model, its source in ``done``."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anyio
import psycopg
import pytest

from agent_executor import (
    AgentCommand,
    DoneEvent,
    ModelError,
    Passage,
    PostgresRetriever,
    RetrievalHook,
)
from agent_executor.retrieval import OpenAIEmbeddings, load_folder

from .fakes.openai_server import EMBEDDING_DIMENSIONS, FakeOpenAIServer
from .helpers import collect, make_executor
from .postgres_server import PostgresServer, postgres_server
from .server_helpers import free_port
from .test_retrieval import ANSWER_SOURCE, FACT, QUESTION, answer_from_passages, model_of

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def postgres() -> Iterator[PostgresServer]:
    started = time.perf_counter()
    with postgres_server() as server:
        print(f"PostgreSQL cluster created and started in {time.perf_counter() - started:.2f} s")
        yield server


@pytest.fixture
async def docs(postgres: PostgresServer) -> AsyncIterator[PostgresRetriever]:
    async with PostgresRetriever(postgres.dsn, table="docs") as retriever:
        started = time.perf_counter()
        stored = await retriever.index_folder(ROOT / "docs", relative_to=ROOT)
        print(
            f"PostgreSQL index of docs/: {stored} passages in {time.perf_counter() - started:.3f} s"
        )
        yield retriever


def count(postgres: PostgresServer, table: str) -> int:
    with psycopg.connect(postgres.dsn) as conn:
        row = conn.execute(f"SELECT count(*) FROM {table}").fetchone()
    assert row is not None
    return int(row[0])


async def test_the_docs_are_searched_with_full_text_search(
    docs: PostgresRetriever, postgres: PostgresServer
) -> None:
    started = time.perf_counter()
    passages = await docs.retrieve(QUESTION, k=4)
    print(f"PostgreSQL query: {(time.perf_counter() - started) * 1000:.2f} ms")

    [answer] = [p for p in passages if p.source == ANSWER_SOURCE]  # in the top 4
    assert FACT.search(answer.text)
    assert answer.metadata["path"] == "docs/sse-protocol.md"
    assert [p.score for p in passages] == sorted((p.score for p in passages), reverse=True)
    assert count(postgres, "docs") == len(load_folder(ROOT / "docs"))
    assert await docs.retrieve("zyzzyva quokka", k=4) == []
    assert await docs.retrieve("the of and", k=4) == []


async def test_the_hook_gives_the_model_the_passage_from_postgres(docs: PostgresRetriever) -> None:
    agent = make_executor([answer_from_passages], hooks=[RetrievalHook(docs)])

    events = await collect(agent, QUESTION)

    context = model_of(agent).requests[0].messages[0]
    assert f'<passage source="{ANSWER_SOURCE}"' in context.content
    done = events[-1]
    assert isinstance(done, DoneEvent)
    assert ANSWER_SOURCE in [s.source for s in done.sources]
    assert "".join(getattr(e, "text", "") for e in events).startswith("Every 15 seconds")


async def test_indexing_a_folder_again_replaces_its_passages(
    docs: PostgresRetriever, postgres: PostgresServer
) -> None:
    before = count(postgres, "docs")

    again = await docs.index_folder(ROOT / "docs", relative_to=ROOT)

    assert again == before == count(postgres, "docs")


async def test_added_passages_keep_their_fields_in_a_schema_table(postgres: PostgresServer) -> None:
    with psycopg.connect(postgres.dsn, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA IF NOT EXISTS kb")
    passages = [
        Passage(
            text="Refunds are paid within 30 days of the request.",
            source="https://example.org/refunds",
            title="Refunds",
            metadata={"lang": "en", "owner": "billing"},
        ),
        Passage(text="Our office is closed on Sundays.", source="hours.txt"),
    ]
    async with PostgresRetriever(postgres.dsn, table="kb.faq") as faq:
        assert await faq.add(passages) == 2
        [refunds] = await faq.retrieve("When are refunds paid?", k=3)
        closed = await faq.retrieve("Sunday opening hours", k=3)

    assert (refunds.text, refunds.source, refunds.title) == (
        passages[0].text,
        "https://example.org/refunds",
        "Refunds",
    )
    assert refunds.metadata == {"lang": "en", "owner": "billing"}
    assert refunds.score > 0
    assert [p.source for p in closed] == ["hours.txt"]


async def test_websearch_mode_needs_every_word(docs: PostgresRetriever) -> None:
    async with PostgresRetriever(docs.dsn, table="docs", match="websearch") as strict:
        question = await strict.retrieve(QUESTION, k=4)
        phrase = await strict.retrieve('"theoretical arrival time"', k=4)

    assert question == []  # no passage holds every word of the question
    assert [p.source for p in phrase] == ["docs/guards.md#rate-limiting"]


async def test_frequency_ranking_finds_the_passage_too(docs: PostgresRetriever) -> None:
    async with PostgresRetriever(docs.dsn, table="docs", ranking="frequency") as by_frequency:
        passages = await by_frequency.retrieve(QUESTION, k=4)

    assert ANSWER_SOURCE in [p.source for p in passages]


async def test_concurrent_searches_share_the_pool(docs: PostgresRetriever) -> None:
    results: list[list[str]] = []

    async def search() -> None:
        results.append([p.source for p in await docs.retrieve(QUESTION, k=3)])

    async with anyio.create_task_group() as group:
        for _ in range(20):
            group.start_soon(search)

    assert len(results) == 20
    assert all(r == results[0] for r in results)


async def test_searches_go_on_after_the_server_restarts(
    docs: PostgresRetriever, postgres: PostgresServer
) -> None:
    before = await docs.retrieve(QUESTION, k=2)

    await anyio.to_thread.run_sync(postgres.restart)
    after = await docs.retrieve(QUESTION, k=2)

    assert after == before


async def test_a_server_that_cannot_be_reached_refuses_the_run() -> None:
    dsn = f"postgresql://postgres@127.0.0.1:{free_port()}/postgres"
    async with PostgresRetriever(dsn, timeout=1.0) as unreachable:
        agent = make_executor(["never"], hooks=[RetrievalHook(unreachable, timeout=5.0)])
        result = await agent.execute(AgentCommand(user_prompt=QUESTION))

    assert result.error is not None
    assert (result.error.code, result.error.message) == (
        "hook_rejected",
        "the search for passages failed",
    )
    assert model_of(agent).requests == []


def test_a_table_name_must_be_an_identifier() -> None:
    with pytest.raises(ValueError, match="not a table name"):
        PostgresRetriever("postgresql://localhost/x", table="docs; DROP TABLE users")


# -- vectors from an OpenAI-compatible /v1/embeddings endpoint ----------------------------------


@pytest.fixture
async def embedder() -> AsyncIterator[tuple[FakeOpenAIServer, OpenAIEmbeddings]]:
    async with FakeOpenAIServer() as server:
        embeddings = OpenAIEmbeddings("text-embedding-3-small", api_base=server.base_url)
        yield server, embeddings
        await embeddings.aclose()


async def vector_docs(
    postgres: PostgresServer, embeddings: OpenAIEmbeddings, search: str
) -> PostgresRetriever:
    retriever = PostgresRetriever(
        postgres.dsn,
        table="docs_vectors",
        embeddings=embeddings,
        search=search,  # type: ignore[arg-type]
    )
    await retriever.index_folder(ROOT / "docs", relative_to=ROOT)
    return retriever


async def test_vector_search_finds_the_passage_by_its_embedding(
    postgres: PostgresServer, embedder: tuple[FakeOpenAIServer, OpenAIEmbeddings]
) -> None:
    server, embeddings = embedder
    async with await vector_docs(postgres, embeddings, "vector") as docs:
        started = time.perf_counter()
        passages = await docs.retrieve(QUESTION, k=4)
        print(f"PostgreSQL vector query: {(time.perf_counter() - started) * 1000:.2f} ms")

    assert ANSWER_SOURCE in [p.source for p in passages]
    assert [p.score for p in passages] == sorted((p.score for p in passages), reverse=True)
    assert 0 < passages[0].score <= 1.0 + 1e-9  # cosines of unit vectors
    stored = len(load_folder(ROOT / "docs"))
    with psycopg.connect(postgres.dsn) as conn:
        row = conn.execute(
            "SELECT count(*), min(array_length(embedding, 1)) FROM docs_vectors "
            "WHERE embedding IS NOT NULL"
        ).fetchone()
    assert row == (stored, EMBEDDING_DIMENSIONS)
    requests = server.embedding_requests
    assert all(r["model"] == "text-embedding-3-small" for r in requests)
    assert all(1 <= len(r["input"]) <= 64 for r in requests)
    assert sum(len(r["input"]) for r in requests) == stored + 1  # the passages, the question
    assert requests[-1]["input"] == [QUESTION]


async def test_hybrid_search_merges_words_and_vectors_and_feeds_the_hook(
    postgres: PostgresServer, embedder: tuple[FakeOpenAIServer, OpenAIEmbeddings]
) -> None:
    _, embeddings = embedder
    async with await vector_docs(postgres, embeddings, "hybrid") as docs:
        passages = await docs.retrieve(QUESTION, k=4)
        async with PostgresRetriever(docs.dsn, table="docs_vectors") as words:
            by_words = await words.retrieve(QUESTION, k=4)
        agent = make_executor([answer_from_passages], hooks=[RetrievalHook(docs)])
        result = await agent.execute(AgentCommand(user_prompt=QUESTION))

    assert passages[0].source == ANSWER_SOURCE  # both searches rank it well
    assert by_words[0].source == ANSWER_SOURCE
    assert passages[0].score == pytest.approx(2 / 61)  # first in both: 1/(60+1) twice
    assert result.success and result.content.startswith("Every 15 seconds")
    assert ANSWER_SOURCE in [s.source for s in result.sources]


async def test_an_embeddings_endpoint_that_is_down_refuses_the_run(
    postgres: PostgresServer,
) -> None:
    embeddings = OpenAIEmbeddings("e", api_base=f"http://127.0.0.1:{free_port()}/v1", timeout=2)
    async with PostgresRetriever(postgres.dsn, table="docs", embeddings=embeddings) as docs:
        with pytest.raises(ModelError, match="unreachable"):
            await docs.retrieve(QUESTION, k=2)
        agent = make_executor(["never"], hooks=[RetrievalHook(docs, timeout=5.0)])
        result = await agent.execute(AgentCommand(user_prompt=QUESTION))
    await embeddings.aclose()

    assert result.error is not None and result.error.code == "hook_rejected"


def test_vector_search_needs_embeddings() -> None:
    with pytest.raises(ValueError, match="needs embeddings"):
        PostgresRetriever("postgresql://localhost/x", search="vector")
    with pytest.raises(ValueError, match="search must be"):
        PostgresRetriever("postgresql://localhost/x", search="fuzzy")  # type: ignore[arg-type]
