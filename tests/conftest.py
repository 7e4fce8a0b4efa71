"""Shared fixtures: a fresh metrics registry per test and helpers to run the executor."""

from __future__ import annotations

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
