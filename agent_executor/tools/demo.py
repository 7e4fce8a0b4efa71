"""The demo tools registered by the service when no ``--tools`` are given.

They answer offline and deterministically, so the demo model and the examples work with no
network and no API key.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import zoneinfo

from .function import FunctionTool, tool

__all__ = ["DEMO_TOOLS", "get_time", "get_weather"]

_CONDITIONS = ("sunny", "partly cloudy", "cloudy", "light rain", "windy", "clear")


@tool
def get_weather(city: str) -> dict[str, object]:
    """Get the current weather for a city (demo data, always the same for a city).

    Args:
        city: The city name, e.g. "Paris".
    """
    digest = hashlib.sha256(city.strip().lower().encode()).digest()
    return {
        "city": city.strip().title(),
        "temperature_c": 5 + digest[0] % 25,
        "conditions": _CONDITIONS[digest[1] % len(_CONDITIONS)],
    }


@tool
def get_time(timezone: str = "UTC") -> dict[str, str]:
    """Get the current date and time in a time zone.

    Args:
        timezone: An IANA time zone name such as "Europe/Paris"; defaults to UTC.
    """
    try:
        zone: dt.tzinfo = zoneinfo.ZoneInfo(timezone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone {timezone!r}; use an IANA name") from None
    now = dt.datetime.now(zone)
    return {"timezone": timezone, "time": now.strftime("%H:%M"), "date": now.date().isoformat()}


DEMO_TOOLS: tuple[FunctionTool, ...] = (get_weather, get_time)
"""The tools the demo model knows how to call."""
