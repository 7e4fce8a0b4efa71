"""The agent-executor service: the executor over HTTP with typed Server-Sent Events.

``create_app(executor_or_agents, settings)`` returns an aiohttp application you can run or
mount in your own; ``agent-executor serve`` (or ``python -m server``) runs one from the
command line.
"""

from .app import create_app
from .settings import Settings

__all__ = ["Settings", "create_app"]
