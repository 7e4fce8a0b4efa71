"""Toolkits and ``@tool`` on methods, through the public API: a toolkit's methods become tools
bound to its instance (``self`` never in a schema, its state shared by its tools), a subclass
replaces its base's tool, the agent closes the toolkit with itself, and a method read from its
class is refused with a clear error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from agent_executor import (
    AgentCommand,
    AgentExecutor,
    ConfigurationError,
    ScriptedModel,
    Toolkit,
    tool,
)
from agent_executor.models.scripted import call, tool_turn


class Weather(Toolkit):
    """Forecasts in one unit, from one (pretend) client."""

    name = "weather"
    description = "Weather forecasts"

    def __init__(self, unit: str) -> None:
        self.unit = unit
        self.calls = 0
        self.closed = False

    @tool
    async def forecast(self, city: str) -> str:
        """The forecast for a city."""
        self.calls += 1
        return f"21{self.unit} in {city}"

    @tool
    def unit_name(self) -> str:
        """The unit the forecasts are in."""
        return {"C": "Celsius", "F": "Fahrenheit"}[self.unit]

    async def aclose(self) -> None:
        self.closed = True


class Marine(Weather):
    @tool
    async def forecast(self, city: str) -> str:
        """The sea forecast for a coastal city."""
        return f"calm sea at {city}"


def agent(*tools: object, turns: list[object]) -> AgentExecutor:
    return AgentExecutor(
        model=ScriptedModel(turns),  # type: ignore[arg-type]
        tools=tools,  # type: ignore[arg-type]
        metrics=CollectorRegistry(),
    )


async def test_a_toolkits_methods_are_tools_of_its_instance() -> None:
    kit = Weather("C")
    executor = agent(
        kit, turns=[tool_turn(call("forecast", {"city": "Oslo"}), call("unit_name")), "ok"]
    )

    assert sorted(executor.tools) == ["forecast", "unit_name"]
    schema = executor.tools["forecast"].parameters
    assert schema["required"] == ["city"] and "self" not in schema["properties"]
    assert executor.tools["unit_name"].parameters["properties"] == {}
    result = await executor.execute(AgentCommand(user_prompt="weather?"))
    assert [r.result for r in result.tool_calls] == ["21C in Oslo", "Celsius"]
    assert kit.calls == 1

    await executor.aclose()
    assert kit.closed


async def test_two_instances_keep_their_own_state_and_a_subclass_replaces_a_tool() -> None:
    celsius, marine = Weather("C"), Marine("F")
    assert await celsius.forecast.invoke({"city": "Rome"}) == "21C in Rome"
    assert await marine.forecast.invoke({"city": "Bergen"}) == "calm sea at Bergen"
    assert [t.name for t in marine.tools()] == ["forecast", "unit_name"]
    assert marine.tools()[0].description == "The sea forecast for a coastal city."
    assert celsius.toolkit_name == "weather"


def test_a_method_read_from_its_class_is_refused_and_one_from_an_instance_is_not() -> None:
    with pytest.raises(ConfigurationError, match="method read from its class"):
        agent(Weather.forecast, turns=["x"])
    assert sorted(agent(Weather("F").forecast, turns=["x"]).tools) == ["forecast"]


KITS = '''
from agent_executor import Toolkit, tool


class Weather(Toolkit):
    name = "weather"

    @tool
    def forecast(self, city: str) -> str:
        """The forecast for a city."""
        return f"sunny in {city}"


class Clock(Toolkit):
    name = "clock"

    @tool
    def now(self) -> str:
        """The time."""
        return "noon"


weather = Weather()
clock = Clock()
'''


def test_the_agents_file_enables_toolkits_by_name(tmp_path: Path) -> None:
    from agent_executor import AgentRouter
    from server.cli.build import build_service
    from server.cli.config import ServeConfig
    from server.cli.errors import CliError
    from server.cli.parser import build_parser

    module = tmp_path / "kits.py"
    module.write_text(KITS, encoding="utf-8")
    agents = {
        "agents": {
            "forecaster": {"tools": [str(module)], "toolkits": ["weather"]},
            "everything": {"tools": [str(module)]},
        }
    }
    path = tmp_path / "agents.json"
    path.write_text(json.dumps(agents), encoding="utf-8")
    args = build_parser().parse_args(["serve", "--agents", str(path)])
    service = build_service(ServeConfig.from_args(args, {}))
    assert isinstance(service.agents, AgentRouter)
    assert sorted(service.agents.agents["forecaster"].tools) == ["forecast"]
    assert sorted(service.agents.agents["everything"].tools) == ["forecast", "now"]

    agents["agents"]["forecaster"]["toolkits"] = ["radar"]
    path.write_text(json.dumps(agents), encoding="utf-8")
    args = build_parser().parse_args(["serve", "--agents", str(path)])
    with pytest.raises(CliError, match="no toolkit named radar"):
        build_service(ServeConfig.from_args(args, {}))
