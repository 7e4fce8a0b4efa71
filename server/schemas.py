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
    Message,
    SystemMessage,
    UserMessage,
    __version__,
)

__all__ = [
    "ChatMessage",
    "ChatRequest",
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


class ErrorResponse(BaseModel):
    """Every 4xx/5xx answer of the service."""

    error: str


class HealthData(BaseModel):
    status: Literal["healthy"] = "healthy"
    timestamp: str = Field(description="ISO-8601, UTC.")
    uptime: float = Field(description="Seconds since the service started.")


class HealthResponse(BaseModel):
    """``GET /api/health``."""

    success: bool = True
    data: HealthData


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
                "error",
                "done",
            ]
        },
        "data": {"type": "string"},
        "id": {"type": "string", "pattern": "^[0-9]+$"},
    },
}


def openapi_document() -> dict[str, Any]:
    """OpenAPI 3.1 description of the JSON endpoints, generated from the models above."""
    _, schemas = models_json_schema(
        [(m, "validation") for m in (ChatRequest, ErrorResponse, HealthResponse, ToolResultRequest)]
        + [(AgentResult, "serialization")],
        ref_template="#/components/schemas/{model}",
    )
    components = schemas.get("$defs", {})

    def ref(name: str) -> dict[str, str]:
        return {"$ref": f"#/components/schemas/{name}"}

    def error(description: str) -> dict[str, Any]:
        return {
            "description": description,
            "content": {"application/json": {"schema": ref("ErrorResponse")}},
        }

    bad = {
        "400": error("Invalid request"),
        "401": error("Missing or wrong API key"),
        "413": error("Body too large"),
    }

    def failed_run(description: str, *, or_error: bool = False) -> dict[str, Any]:
        schema: dict[str, Any] = ref("AgentResult")
        if or_error:
            schema = {"anyOf": [ref("ErrorResponse"), ref("AgentResult")]}
        return {"description": description, "content": {"application/json": {"schema": schema}}}

    chat_failures = {
        "400": failed_run(
            "Invalid request ({error: str}), or a run refused as invalid_input or "
            "injection_detected (its AgentResult)",
            or_error=True,
        ),
        "403": failed_run(
            "The run was refused by a hook (hook_rejected), or its answer was withheld by the "
            "output guard (output_blocked)"
        ),
        "422": failed_run("No answer in the requested format (unsupported_format)"),
        "429": failed_run("Rate limited (rate_limited); see Retry-After"),
        "500": failed_run("Internal error", or_error=True),
        "502": failed_run("The model failed (llm_error)"),
        "503": failed_run(
            "No capacity (overloaded), or the server is shutting down ({error: str})",
            or_error=True,
        ),
        "504": failed_run("The run did not finish in time (timeout)"),
    }
    chat_body = {"required": True, "content": {"application/json": {"schema": ref("ChatRequest")}}}
    sse = {
        "description": "Server-Sent Events: message, tool_start, tool_end, error, done",
        "content": {"text/event-stream": {"itemSchema": ref("ServerSentEvent")}},
    }
    query = [
        {"name": name, "in": "query", "required": name == "message", "schema": {"type": "string"}}
        for name in ("message", "session_id", "user_id", "system_prompt", "agent")
    ] + [{"name": "events", "in": "query", "schema": {"type": "string", "enum": ["text", "json"]}}]
    return {
        "openapi": "3.1.0",
        "info": {"title": "agent-executor", "version": __version__},
        "paths": {
            "/api/chat": {
                "post": {
                    "summary": "Run the agent and return the finished result",
                    "requestBody": chat_body,
                    "responses": {
                        "200": {
                            "description": "The run's result (also for failed runs, "
                            "with a status for the error code)",
                            "content": {"application/json": {"schema": ref("AgentResult")}},
                        },
                        **bad,
                        **chat_failures,
                    },
                }
            },
            "/api/chat/stream": {
                "post": {
                    "summary": "Run the agent, streaming events",
                    "requestBody": chat_body,
                    "responses": {"200": sse, **bad},
                },
                "get": {
                    "summary": "Run the agent, streaming events (for EventSource)",
                    "parameters": query,
                    "responses": {"200": sse, **bad},
                },
            },
            "/api/chat/tool-result": {
                "post": {
                    "summary": "The client's answer to a frontend tool call its stream waits for",
                    "requestBody": {
                        "required": True,
                        "content": {"application/json": {"schema": ref("ToolResultRequest")}},
                    },
                    "responses": {
                        "200": {
                            "description": "Delivered to the waiting run",
                            "content": {
                                "application/json": {
                                    "schema": {
                                        "type": "object",
                                        "properties": {"status": {"const": "delivered"}},
                                    }
                                }
                            },
                        },
                        "400": error("Invalid request"),
                        "401": error("Missing or wrong API key"),
                        "404": error("No such call waits for this user's answer"),
                        "409": error("The call was already answered"),
                        "413": error("Body too large"),
                        "503": error("The shared store (Redis) is unavailable"),
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
                        "200": {
                            "description": "Forgotten",
                            "content": {
                                "application/json": {
                                    "schema": {
                                        "type": "object",
                                        "properties": {
                                            "session_id": {"type": "string"},
                                            "deleted": {"const": True},
                                        },
                                    }
                                }
                            },
                        },
                        "400": error("Invalid session id"),
                        "401": error("Missing or wrong API key"),
                        "404": error("The caller has no such session"),
                        "503": error("The shared store (Redis) is unavailable"),
                    },
                }
            },
            "/api/health": {
                "get": {
                    "summary": "Liveness",
                    "responses": {
                        "200": {
                            "description": "Healthy",
                            "content": {"application/json": {"schema": ref("HealthResponse")}},
                        }
                    },
                }
            },
            "/v1/chat/completions": {
                "post": {
                    "summary": "OpenAI-compatible chat completion (model = agent name; the agent "
                    "runs its tools on the server)",
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
                        "400": {"description": "Invalid request (OpenAI error shape)"},
                        "404": {"description": "Unknown model (agent)"},
                        "429": {"description": "Rate limited (Retry-After)"},
                    },
                }
            },
            "/v1/models": {
                "get": {
                    "summary": "The configured agents (OpenAI list shape)",
                    "responses": {
                        "200": {
                            "description": "A model list",
                            "content": {"application/json": {"schema": {"type": "object"}}},
                        }
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
