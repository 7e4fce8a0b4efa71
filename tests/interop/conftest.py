"""The interop tests: other people's clients (agent frameworks, SDKs) drive the real service.

The service runs as its own process (``python -m server``) on a model that decides from what it
is asked (tests/fakes/tool_model.py), behind the fast OpenAI-compatible client, with one tool
of its own (``lookup_order``, tests/interop/server_tools.py). Every test asserts what the model
received, so a framework's request that the service mapped wrongly cannot pass unnoticed.

The frameworks come with the ``[interop]`` extra: without one a test is skipped locally and
fails on CI (``CI=true``), which installs them all.
"""

from __future__ import annotations

import importlib
import json
import os
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest

from ..fakes.tool_model import ThreadedModelServer, served_tool_model
from ..server_helpers import service_process

SERVER_TOOLS = "tests/interop/server_tools.py"


def framework(module: str) -> ModuleType:
    """The framework's module, imported; skipped without it (a failure on CI)."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        message = f"{module} is not installed (pip install -e '.[interop]'): {exc}"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{message}; CI must run the interop tests")
        pytest.skip(message, allow_module_level=True)


@pytest.fixture(scope="module")
def model() -> Iterator[ThreadedModelServer]:
    """The model behind the service; its ``requests`` are what the service sent it."""
    with served_tool_model() as served:
        yield served


@pytest.fixture(scope="module")
def service(model: ThreadedModelServer) -> Iterator[str]:
    """The service's base URL (``/v1`` is under it), on :func:`model`."""
    with service_process(
        "--model", "openai/test-model",
        "--api-base", model.base_url,
        "--api-key", "sk-test",
        "--tools", SERVER_TOOLS,
    ) as (_, url):  # fmt: skip
        yield url


class Sent:
    """What a framework's client sent the service: each request's path and JSON body, recorded
    by an event hook on the HTTP clients it makes (hand them to the framework). The clients are
    ``httpx2``'s, which openai 3 and the frameworks on it use (pydantic-ai deprecates httpx's)."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        self.bodies: list[dict[str, Any]] = []
        self._clients: list[Any] = []

    def client(self) -> Any:
        """A synchronous ``httpx2.Client`` that records what it sends; closed after the test."""
        client = framework("httpx2").Client(event_hooks={"request": [self._record]}, timeout=30)
        self._clients.append(client)
        return client

    def async_client(self) -> Any:
        """An ``httpx2.AsyncClient`` that records what it sends (the test closes it)."""

        async def record(request: Any) -> None:
            self._record(request)

        return framework("httpx2").AsyncClient(event_hooks={"request": [record]}, timeout=30)

    def _record(self, request: Any) -> None:
        if request.method == "POST":
            self.paths.append(request.url.path)
            self.bodies.append(json.loads(request.content))

    def close(self) -> None:
        for client in self._clients:
            client.close()


@pytest.fixture
def sent() -> Iterator[Sent]:
    """A fresh :class:`Sent`."""
    recorder = Sent()
    try:
        yield recorder
    finally:
        recorder.close()
