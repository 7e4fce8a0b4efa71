"""What the agents of ``serve`` are made of: their models, and the parts every agent of the
process shares (guards, stores, the approval secret, history compression)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from agent_executor import (
    ChatModel,
    ConfigurationError,
    ConversationStore,
    Guard,
    HistoryCompressor,
    InjectionGuard,
    InputValidationGuard,
    LiteLLMModel,
    StoreUnavailable,
    ToolResults,
)
from agent_executor.errors import MissingExtraError
from agent_executor.guards import OutputGuard, RateLimitGuard, RateLimitStorage
from agent_executor.hooks import Hook
from agent_executor.memory import InMemoryConversationStore
from agent_executor.models import resolve_model
from agent_executor.spend import BudgetStore, UserBudget

from .config import ServeConfig
from .credentials import check_credentials
from .errors import CliError

__all__ = ["SharedParts", "chat_model", "shared_parts"]


@dataclass(frozen=True)
class SharedParts:
    """What every agent of the process shares: the guards (so a per-user rate limit counts
    across agents), the output guard, where conversations, rate limits, budgets and frontend
    tool answers live (this process, or Redis for all replicas), the approval secret and the
    history compression settings. ``budget`` (``--user-budget``) is one of the guards and the
    one hook every agent records its spend with."""

    guards: list[Guard]
    budget: UserBudget | None
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

    @property
    def hooks(self) -> list[Hook]:
        """The hooks every agent gets: the user budget's, which records what it spends."""
        return [] if self.budget is None else [self.budget]

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


def shared_parts(config: ServeConfig) -> SharedParts:
    """The parts of :class:`SharedParts`; Redis ones for ``--redis-url`` (with its approval
    secret unless one is given: read last, as it waits for Redis)."""
    if config.history_max_tokens is None and (
        config.history_keep_tokens is not None or config.summary_model
    ):
        raise CliError("--history-keep-tokens and --summary-model need --history-max-tokens")
    url = config.redis_url
    secret: str | bytes | None = config.approval_secret
    tool_results, rate_storage, budget_store = ToolResults(), None, None
    if url is not None:
        try:
            from agent_executor import redis as shared_redis
        except MissingExtraError:
            raise CliError("--redis-url needs redis: pip install 'agent-executor[redis]'") from None
        if not url.startswith(("redis://", "rediss://", "unix://")):
            raise CliError(f"--redis-url must be a redis://, rediss:// or unix:// URL, not {url!r}")
        tool_results = ToolResults(relay=shared_redis.RedisToolResultRelay(url))
        rate_storage = shared_redis.RedisRateLimitStorage(url)
        budget_store = shared_redis.RedisBudgetStore(url) if config.user_budget else None
    budget = _budget(config, budget_store)
    shared = SharedParts(
        guards=_guards(config, rate_storage, budget),
        budget=budget,
        output_guard=OutputGuard() if config.output_guard else None,
        redis_url=url,
        session_ttl=config.session_ttl,
        approval_secret=secret,
        tool_results=tool_results,
        history_max_tokens=config.history_max_tokens,
        history_keep_tokens=(
            max(1, (config.history_max_tokens or 0) // 4)
            if config.history_keep_tokens is None
            else config.history_keep_tokens
        ),
        summariser=chat_model(config, config.summary_model) if config.summary_model else None,
    )
    if url is not None and secret is None:
        try:
            secret = shared_redis.shared_secret(url)
        except StoreUnavailable as exc:
            raise CliError(f"{exc} (it holds the approval secret the replicas share)") from None
        shared = dataclasses.replace(shared, approval_secret=secret)
    return shared


def chat_model(
    config: ServeConfig,
    name: str | None = None,
    api_base: str | None = None,
    api_key: str | None = None,
    *,
    temperature: bool = True,
) -> ChatModel:
    """The model of the configuration; ``name``, ``api_base``, ``api_key`` override it (an
    agent or the router of ``--agents``). ``temperature``: apply LLM_TEMPERATURE."""
    name = name or config.model
    api_base, api_key = api_base or config.api_base, api_key or config.api_key
    params: dict[str, Any] = {}
    if temperature and config.temperature is not None:
        params["temperature"] = config.temperature
    try:
        model = resolve_model(
            name,
            api_base=api_base,
            api_key=api_key,
            client=config.model_client,
            **({} if name == "demo" else params),
        )
    except ConfigurationError as exc:
        raise CliError(str(exc)) from None
    if isinstance(model, LiteLLMModel):
        model.preload()  # import litellm now (seconds), not on the first request
    check_credentials(model, api_base, api_key)
    return model


def _budget(config: ServeConfig, store: BudgetStore | None) -> UserBudget | None:
    """The ``--user-budget`` (in ``store``: Redis with ``--redis-url``, else this process)."""
    if config.user_budget is None:
        return None
    try:
        return UserBudget(config.user_budget, store=store)
    except ConfigurationError as exc:
        raise CliError(f"--user-budget: {exc}") from None


def _guards(
    config: ServeConfig, rate_storage: RateLimitStorage | None, budget: UserBudget | None
) -> list[Guard]:
    """Rate limit and user budget (if asked), input validation, injection detection:
    cheapest refusals first."""
    guards: list[Guard] = []
    if config.rate_limit_burst is not None and not config.rate_limit:
        raise CliError("--rate-limit-burst needs --rate-limit")
    if config.rate_limit:
        try:
            guards.append(
                RateLimitGuard(
                    config.rate_limit, burst=config.rate_limit_burst, storage=rate_storage
                )
            )
        except ConfigurationError as exc:
            raise CliError(str(exc)) from None
    if budget is not None:
        guards.append(budget)
    guards.append(InputValidationGuard())
    if config.injection_guard:
        guards.append(InjectionGuard())
    return guards
