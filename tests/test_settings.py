"""Settings objects through the public API: an agent, a group, a flow and the service's
configuration take and share the same objects; the keyword arguments they replace still work
for one release and warn, naming each replacement."""

from __future__ import annotations

import subprocess
import sys
import warnings

import pytest
from prometheus_client import CollectorRegistry
from pydantic import ValidationError

from agent_executor import (
    AgentCommand,
    AgentExecutor,
    AgentGroup,
    Concurrency,
    ModelPolicy,
    RunLimits,
    ScriptedModel,
    ToolLimits,
    tool,
)
from agent_executor.models.scripted import call, tool_turn

from .helpers import named_agent


@tool
def ping() -> str:
    """Answer pong."""
    return "pong"


def _agent(**options: object) -> AgentExecutor:
    turns = [tool_turn(call("ping", id="c1")), tool_turn(call("ping", id="c2")), "done"]
    return AgentExecutor(
        model=ScriptedModel(turns), tools=[ping], metrics=CollectorRegistry(), **options
    )


async def test_settings_objects_bound_the_run() -> None:
    agent = _agent(tool_limits=ToolLimits(max_calls=1), run_limits=RunLimits(max_turns=4))

    result = await agent.execute(AgentCommand(user_prompt="go"))

    assert [r.status for r in result.tool_calls] == ["success", "rejected"]
    assert agent.tool_limits.max_calls == 1 and agent.run_limits.max_turns == 4
    assert agent.concurrency == Concurrency() and agent.model_policy == ModelPolicy()


async def test_old_keywords_still_work_and_warn_naming_their_replacement() -> None:
    with pytest.warns(DeprecationWarning, match="AgentExecutor") as caught:
        agent = _agent(max_tool_calls=1, max_turns=4, max_concurrency=3)

    (warning,) = caught
    message = str(warning.message)
    assert "removed in 0.2.0" in message
    assert "max_tool_calls= -> ToolLimits(max_calls=...)" in message
    assert "max_turns= -> RunLimits(max_turns=...)" in message
    assert "max_concurrency= -> Concurrency(max_concurrency=...)" in message
    assert warning.filename == __file__  # it points at the caller, not the library
    assert agent.max_concurrency == 3 and agent.run_limits.max_turns == 4
    result = await agent.execute(AgentCommand(user_prompt="go"))
    assert [r.status for r in result.tool_calls] == ["success", "rejected"]


def test_an_old_keyword_overrides_only_its_own_field_of_a_given_object() -> None:
    with pytest.warns(DeprecationWarning, match="request_timeout"):
        agent = _agent(run_limits=RunLimits(max_turns=2, max_cost_usd=1.0), request_timeout=9)
    assert agent.run_limits == RunLimits(max_turns=2, max_cost_usd=1.0, request_timeout=9)


def test_settings_without_old_keywords_do_not_warn() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        agent = _agent(concurrency=Concurrency(max_concurrency=2, max_queue=0))
    assert [str(w.message) for w in caught] == []
    assert agent.concurrency == Concurrency(max_concurrency=2, max_queue=0)


def test_unknown_keywords_and_bad_values_are_refused() -> None:
    with pytest.raises(TypeError, match="unexpected keyword arguments: max_turn"):
        _agent(max_turn=3)
    with pytest.raises(ValidationError, match="max_parallel"):
        ToolLimits(max_parallel=0)
    with pytest.raises(ValidationError, match="extra"):
        RunLimits(max_tokens=3)  # type: ignore[call-arg]


def test_a_group_takes_the_same_objects_and_only_its_own_old_keywords() -> None:
    limits = RunLimits(request_timeout=60, max_cost_usd=0.5)
    team = AgentGroup(
        [named_agent("solo", ["hi"])], name="team", metrics=CollectorRegistry(), run_limits=limits
    )
    assert team.run_limits is limits
    default = AgentGroup([named_agent("solo", ["hi"])], name="t2", metrics=CollectorRegistry())
    assert default.run_limits.request_timeout == 600.0
    spend_only = AgentGroup(
        [named_agent("solo", ["hi"])],
        name="t5",
        metrics=CollectorRegistry(),
        run_limits=RunLimits(max_cost_usd=0.5),
    )
    assert spend_only.run_limits == RunLimits(request_timeout=600.0, max_cost_usd=0.5)
    with pytest.warns(DeprecationWarning, match="AgentGroup"):
        old = AgentGroup(
            [named_agent("solo", ["hi"])], name="t3", metrics=CollectorRegistry(), queue_timeout=1
        )
    assert old.concurrency.queue_timeout == 1
    with pytest.raises(TypeError, match="max_turns"):
        AgentGroup([named_agent("solo", ["hi"])], name="t4", max_turns=3)


def test_the_service_configuration_holds_the_same_objects() -> None:
    from agent_executor_server.cli.config import ServeConfig
    from agent_executor_server.cli.parser import build_parser

    flags = ["--max-concurrency", "3", "--max-tool-calls", "4", "--max-cost-usd", "0.25"]
    args = build_parser().parse_args(["serve", *flags, "--max-turns", "6", "--tool-mode", "prompt"])
    config = ServeConfig.from_args(args, {})

    assert config.concurrency == Concurrency(max_concurrency=3)
    assert config.tool_limits == ToolLimits(max_calls=4)
    assert config.run_limits == RunLimits(max_cost_usd=0.25, max_turns=6)
    assert config.tool_mode == "prompt"


def test_a_max_turns_flag_below_one_is_refused_in_one_line() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "server", "--max-turns", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "--max-turns" in done.stderr
