"""Tools for the Prometheus test (``--tools tests/obs_tools.py``): the demo tools' names, so the
demo model calls them, with failures on demand.

``get_weather`` raises for the city "Errorville" (status ``error``) and outlasts its 0.3 s
timeout for "Slowtown" (status ``timeout``); any other city answers at once.
"""

from __future__ import annotations

import datetime as dt

import anyio

from agent_executor import tool


@tool(timeout=0.3)
async def get_weather(city: str) -> dict[str, object]:
    """Weather for a city; fails for Errorville, times out for Slowtown.

    Args:
        city: The city name.
    """
    name = city.strip().lower()
    if name == "errorville":
        raise RuntimeError("the weather service is unavailable")
    if name == "slowtown":
        await anyio.sleep(5)
    return {"city": city.strip().title(), "temperature_c": 20, "conditions": "sunny"}


@tool
def get_time(timezone: str = "UTC") -> dict[str, str]:
    """The current time (always reported in UTC).

    Args:
        timezone: An IANA time zone name.
    """
    now = dt.datetime.now(dt.timezone.utc)
    return {"timezone": timezone, "time": now.strftime("%H:%M"), "date": now.date().isoformat()}
