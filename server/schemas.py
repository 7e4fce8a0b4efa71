"""Wire models of the JSON endpoints (the OpenAPI document is made from them in
:mod:`.openapi`)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from agent_executor import (
    AgentCommand,
    Approval,
    AssistantMessage,
    ClientTool,
    ErrorCode,
    Message,
    SystemMessage,
    UserMessage,
)

from .errors import ServiceErrorCode

__all__ = [
    "ChatMessage",
    "ChatRequest",
    "ErrorDetail",
    "ErrorResponse",
    "HealthData",
    "HealthResponse",
    "ToolResultRequest",
    "describe_validation_error",
]

_ROLE_OF_TYPE = {"human": "user", "ai": "assistant", "system": "system"}


class ChatMessage(BaseModel):
    """One prior message: ``role`` (user, assistant, system) or LangChain-style ``type``
    (human, ai, system), and its text."""

    model_config = ConfigDict(extra="forbid")

    role: Literal["user", "assistant", "system"] | None = None
    type: Literal["human", "ai", "system"] | None = None
    content: str

    @model_validator(mode="after")
    def _one_role(self) -> ChatMessage:
        if (self.role is None) == (self.type is None):
            raise ValueError("give each message exactly one of 'role' or 'type'")
        return self

    @property
    def normalized_role(self) -> str:
        """The role, with LangChain types mapped to roles."""
        return self.role or _ROLE_OF_TYPE[self.type or "human"]

    def to_message(self) -> Message:
        role = self.normalized_role
        if role == "user":
            return UserMessage(content=self.content)
        if role == "assistant":
            return AssistantMessage(content=self.content)
        return SystemMessage(content=self.content)


class ChatRequest(BaseModel):
    """The body of the chat endpoints (and the query of ``GET /api/chat/stream``).

    Give ``message``, or ``messages`` whose last item is the user's message; with
    ``messages`` the earlier items are the conversation and stored memory is not used. To
    resume a run waiting for approval, give ``session_id`` and ``approvals`` instead.
    ``tools`` declares tools the client runs itself (answered via
    ``POST /api/chat/tool-result``).
    """

    model_config = ConfigDict(extra="forbid")

    message: str | None = Field(default=None, description="The user's message.")
    messages: list[ChatMessage] | None = Field(
        default=None, description="A whole conversation ending with the user's message."
    )
    session_id: str | None = Field(default=None, max_length=256)
    user_id: str | None = Field(default=None, max_length=256)
    metadata: dict[str, Any] = Field(default_factory=dict)
    system_prompt: str | None = None
    events: Literal["text", "json"] = Field(
        default="text", description="SSE data format: plain text, or JSON objects."
    )
    agent: str | None = Field(default=None, description="Name of a configured agent.")
    tools: list[ClientTool] = Field(
        default_factory=list, description="Tools the client runs itself (frontend tools)."
    )
    approvals: list[Approval] | None = Field(
        default=None, description="Decisions on the calls of a run waiting for approval."
    )
    start: str | None = Field(
        default=None,
        min_length=1,
        description="For a flow: the entry point (node) to start this run at.",
    )
    variables: dict[str, Any] | None = Field(
        default=None,
        description="Values for the Mustache templates of the message and the system prompt "
        "({{name}}); never read as template syntax themselves.",
    )

    @model_validator(mode="after")
    def _has_a_message(self) -> ChatRequest:
        if self.approvals is not None:
            if not self.approvals or self.session_id is None:
                raise ValueError("'approvals' needs 'session_id' and at least one decision")
            if self.message is not None or self.messages:
                raise ValueError("give either 'approvals' or a message, not both")
            return self
        if self.message is None and not self.messages:
            raise ValueError("give 'message' (or a non-empty 'messages' list)")
        if self.message is not None and not self.message.strip():
            raise ValueError("'message' must not be empty")
        if self.message is None and self.messages:
            last = self.messages[-1]
            if last.normalized_role != "user" or not last.content.strip():
                raise ValueError("the last item of 'messages' must be a non-empty user message")
        return self

    def to_command(self, user_id: str | None) -> AgentCommand:
        """The command to run for this request, acting as ``user_id``."""
        history: list[Message] | None = None
        prompt = self.message
        if self.messages:
            history = [m.to_message() for m in self.messages]
            if prompt is None:
                prompt = history.pop().content
        given = {
            "system_prompt": self.system_prompt,
            "user_id": user_id,
            "session_id": self.session_id,
            "metadata": self.metadata or None,
            "messages": history,
            "client_tools": self.tools or None,
            "approvals": self.approvals,
            "variables": self.variables,
            "start": self.start,
        }
        # Only what the request set: the rest are the command's defaults, and the command's
        # set of given fields (kept as long as the run) stays small.
        fields = {name: value for name, value in given.items() if value is not None}
        return AgentCommand(user_prompt=prompt or "", **fields)


class ToolResultRequest(BaseModel):
    """``POST /api/chat/tool-result``: the client's answer to a frontend tool call."""

    model_config = ConfigDict(extra="forbid")

    call_id: str = Field(min_length=1, max_length=256)
    result: Any = Field(default=None, description="What the tool returned (any JSON value).")
    error: str | None = Field(default=None, description="Why the tool failed, instead.")
    agent: str | None = None
    user_id: str | None = Field(default=None, max_length=256)

    @model_validator(mode="after")
    def _result_or_error(self) -> ToolResultRequest:
        if "result" not in self.model_fields_set and self.error is None:
            raise ValueError("give 'result' or 'error'")
        if "result" in self.model_fields_set and self.error is not None:
            raise ValueError("give 'result' or 'error', not both")
        return self


class ErrorDetail(BaseModel):
    """What went wrong, for a client to act on (the details an operator needs are in the server
    log, under ``request_id``)."""

    code: ErrorCode | ServiceErrorCode = Field(
        description="A run's error code, or the service's own (see docs/http-api.md)."
    )
    message: str = Field(description="What is wrong, in words.")
    request_id: str | None = Field(
        default=None, description="The request's X-Request-Id, under which the log has it."
    )
    retry_after: int | None = Field(
        default=None, description="Seconds to wait before trying again (429, 503)."
    )


class ErrorResponse(BaseModel):
    """Every non-2xx answer of the service outside ``/v1/``."""

    error: ErrorDetail


class HealthData(BaseModel):
    status: Literal["healthy", "degraded"] = Field(
        default="healthy", description="degraded while a check is down."
    )
    timestamp: str = Field(description="ISO-8601, UTC.")
    uptime: float = Field(description="Seconds since the service started.")
    checks: dict[str, Literal["ok", "down"]] = Field(
        default_factory=dict,
        description="Each part a run needs: model (from the model's recent calls) and redis "
        "(a PING, when Redis is configured).",
    )


class HealthResponse(BaseModel):
    """``GET /api/health`` (always 200 while the process runs) and ``GET /api/ready`` (503,
    with ``success: false`` and an ``error``, while degraded)."""

    success: bool = True
    data: HealthData
    error: ErrorDetail | None = None


def describe_validation_error(exc: ValidationError) -> str:
    """A short human-readable summary of what is wrong with a request."""
    problems = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(part) for part in error["loc"])
        message = str(error["msg"]).removeprefix("Value error, ")
        problems.append(f"{where}: {message}" if where else message)
    return "; ".join(problems)
