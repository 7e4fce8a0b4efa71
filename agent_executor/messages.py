"""Conversation messages, tool calls and token usage.

Messages are small pydantic models discriminated by ``role`` so that one :data:`Message` type
validates plain dicts (from HTTP bodies or a Redis store) and serialises back losslessly. The
executor talks to models in these types; each model adapter converts them to its wire format.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
)

from ._frozen import FrozenModel

__all__ = [
    "AssistantMessage",
    "Message",
    "SystemMessage",
    "ToolCall",
    "ToolMessage",
    "Usage",
    "UserMessage",
    "to_openai_messages",
]


class ToolCall(FrozenModel):
    """A complete tool call requested by the model; ``arguments`` is the raw JSON text it sent.

    ``provider_fields`` holds what the provider put on the call and needs back on the next
    request, sent as it came (Gemini 3's ``extra_content`` with its thought signature).
    """

    id: str
    name: str
    arguments: str = "{}"
    provider_fields: dict[str, Any] = Field(default_factory=dict)


class SystemMessage(FrozenModel):
    """Instructions for the model."""

    role: Literal["system"] = "system"
    content: str


class UserMessage(FrozenModel):
    """What the user said."""

    role: Literal["user"] = "user"
    content: str


class AssistantMessage(FrozenModel):
    """One model turn: its text and the tool calls it asked for.

    ``provider_fields`` holds what the provider put on the turn and needs back on later
    requests, as top-level message fields sent as they came: DeepSeek's and SGLang's
    ``reasoning_content``, vLLM's and OpenRouter's ``reasoning``, the ``thinking_blocks`` with
    their signatures that litellm gives for Anthropic. Providers answer HTTP 400 on the turn
    after a tool call when these are missing, so they are stored with the conversation.
    """

    role: Literal["assistant"] = "assistant"
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    provider_fields: dict[str, Any] = Field(default_factory=dict)


class ToolMessage(FrozenModel):
    """The outcome of one tool call, given back to the model."""

    role: Literal["tool"] = "tool"
    tool_call_id: str
    name: str
    content: str


Message = Annotated[
    SystemMessage | UserMessage | AssistantMessage | ToolMessage,
    Field(discriminator="role"),
]
"""Any conversation message; validates from a dict by its ``role``."""


class Usage(FrozenModel):
    """Token counts, summed over every model call of a run, and what they cost.

    ``cached_input_tokens`` are the input tokens the provider read from its prompt cache (part
    of ``input_tokens``, cheaper). ``cost_usd`` is the cost in US dollars at the executor's
    prices; ``None`` when unknown (a model without a price, or a sum with such a part): never a
    guess. Serialised, both are left out while they say nothing (0 and ``None``).
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    cost_usd: float | None = None

    @model_serializer(mode="wrap")
    def _without_empty(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if self.cost_usd is None:
            data.pop("cost_usd", None)
        if not self.cached_input_tokens:
            data.pop("cached_input_tokens", None)
        return data

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    def __repr_args__(self) -> Any:
        """The repr leaves out what serialisation leaves out."""
        for name, value in super().__repr_args__():
            if (name, value) not in (("cost_usd", None), ("cached_input_tokens", 0)):
                yield name, value

    def __add__(self, other: Usage) -> Usage:
        cost = None
        if self.cost_usd is not None and other.cost_usd is not None:
            cost = self.cost_usd + other.cost_usd
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cached_input_tokens=self.cached_input_tokens + other.cached_input_tokens,
            cost_usd=cost,
        )


def to_openai_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """Convert messages to the OpenAI Chat Completions ``messages`` format.

    Each assistant turn carries its ``provider_fields`` back. Once one turn carries
    ``reasoning_content``, every assistant turn does (empty where the model gave none):
    DeepSeek's thinking mode answers HTTP 400 for an assistant message without it.
    """
    out: list[dict[str, Any]] = []
    thinking = any(
        isinstance(m, AssistantMessage) and "reasoning_content" in m.provider_fields
        for m in messages
    )
    for message in messages:
        if isinstance(message, AssistantMessage):
            item: dict[str, Any] = {"role": "assistant", "content": message.content or None}
            if message.tool_calls:
                item["tool_calls"] = [_openai_call(call) for call in message.tool_calls]
            if message.provider_fields:
                item.update(message.provider_fields)
            if thinking and "reasoning_content" not in item:
                item["reasoning_content"] = ""
            out.append(item)
        elif isinstance(message, ToolMessage):
            out.append(
                {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
            )
        else:
            out.append({"role": message.role, "content": message.content})
    return out


def _openai_call(call: ToolCall) -> dict[str, Any]:
    item: dict[str, Any] = {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": call.arguments},
    }
    if call.provider_fields:
        item.update(call.provider_fields)
    return item
