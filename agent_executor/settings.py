"""The settings an agent, a group, a flow and the service share: one object per concern.

``AgentExecutor(model=..., run_limits=RunLimits(max_turns=4), tool_limits=ToolLimits(timeout=10))``:
each object is a frozen pydantic model, checked when it is made (a ``ValidationError`` names
the field), and may be shared by several agents. Durations are in seconds; ``None`` disables
a timeout or a limit.

- :class:`ModelPolicy`: how model calls are retried and how long their stream may be silent;
- :class:`ToolLimits`: how many tool calls a run may make, how long one may take, how many
  run at once and how much of a result the model is given;
- :class:`RunLimits`: how long a run may take, how many model turns and how much it may spend
  (docs/spend.md);
- :class:`Concurrency`: how many runs an agent serves at once and how many may wait.

The keyword arguments these objects replace (``max_turns=``, ``tool_timeout=`` ...) still
work for one release, with a ``DeprecationWarning`` naming the replacement
(:func:`from_keywords`).
"""

from __future__ import annotations

import warnings
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ._deprecations import REMOVED_IN

if TYPE_CHECKING:
    from .command import AgentCommand

__all__ = ["Concurrency", "ModelPolicy", "RunLimits", "Settings", "ToolLimits", "from_keywords"]

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class ModelPolicy(BaseModel):
    """Retries and timeouts of model calls.

    A failed call that may succeed again (a rate limit, a timeout, a 5xx) is retried up to
    ``retries`` times, waiting ``backoff`` seconds doubled each time (at most ``max_backoff``;
    a provider's ``Retry-After`` wins). ``first_token_timeout`` bounds the wait for the first
    chunk of a stream, ``idle_timeout`` the silence between two chunks. ``context_window`` (in
    tokens, at least 256) makes a run keep each request within it: the older turns of a long
    tool loop are summarised before the call that would not fit (``None``: no compaction inside
    a run; ``"auto"``: the model's window from litellm's model data, read when the agent is
    built).
    """

    model_config = _FROZEN

    retries: int = Field(2, ge=0)
    backoff: float = Field(0.5, ge=0)
    max_backoff: float = Field(8.0, ge=0)
    first_token_timeout: float | None = Field(60.0, gt=0)
    idle_timeout: float | None = Field(60.0, gt=0)
    context_window: int | Literal["auto"] | None = None

    @field_validator("context_window")
    @classmethod
    def _a_window(cls, value: int | str | None) -> int | str | None:
        if isinstance(value, int) and value < 256:
            raise ValueError("context_window must be at least 256 tokens, or 'auto'")
        return value


class ToolLimits(BaseModel):
    """Tool calls of one run: ``max_calls`` in all (a command may set fewer), each within
    ``timeout``, at most ``max_parallel`` at once, the same call (tool and arguments) at most
    ``max_identical_calls`` times in a row (0: as often as it likes), and results cut at
    ``max_result_chars``."""

    model_config = _FROZEN

    timeout: float | None = Field(30.0, gt=0)
    max_calls: int = Field(20, ge=0)
    max_parallel: int = Field(8, ge=1)
    max_result_chars: int = Field(100_000, ge=1)
    max_identical_calls: int = Field(2, ge=0)


class RunLimits(BaseModel):
    """One run's bounds: ``request_timeout`` for the whole run, ``max_turns`` model turns, and
    what it may spend, summed over its model calls (``None``: no limit of that kind). A command
    may set lower spending limits; a run that would pass one stops with
    ``finish_reason="budget"`` (docs/spend.md)."""

    model_config = _FROZEN

    request_timeout: float | None = Field(300.0, gt=0)
    max_turns: int = Field(10, ge=1)
    max_input_tokens: int | None = Field(None, ge=0)
    max_output_tokens: int | None = Field(None, ge=0)
    max_cost_usd: float | None = Field(None, ge=0)

    @property
    def spending(self) -> bool:
        """Whether any spending limit is set."""
        return not (
            self.max_input_tokens is None
            and self.max_output_tokens is None
            and self.max_cost_usd is None
        )

    def for_command(self, command: AgentCommand) -> RunLimits:
        """The limits of a run of ``command``: the lower of these and the command's."""
        asked = (command.max_input_tokens, command.max_output_tokens, command.max_cost_usd)
        if asked == (None, None, None):
            return self
        return self.model_copy(
            update={
                "max_input_tokens": _lower(self.max_input_tokens, command.max_input_tokens),
                "max_output_tokens": _lower(self.max_output_tokens, command.max_output_tokens),
                "max_cost_usd": _lower(self.max_cost_usd, command.max_cost_usd),
            }
        )


class Concurrency(BaseModel):
    """Runs served at once: ``max_concurrency`` hold a permit; the others wait in a queue of at
    most ``max_queue`` (``None``: unbounded) for at most ``queue_timeout`` seconds, or fail with
    ``overloaded``."""

    model_config = _FROZEN

    max_concurrency: int = Field(16, ge=1)
    max_queue: int | None = Field(None, ge=0)
    queue_timeout: float | None = Field(30.0, gt=0)


class Settings(BaseModel):
    """The four settings objects together, as an agent holds them."""

    model_config = _FROZEN

    model_policy: ModelPolicy = ModelPolicy()
    tool_limits: ToolLimits = ToolLimits()
    run_limits: RunLimits = RunLimits()
    concurrency: Concurrency = Concurrency()


_KEYWORDS: Mapping[str, tuple[str, str]] = {
    "model_retries": ("model_policy", "retries"),
    "retry_backoff": ("model_policy", "backoff"),
    "retry_max_backoff": ("model_policy", "max_backoff"),
    "first_token_timeout": ("model_policy", "first_token_timeout"),
    "stream_idle_timeout": ("model_policy", "idle_timeout"),
    "tool_timeout": ("tool_limits", "timeout"),
    "max_tool_calls": ("tool_limits", "max_calls"),
    "max_parallel_tools": ("tool_limits", "max_parallel"),
    "max_tool_result_chars": ("tool_limits", "max_result_chars"),
    "max_identical_calls": ("tool_limits", "max_identical_calls"),
    "request_timeout": ("run_limits", "request_timeout"),
    "max_turns": ("run_limits", "max_turns"),
    "max_input_tokens": ("run_limits", "max_input_tokens"),
    "max_output_tokens": ("run_limits", "max_output_tokens"),
    "max_cost_usd": ("run_limits", "max_cost_usd"),
    "max_concurrency": ("concurrency", "max_concurrency"),
    "max_queue": ("concurrency", "max_queue"),
    "queue_timeout": ("concurrency", "queue_timeout"),
}
"""The keyword arguments the settings objects replace: object and field of each."""

_CLASSES = {
    "model_policy": "ModelPolicy",
    "tool_limits": "ToolLimits",
    "run_limits": "RunLimits",
    "concurrency": "Concurrency",
}


def from_keywords(
    owner: str,
    settings: Settings,
    keywords: Mapping[str, Any],
    *,
    allowed: Collection[str] = _KEYWORDS.keys(),
    stacklevel: int = 3,
) -> Settings:
    """``settings`` with the old keyword arguments ``keywords`` applied on top, each named in
    one ``DeprecationWarning`` with its replacement; a keyword that ``owner`` never took (not
    in ``allowed``) is a ``TypeError``, as Python raises for any unexpected keyword."""
    unknown = sorted(set(keywords) - set(allowed))
    if unknown:
        raise TypeError(f"{owner}() got unexpected keyword arguments: {', '.join(unknown)}")
    if not keywords:
        return settings
    replacements = ", ".join(
        f"{key}= -> {_CLASSES[_KEYWORDS[key][0]]}({_KEYWORDS[key][1]}=...)" for key in keywords
    )
    warnings.warn(
        f"{owner}(): these keyword arguments are deprecated and will be removed in "
        f"{REMOVED_IN}; pass settings objects instead ({replacements})",
        DeprecationWarning,
        stacklevel=stacklevel,
    )
    changes: dict[str, dict[str, Any]] = {}
    for key, value in keywords.items():
        part, field = _KEYWORDS[key]
        changes.setdefault(part, {})[field] = value
    update = {
        part: type(getattr(settings, part)).model_validate(
            getattr(settings, part).model_dump() | fields
        )
        for part, fields in changes.items()
    }
    return settings.model_copy(update=update)


_N = TypeVar("_N", int, float)


def _lower(mine: _N | None, theirs: _N | None) -> _N | None:
    if mine is None:
        return theirs
    return mine if theirs is None else min(mine, theirs)
