"""The benchmark's tool, for our variants and the service (``--tools benchmarks/bench_tools.py``).

Self-contained (the service loads it by path): ``get_weather`` returns at once.
"""

from __future__ import annotations

from agent_executor import tool


@tool
async def get_weather(city: str) -> str:
    """Current weather in a city.

    Args:
        city: City name.
    """
    return f"{city}: sunny, 21 °C"
