"""Moved to :mod:`agent_executor.tools.demo`; this path still works but is deprecated: importing
it warns, and the release named in :mod:`agent_executor._deprecations` removes it.

``--tools agent_executor.demo_tools`` offers this module's tools in the order they appear in
it, so they are bound here in the original order: weather, then time.
"""

from ._deprecations import warn_moved
from .tools.demo import DEMO_TOOLS

get_weather, get_time = DEMO_TOOLS

__all__ = ["DEMO_TOOLS", "get_time", "get_weather"]

warn_moved(__name__)
