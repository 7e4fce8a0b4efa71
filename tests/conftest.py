"""Shared fixtures: a fresh metrics registry per test and helpers to run the executor."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from prometheus_client import CollectorRegistry

from .fakes.openai_server import FakeOpenAIServer


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
