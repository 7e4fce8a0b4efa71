"""Agents, groups and flows as three classes behind one protocol, through the public API.

A group and a flow are served like an agent (the :class:`Agent` protocol and the
:class:`ServedAgent` surface) without being an ``AgentExecutor``; a group's turn strategy and a
flow's functions see the run through a public :class:`RunView` and refuse a plan with the
public :class:`PlanRefused`; a handoff or group only takes agents it can run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from agent_executor import (
    Agent,
    AgentCommand,
    AgentEvent,
    AgentExecutor,
    AgentGroup,
    AgentNode,
    AgentResult,
    ConfigurationError,
    DoneEvent,
    Edge,
    ErrorEvent,
    EventStream,
    Flow,
    FunctionNode,
    PlanRefused,
    RunView,
    ServedAgent,
    Tool,
    handoff,
)
from agent_executor.models.scripted import text_turn
from agent_executor.orchestration import GroupPlan, GroupView, Said

from .helpers import model_of, named_agent


def _registry() -> CollectorRegistry:
    return CollectorRegistry()


async def _stream(agent: Agent, prompt: str) -> list[AgentEvent]:
    return [e async for e in agent.execute_stream(AgentCommand(user_prompt=prompt))]


def test_agents_groups_and_flows_are_agents_and_only_agents_are_executors() -> None:
    solo = named_agent("solo", ["hi"])
    team = AgentGroup([solo], name="team", metrics=_registry())
    flow = Flow([AgentNode("only", solo)], start="only", name="flow", metrics=_registry())

    for served in (solo, team, flow):
        assert isinstance(served, Agent)
        assert isinstance(served, ServedAgent)
    assert not isinstance(team, AgentExecutor)
    assert not isinstance(flow, AgentExecutor)
    assert dict(team.tools) == {} and dict(flow.tools) == {}


async def test_a_custom_strategy_sees_a_run_view_and_asks_an_agent_inside_the_run() -> None:
    planner = named_agent("planner", [text_turn("critic", usage=(40, 2))])
    writer = named_agent("writer", [text_turn("Draft.", usage=(5, 5))])
    critic = named_agent("critic", [text_turn("Fine.", usage=(7, 7))])
    seen: list[RunView] = []

    class AskThePlanner:
        async def plan(
            self, group: GroupView, task: str, said: Sequence[Said], run: RunView
        ) -> GroupPlan:
            seen.append(run)
            if not said:
                return GroupPlan(next_agent_name="writer", next_query=task)
            if len(said) == 1:
                answer = await run.ask(planner, f"Who reviews: {said[-1].answer}", step="pick")
                return GroupPlan(next_agent_name=answer.content, next_query=said[-1].answer)
            return GroupPlan(next_action="TERMINATE")

    team = AgentGroup([writer, critic], strategy=AskThePlanner(), name="team", metrics=_registry())
    events = await _stream(team, "Write.")

    done = events[-1]
    assert isinstance(done, DoneEvent) and done.finish_reason == "stop"
    assert done.usage is not None and done.usage.input_tokens == 52  # the planner's 40 counted
    assert "critic" not in "".join(getattr(e, "text", "") for e in events)  # not the run's text
    assert model_of(critic).requests[0].messages[-1].content == "Draft."
    assert seen[0].context.command.user_prompt == "Write."
    assert seen[1].text.startswith("Draft.")


async def test_a_strategy_refuses_a_plan_with_the_public_error() -> None:
    class Refuses:
        async def plan(
            self, group: GroupView, task: str, said: Sequence[Said], run: RunView
        ) -> GroupPlan:
            raise PlanRefused("nobody fits this task")

    team = AgentGroup(
        [named_agent("solo", ["hi"])], strategy=Refuses(), name="team", metrics=_registry()
    )
    result = await team.execute(AgentCommand(user_prompt="Go."))

    assert result.error is not None
    assert (result.error.code, result.error.message) == ("invalid_plan", "nobody fits this task")


async def test_a_flow_function_may_take_the_run_and_refuse_to_go_on() -> None:
    solo = named_agent("solo", [text_turn("42", usage=(3, 3))])

    def check(text: str, run: RunView) -> str:
        if run.usage is None or run.usage.input_tokens != 3:
            raise PlanRefused("the agent spent nothing")
        if text != "42":
            raise PlanRefused(f"unexpected answer {text!r}")
        return f"checked {text} for {run.context.user_id}"

    flow = Flow(
        [AgentNode("ask", solo), FunctionNode("check", check)],
        [Edge("ask", "check")],
        start="ask",
        name="flow",
        metrics=_registry(),
    )
    result = await flow.execute(AgentCommand(user_prompt="The answer?", user_id="ann"))
    assert result.content.endswith("checked 42 for ann")

    refusing = Flow(
        [FunctionNode("no", lambda text, run: (_ for _ in ()).throw(PlanRefused("stop here")))],
        start="no",
        name="refusing",
        metrics=_registry(),
    )
    events = await _stream(refusing, "x")
    errors = [e for e in events if isinstance(e, ErrorEvent)]
    assert [(e.code, e.message) for e in errors] == [("invalid_plan", "node no: stop here")]


class _Elsewhere:
    """An agent from another library: it matches the protocol but has no driver here."""

    name = "elsewhere"
    description = ""
    tools: Mapping[str, Tool] = {}

    async def execute(self, command: AgentCommand, **caller: Any) -> AgentResult:
        raise AssertionError("not run")

    def execute_stream(self, command: AgentCommand, **caller: Any) -> EventStream:
        raise AssertionError("not run")


def test_a_handoff_or_group_refuses_an_agent_it_cannot_run() -> None:
    other = _Elsewhere()
    assert isinstance(other, Agent)
    with pytest.raises(ConfigurationError, match="is not an AgentExecutor, AgentGroup or Flow"):
        named_agent("front", ["hi"], tools=[handoff(other)])


def test_a_handoff_to_a_group_is_refused() -> None:
    team = AgentGroup([named_agent("solo", ["hi"])], name="team", metrics=_registry())
    with pytest.raises(ConfigurationError, match="is a group or flow"):
        named_agent("front", ["hi"], tools=[handoff(team)])
