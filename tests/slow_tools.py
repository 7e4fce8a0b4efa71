"""Tools for service tests: a ``get_weather`` the demo model calls, slow on purpose."""

from __future__ import annotations

import os

import anyio

from agent_executor import tool


@tool
async def get_weather(city: str) -> dict[str, object]:
    """Weather for a city, after SLOW_TOOL_SECONDS (default 30) seconds; cancelled, it takes
    SLOW_TOOL_CANCEL_SECONDS (default 0) more to stop, as a tool closing a connection does."""
    try:
        await anyio.sleep(float(os.environ.get("SLOW_TOOL_SECONDS", "30")))
    except anyio.get_cancelled_exc_class():
        with anyio.CancelScope(shield=True):
            await anyio.sleep(float(os.environ.get("SLOW_TOOL_CANCEL_SECONDS", "0")))
        raise
    return {"city": city, "temperature_c": 20, "conditions": "sunny"}
