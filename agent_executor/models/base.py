"""The model seam: :class:`ChatModel`, what it is asked (:class:`ModelRequest`) and what it
streams back (:class:`ModelChunk`).

A model adapter turns one request into a stream of chunks and translates its provider's
failures into :class:`~agent_executor.errors.ModelError`. Everything else (retries, timeouts,
tool-call assembly, events) happens once, in the executor, for every model alike.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..messages import Message, ToolCall, Usage

__all__ = [
    "ChatModel",
    "ModelChunk",
    "ModelRequest",
    "ModelResponse",
    "PooledModel",
    "ToolCallDelta",
]


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    """A fragment of a streamed tool call, as providers send them.

    ``index`` says which call of the turn the fragment belongs to (``None``: the provider did
    not say); ``id`` and ``name`` usually come in a call's first fragment only (some providers
    repeat them on every fragment, or split the name); ``arguments`` is a piece of the JSON
    text, to be concatenated with the call's other pieces. ``provider_fields`` are fields the
    provider put on the call and needs back (see :class:`~agent_executor.messages.ToolCall`).
    """

    index: int | None = None
    id: str | None = None
    name: str | None = None
    arguments: str | None = None
    provider_fields: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True, init=False)
class ModelChunk:
    """One streamed piece of a model turn: text, tool-call fragments, a finish reason, usage,
    reasoning text, and provider state.

    ``reasoning`` is a piece of the model's reasoning (thinking) text, never part of the
    answer. ``provider_fields`` are fields of the assistant turn that the provider needs back
    on later requests (:attr:`~agent_executor.messages.AssistantMessage.provider_fields`); a
    client gathers them over its stream and sends them in one chunk, usually the last, and
    the executor merges every chunk's dict into the turn's.

    Made once per streamed chunk, so its ``__init__`` writes the slots directly: the generated
    one of a frozen dataclass goes through ``object.__setattr__`` for each field, which is
    measurable per chunk (``benchmarks/instructions.py``, docs/benchmarks.md).
    """

    text: str | None = None
    tool_calls: tuple[ToolCallDelta, ...] | None = None
    finish_reason: str | None = None
    usage: Usage | None = None
    reasoning: str | None = None
    provider_fields: dict[str, Any] | None = None

    def __init__(
        self,
        text: str | None = None,
        tool_calls: tuple[ToolCallDelta, ...] | None = None,
        finish_reason: str | None = None,
        usage: Usage | None = None,
        reasoning: str | None = None,
        provider_fields: dict[str, Any] | None = None,
    ) -> None:
        _set_text(self, text)
        _set_calls(self, tool_calls)
        _set_finish(self, finish_reason)
        _set_usage(self, usage)
        _set_reasoning(self, reasoning)
        _set_fields(self, provider_fields)


# The slots' own setters: a frozen instance is written once, in __init__.
_set_text = ModelChunk.__dict__["text"].__set__
_set_calls = ModelChunk.__dict__["tool_calls"].__set__
_set_finish = ModelChunk.__dict__["finish_reason"].__set__
_set_usage = ModelChunk.__dict__["usage"].__set__
_set_reasoning = ModelChunk.__dict__["reasoning"].__set__
_set_fields = ModelChunk.__dict__["provider_fields"].__set__


@dataclass(slots=True)
class ModelRequest:
    """One model call: the conversation so far, the tools on offer and provider parameters.

    ``tools`` holds OpenAI-style function specs (``{"type": "function", "function": {...}}``);
    it is empty when the model must answer without tools. ``before_model`` hooks may change
    ``messages`` and ``params`` in place or return a new request.
    """

    messages: list[Message]
    tools: list[dict[str, Any]] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class ChatModel(Protocol):
    """Anything that streams a chat completion.

    ``name`` labels metrics and logs (a bounded value such as ``"openai/gpt-4o-mini"``).
    ``stream`` returns an async iterator of chunks; if the iterator has ``aclose()`` the
    executor calls it when the turn ends early (cancellation, timeout, error).
    Failures are raised as :class:`~agent_executor.errors.ModelError`.
    """

    @property
    def name(self) -> str: ...

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]: ...


@runtime_checkable
class PooledModel(ChatModel, Protocol):
    """A model that keeps a pool of connections, sized for the agent that uses it: the agent
    reserves one per run that may hold a permit, so no run waits for a connection."""

    def reserve_connections(self, count: int) -> None: ...


@dataclass(frozen=True, slots=True)
class ModelResponse:
    """One finished model turn, as assembled by the executor (given to ``after_model`` hooks)."""

    text: str
    tool_calls: tuple[ToolCall, ...]
    finish_reason: str | None
    usage: Usage | None
    reasoning: str = ""
    provider_fields: dict[str, Any] = field(default_factory=dict)
