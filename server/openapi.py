"""The OpenAPI document of the JSON endpoints (``GET /openapi.json``): a declarative table,
generated from the wire models of :mod:`.schemas` where there are models."""

from __future__ import annotations

from typing import Any

from pydantic.json_schema import models_json_schema

from agent_executor import AgentResult, __version__
from agent_executor.spend import BudgetUsage

from .schemas import ChatRequest, ErrorResponse, HealthResponse, ToolResultRequest

__all__ = ["openapi_document"]


_SSE_EVENT: dict[str, Any] = {
    "description": "One event of the stream (see docs/sse-protocol.md); `data` is text or, with "
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
        "id": {
            "type": "string",
            "description": "<run id>:<position>; send it back as Last-Event-ID to re-attach",
            "pattern": "^[A-Za-z0-9_-]+:[0-9]+$",
        },
    },
}


_RUN_ID = {"name": "run_id", "in": "path", "required": True, "schema": {"type": "string"}}
_LAST_EVENT_ID = {
    "name": "Last-Event-ID",
    "in": "header",
    "required": False,
    "description": "The last event the client has (<run id>:<position>)",
    "schema": {"type": "string"},
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
                    "summary": "Run the agent, streaming events (for EventSource, which cannot "
                    "read a refusal's status: invalid input and refused runs are a 200 stream "
                    "of the error event and done; Last-Event-ID re-attaches)",
                    "parameters": [*query, _LAST_EVENT_ID],
                    "responses": {
                        "200": sse,
                        "204": {"description": "Last-Event-ID names no run kept: stop"},
                        "401": _error("Missing or wrong API key (unauthorized)"),
                        "413": _error("Body too large (payload_too_large)"),
                        "503": _retry(
                            _error(
                                "Shutting down, or the shared store (Redis) that would place "
                                "Last-Event-ID's run is down (unavailable)"
                            )
                        ),
                    },
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
            "/api/runs/{run_id}/events": {
                "get": {
                    "summary": "Re-attach to a run: its events from the start (or after "
                    "Last-Event-ID), then the rest as they come",
                    "parameters": [_RUN_ID, _LAST_EVENT_ID],
                    "responses": {
                        "200": sse,
                        "401": _error("Missing or wrong API key (unauthorized)"),
                        "404": _error("No such run is kept for the caller (not_found)"),
                        "503": _retry(_error("The shared store (Redis) is down (unavailable)")),
                    },
                }
            },
            "/api/runs/{run_id}": {
                "delete": {
                    "summary": "Stop the caller's run now (its tools included)",
                    "parameters": [_RUN_ID],
                    "responses": {
                        "200": _json(
                            "Stopped (false: it had finished already)",
                            {
                                "type": "object",
                                "properties": {
                                    "run_id": {"type": "string"},
                                    "stopped": {"type": "boolean"},
                                },
                            },
                        ),
                        "401": _error("Missing or wrong API key (unauthorized)"),
                        "404": _error("No such run is kept for the caller (not_found)"),
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
