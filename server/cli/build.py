"""``build_service``: the agents, settings and app a :class:`ServeConfig` describes.

One agent, or those of an ``--agents`` file behind an :class:`AgentRouter`. With no model
configured they run on the offline ``DemoModel``; without tools the single agent gets the demo
tools; with ``--retrieval`` (or an agent's ``retrieval``) an agent gets passages of a folder.
MCP servers' tools need a running event loop: :func:`build_service_with_mcp`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from aiohttp import web

from agent_executor import (
    AgentExecutor,
    AgentRouter,
    ChatModel,
    ConfigurationError,
    DemoModel,
    ModelRouter,
    RunLimits,
    ServedAgent,
    handoff,
)
from agent_executor.models import ToolMode
from agent_executor.orchestration import (
    AgentGroup,
    AutoTurns,
    DirectTurns,
    HybridTurns,
    TurnStrategy,
)
from agent_executor.retrieval import RetrievalHook
from agent_executor.tools import Tool
from agent_executor.tools.demo import DEMO_TOOLS

from ..app import create_app
from ..runs import RunRelay
from ..settings import Settings
from .agents_file import AgentsFile, AgentSpec, GroupSpec, ModeratorSpec
from .config import ServeConfig
from .errors import CliError
from .flows_file import build_flows
from .parts import SharedParts, chat_model, shared_parts
from .tools import agent_tools, load_tools

if TYPE_CHECKING:
    from agent_executor.tools.mcp import MCPConfig

__all__ = ["Service", "build_service", "build_service_with_mcp"]


@dataclass(frozen=True)
class Service:
    """A built service: its settings, its agent (or agents behind a router), the app
    serving them (not yet running) and the parts the agents share (guards, stores)."""

    settings: Settings
    agents: AgentExecutor | AgentRouter
    app: web.Application
    parts: SharedParts


def build_service(config: ServeConfig, mcp_tools: Sequence[Tool] = ()) -> Service:
    """The service of ``config`` (:class:`CliError` for a configuration problem).

    ``mcp_tools`` go to the single agent, or to the agents of the ``--agents`` file that have
    ``"mcp": true``.
    """
    settings = config.settings()
    return _assemble(config, settings, _OwnTools.load(config), mcp_tools)


async def build_service_with_mcp(config: ServeConfig, mcp: MCPConfig) -> Service:
    """:func:`build_service` with the tools of the MCP servers of ``mcp``, built inside the
    service's event loop once they are connected.

    The toolset stays open for the app's lifetime and is closed on cleanup (after the streams
    have drained), which stops every stdio server process.
    """
    from agent_executor.tools.mcp import MCPToolset

    own = _OwnTools.load(config)
    try:
        toolset = await MCPToolset.start(mcp, reserved_names=sorted(own.reserved))
    except ConfigurationError as exc:  # a server that does not start, clashing tool names
        raise CliError(f"--mcp {config.mcp_config}: {exc}") from None
    try:
        service = _assemble(config, config.settings(), own, toolset.tools)
    except BaseException:
        await toolset.aclose()
        raise

    async def close_mcp(_app: web.Application) -> None:
        await toolset.aclose()

    service.app.on_cleanup.append(close_mcp)
    return service


@dataclass(frozen=True)
class _OwnTools:
    """The tools of modules, loaded before anything starts: the single agent's (``None``:
    none configured), or each agent's of the ``--agents`` file; ``reserved``: the names MCP
    tools may not take (those of the agents that get MCP tools)."""

    single: list[Tool] | None
    per_agent: Mapping[str, list[Tool]]
    reserved: frozenset[str]

    @classmethod
    def load(cls, config: ServeConfig) -> _OwnTools:
        if config.agents is None:
            modules = config.tool_modules
            single = load_tools(modules) if modules is not None else None
            return cls(single, {}, frozenset(tool.name for tool in single or ()))
        per_agent = agent_tools(config.agents, config.tool_modules or ())
        with_mcp = [name for name, agent in config.agents.agents.items() if agent.mcp]
        reserved = frozenset(tool.name for name in with_mcp for tool in per_agent[name])
        return cls(None, per_agent, reserved)


def _assemble(
    config: ServeConfig, settings: Settings, own: _OwnTools, mcp_tools: Sequence[Tool]
) -> Service:
    shared = shared_parts(config)
    agents: AgentExecutor | AgentRouter
    if config.agents is not None:
        agents = _agent_router(config, shared, config.agents, own.per_agent, mcp_tools)
    else:
        tools = [*(own.single or ()), *mcp_tools]
        if own.single is None and not config.mcp_config:
            tools = list(DEMO_TOOLS)
        model = chat_model(config, where=config.model_source)
        retrieval = shared.retrieval(config.retrieval, "--retrieval")
        agents = _executor(config, shared, model, tools, retrieval=retrieval)
    if config.flows is not None:
        agents = _with_flows(config, shared, agents, own, mcp_tools)
    app = create_app(
        agents, settings, budget=shared.budget, relay=_run_relay(config), facts=shared.facts
    )
    return Service(settings, agents, app, shared)


def _run_relay(config: ServeConfig) -> RunRelay | None:
    """With ``--redis-url``, the runs' events go to Redis too, for re-attaches on other
    replicas (kept as long as a run may last, then the replay window)."""
    if config.redis_url is None:
        return None
    from ..runs.redis import RedisRunRelay

    longest = (config.run_limits.request_timeout or 3600.0) + config.reattach_grace_seconds
    return RedisRunRelay(
        config.redis_url,
        running_ttl=longest,
        window_seconds=config.replay_window_seconds,
        grace_seconds=config.reattach_grace_seconds,
    )


def _with_flows(
    config: ServeConfig,
    shared: SharedParts,
    agents: AgentExecutor | AgentRouter,
    own: _OwnTools,
    mcp_tools: Sequence[Tool],
) -> AgentRouter:
    """The agents and the flows of ``--flows`` in one router, so both are served by name;
    the flows' tools are those of ``--tools`` (the demo tools without it) and MCP's."""
    assert config.flows is not None
    served = dict(agents.agents) if isinstance(agents, AgentRouter) else {"default": agents}
    if own.single is not None:
        tools = list(own.single)
    else:
        tools = load_tools(config.tool_modules) if config.tool_modules else list(DEMO_TOOLS)
    flows = build_flows(
        config.flows,
        served,
        {tool.name: tool for tool in [*tools, *mcp_tools]},
        lambda model: chat_model(config, model),
        lambda name, description: {
            "name": name,
            "description": description,
            "guards": shared.guards,
            "hooks": shared.hooks,
            "memory": shared.memory(name),
            "concurrency": config.concurrency,
            "run_limits": _conducted_limits(config),
            "tool_results": shared.tool_results,
            "prices": config.prices,
        },
    )
    if isinstance(agents, AgentRouter):
        return AgentRouter(
            {**served, **flows},
            default=agents.default,
            router=agents.router,
            route_timeout=agents.route_timeout,
        )
    return AgentRouter({**served, **flows}, default="default")


def _executor(
    config: ServeConfig,
    shared: SharedParts,
    model: ChatModel,
    tools: Sequence[Tool],
    *,
    name: str | None = None,
    system_prompt: str | None = None,
    description: str = "",
    retrieval: RetrievalHook | None = None,
    tool_mode: ToolMode | None = None,
) -> AgentExecutor:
    """One agent (``name``: one of ``--agents``) with the configured limits, the shared
    parts, its ``retrieval`` and its ``tool_mode`` (default: ``--tool-mode``)."""
    return AgentExecutor(
        model=model,
        tools=[*tools, *shared.memory_tools],
        guards=shared.guards,
        hooks=[*shared.hooks, *([retrieval] if retrieval is not None else [])],
        output_guard=shared.output_guard,
        system_prompt=config.system_prompt if system_prompt is None else system_prompt,
        concurrency=config.concurrency,
        run_limits=config.run_limits,
        tool_limits=config.tool_limits,
        approval_secret=shared.approval_secret,
        memory=shared.memory(name),
        tool_results=shared.tool_results,
        history_compressor=shared.compressor(model),
        name=name or "default",
        description=description,
        reasoning_events=config.reasoning_events,
        prices=config.prices,
        tool_mode=tool_mode or config.tool_mode,
    )


def _agent_router(
    config: ServeConfig,
    shared: SharedParts,
    agents_file: AgentsFile,
    own_tools: Mapping[str, Sequence[Tool]],
    mcp_tools: Sequence[Tool],
) -> AgentRouter:
    """One executor per agent, all sharing the :class:`SharedParts` and the limits; then each
    agent's handoffs and agents-as-tools (once all exist: they may refer to each other), then
    the groups, served by name beside the agents."""
    executors: dict[str, AgentExecutor] = {}
    for name, agent in agents_file.agents.items():
        what = f"{agents_file.origin('agents', name)}: agent {name!r}"
        executors[name] = _file_agent(config, shared, what, name, agent, own_tools[name], mcp_tools)
    for name, agent in agents_file.agents.items():
        wired = [
            *(handoff(executors[other]) for other in agent.handoffs),
            *(executors[other].as_tool() for other in agent.agent_tools),
        ]
        if wired:
            try:
                executors[name].add_tools(*wired)
            except ConfigurationError as exc:
                where = agents_file.origin("agents", name)
                raise CliError(f"{where}: agent {name!r}: {exc}") from None
    served: dict[str, ServedAgent] = dict(executors)
    for name, group in agents_file.groups.items():
        what = f"{agents_file.origin('groups', name)}: group {name!r}"
        served[name] = _group(config, shared, what, name, group, executors)
    router, timeout = None, 10.0
    if agents_file.router is not None:
        spec = agents_file.router
        where = f"{agents_file.origin('router')}: router"
        router = ModelRouter(
            chat_model(
                config, spec.model, spec.api_base, spec.api_key, temperature=False, where=where
            ),
            prices=config.prices,
            hooks=shared.hooks,
        )
        timeout = spec.timeout
    return AgentRouter(served, default=agents_file.default, router=router, route_timeout=timeout)


def _file_agent(
    config: ServeConfig,
    shared: SharedParts,
    what: str,
    name: str,
    agent: AgentSpec,
    own_tools: Sequence[Tool],
    mcp_tools: Sequence[Tool],
) -> AgentExecutor:
    """An agent of the file (``what``: where it is, for errors); the model, key or retrieval
    folder it takes from the flags is reported as theirs."""
    own_model = agent.model or agent.api_base or agent.api_key
    model = chat_model(
        config,
        agent.model,
        agent.api_base,
        agent.api_key,
        where=what if own_model else config.model_source,
    )
    folder = agent.retrieval_folder(config.retrieval)
    retrieval = shared.retrieval(folder, f"{what}: retrieval" if agent.retrieval else "--retrieval")
    try:
        return _executor(
            config,
            shared,
            model,
            [*own_tools, *(mcp_tools if agent.mcp else ())],
            name=name,
            system_prompt=agent.system_prompt,
            description=agent.description,
            retrieval=retrieval,
            tool_mode=agent.tool_mode,
        )
    except ConfigurationError as exc:
        raise CliError(f"{what}: {exc}") from None


def _group(
    config: ServeConfig,
    shared: SharedParts,
    what: str,
    name: str,
    spec: GroupSpec,
    executors: Mapping[str, AgentExecutor],
) -> AgentGroup:
    """A group of the file (``what``: where it is, for errors): its agents' executors, its
    strategy (the moderator on the flags' model unless it names one), the service's guards,
    memory and limits."""
    strategy: TurnStrategy
    if spec.strategy == "direct":
        strategy = DirectTurns(cycle=spec.cycle)
    else:
        moderator = spec.moderator or ModeratorSpec()
        own_model = moderator.model or moderator.api_base or moderator.api_key
        model = chat_model(
            config,
            moderator.model,
            moderator.api_base,
            moderator.api_key,
            temperature=False,
            where=f"{what}: moderator" if own_model else config.model_source,
        )
        if isinstance(model, DemoModel):
            raise CliError(_demo_moderator(what, spec.strategy))
        strategy = (
            AutoTurns(model, prices=config.prices, hooks=shared.hooks)
            if spec.strategy == "auto"
            else HybridTurns(model, next=spec.next, prices=config.prices, hooks=shared.hooks)
        )
    try:
        return AgentGroup(
            [executors[agent] for agent in spec.agents],
            strategy=strategy,
            max_rounds=spec.max_rounds,
            termination=spec.termination,
            name=name,
            description=spec.description,
            guards=shared.guards,
            memory=shared.memory(name),
            tool_results=shared.tool_results,
            concurrency=config.concurrency,
            run_limits=_conducted_limits(config),
        )
    except ConfigurationError as exc:
        raise CliError(f"{what}: {exc}") from None


def _demo_moderator(what: str, strategy: str) -> str:
    """Why a group whose moderator is the demo model is refused: the demo model answers in
    prose, never the JSON plan a moderator owes, so every request would end ``invalid_plan``."""
    return (
        f"{what}: the {strategy} strategy's moderator is the demo model, which cannot write "
        "the JSON plans a moderator must (every request would fail with invalid_plan); give "
        'the group "moderator": {"model": "provider/model"}, serve a real --model, or use '
        '"strategy": "direct"'
    )


def _conducted_limits(config: ServeConfig) -> RunLimits:
    """A group's or flow's limits: the configured time per run (its agents' spending
    limits are their own)."""
    return RunLimits(request_timeout=config.run_limits.request_timeout)
