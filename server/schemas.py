"""Wire models of the JSON endpoints, and the OpenAPI document generated from them."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic.json_schema import models_json_schema

from agent_executor import (
    AgentCommand,
    AgentResult,
    Approval,
    AssistantMessage,
    ClientTool,
    ErrorCode,
    Message,
    SystemMessage,
    UserMessage,
    __version__,
)
from agent_executor.spend import BudgetUsage

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
    "openapi_document",
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
        return AgentCommand(
            user_prompt=prompt or "",
            system_prompt=self.system_prompt,
            user_id=user_id,
            session_id=self.session_id,
            metadata=self.metadata,
            messages=history,
            client_tools=self.tools,
            approvals=self.approvals,
        )


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


_SSE_EVENT: dict[str, Any] = {
    "description": "One event of the stream (SPEC section 3); `data` is text or, with "
    "`events=json`, a JSON object. Heartbeat comments are not events.",
    "type": "object",
    "required": ["event", "data", "id"],
    "properties": {
        "event": {
            "enum": [
                "message",
                "reasoning",
                "tool_start",
                "tool_end",
                "tool_call",
                "approval_required",
                "agent_selected",
                "nested",
                "node_start",
                "node_end",
                "error",
                "done",
            ]
        },
        "data": {"type": "string"},
        "id": {"type": "string", "pattern": "^[0-9]+$"},
    },
}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _error(description: str) -> dict[str, Any]:
    """A response in the service's error shape."""
    return {
        "description": description,
        "content": {"application/json": {"schema": _ref("ErrorResponse")}},
    }


def _json(description: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


_RETRY_AFTER = {
    "Retry-After": {"description": "Seconds to wait", "schema": {"type": "integer", "minimum": 1}}
}


def _retry(response: dict[str, Any]) -> dict[str, Any]:
    return {**response, "headers": _RETRY_AFTER}


_REQUEST_ERRORS = {
    "400": _error("Invalid request (invalid_input)"),
    "401": _error("Missing or wrong API key (unauthorized)"),
    "413": _error("Body too large (payload_too_large)"),
}

_RUN_ERRORS = {
    "400": _error(
        "Invalid request, or a run refused as invalid_input (e.g. too long) or injection_detected"
    ),
    "401": _error("Missing or wrong API key (unauthorized)"),
    "403": _error(
        "Refused by a hook (hook_rejected), or the answer withheld by the output guard "
        "(output_blocked)"
    ),
    "413": _error("Body too large (payload_too_large)"),
    "422": _error("No answer in the requested format (unsupported_format)"),
    "429": _retry(
        _error(
            "Rate limited (rate_limited), or the user's budget for the period is used up "
            "(budget_exceeded; Retry-After: until the period ends)"
        )
    ),
    "500": _error("Internal error (internal_error); the log has it under the request id"),
    "502": _error("The model call failed (llm_error); the log has the provider's reason"),
    "503": _retry(
        _error(
            "No capacity (overloaded), or a shared store down or the server shutting down "
            "(unavailable)"
        )
    ),
    "504": _error("The run did not finish in time (timeout)"),
}
"""A failed or refused run: on ``/api/chat`` always, on the stream before its first event."""

_OPENAI_ERRORS = {
    status: {"description": f"{description} (OpenAI error shape)"}
    for status, description in [
        ("400", "Invalid request, or a run refused as invalid input"),
        ("401", "Missing or wrong API key"),
        ("403", "Refused by a hook or the output guard"),
        ("404", "Unknown model (agent)"),
        ("413", "Body too large"),
        ("422", "No answer in the requested format"),
        ("429", "Rate limited (Retry-After)"),
        ("500", "Internal error"),
        ("502", "The model call failed"),
        ("503", "No capacity, a store down or shutting down (Retry-After)"),
        ("504", "The run did not finish in time"),
    ]
}


def _health_get(summary: str, parameters: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "get": {
            "summary": summary,
            "parameters": parameters,
            "responses": {
                "200": _json("The checks (status healthy or degraded)", _ref("HealthResponse")),
                "503": _retry(
                    _json(
                        "Readiness only: degraded (success false, error unavailable)",
                        _ref("HealthResponse"),
                    )
                ),
            },
        }
    }


def openapi_document() -> dict[str, Any]:
    """OpenAPI 3.1 description of the JSON endpoints, generated from the models above."""
    _, schemas = models_json_schema(
        [(m, "validation") for m in (ChatRequest, ErrorResponse, HealthResponse, ToolResultRequest)]
        + [(AgentResult, "serialization"), (BudgetUsage, "serialization")],
        ref_template="#/components/schemas/{model}",
    )
    components = schemas.get("$defs", {})
    chat_body = {"required": True, "content": {"application/json": {"schema": _ref("ChatRequest")}}}
    sse = {
        "description": "Server-Sent Events: message, tool_start, tool_end, error, done (a run "
        "failing after the first event ends with error, then done)",
        "content": {"text/event-stream": {"itemSchema": _ref("ServerSentEvent")}},
    }
    query = [
        {"name": name, "in": "query", "required": name == "message", "schema": {"type": "string"}}
        for name in ("message", "session_id", "user_id", "system_prompt", "agent")
    ] + [{"name": "events", "in": "query", "schema": {"type": "string", "enum": ["text", "json"]}}]
    ready_query = {
        "name": "ready",
        "in": "query",
        "required": False,
        "description": "1: answer as the readiness probe (GET /api/ready)",
        "schema": {"type": "string"},
    }
    return {
        "openapi": "3.1.0",
        "info": {"title": "agent-executor", "version": __version__},
        "paths": {
            "/api/chat": {
                "post": {
                    "summary": "Run the agent and return the finished result",
                    "requestBody": chat_body,
                    "responses": {
                        "200": _json("The run's result", _ref("AgentResult")),
                        **_RUN_ERRORS,
                    },
                }
            },
            "/api/chat/stream": {
                "post": {
                    "summary": "Run the agent, streaming events",
                    "requestBody": chat_body,
                    "responses": {"200": sse, **_RUN_ERRORS},
                },
                "get": {
                    "summary": "Run the agent, streaming events (for EventSource)",
                    "parameters": query,
                    "responses": {"200": sse, **_RUN_ERRORS},
                },
            },
            "/api/chat/tool-result": {
                "post": {
                    "summary": "The client's answer to a frontend tool call its stream waits for",
                    "requestBody": {
                        "required": True,
                        "content": {"application/json": {"schema": _ref("ToolResultRequest")}},
                    },
                    "responses": {
                        "200": _json(
                            "Delivered to the waiting run",
                            {"type": "object", "properties": {"status": {"const": "delivered"}}},
                        ),
                        **_REQUEST_ERRORS,
                        "404": _error("No such call waits for this user's answer (not_found)"),
                        "409": _error("The call was already answered (conflict)"),
                        "503": _retry(_error("The shared store (Redis) is down (unavailable)")),
                    },
                }
            },
            "/api/sessions/{session_id}": {
                "delete": {
                    "summary": "Forget a conversation of the caller (its history and any run "
                    "paused for approval)",
                    "parameters": [
                        {
                            "name": "session_id",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "string", "minLength": 1, "maxLength": 256},
                        },
                        {
                            "name": "user_id",
                            "in": "query",
                            "required": False,
                            "description": "The owner, when no API key says who the caller is",
                            "schema": {"type": "string", "maxLength": 256},
                        },
                    ],
                    "responses": {
                        "200": _json(
                            "Forgotten",
                            {
                                "type": "object",
                                "properties": {
                                    "session_id": {"type": "string"},
                                    "deleted": {"const": True},
                                },
                            },
                        ),
                        "400": _error("Invalid session id (invalid_input)"),
                        "401": _error("Missing or wrong API key (unauthorized)"),
                        "404": _error("The caller has no such session (not_found)"),
                        "503": _retry(_error("The shared store (Redis) is down (unavailable)")),
                    },
                }
            },
            "/api/usage": {
                "get": {
                    "summary": "What a user has spent of the --user-budget this period: the "
                    "caller's own, or (operators) another user's or everyone's",
                    "parameters": [
                        {
                            "name": "user",
                            "in": "query",
                            "required": False,
                            "description": "Another user's id (an operator's API key only)",
                            "schema": {"type": "string"},
                        },
                        {
                            "name": "all",
                            "in": "query",
                            "required": False,
                            "description": "1: every user who spent something this period "
                            "(an operator's API key only)",
                            "schema": {"type": "string"},
                        },
                    ],
                    "responses": {
                        "200": _json(
                            "One user's spend, or {users: [...]} with all=1",
                            {
                                "oneOf": [
                                    _ref("BudgetUsage"),
                                    {
                                        "type": "object",
                                        "properties": {
                                            "users": {"type": "array", "items": _ref("BudgetUsage")}
                                        },
                                    },
                                ]
                            },
                        ),
                        "401": _error("Missing or wrong API key (unauthorized)"),
                        "403": _error(
                            "Another user's spend, asked without an operator's key (forbidden)"
                        ),
                        "404": _error("No user budget is configured (not_found)"),
                        "503": _retry(_error("The shared store (Redis) is down (unavailable)")),
                    },
                }
            },
            "/api/health": _health_get(
                "Liveness: 200 while the process runs; data.status says degraded while a "
                "check is down (with ready=1: the readiness probe)",
                [ready_query],
            ),
            "/api/ready": _health_get(
                "Readiness: 503 while a check is down (Redis, the model endpoint)", []
            ),
            "/v1/chat/completions": {
                "post": {
                    "summary": "OpenAI-compatible chat completion (model = agent name; the agent "
                    "runs its tools on the server, the client's tools come back as tool_calls)",
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {
                                "schema": {"type": "object", "required": ["model", "messages"]}
                            }
                        },
                    },
                    "responses": {
                        "200": {
                            "description": "chat.completion, or chat.completion.chunk SSE",
                            "content": {
                                "application/json": {"schema": {"type": "object"}},
                                "text/event-stream": {"schema": {"type": "string"}},
                            },
                        },
                        **_OPENAI_ERRORS,
                    },
                }
            },
            "/v1/responses": {
                "post": {
                    "summary": "OpenAI Responses API (model = agent name; the client's function "
                    "tools come back as function_call items; previous_response_id continues a "
                    "stored response)",
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {
                                "schema": {"type": "object", "required": ["model", "input"]}
                            }
                        },
                    },
                    "responses": {
                        "200": {
                            "description": "A response object, or its event stream",
                            "content": {
                                "application/json": {"schema": {"type": "object"}},
                                "text/event-stream": {"schema": {"type": "string"}},
                            },
                        },
                        **_OPENAI_ERRORS,
                    },
                }
            },
            "/v1/models": {
                "get": {
                    "summary": "The configured agents (OpenAI list shape)",
                    "responses": {
                        "200": _json("A model list", {"type": "object"}),
                        "401": _OPENAI_ERRORS["401"],
                    },
                }
            },
            "/v1/models/{model}": {
                "get": {
                    "summary": "One configured agent, group or flow (OpenAI model shape)",
                    "parameters": [
                        {
                            "name": "model",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "string"},
                        }
                    ],
                    "responses": {
                        "200": _json("The model", {"type": "object"}),
                        "401": _OPENAI_ERRORS["401"],
                        "404": _OPENAI_ERRORS["404"],
                    },
                }
            },
            "/metrics": {
                "get": {
                    "summary": "Prometheus metrics",
                    "responses": {
                        "200": {
                            "description": "Prometheus text exposition",
                            "content": {"text/plain": {"schema": {"type": "string"}}},
                        }
                    },
                }
            },
        },
        "components": {"schemas": {**components, "ServerSentEvent": _SSE_EVENT}},
    }
