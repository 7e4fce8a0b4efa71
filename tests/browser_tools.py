"""Tools for the browser tests: a ``get_weather`` slow enough to see its indicator on the page."""

from __future__ import annotations

import anyio

from agent_executor import tool


@tool
async def get_weather(city: str) -> dict[str, object]:
    """Get the current weather for a city (test data; takes about a second).

    Args:
        city: The city name, e.g. "Paris".
    """
    await anyio.sleep(1.0)
    return {"city": city.strip().title(), "temperature_c": 18, "conditions": "sunny"}
