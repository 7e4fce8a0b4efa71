"""The input of a run: :class:`AgentCommand`."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from .messages import Message

__all__ = ["AgentCommand"]


class AgentCommand(BaseModel):
    """What to run: the user's prompt and everything that shapes the run.

    ``messages`` is an explicit prior conversation used instead of stored memory (nothing is
    loaded or saved then). ``response_format`` is ``"text"``, ``"json"`` or a type pydantic can
    validate (usually a ``BaseModel`` subclass); the validated value ends up in
    ``AgentResult.output`` and ``DoneEvent.output``. ``max_tool_calls`` overrides the executor's
    limit for this run; ``model_params`` are passed to the model (temperature, ...).
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    user_prompt: str
    system_prompt: str | None = None
    user_id: str | None = None
    session_id: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    messages: list[Message] | None = None
    max_tool_calls: int | None = Field(default=None, ge=0)
    model_params: dict[str, Any] = Field(default_factory=dict)
    response_format: Any = "text"
