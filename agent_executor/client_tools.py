"""Tools the caller runs itself, and how a run hands their calls back.

A :class:`ClientTool` is declared with a command. With ``client_tool_mode="wait"`` (the native
typed-SSE flow) the run stays open while the client runs the tool and posts the answer. With
``"return"`` (the flow of OpenAI's Chat Completions and Responses APIs, the AI SDK and AG-UI)
the run ends at the turn that called client tools, with ``finish_reason="tool_calls"`` and the
calls in ``client_tool_calls``; the caller runs them and resumes the run with a command giving
their :class:`ClientToolResult` s. :data:`ToolChoice` says whether the model must call a tool.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["ClientTool", "ClientToolMode", "ClientToolResult", "NamedToolChoice", "ToolChoice"]

ClientToolMode = Literal["wait", "return"]
"""``wait``: the run waits for the client's answer; ``return``: the run ends and is resumed."""


class ClientTool(BaseModel):
    """A tool the client runs itself (a frontend tool), declared with the command.

    The model may call it like any other; the run then waits for the client's answer (see
    ``FrontendTool``) or hands the call back (``client_tool_mode="return"``). Its name must
    not clash with a tool of the executor. ``strict`` is OpenAI's strict mode for its
    ``parameters``, passed on to the model.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    timeout: float | None = Field(default=None, gt=0, le=3600)
    strict: bool = False


class ClientToolResult(BaseModel):
    """What came of a client tool call that a run handed back: its ``result`` (any JSON value;
    text is given to the model as it is) or, instead, the ``error`` the tool failed with."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    call_id: str = Field(min_length=1, max_length=256)
    result: Any = None
    error: str | None = None

    @model_validator(mode="after")
    def _one_outcome(self) -> ClientToolResult:
        if self.error is not None and "result" in self.model_fields_set:
            raise ValueError("give 'result' or 'error', not both")
        return self


class NamedToolChoice(BaseModel):
    """The model must call this tool."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, max_length=64)


ToolChoice = Literal["auto", "none", "required"] | NamedToolChoice
"""Whether the model may (``auto``), may not (``none``) or must (``required``, or the named
tool) call a tool. A forced choice holds on every turn while client tools are on offer (one of
them ends the run); otherwise until the run has called a tool (the named one), so that the
model can then answer."""
