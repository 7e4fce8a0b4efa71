"""``@tool``: schemas from type hints and docstrings, validation, sync and async calls."""

from __future__ import annotations

import threading
from enum import Enum
from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, Field

from agent_executor import AgentExecutor, ConfigurationError, FunctionTool, ScriptedModel, tool
from agent_executor.tools import ToolArgumentsError, serialize_result


class Unit(str, Enum):
    CELSIUS = "celsius"
    FAHRENHEIT = "fahrenheit"


class Location(BaseModel):
    lat: float
    lon: float


@tool
def forecast(
    city: str,
    days: Annotated[int, Field(description="How many days ahead.", ge=1, le=7)] = 1,
    unit: Unit = Unit.CELSIUS,
    near: Location | None = None,
    tags: list[str] | None = None,
    mode: Literal["brief", "full"] = "brief",
) -> str:
    """Forecast the weather for a city.

    Longer explanation that the model does not need.

    Args:
        city: The city name,
            e.g. "Paris".
        days: Ignored: the Field description wins.
        unit: Temperature unit.
    """
    return f"{city}:{days}:{unit.value}:{near}:{tags}:{mode}"


def test_schema_comes_from_type_hints_and_docstring() -> None:
    spec = forecast.spec()
    function = spec["function"]
    assert spec["type"] == "function"
    assert function["name"] == "forecast"
    assert function["description"] == "Forecast the weather for a city."
    params = function["parameters"]
    assert params["type"] == "object"
    assert params["required"] == ["city"]
    assert params["additionalProperties"] is False
    props = params["properties"]
    assert props["city"] == {"type": "string", "description": 'The city name, e.g. "Paris".'}
    assert props["days"] == {
        "type": "integer",
        "default": 1,
        "minimum": 1,
        "maximum": 7,
        "description": "How many days ahead.",
    }
    assert props["unit"]["description"] == "Temperature unit."
    assert params["$defs"]["Unit"]["enum"] == ["celsius", "fahrenheit"]
    assert props["near"]["anyOf"][0] == {"$ref": "#/$defs/Location"}
    assert props["tags"]["anyOf"][0] == {"type": "array", "items": {"type": "string"}}
    assert props["mode"]["enum"] == ["brief", "full"]
    assert "title" not in params and "title" not in props["city"]


def test_arguments_are_validated_and_converted() -> None:
    arguments = forecast.parse_arguments(
        '{"city": "Oslo", "days": "3", "unit": "fahrenheit", "near": {"lat": 1, "lon": 2}}'
    )

    assert arguments["days"] == 3
    assert arguments["unit"] is Unit.FAHRENHEIT
    assert arguments["near"] == Location(lat=1, lon=2)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("{not json", "arguments are not valid JSON"),
        ("[1, 2]", "arguments must be a JSON object"),
        ('{"days": 2}', "city: Field required"),
        ('{"city": "x", "days": 9}', "days: Input should be less than or equal to 7"),
        ('{"city": "x", "colour": "red"}', "colour: Extra inputs are not permitted"),
        ('{"city": "x", "unit": "kelvin"}', "unit: Input should be 'celsius' or 'fahrenheit'"),
    ],
)
def test_invalid_arguments_are_explained(raw: str, message: str) -> None:
    with pytest.raises(ToolArgumentsError, match=message):
        forecast.parse_arguments(raw)


def test_empty_arguments_mean_no_arguments() -> None:
    @tool
    def now() -> str:
        """The time."""
        return "noon"

    assert now.parse_arguments("") == {}
    assert now.spec()["function"]["parameters"] == {
        "type": "object",
        "properties": {},
        "additionalProperties": False,
    }


async def test_sync_tools_run_in_a_worker_thread() -> None:
    threads: list[int] = []

    @tool
    def where() -> str:
        """Which thread am I on."""
        threads.append(threading.get_ident())
        return "here"

    assert await where.invoke({}) == "here"
    assert threads[0] != threading.get_ident()
    assert where.is_async is False


async def test_async_tools_are_awaited() -> None:
    @tool(name="renamed", description="Explicit description.", timeout=3)
    async def original(x: int) -> int:
        """Docstring that is not used."""
        return x * 2

    assert isinstance(original, FunctionTool)
    assert (original.name, original.description, original.timeout) == (
        "renamed",
        "Explicit description.",
        3,
    )
    assert await original.invoke({"x": 4}) == 8
    assert await original(5) == 10


def test_sphinx_style_parameter_docs() -> None:
    @tool
    def f(a: int) -> int:
        """Do f.

        :param a: the a value
        """
        return a

    assert f.spec()["function"]["parameters"]["properties"]["a"]["description"] == "the a value"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("plain", "plain"),
        ({"a": [1, 2]}, '{"a":[1,2]}'),
        (Location(lat=1, lon=2), '{"lat":1.0,"lon":2.0}'),
        (None, "null"),
        (3.5, "3.5"),
    ],
)
def test_results_are_serialised(value: object, text: str) -> None:
    assert serialize_result(value) == text


def test_bad_tools_are_refused_at_definition() -> None:
    with pytest.raises(ConfigurationError, match="invalid tool name"):

        @tool(name="has spaces")
        def a() -> None:
            """A."""

    with pytest.raises(ConfigurationError, match=r"\*args/\*\*kwargs"):

        @tool
        def b(*args: int) -> None:
            """B."""


def test_duplicate_tool_names_are_refused() -> None:
    @tool(name="forecast")
    def other() -> None:
        """Same name."""

    with pytest.raises(ConfigurationError, match="two tools are named 'forecast'"):
        AgentExecutor(model=ScriptedModel(), tools=[forecast, other])


def test_plain_functions_are_accepted_as_tools() -> None:
    def shout(text: str) -> str:
        """Upper-case the text."""
        return text.upper()

    executor = AgentExecutor(model=ScriptedModel(), tools=[shout])

    assert executor.tools["shout"].description == "Upper-case the text."
