"""Moved to :mod:`agent_executor.tools.rest`; this path keeps working."""

from .tools.rest import RestConnectionError, RestHTTPError, RestTool, RestToolError

__all__ = ["RestConnectionError", "RestHTTPError", "RestTool", "RestToolError"]
