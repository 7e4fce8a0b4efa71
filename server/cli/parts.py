"""What the agents of ``serve`` are made of: their models, and the parts every agent of the
process shares (guards, stores, the approval secret, history compression, retrieval indexes)."""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import logging
from dataclasses import dataclass, field
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
    Tool,
    ToolResults,
)
from agent_executor.errors import MissingExtraError
from agent_executor.guards import OutputGuard, RateLimitGuard, RateLimitStorage
from agent_executor.hooks import Hook
from agent_executor.memory import (
    InMemoryConversationStore,
    InMemoryMemoryStore,
    MemoryRecallHook,
    MemoryStore,
    memory_tools,
)
from agent_executor.models import resolve_model
from agent_executor.retrieval import BM25Retriever, Passage, RetrievalHook, load_folder
from agent_executor.spend import BudgetStore, UserBudget

from .config import ServeConfig
from .credentials import check_credentials
from .errors import CliError

__all__ = ["RETRIEVAL_GLOBS", "SharedParts", "chat_model", "shared_parts"]

logger = logging.getLogger("server")

RETRIEVAL_GLOBS = ("**/*.md", "**/*.txt")
"""The files of a ``--retrieval`` folder that are indexed."""


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
    facts: MemoryStore | None = None
    """Long-term memory (``--long-term-memory``): every agent's remember/recall tools and the
    recall hook read and write it."""
    indexes: dict[str, BM25Retriever] = field(default_factory=dict)
    """The retrieval indexes built so far, by folder (agents naming one folder share it)."""

    def memory(self, agent: str | None) -> ConversationStore:
        """The conversation store of one agent (``None``: the only one)."""
        if self.redis_url is None:
            return InMemoryConversationStore(ttl_seconds=self.session_ttl)
        from agent_executor.redis import RedisConversationStore

        prefix = "agent-executor:" if agent is None else f"agent-executor:agent:{agent}:"
        return RedisConversationStore(self.redis_url, prefix=prefix, ttl_seconds=self.session_ttl)

    @property
    def hooks(self) -> list[Hook]:
        """The hooks every agent gets: the user budget's, which records what it spends, and
        long-term memory's recall."""
        hooks: list[Hook] = [] if self.budget is None else [self.budget]
        if self.facts is not None:
            hooks.append(MemoryRecallHook(self.facts))
        return hooks

    @property
    def memory_tools(self) -> list[Tool]:
        """The tools every agent gets: long-term memory's ``remember`` and ``recall``."""
        return [] if self.facts is None else memory_tools(self.facts)

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

    def retrieval(self, folder: str | None, where: str) -> RetrievalHook | None:
        """The hook giving an agent passages of ``folder`` (``None``: no retrieval), from a
        BM25 index built at start-up (once per folder); ``where`` names the setting in
        errors (``--retrieval``, or the agents file and agent)."""
        if folder is None:
            return None
        if folder not in self.indexes:
            self.indexes[folder] = _index(folder, where)
        return RetrievalHook(self.indexes[folder])


def _index(folder: str, where: str) -> BM25Retriever:
    """A BM25 index of the Markdown and text files under ``folder``."""
    try:
        passages: list[Passage] = []
        for glob in RETRIEVAL_GLOBS:
            passages += load_folder(folder, glob=glob)
    except FileNotFoundError:
        raise CliError(f"{where}: no such folder: {folder}") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise CliError(f"{where}: cannot index {folder}: {exc}") from None
    if not passages:
        raise CliError(f"{where}: no .md or .txt files under {folder}")
    with contextlib.suppress(ImportError):  # the constructor names the missing extra
        importlib.import_module("bm25s")
        # bm25s sets its logger to DEBUG when imported: its progress would fill the log
        logging.getLogger("bm25s").setLevel(logging.WARNING)
    try:
        index = BM25Retriever(passages)
    except MissingExtraError:
        raise CliError(
            f"{where} needs the retrieval extra: pip install 'agent-executor[retrieval]'"
        ) from None
    files = len({passage.metadata.get("path") for passage in passages})
    logger.info(
        "retrieval: %s indexed (%s of %s)",
        folder,
        _counted(len(passages), "passage"),
        _counted(files, "file"),
    )
    return index


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
        summariser=(
            chat_model(config, config.summary_model, where="--summary-model")
            if config.summary_model
            else None
        ),
    )
    if config.long_term_memory is not None:
        shared = dataclasses.replace(shared, facts=_facts(config.long_term_memory, url))
    if url is not None and secret is None:
        try:
            secret = shared_redis.shared_secret(url)
        except StoreUnavailable as exc:
            raise CliError(
                f"--redis-url: {exc} (it holds the approval secret the replicas share)"
            ) from None
        shared = dataclasses.replace(shared, approval_secret=secret)
    return shared


def _facts(where: str, redis_url: str | None) -> MemoryStore:
    """The long-term memory of ``--long-term-memory``: PostgreSQL for a DSN, else Redis with
    ``--redis-url``, else this process's memory."""
    if where.startswith(("postgresql://", "postgres://")):
        try:
            from agent_executor.memory.postgres import PostgresMemoryStore
        except MissingExtraError:
            raise CliError(
                "--long-term-memory with PostgreSQL needs psycopg: pip install "
                "'agent-executor[postgres]'"
            ) from None
        return PostgresMemoryStore(where)
    if where != "auto":
        raise CliError(f"--long-term-memory takes no value or a postgresql:// DSN, not {where!r}")
    if redis_url is not None:
        from agent_executor.redis import RedisMemoryStore

        return RedisMemoryStore(redis_url)
    return InMemoryMemoryStore()


def _counted(number: int, what: str) -> str:
    return f"{number} {what}" if number == 1 else f"{number} {what}s"


def chat_model(
    config: ServeConfig,
    name: str | None = None,
    api_base: str | None = None,
    api_key: str | None = None,
    *,
    temperature: bool = True,
    where: str | None = None,
) -> ChatModel:
    """The model of the configuration; ``name``, ``api_base``, ``api_key`` override it (an
    agent or the router of ``--agents``). ``temperature``: apply LLM_TEMPERATURE. ``where``
    starts the error of a model that cannot be used (the flag, or the file and entry)."""
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
        if isinstance(model, LiteLLMModel):
            model.preload()  # import litellm now (seconds), not on the first request
        check_credentials(model, api_base, api_key)
    except (CliError, ConfigurationError) as exc:
        raise CliError(f"{where}: {exc}" if where else str(exc)) from None
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
            raise CliError(f"--rate-limit: {exc}") from None
    if budget is not None:
        guards.append(budget)
    guards.append(InputValidationGuard(max_chars=config.max_message_chars))
    if config.injection_guard:
        guards.append(InjectionGuard())
    return guards
