"""``agent-executor serve``: build the service from flags and environment, and run it.

Flags win over environment variables (see docs/operations.md). With no model configured the service
runs on the offline ``DemoModel``; without ``--tools`` it registers the demo tools. With
``--agents AGENTS.json`` it runs several named agents, optionally behind a router.
``agent-executor mcp`` builds the same service from the same flags and serves its agents as MCP
tools over stdio (:mod:`.mcp_stdio`, docs/mcp-server.md).

The steps, each its own module: :func:`build_parser` reads the command line,
:meth:`ServeConfig.from_args` resolves flags, environment and defaults, :func:`build_service`
builds the agents and the app, and :func:`main` sets the process up and runs it.
"""

from .build import Service, build_service, build_service_with_mcp
from .config import ServeConfig
from .errors import CliError
from .parser import build_parser
from .process import main

__all__ = [
    "CliError",
    "ServeConfig",
    "Service",
    "build_parser",
    "build_service",
    "build_service_with_mcp",
    "main",
]
