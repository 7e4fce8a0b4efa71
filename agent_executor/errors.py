"""The exception tree and the error codes of a run.

::

    AgentExecutorError            base of everything this package raises
    ├── ConfigurationError        invalid executor, tool or model configuration (raised early)
    │   └── MissingExtraError     a feature's optional extra is not installed (an ImportError too)
    ├── ModelError                a model call failed; ``retryable`` says if another try may help
    │   └── ScriptExhaustedError  a ScriptedModel was called more often than scripted
    ├── GuardRejection            raised by a guard to refuse a run (code, message, retry_after)
    ├── HookRejection             raised by a hook to refuse a step (reason)
    └── PlanRefused               raised by a group's strategy that cannot plan (invalid_plan)

Runs do not raise for failures a caller should handle (guards, timeouts, model failures):
``execute()`` returns them as ``AgentResult.error`` and ``execute_stream()`` as an ``ErrorEvent``,
each carrying one of the :class:`ErrorCode` values below.
"""

from __future__ import annotations

import errno
from enum import Enum

__all__ = [
    "OUT_OF_DESCRIPTORS",
    "AgentExecutorError",
    "ConfigurationError",
    "ErrorCode",
    "GuardRejection",
    "HookRejection",
    "MCPConnectionError",
    "MCPToolError",
    "MissingExtraError",
    "ModelError",
    "PlanRefused",
    "RestConnectionError",
    "RestHTTPError",
    "RestToolError",
    "ScriptExhaustedError",
    "StoreUnavailable",
    "UnsupportedRequestError",
    "out_of_descriptors",
    "retryable_status",
]


class ErrorCode(str, Enum):
    """The ``error.code`` values (see docs/http-api.md)."""

    RATE_LIMITED = "rate_limited"
    INJECTION_DETECTED = "injection_detected"
    INVALID_INPUT = "invalid_input"
    HOOK_REJECTED = "hook_rejected"
    UNSUPPORTED_FORMAT = "unsupported_format"
    TIMEOUT = "timeout"
    OVERLOADED = "overloaded"
    LLM_ERROR = "llm_error"
    INTERNAL_ERROR = "internal_error"
    OUTPUT_BLOCKED = "output_blocked"
    UNAVAILABLE = "unavailable"
    INVALID_PLAN = "invalid_plan"
    BUDGET_EXCEEDED = "budget_exceeded"


class AgentExecutorError(Exception):
    """Base class of every exception raised by agent-executor."""


class ConfigurationError(AgentExecutorError):
    """Raised at construction time for an invalid executor, tool or model configuration."""


class PlanRefused(AgentExecutorError):
    """Raised by a group's turn strategy (or a flow's function) that cannot plan the next
    step: the run ends with ``invalid_plan`` and this message."""


class MissingExtraError(ModuleNotFoundError, ConfigurationError):
    """Raised when a feature is imported or built without the optional extra it needs.

    The message names the extra and its ``pip install`` command; ``name`` is the missing module.
    An ``ImportError`` for ``except ImportError`` around optional imports, and a
    ``ConfigurationError`` for code that catches those at construction time.
    """


class ModelError(AgentExecutorError):
    """Raised by a :class:`~agent_executor.ChatModel` when a model call fails.

    Model adapters translate their provider's exceptions into this one type, in one place each.
    ``retryable`` is true for failures worth another attempt (connection errors, 429, 5xx);
    the executor retries those only before the first chunk of a turn, waiting at least
    ``retry_after`` seconds when the provider said so.
    """

    def __init__(
        self,
        message: str,
        *,
        retryable: bool = False,
        status_code: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.retryable = retryable
        self.status_code = status_code
        self.retry_after = retry_after


def retryable_status(status: int) -> bool:
    """Whether a provider's HTTP status is worth another attempt (408, 409, 429, 5xx): the one
    rule every model adapter classifies its failures by."""
    return status in (408, 409, 429) or status >= 500


class UnsupportedRequestError(ModelError):
    """Raised by a model that cannot honour a field of the request (``feature``, such as
    ``response_format``): the caller is told so, in these words, instead of getting an answer
    that ignores it."""

    def __init__(self, message: str, *, feature: str) -> None:
        super().__init__(message, status_code=400)
        self.feature = feature


class ScriptExhaustedError(ModelError):
    """Raised by :class:`~agent_executor.ScriptedModel` when called more often than scripted."""


class GuardRejection(AgentExecutorError):
    """Raised by a guard to refuse a run before anything is spent.

    ``code`` is one of the :class:`ErrorCode` values (``rate_limited``, ``injection_detected``,
    ``invalid_input``, ...); ``retry_after`` is in seconds, for rate limits.
    """

    def __init__(
        self, code: ErrorCode | str, message: str, *, retry_after: float | None = None
    ) -> None:
        super().__init__(message)
        self.code = ErrorCode(code)
        self.message = message
        self.retry_after = retry_after


class HookRejection(AgentExecutorError):
    """Raised by a hook to refuse the step it was called for.

    From ``before_agent_start`` it ends the run with ``hook_rejected``; from ``before_tool_call``
    the call gets status ``rejected`` and the reason goes to the model.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class RestToolError(AgentExecutorError):
    """A REST tool's call failed; the executor reports it to the model as tool status ``error``."""


class RestHTTPError(RestToolError):
    """Raised when the endpoint answers with a non-2xx status; the message carries the status,
    the reason and at most ``max_body_chars`` characters of the body."""

    def __init__(self, status: int, reason: str, excerpt: str) -> None:
        super().__init__(f"HTTP {status} {reason}: {excerpt or '(empty body)'}")
        self.status = status
        self.reason = reason
        self.excerpt = excerpt


class RestConnectionError(RestToolError):
    """Raised when the endpoint cannot be reached, or the connection fails or times out."""


class MCPConnectionError(ConfigurationError):
    """An MCP server could not be started, connected to or listed within its connect timeout.

    Raised by ``MCPToolset.connect`` (and so on entering the toolset), after every server
    already connected has been closed again.
    """


class MCPToolError(AgentExecutorError):
    """Raised by ``MCPTool.invoke`` when the server reports the call failed (``isError``) or
    its server is not connected; the executor turns it into tool status ``error``."""


class StoreUnavailable(AgentExecutorError):
    """A shared store (Redis) could not be reached or failed; the run fails with
    ``unavailable`` and this message (which names no host), and the next request tries again."""


OUT_OF_DESCRIPTORS = "the service has too many open connections: try again shortly"
"""What a run is told when the process ran out of file descriptors (``overloaded``)."""


def out_of_descriptors(error: BaseException) -> bool:
    """Whether ``error``, or what caused it, is the process (``EMFILE``) or the system
    (``ENFILE``) running out of file descriptors: too many connections at once, which waiting
    cures, not a fault of the run."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if isinstance(current, OSError) and current.errno in (errno.EMFILE, errno.ENFILE):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False
