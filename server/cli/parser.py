"""The command line (see docs/operations.md): ``agent-executor serve [flags]``, and
``agent-executor mcp [flags]``, the same agents as MCP tools over stdio (docs/mcp-server.md).

One function per group of flags; the defaults are :class:`ServeConfig`'s, and the environment
variables are read by :meth:`ServeConfig.from_args`, not here. ``mcp`` takes every flag of
``serve`` but those of the HTTP service, which it refuses as unknown (no address to bind, no
API keys to check: the client starts the process and talks to it alone).

A flag that cannot be read is one line on stderr, ``agent-executor: --port: expected a whole
number, not 'abc'``, and exit status 2, as every start-up refusal is (not argparse's usage).
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from typing import NoReturn

from agent_executor import __version__

from .config import GC_THRESHOLD, MAX_BODY_BYTES, ServeConfig

__all__ = ["build_parser"]

_DEFAULT = ServeConfig()
_Add = Callable[..., argparse.Action]
"""A group's ``add_argument``."""


_HTTP_ONLY = {
    "host": None,
    "port": None,
    "heartbeat": _DEFAULT.heartbeat_seconds,
    "shutdown_grace": _DEFAULT.shutdown_grace_seconds,
    "reattach_grace": _DEFAULT.reattach_grace_seconds,
    "replay_window": _DEFAULT.replay_window_seconds,
    "api_keys_file": None,
    "cors_origins": None,
    "trusted_proxies": None,
    "max_body_bytes": MAX_BODY_BYTES,
}
"""What ``mcp`` leaves the HTTP service's flags at (it does not take them)."""


class _Parser(argparse.ArgumentParser):
    """argparse, but a flag it cannot read is one line naming the flag (exit status 2)."""

    def error(self, message: str) -> NoReturn:
        # The command's flags are read by the command's parser, but flags it does not take
        # are reported by the top one, which no longer knows the command.
        see = f"{self.prog} --help"
        if message.startswith("unrecognized arguments"):
            see = f"{self.prog} serve --help or {self.prog} mcp --help"
        self.exit(2, f"agent-executor: {_one_line(message)} (see {see})\n")


_TYPE_NAMES = {"int": "a whole number", "float": "a number"}


def _one_line(message: str) -> str:
    """argparse's message in the words of the other start-up refusals: the flag first."""
    message = " ".join(message.split()).removeprefix("argument ")
    if message.startswith("command: invalid choice: "):
        return "unknown command " + message.removeprefix("command: invalid choice: ")
    if message == "the following arguments are required: command":
        return "give a command: serve or mcp"
    invalid = re.fullmatch(r"(\S+): invalid (\w+) value: (.*)", message)
    if invalid and invalid.group(2) in _TYPE_NAMES:
        flag, kind, value = invalid.groups()
        return f"{flag}: expected {_TYPE_NAMES[kind]}, not {value}"
    return message.replace(": expected one argument", ": expected a value")


def build_parser() -> argparse.ArgumentParser:
    """The ``agent-executor`` parser and its ``serve`` and ``mcp`` commands."""
    parser = _Parser(prog="agent-executor", description="Run LLM agents as a streaming service.")
    parser.add_argument("--version", action="version", version=f"agent-executor {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="start the HTTP service")
    _service_flags(serve.add_argument_group("HTTP service").add_argument)
    _agent_service_flags(serve)
    mcp = commands.add_parser(
        "mcp",
        help="serve the agents as MCP tools over stdio (for desktop MCP clients)",
        description="Serve the agents (and groups and flows) as MCP tools over stdin and "
        "stdout, for MCP clients that start their servers as processes. The flags are those of "
        "'serve' without the HTTP service's; logs go to stderr.",
    )
    _agent_service_flags(mcp)
    mcp.set_defaults(**_HTTP_ONLY)
    return parser


def _agent_service_flags(command: argparse.ArgumentParser) -> None:
    """The flags ``serve`` and ``mcp`` share: what the agents are and what guards them."""
    _model_flags(command.add_argument_group("model").add_argument)
    _agent_flags(command.add_argument_group("agents and tools").add_argument)
    _guard_flags(command.add_argument_group("guards").add_argument)
    _spend_flags(command.add_argument_group("spend").add_argument)
    _state_flags(command.add_argument_group("shared state and conversation history").add_argument)
    _process_flags(command.add_argument_group("process").add_argument)


def _service_flags(add: _Add) -> None:
    add("--host", help=f"address to listen on (env HOST; default {_DEFAULT.host})")
    add("--port", type=int, help=f"port to listen on (env PORT; default {_DEFAULT.port})")
    add(
        "--max-body-bytes",
        type=int,
        metavar="BYTES",
        default=_DEFAULT.max_body_bytes,
        help="largest request body read; a larger one is answered 413 (default %(default)d)",
    )
    add(
        "--api-keys-file",
        metavar="FILE",
        help="clients' keys, one user_id=key line each; /api and /v1 then need "
        "'Authorization: Bearer KEY' (env AGENT_API_KEYS: same content; default: no auth)",
    )
    add("--cors-origins", help="comma-separated origins allowed by CORS ('*' for any)")
    add(
        "--trusted-proxies",
        help="comma-separated addresses or networks of reverse proxies whose X-Forwarded-For "
        "gives the client address (default: none; the peer address is used)",
    )
    add(
        "--heartbeat",
        type=float,
        default=_DEFAULT.heartbeat_seconds,
        help="seconds between SSE heartbeats",
    )
    add(
        "--shutdown-grace",
        type=float,
        default=_DEFAULT.shutdown_grace_seconds,
        help="seconds running streams may finish after SIGTERM (default %(default)g)",
    )
    add(
        "--reattach-grace",
        type=float,
        default=_DEFAULT.reattach_grace_seconds,
        help="seconds a run whose client went away before done waits for it to come back "
        "(Last-Event-ID) before it is cancelled (default %(default)g)",
    )
    add(
        "--replay-window",
        type=float,
        default=_DEFAULT.replay_window_seconds,
        help="seconds a finished run's events are kept for clients that re-attach "
        "(default %(default)g)",
    )


def _model_flags(add: _Add) -> None:
    add(
        "--model",
        help="'demo' (offline, the default), openai/MODEL (the fast OpenAI-compatible client), "
        "or another provider's model through litellm, e.g. anthropic/claude-sonnet-4-5 "
        "(env LLM_MODEL); start-up refuses an unknown provider or a missing key",
    )
    add("--api-base", help="base URL of an OpenAI-compatible server (env LLM_BASE_URL)")
    add(
        "--api-key",
        help="API key of the model provider; prefer env LLM_API_KEY or --api-key-file, as a "
        "flag shows in the process list (default: the provider's own variable, e.g. "
        "OPENAI_API_KEY)",
    )
    add("--api-key-file", metavar="FILE", help="file holding the model provider's API key")
    add(
        "--model-client",
        choices=("auto", "fast", "litellm"),
        default=_DEFAULT.model_client,
        help="how to reach the model: auto (the fast OpenAI-compatible client for openai/... "
        "models and any --api-base, litellm for other providers), or force one",
    )


def _agent_flags(add: _Add) -> None:
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
        "--agents",
        metavar="AGENTS.json",
        help="several named agents (own system prompt, tools, model, retrieval folder), their "
        "handoffs, agents as tools and groups, and an optional router picking one per request; "
        "the other flags are their defaults; JSON, or YAML for .yaml/.yml "
        "(see docs/orchestration.md)",
    )
    add(
        "--flows",
        metavar="FLOWS.json",
        help="flows (agents, model calls, tools and filters joined by edges) served by name "
        "next to the agents; JSON, or YAML for .yaml/.yml (see docs/orchestration.md)",
    )
    add(
        "--retrieval",
        metavar="DIR",
        help="give the agents passages of the Markdown and text files under DIR, found with a "
        "BM25 index built at start-up (needs the [retrieval] extra; see docs/retrieval.md)",
    )
    add("--system-prompt", help="default system prompt")
    limits = (
        ("--max-concurrency", int, _DEFAULT.concurrency.max_concurrency, "runs at once"),
        ("--request-timeout", float, _DEFAULT.run_limits.request_timeout, "seconds per run"),
        ("--max-turns", int, _DEFAULT.run_limits.max_turns, "model turns per run"),
        ("--max-tool-calls", int, _DEFAULT.tool_limits.max_calls, "tool calls per run"),
    )
    for flag, kind, default, what in limits:
        add(flag, type=kind, default=default, help=f"{what} (default %(default)g)")
    add(
        "--tool-mode",
        choices=("native", "prompt", "auto"),
        default="native",
        help="how the model is offered tools: native function calling (default), prompt "
        "(described in the system prompt, answered in ReAct JSON: for models without function "
        "calling), or auto (native where litellm's model data says the model has it)",
    )
    add(
        "--no-reasoning-events",
        action="store_true",
        help="keep the model's reasoning from clients (no 'reasoning' events, no "
        "'reasoning' in results); it still goes back to the model as its provider requires",
    )


def _guard_flags(add: _Add) -> None:
    add(
        "--rate-limit",
        help="requests per user (or client address), e.g. 20/minute: N back "
        "to back, refilled at N per PERIOD",
    )
    add("--rate-limit-burst", type=int, help="requests allowed back to back (default: N)")
    add(
        "--max-message-chars",
        type=int,
        metavar="CHARS",
        default=_DEFAULT.max_message_chars,
        help="characters a request's input may hold in all (prompt, system prompt and "
        "messages); more is refused with invalid_input (default %(default)d)",
    )
    add("--no-injection-guard", action="store_true", help="do not check prompts for injection")
    add(
        "--output-guard",
        action="store_true",
        help="redact credentials (API keys, tokens, private keys) from streamed answers",
    )


def _spend_flags(add: _Add) -> None:
    add(
        "--user-budget",
        metavar="AMOUNT/PERIOD",
        help="what each user may spend per calendar period in UTC: dollars (5.00/day) or "
        "tokens (200000tokens/day); periods hour, day, week, month (shared through "
        "--redis-url; see docs/spend.md)",
    )
    add(
        "--prices",
        metavar="PRICES.json",
        help='dollars per million tokens by model, {"model": {"input": 0.15, "output": 0.6}}, '
        "before litellm's cost map",
    )
    add("--max-input-tokens", type=int, help="input tokens one run may use (default: no limit)")
    add("--max-output-tokens", type=int, help="output tokens one run may use (default: no limit)")
    add("--max-cost-usd", type=float, help="dollars one run may spend (default: no limit)")
    add(
        "--operator-users",
        help="comma-separated user ids whose API keys may read every user's spend "
        "(GET /api/usage?user=ID or ?all=1)",
    )


def _state_flags(add: _Add) -> None:
    add(
        "--long-term-memory",
        nargs="?",
        const="auto",
        metavar="WHERE",
        help="give the agents remember/recall tools and recall the user's facts before the "
        "first model call; the facts live in Redis with --redis-url, else in this process, or "
        "in PostgreSQL given a postgresql:// DSN (needs the [postgres] extra)",
    )
    add(
        "--redis-url",
        help="Redis shared by replicas: conversations, rate limits, frontend tool results and "
        "the approval secret (env REDIS_URL; default: this process's memory)",
    )
    add(
        "--approval-secret",
        help="secret signing approval tokens, so they outlive a restart; prefer env "
        "AGENT_APPROVAL_SECRET, as a flag shows in the process list (default: random per "
        "process, or shared through --redis-url)",
    )
    add(
        "--session-ttl",
        type=float,
        default=_DEFAULT.session_ttl,
        help="seconds a conversation is kept after its last use (default %(default)g)",
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
    add("--summary-model", help="model that writes the summaries (default: the agent's own model)")


def _process_flags(add: _Add) -> None:
    add("--version", action="version", version=f"agent-executor {__version__}")
    add(
        "--gc-threshold",
        type=_non_negative,
        default=_DEFAULT.gc_threshold,
        help="young-generation threshold of Python's garbage collector; what start-up built "
        f"is frozen out of collections (default {GC_THRESHOLD:,}; 0 keeps Python's defaults)",
    )
    add(
        "--log-format",
        choices=("text", "json"),
        default=_DEFAULT.log_format,
        help="log line format",
    )


def _non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {value}")
    return value
