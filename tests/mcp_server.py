"""A real MCP server for tests/test_mcp.py, built with the official SDK (``MCPServer``).

Run ``python tests/mcp_server.py stdio`` (newline-delimited JSON-RPC on stdin/stdout) or
``python tests/mcp_server.py http PORT`` (streamable HTTP on http://127.0.0.1:PORT/mcp).
Nothing here imports agent_executor: the server knows only the protocol.
"""

from __future__ import annotations

import os
import sys

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool


def strict(x: int) -> int:
    """Double ``x``; its schema forbids other arguments."""
    return 2 * x


_strict = Tool.from_function(strict)
_strict = _strict.model_copy(
    update={"parameters": {**_strict.parameters, "additionalProperties": False}}
)

server = MCPServer("agent-executor-test", log_level="WARNING", tools=[_strict])

# Set when a ``slow`` call with that tag is cancelled, so a test can ask whether the
# cancellation reached the server (tags keep tests sharing one HTTP server apart).
_cancelled: dict[str, anyio.Event] = {}


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool(structured_output=False)
def echo(text: str) -> str:
    """Return the text unchanged (as text content only: no structured content)."""
    return text


@server.tool(name="text.upper", structured_output=False)
def upper(text: str) -> str:
    """The text in capitals (its name has a dot, which model APIs do not accept)."""
    return text.upper()


@server.tool()
def fail(message: str = "it broke") -> str:
    """Always fails with ``message``."""
    raise ToolError(message)  # its message reaches the client (other exceptions are hidden)


@server.tool()
async def slow(seconds: float, tag: str = "") -> str:
    """Sleep for ``seconds``, then say so."""
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        _cancelled.setdefault(tag, anyio.Event()).set()
        raise
    return f"slept {seconds} s"


@server.tool()
async def slow_was_cancelled(tag: str, wait_seconds: float) -> bool:
    """Whether a ``slow`` call tagged ``tag`` was cancelled, waiting up to ``wait_seconds``."""
    event = _cancelled.setdefault(tag, anyio.Event())
    with anyio.move_on_after(wait_seconds):
        await event.wait()
    return event.is_set()


@server.tool()
def pid() -> int:
    """The server's process id (a test checks the process is gone after closing)."""
    return os.getpid()


@server.tool()
def environment(name: str) -> str:
    """The server process's environment variable ``name`` ('' if unset)."""
    return os.environ.get(name, "")


@server.tool()
def request_header(name: str, ctx: Context) -> str:
    """The HTTP request header ``name`` of this call ('' if unset or not over HTTP)."""
    headers = ctx.headers or {}
    return headers.get(name.lower(), headers.get(name, ""))


def main(argv: list[str]) -> None:
    if argv[:1] == ["stdio"]:
        server.run("stdio")
    elif argv[:1] == ["http"] and len(argv) == 2:
        server.run("streamable-http", host="127.0.0.1", port=int(argv[1]))
    else:
        raise SystemExit("usage: mcp_server.py stdio | http PORT")


if __name__ == "__main__":
    main(sys.argv[1:])
