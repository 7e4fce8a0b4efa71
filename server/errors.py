"""One table: run error code → HTTP status, and the JSON error responses of the service."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from agent_executor import ErrorCode, ErrorInfo

__all__ = ["STATUS_BY_CODE", "error_for", "json_error", "openai_error", "status_for"]

STATUS_BY_CODE: dict[str, int] = {
    ErrorCode.RATE_LIMITED.value: 429,
    ErrorCode.INJECTION_DETECTED.value: 400,
    ErrorCode.INVALID_INPUT.value: 400,
    ErrorCode.HOOK_REJECTED.value: 403,
    ErrorCode.UNSUPPORTED_FORMAT.value: 422,
    ErrorCode.TIMEOUT.value: 504,
    ErrorCode.OVERLOADED.value: 503,
    ErrorCode.LLM_ERROR.value: 502,
    ErrorCode.INTERNAL_ERROR.value: 500,
    ErrorCode.OUTPUT_BLOCKED.value: 403,
}
"""HTTP status of ``POST /api/chat`` for a failed run (streams have already answered 200)."""


def status_for(error: ErrorInfo | None) -> int:
    """200 for a successful run, else the status of its error code."""
    return 200 if error is None else STATUS_BY_CODE.get(error.code, 500)


def json_error(status: int, message: str, **headers: str) -> web.Response:
    """``{"error": message}`` with ``status``."""
    body: dict[str, Any] = {"error": message}
    return web.json_response(body, status=status, headers=headers or None)


_OPENAI_TYPES = {401: "authentication_error", 403: "permission_error", 429: "rate_limit_error"}


def openai_error(
    status: int,
    message: str,
    *,
    code: str | None = None,
    param: str | None = None,
    **headers: str,
) -> web.Response:
    """An error in OpenAI's shape, ``{"error": {"message", "type", "param", "code"}}``, so
    OpenAI clients report it (and retry 429s and 5xx by themselves)."""
    kind = _OPENAI_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    body = {"error": {"message": message, "type": kind, "param": param, "code": code}}
    return web.json_response(body, status=status, headers=headers or None)


def error_for(request: web.Request, status: int, message: str, **headers: str) -> web.Response:
    """The error shape the caller expects: OpenAI's under ``/v1/``, ``{"error": ...}`` else."""
    if request.path.startswith("/v1/"):
        return openai_error(status, message, **headers)
    return json_error(status, message, **headers)
