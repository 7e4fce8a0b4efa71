"""Tools the model can call, one module per kind.

- :mod:`~agent_executor.tools.base`: the :class:`Tool` base class every kind shares.
- :mod:`~agent_executor.tools.function`: Python functions, through the :func:`tool` decorator.
- :mod:`~agent_executor.tools.toolkit`: :class:`Toolkit`, related tools as the methods of one
  class sharing its state.
- :mod:`~agent_executor.tools.frontend`: tools the client runs, and :class:`ToolResults`,
  where their answers meet the waiting run.
- :mod:`~agent_executor.tools.rest`: one HTTP endpoint per tool (``RestTool``).
- :mod:`~agent_executor.tools.mcp`: the tools of MCP servers (the ``[mcp]`` extra; imported
  only when asked for, never by this package).
- :mod:`~agent_executor.tools.demo`: the offline tools of the demo model.
"""

from .base import Tool, ToolArgumentsError, serialize_result
from .frontend import ClientToolError, Delivery, FrontendTool, ToolResultRelay, ToolResults
from .function import FunctionTool, tool
from .toolkit import Toolkit

__all__ = [
    "ClientToolError",
    "Delivery",
    "FrontendTool",
    "FunctionTool",
    "Tool",
    "ToolArgumentsError",
    "ToolResultRelay",
    "ToolResults",
    "Toolkit",
    "serialize_result",
    "tool",
]
