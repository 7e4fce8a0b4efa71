"""What the start-up log says once the service is bound: where it listens (the real address,
so ``--port 0`` shows its port), what it serves, and what protects it.

An operator's first question after start-up is whether the service is open to anyone; the
lines here answer it (auth, rate limit, guards, where state lives) without reading the flags.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from yarl import URL

from agent_executor import (
    AgentExecutor,
    AgentRouter,
    ChatModel,
    DemoModel,
    Flow,
    ModelRouter,
    ServedAgent,
)
from agent_executor.orchestration import AgentGroup, AutoTurns, DirectTurns, HybridTurns

from .build import Service
from .config import ServeConfig

__all__ = ["announce", "listening_urls"]

logger = logging.getLogger("server")


def announce(service: Service, config: ServeConfig, addresses: Sequence[Any]) -> None:
    """Log where ``service`` listens (``addresses``: the bound sockets' names), its agents,
    groups and flows, and its protections."""
    where = ", ".join(listening_urls(addresses))
    agents = service.agents
    if isinstance(agents, AgentRouter):
        router = agents.router
        logger.info(
            "agent-executor listening on %s with %s (default: %s; router: %s)",
            where,
            _counted(agents.agents),
            agents.default,
            f"model {router.model.name}, timeout {agents.route_timeout:g} s"
            if isinstance(router, ModelRouter)
            else "none, requests without 'agent' go to the default",
        )
        for name, executor in agents.agents.items():
            logger.info("%s", _describe_served(name, executor, config))
    else:
        logger.info(
            "agent-executor listening on %s (model: %s; tools: %s%s)",
            where,
            _describe(agents.model),
            ", ".join(agents.tools) or "none",
            _retrieval(config.retrieval),
        )
    for line in _protections(service, config):
        logger.info("%s", line)


def listening_urls(addresses: Sequence[Any]) -> list[str]:
    """``http://host:port`` of each bound socket name (IPv6 hosts in brackets)."""
    urls = []
    for address in addresses:
        if isinstance(address, tuple) and len(address) >= 2:
            host, port = address[0], address[1]
            urls.append(f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}")
        else:
            urls.append(str(address))
    return urls


def _protections(service: Service, config: ServeConfig) -> list[str]:
    keys = len(service.settings.api_keys)
    users = len(set(service.settings.api_keys.values()))
    auth = (
        f"auth: on ({keys} API keys of {users} users; /api and /v1 need a Bearer key)"
        if keys
        else "auth: OFF (anyone who reaches this address can run the agents; "
        "give --api-keys-file to require keys)"
    )
    if config.rate_limit:
        burst = f", burst {config.rate_limit_burst}" if config.rate_limit_burst else ""
        limit = f"rate limit: {config.rate_limit} per user or client address{burst}"
    else:
        limit = "rate limit: off (give --rate-limit N/PERIOD)"
    parts = service.parts
    guards = [type(guard).__name__ for guard in parts.guards]
    if parts.output_guard is not None:
        guards.append(type(parts.output_guard).__name__)
    state = (
        f"state: Redis at {_redacted(parts.redis_url)} (shared by replicas)"
        if parts.redis_url
        else "state: this process's memory (not shared; lost on restart)"
    )
    return [auth, limit, _spend(service, config), f"guards: {', '.join(guards) or 'none'}", state]


def _spend(service: Service, config: ServeConfig) -> str:
    """The user budget, the per-run limits and, with ``--prices``, where prices come from, in
    one line."""
    budget = service.parts.budget
    if budget is None:
        line = "user budget: off (give --user-budget AMOUNT/PERIOD)"
    else:
        where = "in Redis, shared by replicas" if service.parts.redis_url else "in this process"
        line = f"user budget: {budget.limit} per user ({where}; periods in UTC)"
    run = [
        f"{value:g} {what}"
        for value, what in (
            (config.run_limits.max_input_tokens, "input tokens"),
            (config.run_limits.max_output_tokens, "output tokens"),
        )
        if value is not None
    ]
    if config.run_limits.max_cost_usd is not None:
        run.append(f"${config.run_limits.max_cost_usd:g}")
    return f"{line}; per run: {', '.join(run) if run else 'no limit'}{_prices(config)}"


def _prices(config: ServeConfig) -> str:
    """Where prices come from, when ``--prices`` is given (an empty table is easy to give by
    mistake and silently leaves every price to litellm)."""
    prices = config.prices
    if prices is None:
        return ""
    count = len(prices.models)
    if not count:
        return "; prices: none of your own (--prices is empty), litellm's cost map only"
    models = f"{count} model{'' if count == 1 else 's'}"
    return f"; prices: {models} from --prices, then litellm's cost map"


def _redacted(url: str) -> str:
    """``url`` without its password."""
    parsed = URL(url)
    return str(parsed.with_password("***")) if parsed.password else url


_KINDS = (("agent", "agents"), ("group", "groups"), ("flow", "flows"))


def _counted(served: Mapping[str, ServedAgent]) -> str:
    """``6 agents, 1 group and 1 flow``: what is served, counted by kind."""
    counts = dict.fromkeys(("agent", "group", "flow"), 0)
    for executor in served.values():
        counts[_kind(executor)] += 1
    parts = [
        f"{counts[one]} {one if counts[one] == 1 else many}"
        for one, many in _KINDS
        if counts[one] or one == "agent"
    ]
    return " and ".join(parts) if len(parts) < 3 else f"{parts[0]}, {parts[1]} and {parts[2]}"


def _kind(executor: ServedAgent) -> str:
    if isinstance(executor, AgentGroup):
        return "group"
    return "flow" if isinstance(executor, Flow) else "agent"


def _describe_served(name: str, executor: ServedAgent, config: ServeConfig) -> str:
    """The start-up line of one agent, group or flow of the router."""
    if isinstance(executor, AgentGroup):
        return f"group {name} ({_describe_group(executor)})"
    if isinstance(executor, Flow):
        return f"flow {name} (start: {executor.start}; nodes: {', '.join(executor.nodes)})"
    if not isinstance(executor, AgentExecutor):
        return f"agent {name}"
    folder = config.retrieval
    if config.agents is not None and name in config.agents.agents:
        folder = config.agents.agents[name].retrieval_folder(config.retrieval)
    return (
        f"agent {name} (model: {_describe(executor.model)}; tools: "
        f"{', '.join(executor.tools) or 'none'}{_retrieval(folder)})"
    )


def _retrieval(folder: str | None) -> str:
    return f"; retrieval: {folder}" if folder else ""


def _describe_group(group: AgentGroup) -> str:
    strategy = group.strategy
    auto = strategy.auto if isinstance(strategy, HybridTurns) else strategy
    how = {DirectTurns: "direct", AutoTurns: "auto", HybridTurns: "hybrid"}.get(
        type(strategy), type(strategy).__name__
    )
    if isinstance(strategy, DirectTurns) and strategy.cycle:
        how += ", cycling"
    if isinstance(auto, AutoTurns):
        moderator = auto.moderator
        if isinstance(moderator, AgentExecutor):
            how += f", moderator: {_describe(moderator.model)}"
        else:
            how += f", moderator: agent {moderator.name}"
    return f"strategy: {how}; agents: {', '.join(group.agents)}; max rounds: {group.max_rounds}"


def _describe(model: ChatModel) -> str:
    if isinstance(model, DemoModel):
        return "demo (offline DemoModel, no API key needed)"
    return model.name
