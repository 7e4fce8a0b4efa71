"""Helpers shared by the tests: build a scripted executor, collect and normalise events."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterable, Sequence
from typing import Any

from prometheus_client import CollectorRegistry

from agent_executor import AgentCommand, AgentEvent, AgentExecutor, ScriptedModel, Tool
from agent_executor.models.scripted import ScriptedTurn


def make_executor(
    turns: Iterable[ScriptedTurn],
    tools: Sequence[Tool] = (),
    *,
    registry: CollectorRegistry | None = None,
    **options: Any,
) -> AgentExecutor:
    """An executor on a ScriptedModel playing ``turns``, with its own metrics registry."""
    return AgentExecutor(
        model=ScriptedModel(turns),
        tools=tools,
        metrics=registry if registry is not None else CollectorRegistry(),
        **options,
    )


def named_agent(name: str, turns: Iterable[ScriptedTurn], **options: Any) -> AgentExecutor:
    """An agent called ``name`` on a ScriptedModel called ``<name>-model``, with its own
    metrics registry (for tests of several agents working together)."""
    return AgentExecutor(
        model=ScriptedModel(turns, name=f"{name}-model"),
        name=name,
        metrics=CollectorRegistry(),
        **options,
    )


def model_of(executor: AgentExecutor) -> ScriptedModel:
    """The executor's ScriptedModel (to read the requests it got)."""
    assert isinstance(executor.model, ScriptedModel)
    return executor.model


async def collect(executor: AgentExecutor, command: AgentCommand | str) -> list[AgentEvent]:
    """All events of one streamed run."""
    if isinstance(command, str):
        command = AgentCommand(user_prompt=command)
    return [event async for event in executor.execute_stream(command)]


def strip_timing(events: Iterable[Any]) -> list[Any]:
    """Events with durations zeroed, so event lists compare exactly."""
    out = []
    for event in events:
        if hasattr(event, "duration_ms"):
            event = dataclasses.replace(event, duration_ms=0)
        if getattr(event, "tool_calls", None):
            calls = [c.model_copy(update={"duration_ms": 0}) for c in event.tool_calls]
            event = dataclasses.replace(event, tool_calls=calls)
        out.append(event)
    return out


def sample(registry: CollectorRegistry, name: str, **labels: str) -> float:
    value = registry.get_sample_value(name, labels)
    return 0.0 if value is None else value


def split_at(text: str, cuts: Iterable[int]) -> list[str]:
    """``text`` cut at the given positions (taken modulo its length + 1), for split tests."""
    points = sorted({cut % (len(text) + 1) for cut in cuts})
    bounds = [0, *points, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]
