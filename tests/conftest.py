"""Shared fixtures: a fresh metrics registry per test and helpers to run the executor."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import pytest
import pytest_asyncio
from prometheus_client import CollectorRegistry

from .fakes.openai_server import FakeOpenAIServer

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
