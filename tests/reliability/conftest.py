"""Fixtures shared by the reliability tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from agent_executor import AgentExecutor, DemoModel, InjectionGuard, InputValidationGuard
from agent_executor.tools.demo import DEMO_TOOLS
from server import create_app

from .support import ThreadedApp


@pytest.fixture(scope="module")
def app() -> Iterator[ThreadedApp]:
    """The service on the demo model with its default guards, served from a thread."""

    def make() -> Any:
        executor = AgentExecutor(
            model=DemoModel(word_delay=0),
            tools=DEMO_TOOLS,
            guards=[InputValidationGuard(), InjectionGuard()],
            metrics=CollectorRegistry(),
        )
        return create_app(executor)

    with ThreadedApp(make) as served:
        yield served
