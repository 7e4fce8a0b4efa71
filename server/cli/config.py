"""``ServeConfig``: what ``agent-executor serve`` runs, every value resolved once.

Each value comes from its flag, else its environment variable, else its default (see
docs/operations.md), so nothing after :meth:`ServeConfig.from_args` reads flags or the
environment.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import ValidationError

from agent_executor import (
    Concurrency,
    ConfigurationError,
    InputValidationGuard,
    RunLimits,
    ToolLimits,
)
from agent_executor.models import ModelClient, ToolMode
from agent_executor.spend import PriceTable

from ..settings import Settings
from .agents_file import AgentsFile, load_agents_file
from .errors import CliError
from .flows_file import FlowsFile, load_flows_file

__all__ = [
    "GC_THRESHOLD",
    "MAX_BODY_BYTES",
    "MAX_MESSAGE_CHARS",
    "Environ",
    "ServeConfig",
    "read_api_keys",
    "split_list",
]

Environ = Mapping[str, str]
"""Environment variables."""
LogFormat = Literal["text", "json"]

GC_THRESHOLD = 50_000
"""Allocations between young-generation collections in the service (Python's default: 700)."""

MAX_BODY_BYTES: int = Settings.model_fields["max_body_bytes"].default
"""The largest request body the service reads (``--max-body-bytes``; 1 MiB)."""

MAX_MESSAGE_CHARS: int = InputValidationGuard().max_chars
"""Characters a run's input may hold in all (``--max-message-chars``; the guard's default)."""


@dataclass(frozen=True)
class ServeConfig:
    """The service's configuration: flags, environment variables and defaults resolved.

    The comments name each value's flag and environment variable (a flag wins); values without
    a variable come from their flag or the default.
    """

    # The HTTP service (what :meth:`settings` passes on).
    host: str = "127.0.0.1"  # --host, HOST
    port: int = 8080  # --port, PORT
    heartbeat_seconds: float = 15.0  # --heartbeat
    shutdown_grace_seconds: float = 10.0  # --shutdown-grace
    reattach_grace_seconds: float = 5.0  # --reattach-grace
    replay_window_seconds: float = 300.0  # --replay-window
    api_keys: Mapping[str, str] = field(default_factory=dict)  # --api-keys-file, AGENT_API_KEYS
    cors_origins: tuple[str, ...] = ()  # --cors-origins
    trusted_proxies: tuple[str, ...] = ()  # --trusted-proxies
    max_body_bytes: int = MAX_BODY_BYTES  # --max-body-bytes
    # The model.
    model: str = "demo"  # --model, LLM_MODEL
    model_source: str = "--model"  # where ``model`` came from: --model or LLM_MODEL
    api_base: str | None = None  # --api-base, LLM_BASE_URL
    api_key: str | None = None  # --api-key, --api-key-file, LLM_API_KEY
    model_client: ModelClient = "auto"  # --model-client
    temperature: float | None = None  # LLM_TEMPERATURE
    # The agents and their tools.
    tool_modules: tuple[str, ...] | None = None  # --tools, AGENT_TOOLS (None: not configured)
    mcp_config: str | None = None  # --mcp
    agents: AgentsFile | None = None  # --agents (the file, read)
    flows: FlowsFile | None = None  # --flows (the file, read)
    system_prompt: str | None = None  # --system-prompt
    concurrency: Concurrency = field(default_factory=Concurrency)  # --max-concurrency
    tool_limits: ToolLimits = field(default_factory=ToolLimits)  # --max-tool-calls
    reasoning_events: bool = True  # --no-reasoning-events
    tool_mode: ToolMode = "native"  # --tool-mode
    retrieval: str | None = None  # --retrieval (a folder)
    # The guards.
    rate_limit: str | None = None  # --rate-limit
    rate_limit_burst: int | None = None  # --rate-limit-burst
    injection_guard: bool = True  # --no-injection-guard
    output_guard: bool = False  # --output-guard
    max_message_chars: int = MAX_MESSAGE_CHARS  # --max-message-chars
    # Spend.
    user_budget: str | None = None  # --user-budget
    prices: PriceTable | None = None  # --prices (the file, read)
    # --request-timeout, --max-turns, --max-input-tokens, --max-output-tokens, --max-cost-usd
    run_limits: RunLimits = field(default_factory=RunLimits)
    operator_users: tuple[str, ...] = ()  # --operator-users
    # Where state lives, and conversation history.
    redis_url: str | None = None  # --redis-url, REDIS_URL
    long_term_memory: str | None = None  # --long-term-memory (auto, or a postgresql:// DSN)
    approval_secret: str | None = None  # --approval-secret, AGENT_APPROVAL_SECRET
    session_ttl: float = 3600.0  # --session-ttl
    history_max_tokens: int | None = None  # --history-max-tokens
    history_keep_tokens: int | None = None  # --history-keep-tokens
    summary_model: str | None = None  # --summary-model
    # The process.
    log_format: LogFormat = "text"  # --log-format
    log_level: str = "INFO"  # LOG_LEVEL
    gc_threshold: int = GC_THRESHOLD  # --gc-threshold

    @classmethod
    def from_args(cls, args: argparse.Namespace, env: Environ) -> ServeConfig:
        """The configuration of ``serve``'s parsed flags and the environment ``env``
        (:class:`CliError` for a value that cannot be read)."""
        _check_limits(args)
        tools = args.tools or env.get("AGENT_TOOLS")
        return cls(
            host=args.host or env.get("HOST") or cls.host,
            port=args.port if args.port is not None else _int(env, "PORT", cls.port),
            heartbeat_seconds=args.heartbeat,
            shutdown_grace_seconds=args.shutdown_grace,
            reattach_grace_seconds=args.reattach_grace,
            replay_window_seconds=args.replay_window,
            api_keys=read_api_keys(args.api_keys_file, env.get("AGENT_API_KEYS") or None),
            cors_origins=split_list(args.cors_origins),
            trusted_proxies=split_list(args.trusted_proxies),
            max_body_bytes=args.max_body_bytes,
            model=args.model or env.get("LLM_MODEL") or cls.model,
            model_source="LLM_MODEL" if not args.model and env.get("LLM_MODEL") else "--model",
            api_base=args.api_base or env.get("LLM_BASE_URL"),
            api_key=args.api_key or _read_secret(args.api_key_file) or env.get("LLM_API_KEY"),
            model_client=args.model_client,
            temperature=_temperature(env),
            tool_modules=split_list(tools) if tools else None,
            mcp_config=args.mcp,
            agents=load_agents_file(args.agents, env, mcp=bool(args.mcp)) if args.agents else None,
            flows=load_flows_file(args.flows) if args.flows else None,
            system_prompt=args.system_prompt,
            concurrency=Concurrency(max_concurrency=args.max_concurrency),
            tool_limits=ToolLimits(max_calls=args.max_tool_calls),
            reasoning_events=not args.no_reasoning_events,
            long_term_memory=args.long_term_memory,
            tool_mode=args.tool_mode,
            retrieval=args.retrieval,
            rate_limit=args.rate_limit,
            rate_limit_burst=args.rate_limit_burst,
            injection_guard=not args.no_injection_guard,
            output_guard=args.output_guard,
            max_message_chars=args.max_message_chars,
            user_budget=args.user_budget,
            prices=_prices(args.prices),
            run_limits=RunLimits(
                request_timeout=args.request_timeout,
                max_turns=args.max_turns,
                max_input_tokens=args.max_input_tokens,
                max_output_tokens=args.max_output_tokens,
                max_cost_usd=args.max_cost_usd,
            ),
            operator_users=split_list(args.operator_users),
            redis_url=args.redis_url or env.get("REDIS_URL") or None,
            approval_secret=args.approval_secret or env.get("AGENT_APPROVAL_SECRET") or None,
            session_ttl=args.session_ttl,
            history_max_tokens=args.history_max_tokens,
            history_keep_tokens=args.history_keep_tokens,
            summary_model=args.summary_model,
            log_format=args.log_format,
            log_level=env.get("LOG_LEVEL", cls.log_level),
            gc_threshold=args.gc_threshold,
        )

    def settings(self) -> Settings:
        """The service's :class:`Settings` (:class:`CliError` for an invalid value)."""
        try:
            return Settings(
                host=self.host,
                port=self.port,
                heartbeat_seconds=self.heartbeat_seconds,
                api_keys=dict(self.api_keys),
                cors_origins=self.cors_origins,
                trusted_proxies=self.trusted_proxies,
                shutdown_grace_seconds=self.shutdown_grace_seconds,
                reattach_grace_seconds=self.reattach_grace_seconds,
                replay_window_seconds=self.replay_window_seconds,
                max_body_bytes=self.max_body_bytes,
                operator_users=self.operator_users,
            )
        except ValidationError as exc:
            raise CliError(_flag_problems(exc)) from None


def split_list(value: str | None) -> tuple[str, ...]:
    """The items of a comma-separated list, stripped, empty ones left out."""
    return tuple(item.strip() for item in (value or "").split(",") if item.strip())


def read_api_keys(path: str | None, inline: str | None) -> dict[str, str]:
    """``user_id=key`` lines → {key: user_id}; blank lines and ``#`` comments are ignored.

    A source that is given must hold keys, each key once: an empty file would otherwise start
    the service with authentication silently off, and a key shared by two users would make one
    of them the other.
    """
    if path:
        source = f"--api-keys-file {path}"
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise CliError(f"{source}: cannot read it: {exc.strerror or exc}") from None
    elif inline is not None:
        source, text = "AGENT_API_KEYS", inline
    else:
        return {}
    keys: dict[str, str] = {}
    lines: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        user, sep, key = line.partition("=")
        if not sep or not user.strip() or not key.strip():
            raise CliError(f"{source}: line {number}: expected user_id=key")
        key = key.strip()
        if key in keys:
            raise CliError(
                f"{source}: line {number} repeats the key of line {lines[key]} (users "
                f"{keys[key]!r} and {user.strip()!r}); give every user a key of its own"
            )
        keys[key], lines[key] = user.strip(), number
    if not keys:
        raise CliError(
            f"{source} holds no keys (expected user_id=key lines); leave it out to run "
            "without authentication"
        )
    return keys


_POSITIVE = (
    ("--request-timeout", "request_timeout"),
    ("--heartbeat", "heartbeat"),
    ("--max-concurrency", "max_concurrency"),
    ("--max-turns", "max_turns"),
    ("--session-ttl", "session_ttl"),
    ("--rate-limit-burst", "rate_limit_burst"),
    ("--history-max-tokens", "history_max_tokens"),
    ("--history-keep-tokens", "history_keep_tokens"),
    ("--max-input-tokens", "max_input_tokens"),
    ("--max-output-tokens", "max_output_tokens"),
    ("--max-cost-usd", "max_cost_usd"),
    ("--max-body-bytes", "max_body_bytes"),
    ("--max-message-chars", "max_message_chars"),
)
_NOT_NEGATIVE = (
    ("--shutdown-grace", "shutdown_grace"),
    ("--reattach-grace", "reattach_grace"),
    ("--replay-window", "replay_window"),
    ("--max-tool-calls", "max_tool_calls"),
)


def _check_limits(args: argparse.Namespace) -> None:
    """Refuse timeouts and limits that cannot work (a negative request timeout would answer
    every request 504), naming the flag."""
    for flag, name in _POSITIVE:
        value = getattr(args, name)
        if value is not None and value <= 0:
            raise CliError(f"{flag} must be positive, not {value:g}")
    for flag, name in _NOT_NEGATIVE:
        value = getattr(args, name)
        if value is not None and value < 0:
            raise CliError(f"{flag} must be 0 or more, not {value:g}")
    if args.port is not None and not 0 <= args.port <= 65535:
        raise CliError(f"--port must be between 0 and 65535, not {args.port}")


_FLAGS = {
    "host": "--host",
    "port": "--port",
    "heartbeat_seconds": "--heartbeat",
    "shutdown_grace_seconds": "--shutdown-grace",
    "reattach_grace_seconds": "--reattach-grace",
    "replay_window_seconds": "--replay-window",
    "cors_origins": "--cors-origins",
    "trusted_proxies": "--trusted-proxies",
    "api_keys": "--api-keys-file",
    "max_body_bytes": "--max-body-bytes",
}
"""The flag of each :class:`Settings` field a flag sets."""


def _flag_problems(exc: ValidationError) -> str:
    """What is wrong with the settings, each problem named by its flag, not its field."""
    problems = []
    for error in exc.errors(include_url=False):
        field = str(error["loc"][0]) if error["loc"] else ""
        message = str(error["msg"]).removeprefix("Value error, ")
        flag = _FLAGS.get(field, field)
        problems.append(f"{flag}: {message}" if flag else message)
    return "; ".join(problems)


def _read_secret(path: str | None) -> str | None:
    """The secret held by the file at ``path`` (its first non-blank line), so it needs to
    appear neither in the process list nor in the environment."""
    if path is None:
        return None
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise CliError(f"cannot read --api-key-file {path}: {exc.strerror or exc}") from None
    secret = next((line.strip() for line in text.splitlines() if line.strip()), "")
    if not secret:
        raise CliError(f"--api-key-file {path} is empty")
    return secret


def _prices(path: str | None) -> PriceTable | None:
    """The price table of ``--prices`` (read at start-up, so a bad file stops it): a file, or
    the JSON object itself when the value starts with ``{`` (``--prices '{}'``: no prices of
    your own)."""
    if path is None:
        return None
    try:
        if path.lstrip().startswith("{"):
            return PriceTable.from_json(path, source="the JSON given")
        return PriceTable.from_file(path)
    except ConfigurationError as exc:
        raise CliError(f"--prices: {exc}") from None


def _int(env: Environ, name: str, default: int) -> int:
    try:
        return int(env.get(name) or default)
    except ValueError:
        raise CliError(f"{name} must be a whole number, not {env.get(name)!r}") from None


def _temperature(env: Environ) -> float | None:
    if not env.get("LLM_TEMPERATURE"):
        return None
    try:
        return float(env["LLM_TEMPERATURE"])
    except ValueError:
        raise CliError(
            f"LLM_TEMPERATURE must be a number, not {env['LLM_TEMPERATURE']!r}"
        ) from None
