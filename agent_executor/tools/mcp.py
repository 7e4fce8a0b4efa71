"""Tools from Model Context Protocol servers: connect, list their tools, call them as tools.

:class:`MCPToolset` connects to every server of an ``mcpServers`` config (the JSON format most MCP
clients read) over **stdio** (a command it starts) or **streamable HTTP** (a URL), lists their tools
and wraps each one as an :class:`MCPTool`, an ordinary :class:`~agent_executor.tools.Tool`. So an
MCP call goes through the executor's one path for tools: the same hooks, timeouts, metrics, events
and result limits as a Python function. The toolset is an async context manager; leaving it closes
every session and stops every process it started::

    async with MCPToolset.from_config("mcp.json") as toolset:
        executor = AgentExecutor(model=..., tools=[*my_tools, *toolset.tools])
        ...

This module needs the ``mcp`` extra (``pip install agent-executor[mcp]``, the official SDK, 2.x);
``agent_executor`` itself never imports it.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import re
import sys
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, TextIO
from urllib.parse import urlsplit

import anyio
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from .._extras import requires_extra
from .._version import __version__
from ..errors import ConfigurationError, MCPConnectionError, MCPToolError
from .base import Tool, serialize_result

with requires_extra("mcp", __name__):
    import httpx2
    from mcp import Client, StdioServerParameters
    from mcp import types as mcp_types
    from mcp.client import Transport
    from mcp.client.stdio import stdio_client
    from mcp.client.streamable_http import streamable_http_client

__all__ = [
    "MCPConfig",
    "MCPConnectionError",
    "MCPServerConfig",
    "MCPTool",
    "MCPToolError",
    "MCPToolset",
    "load_config",
]

logger = logging.getLogger("agent_executor.mcp")

_NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_UNSAFE_RE = re.compile(r"[^A-Za-z0-9_-]")
_ENV_REF_RE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_PREFIX_SEPARATOR = "__"
_CLOSE_GRACE_SECONDS = 10.0
_TransportName = Literal["stdio", "http", "streamable-http", "streamable_http", "streamableHttp"]
_HTTP_TYPES = ("http", "streamable-http", "streamable_http", "streamableHttp")


class MCPServerConfig(BaseModel):
    """One entry of ``mcpServers``: a ``command`` to run over stdio, or a streamable HTTP ``url``.

    ``${NAME}`` and ``${NAME:-default}`` in the command, arguments, environment, URL and header
    values are replaced from the environment when the config is loaded, so secrets (tokens,
    API keys) need not be written into the file. Unknown keys (other clients' options such as
    ``autoApprove``) are ignored with a warning.
    """

    model_config = ConfigDict(extra="allow", frozen=True)

    type: _TransportName | None = None
    command: str | None = None
    args: tuple[str, ...] = ()
    # Kept out of repr(): they often carry secrets (tokens, API keys).
    env: dict[str, str] = Field(default_factory=dict, repr=False)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict, repr=False)
    disabled: bool = False
    connect_timeout_seconds: float = Field(default=30.0, gt=0)
    tool_timeout_seconds: float | None = Field(default=None, gt=0)

    @field_validator("type", mode="before")
    @classmethod
    def _no_sse(cls, value: object) -> object:
        if value == "sse":
            raise ValueError(
                "the legacy SSE transport is not supported; use streamable HTTP "
                "(most servers serve it at /mcp)"
            )
        return value

    @field_validator("command", "cwd", "url", mode="after")
    @classmethod
    def _expand_text(cls, value: str | None) -> str | None:
        return None if value is None else _expand(value)

    @field_validator("args", mode="after")
    @classmethod
    def _expand_args(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(_expand(arg) for arg in value)

    @field_validator("env", "headers", mode="after")
    @classmethod
    def _expand_values(cls, value: dict[str, str]) -> dict[str, str]:
        return {key: _expand(item) for key, item in value.items()}

    @model_validator(mode="after")
    def _one_transport(self) -> MCPServerConfig:
        if self.command is None and self.url is None:
            raise ValueError("give a 'command' (stdio) or a 'url' (streamable HTTP)")
        if self.command is not None and self.url is not None:
            raise ValueError(
                "give either a 'command' (stdio) or a 'url' (streamable HTTP), not both"
            )
        if self.type == "stdio" and self.command is None:
            raise ValueError("type 'stdio' needs a 'command'")
        if self.type in _HTTP_TYPES and self.url is None:
            raise ValueError(f"type {self.type!r} needs a 'url'")
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise ValueError("'url' must start with http:// or https://")
        return self

    @property
    def transport(self) -> Literal["stdio", "http"]:
        """Which transport connects to this server."""
        return "stdio" if self.command is not None else "http"

    @property
    def ignored_keys(self) -> list[str]:
        """Keys of the entry this client does not use."""
        return sorted(self.model_extra or {})


class MCPConfig(BaseModel):
    """The ``{"mcpServers": {name: {...}}}`` document; ``servers`` maps names to entries."""

    model_config = ConfigDict(extra="allow", frozen=True, populate_by_name=True)

    servers: dict[str, MCPServerConfig] = Field(alias="mcpServers")

    @field_validator("servers", mode="after")
    @classmethod
    def _names(cls, value: dict[str, MCPServerConfig]) -> dict[str, MCPServerConfig]:
        for name in value:
            if not name.strip():
                raise ValueError("a server name is empty")
        return value


def load_config(path: str | os.PathLike[str]) -> MCPConfig:
    """Read an ``mcpServers`` JSON file; raise :class:`ConfigurationError` if it is not valid."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigurationError(f"cannot read the MCP config {os.fspath(path)!r}: {exc}") from exc
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ConfigurationError(f"the MCP config {os.fspath(path)!r} is not JSON: {exc}") from None
    return _parse_config(data, where=f"the MCP config {os.fspath(path)!r}")


class MCPTool(Tool):
    """One tool of an MCP server, callable by the model like any other :class:`Tool`.

    ``name`` is what the model sees (prefixed with the server's name if another server has a
    tool of the same name); ``remote_name`` is the server's own name for it. Arguments are
    checked against the server's schema lightly (:meth:`Tool.parse_arguments`: required and
    unknown keys, top-level JSON types) so obvious mistakes come back as ``invalid_arguments``
    without a round trip; the server validates fully.
    """

    def __init__(
        self,
        connection: _Connection,
        remote: mcp_types.Tool,
        *,
        name: str,
        timeout: float | None = None,
    ) -> None:
        super().__init__(
            name=name,
            description=remote.description or remote.title or "",
            parameters=_parameters(remote.input_schema),
            timeout=timeout,
        )
        self.server = connection.name
        self.remote_name = remote.name
        self._connection = connection

    async def invoke(self, arguments: dict[str, Any]) -> str:
        """Call the tool on its server; raise :class:`MCPToolError` if the server says it failed.

        Cancelling the call (a tool timeout, a cancelled run) cancels the request, and the SDK
        tells the server so (``notifications/cancelled``).
        """
        client = self._connection.client
        if client is None:
            raise MCPToolError(f"the MCP server {self.server!r} is not connected")
        result = await client.call_tool(self.remote_name, arguments)
        if result.is_error:
            raise MCPToolError(_content_text(result.content) or "the tool reported an error")
        if result.structured_content is not None:
            return serialize_result(result.structured_content)
        return _content_text(result.content)

    def __repr__(self) -> str:
        return f"<MCPTool {self.name} ({self.server}:{self.remote_name})>"


class MCPToolset:
    """The tools of several MCP servers, connected together and closed together.

    Use it as an async context manager (``async with MCPToolset.from_config(...) as toolset``),
    or call :meth:`start` and later :meth:`aclose` when opening and closing happen in different
    places (a service's startup and cleanup hooks); either may run in any task.

    ``always_prefix`` names every tool ``<server>__<tool>``; by default only names that clash
    (between servers, or with ``reserved_names``, e.g. your Python tools) are prefixed.
    ``errlog`` receives the stderr of stdio servers (default: this process's stderr).
    """

    def __init__(
        self,
        config: MCPConfig,
        *,
        always_prefix: bool = False,
        reserved_names: Iterable[str] = (),
        errlog: TextIO | None = None,
    ) -> None:
        self.config = config
        self._always_prefix = always_prefix
        self._reserved = frozenset(reserved_names)
        self._errlog = errlog
        self._connections: list[_Connection] = []
        self._tools: list[MCPTool] | None = None

    @classmethod
    def from_config(
        cls,
        config: MCPConfig | Mapping[str, Any] | str | os.PathLike[str],
        *,
        always_prefix: bool = False,
        reserved_names: Iterable[str] = (),
        errlog: TextIO | None = None,
    ) -> MCPToolset:
        """A toolset (not yet connected) from a config, its JSON data, or the path of its file."""
        if isinstance(config, MCPConfig):
            parsed = config
        elif isinstance(config, Mapping):
            parsed = _parse_config(config, where="the MCP config")
        else:
            parsed = load_config(config)
        return cls(
            parsed, always_prefix=always_prefix, reserved_names=reserved_names, errlog=errlog
        )

    @classmethod
    async def start(
        cls,
        config: MCPConfig | Mapping[str, Any] | str | os.PathLike[str],
        *,
        always_prefix: bool = False,
        reserved_names: Iterable[str] = (),
        errlog: TextIO | None = None,
    ) -> MCPToolset:
        """A connected toolset; close it with :meth:`aclose` (e.g. in a cleanup hook)."""
        toolset = cls.from_config(
            config, always_prefix=always_prefix, reserved_names=reserved_names, errlog=errlog
        )
        await toolset.connect()
        return toolset

    @property
    def tools(self) -> list[MCPTool]:
        """The tools of all servers, in config order; only while connected."""
        if self._tools is None:
            raise RuntimeError("the MCPToolset is not connected: use 'async with' or start()")
        return list(self._tools)

    async def connect(self) -> None:
        """Start and connect every enabled server at once and list their tools.

        Raises :class:`MCPConnectionError` (after closing what did connect) if any server fails,
        and :class:`ConfigurationError` if the tool names cannot be made unique.
        """
        if self._connections:
            raise RuntimeError("the MCPToolset is already connected")
        self._connections = [
            _Connection(name, server, self._errlog or sys.stderr)
            for name, server in self.config.servers.items()
            if not server.disabled
        ]
        for connection in self._connections:
            if connection.config.ignored_keys:
                logger.warning(
                    "MCP server %r: ignoring unknown config keys %s",
                    connection.name,
                    ", ".join(connection.config.ignored_keys),
                )
        try:
            async with anyio.create_task_group() as tg:
                for connection in self._connections:
                    tg.start_soon(connection.open)
            self._tools = self._make_tools()
        except BaseException as exc:
            await self.aclose()
            failure = _connection_failure(exc)
            if failure is not None:
                raise failure from None
            raise
        logger.info(
            "MCP: %d tools from %d servers (%s)",
            len(self._tools),
            len(self._connections),
            ", ".join(c.name for c in self._connections) or "none",
        )

    async def aclose(self) -> None:
        """Close every session and stop every server process; safe to call more than once."""
        connections, self._connections, self._tools = self._connections, [], None
        with anyio.CancelScope(shield=True):
            async with anyio.create_task_group() as tg:
                for connection in connections:
                    tg.start_soon(connection.close)

    async def __aenter__(self) -> MCPToolset:
        await self.connect()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    def _make_tools(self) -> list[MCPTool]:
        listed = [(c, remote) for c in self._connections for remote in c.listed]
        names = _unique_names(
            [(c.name, remote.name) for c, remote in listed], self._always_prefix, self._reserved
        )
        return [
            MCPTool(c, remote, name=name, timeout=c.config.tool_timeout_seconds)
            for (c, remote), name in zip(listed, names, strict=True)
        ]

    def __repr__(self) -> str:
        state = "connected" if self._tools is not None else "not connected"
        return f"<MCPToolset {', '.join(self.config.servers)} ({state})>"


class _Connection:
    """One server's MCP session, held open by a task of its own.

    The SDK's transports and sessions are anyio task groups, which must be exited by the task
    that entered them; a toolset is often opened in one task and closed in another (a service's
    startup and cleanup hooks, a test fixture). So a dedicated task enters the session, lists the
    tools, waits for :meth:`close`, and exits it. Calls are made from any task through
    ``client``: the session multiplexes requests.
    """

    def __init__(self, name: str, config: MCPServerConfig, errlog: TextIO) -> None:
        self.name = name
        self.config = config
        self.client: Client | None = None
        self.listed: list[mcp_types.Tool] = []
        self._errlog = errlog
        self._scope = anyio.CancelScope()
        self._ready = anyio.Event()
        self._stop = anyio.Event()
        self._done = anyio.Event()
        self._error: Exception | None = None
        self._task: asyncio.Task[None] | None = None

    async def open(self) -> None:
        """Connect and list the tools within the connect timeout, or raise."""
        loop = asyncio.get_running_loop()
        self._task = loop.create_task(self._hold(), name=f"MCP server {self.name}")
        try:
            with anyio.fail_after(self.config.connect_timeout_seconds):
                await self._ready.wait()
        except TimeoutError:
            raise MCPConnectionError(
                f"MCP server {self.name!r} did not answer within "
                f"{self.config.connect_timeout_seconds} s"
            ) from None
        if self.client is None:
            reason = "closed while connecting" if self._error is None else _describe(self._error)
            raise MCPConnectionError(
                f"cannot connect to MCP server {self.name!r} ({_where(self.config)}): {reason}"
            ) from self._error

    async def close(self) -> None:
        """End the session and stop the server process (within the SDK's bounded shutdown)."""
        if self._task is None:
            return
        self._stop.set()
        if not self._ready.is_set():
            self._scope.cancel()  # still connecting: give up on it
        with anyio.CancelScope(shield=True):
            with anyio.move_on_after(_CLOSE_GRACE_SECONDS):
                await self._done.wait()
            # A server slow to say goodbye (an HTTP session DELETE that hangs) is cut off; the
            # SDK still stops a stdio process, shielded and bounded.
            self._scope.cancel()
            await self._done.wait()

    async def _hold(self) -> None:
        try:
            with self._scope:
                async with AsyncExitStack() as stack:
                    transport = await self._transport(stack)
                    info = mcp_types.Implementation(name="agent-executor", version=__version__)
                    client = Client(transport, client_info=info, cache=None)
                    await stack.enter_async_context(client)
                    self.listed = await _list_tools(client)
                    self.client = client
                    self._ready.set()
                    await self._stop.wait()
                    self.client = None
        except Exception as exc:
            self._error = exc
            if self._ready.is_set():
                logger.warning("MCP server %r: the session failed: %s", self.name, _describe(exc))
        finally:
            self.client = None
            self._ready.set()
            self._done.set()

    async def _transport(self, stack: AsyncExitStack) -> Transport:
        config = self.config
        if config.command is not None:
            params = StdioServerParameters(
                command=config.command, args=list(config.args), env=config.env, cwd=config.cwd
            )
            return stdio_client(params, errlog=self._errlog)
        assert config.url is not None
        # Read timeout as the SDK's own default client: a server may hold a stream open.
        http = httpx2.AsyncClient(
            headers=config.headers, timeout=httpx2.Timeout(config.connect_timeout_seconds, read=300)
        )
        await stack.enter_async_context(http)
        return streamable_http_client(config.url, http_client=http)


async def _list_tools(client: Client) -> list[mcp_types.Tool]:
    tools: list[mcp_types.Tool] = []
    cursor: str | None = None
    while True:
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            return tools


def _parse_config(data: object, *, where: str) -> MCPConfig:
    try:
        return MCPConfig.model_validate(data)
    except ValidationError as exc:
        problems = []
        for error in exc.errors(include_url=False):
            place = ".".join(str(part) for part in error["loc"]) or "(top level)"
            problems.append(f"{place}: {error['msg']}")
        raise ConfigurationError(f"{where} is not valid: " + "; ".join(problems)) from None


def _expand(text: str) -> str:
    """Replace ``${NAME}`` / ``${NAME:-default}`` with environment variables."""

    def replace(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        value = os.environ.get(name)
        if value is not None:
            return value
        if default is not None:
            return default
        raise ValueError(f"environment variable {name} is not set")

    return _ENV_REF_RE.sub(replace, text)


def _unique_names(
    entries: Sequence[tuple[str, str]], always_prefix: bool, reserved: frozenset[str]
) -> list[str]:
    """Model-facing names for (server, tool) pairs: the tool's own name where it is unique,
    ``server__tool`` where it clashes; always ``[A-Za-z0-9_-]{1,64}``."""
    bases = [_fit(_safe(tool)) for _, tool in entries]
    counts = Counter(bases)
    names = [
        _fit(f"{_safe(server)}{_PREFIX_SEPARATOR}{_safe(tool)}")
        if always_prefix or counts[base] > 1 or base in reserved
        else base
        for (server, tool), base in zip(entries, bases, strict=True)
    ]
    clashes = sorted(name for name, n in Counter([*names, *reserved]).items() if n > 1)
    if clashes:
        raise ConfigurationError(
            f"MCP tool names still clash after prefixing with the server name: {clashes}; "
            "rename a server in the config"
        )
    return names


def _safe(name: str) -> str:
    return _UNSAFE_RE.sub("_", name) or "_"


def _fit(name: str) -> str:
    """``name`` cut to 64 characters, with a hash of the whole so cut names stay distinct."""
    if _NAME_RE.match(name):
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{name[:55]}_{digest}"


def _parameters(schema: Mapping[str, Any]) -> dict[str, Any]:
    parameters = dict(schema)
    parameters.setdefault("type", "object")
    parameters.setdefault("properties", {})
    return parameters


def _content_text(blocks: Sequence[mcp_types.ContentBlock]) -> str:
    """Content blocks as text for the model: text as is, everything else described."""
    parts: list[str] = []
    for block in blocks:
        if isinstance(block, mcp_types.TextContent):
            parts.append(block.text)
        elif isinstance(block, mcp_types.ImageContent | mcp_types.AudioContent):
            parts.append(f"[{block.type}: {block.mime_type}, {len(block.data)} base64 characters]")
        elif isinstance(block, mcp_types.ResourceLink):
            parts.append(f"[resource link: {block.uri}]")
        elif isinstance(block.resource, mcp_types.TextResourceContents):
            parts.append(block.resource.text)
        else:
            kind = block.resource.mime_type or "binary"
            parts.append(f"[resource: {block.resource.uri}, {kind}]")
    return "\n".join(parts)


def _connection_failure(exc: BaseException) -> MCPConnectionError | None:
    """The first :class:`MCPConnectionError` in ``exc`` (a task group wraps them in a group)."""
    if isinstance(exc, MCPConnectionError):
        return exc
    for inner in _grouped(exc):
        found = _connection_failure(inner)
        if found is not None:
            return found
    return None


def _grouped(exc: BaseException) -> tuple[BaseException, ...]:
    """The exceptions inside an exception group (duck-typed: Python 3.10 has no builtin one)."""
    inner = getattr(exc, "exceptions", None)
    if isinstance(inner, tuple) and all(isinstance(e, BaseException) for e in inner):
        return inner
    return ()


def _where(config: MCPServerConfig) -> str:
    if config.command is not None:
        return f"command {config.command!r}"
    # Only the origin: some services put a secret key in the URL's path or query.
    parts = urlsplit(config.url or "")
    return f"url {parts.scheme}://{parts.hostname}{f':{parts.port}' if parts.port else ''}/..."


def _describe(exc: BaseException) -> str:
    inner = _grouped(exc)
    if len(inner) == 1:
        return _describe(inner[0])
    return f"{type(exc).__name__}: {exc}"
