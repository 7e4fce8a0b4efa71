"""The input of a run: :class:`AgentCommand`."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from .approvals import Approval
from .messages import Message

__all__ = ["AgentCommand", "ClientTool"]


class ClientTool(BaseModel):
    """A tool the client runs itself (a frontend tool), declared with the command.

    The model may call it like any other; the run then waits for the client's answer (see
    ``FrontendTool``). Its name must not clash with a tool of the executor.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    timeout: float | None = Field(default=None, gt=0, le=3600)


class AgentCommand(BaseModel):
    """What to run: the user's prompt and everything that shapes the run.

    ``messages`` is an explicit prior conversation used instead of stored memory (nothing is
    loaded or saved then). ``response_format`` is ``"text"``, ``"json"`` or a type pydantic can
    validate (usually a ``BaseModel`` subclass); the validated value ends up in
    ``AgentResult.output`` and ``DoneEvent.output``. ``max_tool_calls`` overrides the executor's
    limit for this run; ``model_params`` are passed to the model (temperature, ...).
    ``client_tools`` are tools the client runs itself for this run; ``approvals`` resume a run
    of this session that is waiting for approval (``user_prompt`` may then be empty).
    ``max_input_tokens``, ``max_output_tokens`` and ``max_cost_usd`` limit what this run may
    spend, below the executor's own limits (the lower of the two counts; see docs/spend.md).
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
    client_tools: list[ClientTool] = Field(default_factory=list)
    approvals: list[Approval] | None = None
    max_input_tokens: int | None = Field(default=None, ge=1)
    max_output_tokens: int | None = Field(default=None, ge=1)
    max_cost_usd: float | None = Field(default=None, gt=0)
