"""``agent-executor serve``: build the service from flags and environment, and run it.

Flags win over environment variables (SPEC section 5). With no model configured the service
runs on the offline ``DemoModel``; without ``--tools`` it registers the demo tools. With
``--agents AGENTS.json`` it runs several named agents, optionally behind a router.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import importlib
import importlib.util
import json
import logging
import os
import re
import sys
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Annotated, Any

from aiohttp import web
from prometheus_client import disable_created_metrics
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from agent_executor import (
    AgentExecutor,
    AgentRouter,
    ChatModel,
    ConfigurationError,
    ConversationStore,
    DemoModel,
    Guard,
    HistoryCompressor,
    InjectionGuard,
    InputValidationGuard,
    LiteLLMModel,
    ModelRouter,
    StoreUnavailable,
    ToolResults,
)
from agent_executor.demo_tools import DEMO_TOOLS
from agent_executor.logging import JsonLogFormatter
from agent_executor.memory import InMemoryConversationStore
from agent_executor.models import resolve_model
from agent_executor.output_guard import OutputGuard
from agent_executor.ratelimit import RateLimitGuard, RateLimitStorage
from agent_executor.tools import Tool

from .app import create_app
from .schemas import describe_validation_error
from .settings import Settings

if TYPE_CHECKING:
    from agent_executor.mcp import MCPConfig

__all__ = ["build_parser", "main"]

Environ = Mapping[str, str]

logger = logging.getLogger("server")


GC_THRESHOLD = 10_000
"""Allocations between young-generation collections in the service (Python's default: 700)."""


class CliError(Exception):
    """A configuration problem reported to the user with exit status 2."""


def build_parser() -> argparse.ArgumentParser:
    """The command line of SPEC section 5."""
    parser = argparse.ArgumentParser(
        prog="agent-executor", description="Run LLM agents as a streaming service."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="start the HTTP service")
    add = serve.add_argument
    add("--host", help="address to listen on (env HOST; default 127.0.0.1)")
    add("--port", type=int, help="port to listen on (env PORT; default 8080)")
    add("--model", help="'demo' or a litellm model such as openai/gpt-4o-mini (env LLM_MODEL)")
    add("--api-base", help="base URL of an OpenAI-compatible server (env LLM_BASE_URL)")
    add("--api-key", help="API key of the model provider (env LLM_API_KEY)")
    add(
        "--model-client",
        choices=("auto", "fast", "litellm"),
        default="auto",
        help="how to reach the model: auto (the fast OpenAI-compatible client for openai/... "
        "models and any --api-base, litellm for other providers), or force one",
    )
    add(
        "--tools",
        help="comma-separated modules whose @tool functions to register "
        "(env AGENT_TOOLS; default: the demo tools)",
    )
    add(
        "--mcp",
        metavar="CONFIG.json",
        help="MCP servers whose tools to register (the usual mcpServers JSON file; "
        "needs the [mcp] extra)",
    )
    add(
        "--approval-secret",
        help="secret signing approval tokens, so they outlive a restart "
        "(env AGENT_APPROVAL_SECRET; default: random per process)",
    )
    add(
        "--agents",
        metavar="AGENTS.json",
        help="several named agents (own system prompt, tools, model) and an optional router "
        "picking one per request; the other flags are their defaults (see docs/tools.md)",
    )
    add("--system-prompt", help="default system prompt")
    add("--max-concurrency", type=int, default=16, help="runs at once (default 16)")
    add("--request-timeout", type=float, default=300.0, help="seconds per run (default 300)")
    add("--max-tool-calls", type=int, default=20, help="tool calls per run (default 20)")
    add(
        "--redis-url",
        help="Redis shared by replicas: conversations, rate limits, frontend tool results and "
        "the approval secret (env REDIS_URL; default: this process's memory)",
    )
    add(
        "--history-max-tokens",
        type=int,
        help="summarise the older turns of a stored conversation past this many tokens "
        "(estimated; default: never)",
    )
    add(
        "--history-keep-tokens",
        type=int,
        help="tokens of recent turns kept word for word when summarising "
        "(default: a quarter of --history-max-tokens)",
    )
    add(
        "--summary-model",
        help="model that writes the summaries (default: the agent's own model)",
    )
    add(
        "--session-ttl",
        type=float,
        default=3600.0,
        help="seconds a conversation is kept after its last use (default 3600)",
    )
    add(
        "--rate-limit",
        help="requests per user (or client address), e.g. 20/minute: N back "
        "to back, refilled at N per PERIOD",
    )
    add("--rate-limit-burst", type=int, help="requests allowed back to back (default: N)")
    add("--no-injection-guard", action="store_true", help="do not check prompts for injection")
    add(
        "--output-guard",
        action="store_true",
        help="redact credentials (API keys, tokens, private keys) from streamed answers",
    )
    add(
        "--no-reasoning-events",
        action="store_true",
        help="keep the model's reasoning from clients (no 'reasoning' events, no "
        "'reasoning' in results); it still goes back to the model as its provider requires",
    )
    add("--api-keys-file", help="file of user_id=key lines (env AGENT_API_KEYS: same content)")
    add("--cors-origins", help="comma-separated origins allowed by CORS ('*' for any)")
    add(
        "--trusted-proxies",
        help="comma-separated addresses or networks of reverse proxies whose X-Forwarded-For "
        "gives the client address (default: none; the peer address is used)",
    )
    add(
        "--gc-threshold",
        type=_non_negative,
        default=GC_THRESHOLD,
        help="young-generation threshold of Python's garbage collector; what start-up built "
        f"is frozen out of collections (default {GC_THRESHOLD:,}; 0 keeps Python's defaults)",
    )
    add("--log-format", choices=("text", "json"), default="text", help="log line format")
    add("--heartbeat", type=float, default=15.0, help="seconds between SSE heartbeats")
    add(
        "--shutdown-grace",
        type=float,
        default=10.0,
        help="seconds running streams may finish after SIGTERM (default 10)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``agent-executor`` console script."""
    args = build_parser().parse_args(argv)
    _configure_logging(args.log_format, os.environ.get("LOG_LEVEL", "INFO"))
    disable_created_metrics()  # type: ignore[no-untyped-call]  # half the series, none used
    try:
        if args.mcp:
            if args.agents:  # a bad file fails before any MCP server is started
                _agents_config(args)
            settings = _settings(args, os.environ)
            app: web.Application | Awaitable[web.Application] = _app_with_mcp(
                args, os.environ, _mcp_config(args.mcp)
            )
        elif args.agents:
            settings, agents = _build_agents(args, os.environ)
            app = _app(agents, settings)
        else:
            settings, executor = _build(args, os.environ)
            app = _app(executor, settings)
        _tune_gc(args.gc_threshold)
        web.run_app(
            app,
            host=settings.host,
            port=settings.port,
            handler_cancellation=True,
            shutdown_timeout=settings.shutdown_grace_seconds + 5,
            backlog=4096,  # bursts of thousands of connects (the kernel caps it at somaxconn)
            print=None,
        )
    except (CliError, ConfigurationError) as exc:
        print(f"agent-executor: {exc}", file=sys.stderr)
        return 2
    logger.info("agent-executor stopped")
    return 0


def _tune_gc(threshold: int) -> None:
    """Fewer and shorter garbage collections under load.

    Everything start-up built (modules, the app, the agents) is long-lived: frozen, it is never
    scanned again. Open streams hold a few hundred tracked objects each, and with Python's
    default threshold of 700 allocations the collector keeps promoting them and re-scanning
    them all: at 1,000 streams that was a quarter of the service's CPU, with full collections
    pausing every stream for ~200 ms (docs/benchmarks.md). The service leaves almost no
    reference cycles, so collecting less often costs next to no memory.
    """
    if threshold == 0:
        return
    gc.collect()
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(threshold, older, oldest)
    logger.info(
        "garbage collector: %d start-up objects frozen, young generation collected every %d "
        "allocations",
        gc.get_freeze_count(),
        gc.get_threshold()[0],
    )


def _non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {value}")
    return value


def _app(executor: AgentExecutor | AgentRouter, settings: Settings) -> web.Application:
    app = create_app(executor, settings)
    if isinstance(executor, AgentRouter):
        _log_agents(executor, settings)
        return app
    logger.info(
        "agent-executor listening on http://%s:%d (model: %s; tools: %s)",
        settings.host,
        settings.port,
        _describe(executor.model),
        ", ".join(executor.tools) or "none",
    )
    return app


async def _app_with_mcp(
    args: argparse.Namespace, env: Environ, config: MCPConfig
) -> web.Application:
    """The app (one agent, or those of ``--agents``), built inside the service's event loop
    once the MCP servers are connected.

    The toolset stays open for the app's lifetime and is closed on cleanup (after the streams
    have drained), which stops every stdio server process.
    """
    from agent_executor.mcp import MCPToolset

    if args.agents:
        agents_config = _agents_config(args)
        own_tools = _agent_tools(args, env, agents_config)
        reserved = {
            tool.name
            for name, tools in own_tools.items()
            if agents_config.agents[name].mcp
            for tool in tools
        }
    else:
        tool_modules = args.tools or env.get("AGENT_TOOLS")
        own = _load_tools(tool_modules) if tool_modules else []
        reserved = {t.name for t in own}
    toolset = await MCPToolset.start(config, reserved_names=sorted(reserved))
    try:
        if args.agents:
            settings = _settings(args, env)
            agents = _agent_router(args, env, agents_config, own_tools, toolset.tools)
            app = _app(agents, settings)
        else:
            settings, executor = _build(args, env, toolset.tools)
            app = _app(executor, settings)
    except BaseException:
        await toolset.aclose()
        raise

    async def close_mcp(_app: web.Application) -> None:
        await toolset.aclose()

    app.on_cleanup.append(close_mcp)
    return app


def _mcp_config(path: str) -> MCPConfig:
    try:
        from agent_executor.mcp import load_config
    except ImportError:
        raise CliError("--mcp needs the MCP SDK: pip install 'agent-executor[mcp]'") from None
    try:
        return load_config(path)
    except ConfigurationError as exc:
        raise CliError(str(exc)) from None


def _settings(args: argparse.Namespace, env: Environ) -> Settings:
    try:
        settings = Settings(
            host=args.host or env.get("HOST") or "127.0.0.1",
            port=args.port if args.port is not None else int(env.get("PORT") or 8080),
            heartbeat_seconds=args.heartbeat,
            api_keys=_api_keys(args.api_keys_file, env.get("AGENT_API_KEYS")),
            cors_origins=_list(args.cors_origins),
            trusted_proxies=_list(args.trusted_proxies),
            shutdown_grace_seconds=args.shutdown_grace,
        )
    except ValidationError as exc:
        raise CliError(describe_validation_error(exc)) from None
    return settings


def _build(
    args: argparse.Namespace, env: Environ, mcp_tools: Sequence[Tool] = ()
) -> tuple[Settings, AgentExecutor]:
    """The settings and the agent; the demo tools only when no tools are configured at all."""
    settings = _settings(args, env)
    tool_modules = args.tools or env.get("AGENT_TOOLS")
    tools = _load_tools(tool_modules) if tool_modules else []
    tools += mcp_tools
    if not tool_modules and not args.mcp:
        tools = list(DEMO_TOOLS)
    shared = _shared(args, env)
    return settings, _executor(args, shared, _model(args, env), tools)


def _executor(
    args: argparse.Namespace,
    shared: _Shared,
    model: ChatModel,
    tools: Sequence[Tool],
    *,
    name: str | None = None,
    system_prompt: str | None = None,
    description: str = "",
) -> AgentExecutor:
    """One agent (``name``: one of ``--agents``) with the flags' limits and the shared parts."""
    return AgentExecutor(
        model=model,
        tools=tools,
        guards=shared.guards,
        output_guard=shared.output_guard,
        system_prompt=args.system_prompt if system_prompt is None else system_prompt,
        max_concurrency=args.max_concurrency,
        request_timeout=args.request_timeout,
        max_tool_calls=args.max_tool_calls,
        approval_secret=shared.approval_secret,
        memory=shared.memory(name),
        tool_results=shared.tool_results,
        history_compressor=shared.compressor(model),
        name=name or "default",
        description=description,
        reasoning_events=not args.no_reasoning_events,
    )


@dataclass(frozen=True)
class _Shared:
    """What every agent of the process shares: the guards (so a per-user rate limit counts
    across agents), the output guard, where conversations, rate limits and frontend tool
    answers live (this process, or Redis for all replicas), the approval secret and the
    history compression settings."""

    guards: list[Guard]
    output_guard: OutputGuard | None
    redis_url: str | None
    session_ttl: float
    approval_secret: str | bytes | None
    tool_results: ToolResults
    history_max_tokens: int | None
    history_keep_tokens: int
    summariser: ChatModel | None

    def memory(self, agent: str | None) -> ConversationStore:
        """The conversation store of one agent (``None``: the only one)."""
        if self.redis_url is None:
            return InMemoryConversationStore(ttl_seconds=self.session_ttl)
        from agent_executor.redis import RedisConversationStore

        prefix = "agent-executor:" if agent is None else f"agent-executor:agent:{agent}:"
        return RedisConversationStore(self.redis_url, prefix=prefix, ttl_seconds=self.session_ttl)

    def compressor(self, model: ChatModel) -> HistoryCompressor | None:
        """The ``--history-*`` compression of an agent on ``model`` (its summariser unless
        ``--summary-model`` names one)."""
        if self.history_max_tokens is None:
            return None
        try:
            return HistoryCompressor(
                self.summariser or model,
                max_tokens=self.history_max_tokens,
                keep_recent_tokens=self.history_keep_tokens,
            )
        except ConfigurationError as exc:
            raise CliError(f"--history-max-tokens / --history-keep-tokens: {exc}") from None


def _shared(args: argparse.Namespace, env: Environ) -> _Shared:
    """The parts of :class:`_Shared`; Redis ones for ``--redis-url`` (with its approval secret
    unless one is given: read last, as it waits for Redis)."""
    if args.session_ttl <= 0:
        raise CliError("--session-ttl must be positive")
    if args.history_max_tokens is None and (
        args.history_keep_tokens is not None or args.summary_model
    ):
        raise CliError("--history-keep-tokens and --summary-model need --history-max-tokens")
    url = args.redis_url or env.get("REDIS_URL") or None
    secret: str | bytes | None = args.approval_secret or env.get("AGENT_APPROVAL_SECRET") or None
    tool_results, rate_storage = ToolResults(), None
    if url is not None:
        try:
            from agent_executor import redis as shared_redis
        except ImportError:
            raise CliError("--redis-url needs redis: pip install 'agent-executor[redis]'") from None
        if not url.startswith(("redis://", "rediss://", "unix://")):
            raise CliError(f"--redis-url must be a redis://, rediss:// or unix:// URL, not {url!r}")
        tool_results = ToolResults(relay=shared_redis.RedisToolResultRelay(url))
        rate_storage = shared_redis.RedisRateLimitStorage(url)
    shared = _Shared(
        guards=_guards(args, rate_storage),
        output_guard=OutputGuard() if args.output_guard else None,
        redis_url=url,
        session_ttl=args.session_ttl,
        approval_secret=secret,
        tool_results=tool_results,
        history_max_tokens=args.history_max_tokens,
        history_keep_tokens=(
            max(1, (args.history_max_tokens or 0) // 4)
            if args.history_keep_tokens is None
            else args.history_keep_tokens
        ),
        summariser=_model(args, env, args.summary_model) if args.summary_model else None,
    )
    if url is not None and secret is None:
        try:
            secret = shared_redis.shared_secret(url)
        except StoreUnavailable as exc:
            raise CliError(f"{exc} (it holds the approval secret the replicas share)") from None
        shared = dataclasses.replace(shared, approval_secret=secret)
    return shared


_AGENT_NAME_RE = re.compile(r"[A-Za-z0-9_-]{1,64}")

_NonEmpty = Annotated[str, Field(min_length=1)]


class _ModelConfig(BaseModel):
    """How to reach a model: each field left out falls back to the flags and environment."""

    model_config = ConfigDict(extra="forbid", strict=True)

    api_base: _NonEmpty | None = None
    api_key: _NonEmpty | None = None
    api_key_env: _NonEmpty | None = None

    @model_validator(mode="after")
    def _one_key(self) -> _ModelConfig:
        if self.api_key is not None and self.api_key_env is not None:
            raise ValueError("give 'api_key' or 'api_key_env', not both")
        return self

    def key(self, env: Environ, what: str) -> str | None:
        """The API key of the file or of the environment variable it names."""
        if self.api_key_env is None:
            return self.api_key
        key = env.get(self.api_key_env)
        if not key:
            raise CliError(f"{what}: api_key_env names {self.api_key_env}, which is not set")
        return key


class _RouterConfig(_ModelConfig):
    model: _NonEmpty
    timeout: float = Field(default=10.0, gt=0)


class _AgentConfig(_ModelConfig):
    description: str = ""
    system_prompt: str | None = None
    model: _NonEmpty | None = None
    tools: list[_NonEmpty] | None = None
    mcp: bool = False


class _AgentsFile(BaseModel):
    """The ``--agents`` file: named agents, the default one and an optional model router."""

    model_config = ConfigDict(extra="forbid", strict=True)

    default: str | None = None
    router: _RouterConfig | None = None
    agents: dict[str, _AgentConfig] = Field(min_length=1)

    @field_validator("agents")
    @classmethod
    def _names(cls, agents: dict[str, _AgentConfig]) -> dict[str, _AgentConfig]:
        for name in agents:
            if not _AGENT_NAME_RE.fullmatch(name):
                raise ValueError(
                    f"invalid agent name {name[:80]!r}: use 1 to 64 letters, digits, '_' or '-'"
                )
        return agents

    @model_validator(mode="after")
    def _default_is_an_agent(self) -> _AgentsFile:
        if self.default is not None and self.default not in self.agents:
            raise ValueError(
                f"default agent {self.default!r} is not one of the agents: "
                + ", ".join(self.agents)
            )
        return self


def _agents_config(args: argparse.Namespace) -> _AgentsFile:
    """The validated ``--agents`` file (:class:`CliError` naming the file and the problem)."""
    path = args.agents
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise CliError(f"cannot read the agents file: {exc}") from None
    try:
        data = json.loads(text, object_pairs_hook=_no_duplicate_keys)
    except json.JSONDecodeError as exc:
        raise CliError(f"{path}: not valid JSON: {exc}") from None
    except ValueError as exc:
        raise CliError(f"{path}: {exc}") from None
    if not isinstance(data, dict):
        raise CliError(f"{path}: expected a JSON object with an 'agents' object")
    try:
        config = _AgentsFile.model_validate(data)
    except ValidationError as exc:
        raise CliError(f"{path}: {describe_validation_error(exc)}") from None
    with_mcp = [name for name, agent in config.agents.items() if agent.mcp]
    if with_mcp and not args.mcp:
        raise CliError(
            f'{path}: agent {with_mcp[0]!r} has "mcp": true, but no --mcp CONFIG.json is given'
        )
    if args.mcp and not with_mcp:
        raise CliError(f'--mcp is given, but no agent of {path} has "mcp": true')
    return config


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for key, value in pairs:
        if key in data:
            raise ValueError(f"the key {key!r} appears twice in one object")
        data[key] = value
    return data


def _build_agents(
    args: argparse.Namespace, env: Environ, mcp_tools: Sequence[Tool] = ()
) -> tuple[Settings, AgentRouter]:
    """The settings and the agents of ``--agents`` (``mcp_tools`` for those with ``mcp``)."""
    settings = _settings(args, env)
    config = _agents_config(args)
    return settings, _agent_router(args, env, config, _agent_tools(args, env, config), mcp_tools)


def _agent_tools(
    args: argparse.Namespace, env: Environ, config: _AgentsFile
) -> dict[str, list[Tool]]:
    """Each agent's own tools: its ``tools``, else the ``--tools`` ones, else (without
    ``mcp``) the demo tools. A module named by several agents is loaded once."""
    default_modules = args.tools or env.get("AGENT_TOOLS")
    loaded: dict[str, list[Tool]] = {}
    tools: dict[str, list[Tool]] = {}
    for name, agent in config.agents.items():
        modules = agent.tools if agent.tools is not None else _list(default_modules)
        if agent.tools is None and not modules and not agent.mcp:
            tools[name] = list(DEMO_TOOLS)
            continue
        tools[name] = []
        for module in modules:
            if module not in loaded:
                try:
                    loaded[module] = _load_tools(module)
                except CliError as exc:
                    raise CliError(f"agent {name!r}: {exc}") from None
            tools[name].extend(loaded[module])
    return tools


def _agent_router(
    args: argparse.Namespace,
    env: Environ,
    config: _AgentsFile,
    own_tools: Mapping[str, Sequence[Tool]],
    mcp_tools: Sequence[Tool],
) -> AgentRouter:
    """One executor per agent, all sharing the parts of :class:`_Shared` and the limits."""
    shared = _shared(args, env)
    executors: dict[str, AgentExecutor] = {}
    for name, agent in config.agents.items():
        what = f"agent {name!r}"
        model = _model(args, env, agent.model, agent.api_base, agent.key(env, what))
        tools = [*own_tools[name], *(mcp_tools if agent.mcp else ())]
        try:
            executors[name] = _executor(
                args,
                shared,
                model,
                tools,
                name=name,
                system_prompt=agent.system_prompt,
                description=agent.description,
            )
        except ConfigurationError as exc:
            raise CliError(f"{what}: {exc}") from None
    router = None
    if config.router is not None:
        spec = config.router
        router_model = _model(
            args, env, spec.model, spec.api_base, spec.key(env, "router"), temperature=False
        )
        router = ModelRouter(router_model)
    return AgentRouter(
        executors,
        default=config.default,
        router=router,
        route_timeout=config.router.timeout if config.router is not None else 10.0,
    )


def _log_agents(agents: AgentRouter, settings: Settings) -> None:
    router = agents.router
    logger.info(
        "agent-executor listening on http://%s:%d with %d agents (default: %s; router: %s)",
        settings.host,
        settings.port,
        len(agents.agents),
        agents.default,
        f"model {router.model.name}, timeout {agents.route_timeout:g} s"
        if isinstance(router, ModelRouter)
        else "none, requests without 'agent' go to the default",
    )
    for name, executor in agents.agents.items():
        logger.info(
            "agent %s (model: %s; tools: %s)",
            name,
            _describe(executor.model),
            ", ".join(executor.tools) or "none",
        )


def _list(value: str | None) -> tuple[str, ...]:
    return tuple(item.strip() for item in (value or "").split(",") if item.strip())


def _guards(args: argparse.Namespace, rate_storage: RateLimitStorage | None) -> list[Guard]:
    """Rate limit (if asked), input validation, injection detection: cheapest refusals first."""
    guards: list[Guard] = []
    if args.rate_limit_burst is not None and not args.rate_limit:
        raise CliError("--rate-limit-burst needs --rate-limit")
    if args.rate_limit:
        try:
            guards.append(
                RateLimitGuard(
                    args.rate_limit,
                    burst=args.rate_limit_burst,
                    storage=rate_storage,
                )
            )
        except ConfigurationError as exc:
            raise CliError(str(exc)) from None
    guards.append(InputValidationGuard())
    if not args.no_injection_guard:
        guards.append(InjectionGuard())
    return guards


def _model(
    args: argparse.Namespace,
    env: Environ,
    name: str | None = None,
    api_base: str | None = None,
    api_key: str | None = None,
    *,
    temperature: bool = True,
) -> ChatModel:
    """The model of the flags and environment; ``name``, ``api_base``, ``api_key`` override
    them (an agent or the router of ``--agents``). ``temperature``: apply LLM_TEMPERATURE."""
    name = name or args.model or env.get("LLM_MODEL") or "demo"
    params: dict[str, Any] = {}
    if temperature and env.get("LLM_TEMPERATURE"):
        try:
            params["temperature"] = float(env["LLM_TEMPERATURE"])
        except ValueError:
            raise CliError("LLM_TEMPERATURE must be a number") from None
    try:
        model = resolve_model(
            name,
            api_base=api_base or args.api_base or env.get("LLM_BASE_URL"),
            api_key=api_key or args.api_key or env.get("LLM_API_KEY"),
            client=args.model_client,
            **({} if name == "demo" else params),
        )
    except ConfigurationError as exc:
        raise CliError(str(exc)) from None
    if isinstance(model, LiteLLMModel):
        model.preload()  # import litellm now (seconds), not on the first request
    return model


def _describe(model: ChatModel) -> str:
    return (
        "demo (offline DemoModel, no API key needed)"
        if isinstance(model, DemoModel)
        else (model.name)
    )


def _load_tools(spec: str) -> list[Tool]:
    """Every :class:`Tool` defined in the named modules (or ``.py`` files)."""
    tools: list[Tool] = []
    for name in (part.strip() for part in spec.split(",")):
        if not name:
            continue
        module = _import(name)
        found = [value for value in vars(module).values() if isinstance(value, Tool)]
        if not found:
            raise CliError(f"module {name!r} defines no @tool functions")
        tools.extend(found)
    return tools


def _import(name: str) -> ModuleType:
    try:
        if name.endswith(".py"):
            path = Path(name)
            spec = importlib.util.spec_from_file_location(path.stem, path)
            if spec is None or spec.loader is None:
                raise ImportError(f"cannot load {name}")
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return module
        return importlib.import_module(name)
    except Exception as exc:
        raise CliError(f"cannot import tools from {name!r}: {exc}") from exc


def _api_keys(path: str | None, inline: str | None) -> dict[str, str]:
    """``user_id=key`` lines → {key: user_id}; blank lines and ``#`` comments are ignored."""
    if path:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise CliError(f"cannot read the API keys file: {exc}") from exc
    else:
        text = inline or ""
    keys: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        user, sep, key = line.partition("=")
        if not sep or not user.strip() or not key.strip():
            raise CliError(f"API keys line {number}: expected user_id=key")
        keys[key.strip()] = user.strip()
    return keys


def _configure_logging(log_format: str, level: str) -> None:
    handler = logging.StreamHandler()
    if log_format == "json":
        handler.setFormatter(JsonLogFormatter())
    else:
        handler.setFormatter(
            logging.Formatter("%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s")
        )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    known = isinstance(logging.getLevelName(level.upper()), int)
    root.setLevel(level.upper() if known else "INFO")
