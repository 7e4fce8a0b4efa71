"""Screens: what judges outside text (a tool's result, a retrieved passage) before the model
reads it, and the verdict it gives.

A screen is a guard with one more method (:class:`ToolResultScreen`); the guards package names
it beside :class:`~agent_executor.guards.Guard`. It lives here, below the run context, because
the context carries the run's screens to the hooks that bring other outside text to the model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = ["ScreenVerdict", "ToolResultScreen"]


@dataclass(frozen=True, slots=True)
class ScreenVerdict:
    """What the model gets instead of a tool result; ``blocked`` marks the call ``rejected``."""

    text: str
    blocked: bool = False


@runtime_checkable
class ToolResultScreen(Protocol):
    """A guard that also checks tool results; ``None`` leaves the result as it is."""

    async def screen_tool_result(self, tool: str, text: str) -> ScreenVerdict | None: ...
