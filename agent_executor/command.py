"""The input of a run: :class:`AgentCommand`."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from .approvals import Approval
from .client_tools import ClientTool, ClientToolMode, ClientToolResult, ToolChoice
from .messages import Message

__all__ = ["AgentCommand", "ClientTool"]


class AgentCommand(BaseModel):
    """What to run: the user's prompt and everything that shapes the run.

    ``messages`` is an explicit prior conversation used instead of stored memory (nothing is
    loaded or saved then). ``response_format`` is ``"text"``, ``"json"`` or a type pydantic can
    validate (usually a ``BaseModel`` subclass); the validated value ends up in
    ``AgentResult.output`` and ``DoneEvent.output``. ``max_tool_calls`` overrides the executor's
    limit for this run; ``model_params`` are passed to the model (temperature, ...).
    ``client_tools`` are tools the client runs itself for this run: the run waits for their
    answers, or with ``client_tool_mode="return"`` ends at their calls (``finish_reason``
    ``tool_calls``) and is resumed by a command giving their ``tool_results``. ``approvals``
    resume a run of this session that is waiting for approval (``user_prompt`` may then be
    empty, as with ``tool_results``). ``tool_choice`` and ``parallel_tool_calls`` go to the
    model on the turns that offer tools (see :data:`ToolChoice`).
    ``max_input_tokens``, ``max_output_tokens`` and ``max_cost_usd`` limit what this run may
    spend, below the executor's own limits (the lower of the two counts; see docs/spend.md).
    ``variables`` are put into ``user_prompt`` and the system prompt (the agent's, or this
    command's), which are Mustache templates then (``{{name}}``; see
    :mod:`agent_executor.templates`): a value is never read as template syntax. ``start``
    names the node a flow's run starts at, one of its ``entry_points`` (agents and groups
    ignore it).
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
    client_tool_mode: ClientToolMode = "wait"
    tool_results: list[ClientToolResult] | None = None
    tool_choice: ToolChoice | None = None
    parallel_tool_calls: bool | None = None
    approvals: list[Approval] | None = None
    max_input_tokens: int | None = Field(default=None, ge=1)
    max_output_tokens: int | None = Field(default=None, ge=1)
    max_cost_usd: float | None = Field(default=None, gt=0)
    variables: dict[str, Any] | None = None
    start: str | None = Field(default=None, min_length=1)

    @property
    def resumes(self) -> bool:
        """Whether this command goes on with a paused run (approvals or client tool results)
        rather than starting one from ``user_prompt``."""
        return self.approvals is not None or self.tool_results is not None
