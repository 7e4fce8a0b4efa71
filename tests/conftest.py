"""Shared fixtures: a fresh metrics registry per test and helpers to run the executor."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING

import pytest
import pytest_asyncio
from prometheus_client import CollectorRegistry

from agent_executor.redis import RedisConversationStore

from .fakes.openai_server import FakeOpenAIServer
from .redis_server import RedisServer, redis_server

if TYPE_CHECKING:
    from playwright.async_api import Browser


MAX_WORKERS = 4
"""Worker processes ``-n auto`` starts at most (pyproject.toml's ``addopts``)."""


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """One worker per core, at most :data:`MAX_WORKERS`.

    Most of the suite's time is tests waiting on the services, browsers and servers they
    start, so two workers on CI's two cores take about two thirds of the time of one. Each
    worker starts its own Redis, Prometheus, Chromium and services, so a large machine is not
    given dozens. ``-n 0`` runs the suite in one process, as it ran before.
    """
    if hasattr(os, "sched_getaffinity"):  # the cores this process may use (Linux)
        cores = len(os.sched_getaffinity(0))
    else:
        cores = os.cpu_count() or 1
    return max(1, min(MAX_WORKERS, cores))


LONGEST_FIRST = ("test_injection_learned.py", "test_openapi_schemathesis.py")
"""Modules that take minutes (retraining the learned layer four times; schemathesis), put
first so that a worker starts on them while the other takes the rest: handed out in the
order tests are collected, one starting last would keep a worker busy after the other is done."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: item.path.name not in LONGEST_FIRST)  # stable: else as found


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


@pytest.fixture(params=["litellm", "fast"])
def client(request: pytest.FixtureRequest) -> str:
    """Which model client a test runs with: ``LiteLLMModel`` or the fast ``OpenAICompatModel``."""
    return str(request.param)


@pytest.fixture
async def server() -> AsyncIterator[FakeOpenAIServer]:
    """A scripted OpenAI-compatible streaming server on 127.0.0.1."""
    async with FakeOpenAIServer() as fake:
        yield fake


@pytest.fixture(scope="module")
def chromium() -> str:
    """Debian's Chromium for the browser tests (skipped locally without it, a failure in CI)."""
    from .test_browser import chromium_path

    return chromium_path()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def browser(chromium: str) -> AsyncIterator[Browser]:
    """One headless Chromium per browser-test module, closed at its end."""
    from .test_browser import launched

    async with launched(chromium) as browser:
        yield browser


@pytest.fixture(scope="module")
def redis_module(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """A real redis-server for the tests of one module (tests/redis_server.py)."""
    with redis_server(tmp_path_factory.mktemp("redis")) as redis:
        yield redis


@pytest.fixture
def redis_running(redis_module: RedisServer) -> RedisServer:
    """The module's Redis, running (started again if a test stopped it) and empty."""
    if redis_module.process is None:
        redis_module.start()
    redis_module.flush()
    return redis_module


@pytest.fixture
async def redis_store(redis_running: RedisServer) -> AsyncIterator[RedisConversationStore]:
    """A conversation store on the module's Redis, emptied first."""
    store = RedisConversationStore(redis_running.url)
    yield store
    await store.aclose()
