"""Moved to :mod:`agent_executor.tools.frontend`; this path keeps working."""

from .tools.frontend import ClientToolError, Delivery, ToolResultRelay, ToolResults

__all__ = ["ClientToolError", "Delivery", "ToolResultRelay", "ToolResults"]
