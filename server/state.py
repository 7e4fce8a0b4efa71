"""The service's state, kept on the application under typed keys (no globals)."""

from __future__ import annotations

import ipaddress
import time
from dataclasses import dataclass, field
from pathlib import Path

from aiohttp import web

from agent_executor import AgentRouter
from agent_executor.observability import Metrics

from .descriptors import DescriptorBudget
from .health import HealthChecks
from .keys import AUTH_USER, REQUEST_ID
from .settings import Settings
from .sse import Streams

__all__ = [
    "AGENTS",
    "AUTH_USER",
    "REQUEST_ID",
    "SETTINGS",
    "STATE",
    "STATIC_DIR",
    "TRUSTED_PROXIES",
    "ServiceState",
]

STATIC_DIR = Path(__file__).parent / "static"


@dataclass
class ServiceState:
    """What the running service tracks: start time, metrics, the open streams and the health
    checks."""

    metrics: Metrics
    streams: Streams
    health: HealthChecks
    started_monotonic: float = field(default_factory=time.monotonic)
    descriptors: DescriptorBudget = field(default_factory=DescriptorBudget.current)
    """How many streams the process's descriptor limit leaves room for."""
    requests_in_flight: int = 0
    """Requests being answered now (each holds its client's connection)."""


TRUSTED_PROXIES = web.AppKey(
    "trusted_proxies", tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]
)
"""The parsed ``Settings.trusted_proxies``."""
AGENTS = web.AppKey("agents", AgentRouter)
SETTINGS = web.AppKey("settings", Settings)
STATE = web.AppKey("state", ServiceState)
