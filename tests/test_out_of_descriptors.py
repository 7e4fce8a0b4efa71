"""A process out of file descriptors (``EMFILE``) fails a run as ``overloaded`` with a retry
hint, never ``internal_error`` with a traceback: at the model's socket and anywhere else on the
run's path; and no run reads a file for a price (the cost map is read when the executor is
built), so a full process still prices its calls."""

from __future__ import annotations

import errno
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from agent_executor import (
    AgentCommand,
    AgentExecutor,
    Hook,
    ModelChunk,
    ModelError,
    ModelRequest,
    RunContext,
    ScriptedModel,
)
from agent_executor.models.scripted import text_turn
from agent_executor.spend import prices


class FullProcessModel:
    """A model whose connection cannot be opened: the process has no descriptor left."""

    name = "full"

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        try:
            raise OSError(errno.EMFILE, "Too many open files")
        except OSError as exc:
            raise ModelError("cannot connect to the model") from exc
        yield ModelChunk()  # pragma: no cover - a generator


class FullProcessHook(Hook):
    async def before_agent_start(self, ctx: RunContext) -> None:
        raise OSError(errno.ENFILE, "Too many open files in system")


async def test_no_descriptor_for_the_model_is_overloaded_not_internal(
    caplog: pytest.LogCaptureFixture,
) -> None:
    agent = AgentExecutor(model=FullProcessModel(), metrics=CollectorRegistry())
    with caplog.at_level(logging.WARNING):
        result = await agent.execute(AgentCommand(user_prompt="hi"))
    assert result.error is not None
    assert (result.error.code, result.error.retry_after) == ("overloaded", 1.0)
    assert "try again shortly" in result.error.message
    assert not any(record.exc_info for record in caplog.records)  # no traceback


async def test_no_descriptor_anywhere_on_the_run_is_overloaded(
    caplog: pytest.LogCaptureFixture,
) -> None:
    agent = AgentExecutor(
        model=ScriptedModel(["unused"]), hooks=[FullProcessHook()], metrics=CollectorRegistry()
    )
    with caplog.at_level(logging.WARNING):
        result = await agent.execute(AgentCommand(user_prompt="hi"))
    assert result.error is not None and result.error.code == "overloaded"
    assert not any(record.exc_info for record in caplog.records)


async def test_a_run_reads_no_file_for_a_price(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(prices, "_cost_map", None)  # as in a fresh process
    model = ScriptedModel([text_turn("ok", usage=(1000, 100))], name="openai/gpt-4o-mini")
    agent = AgentExecutor(model=model, metrics=CollectorRegistry())

    def no_descriptor_left(self: Path) -> bytes:
        raise OSError(errno.EMFILE, "Too many open files")

    monkeypatch.setattr(Path, "read_bytes", no_descriptor_left)
    result = await agent.execute(AgentCommand(user_prompt="hi"))

    assert result.success, result.error
    assert result.usage is not None and result.usage.cost_usd is not None
