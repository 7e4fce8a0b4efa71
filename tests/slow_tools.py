"""Tools for service tests: a ``get_weather`` the demo model calls, slow on purpose."""

from __future__ import annotations

import os

import anyio

from agent_executor import tool


@tool
async def get_weather(city: str) -> dict[str, object]:
    """Weather for a city, after SLOW_TOOL_SECONDS (default 30) seconds."""
    await anyio.sleep(float(os.environ.get("SLOW_TOOL_SECONDS", "30")))
    return {"city": city, "temperature_c": 20, "conditions": "sunny"}
