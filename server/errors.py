"""The service's error answers: one table from error code to HTTP status, and one JSON shape.

Every non-2xx answer outside ``/v1/`` is ``{"error": {"code", "message", "request_id"}}``, plus
``retry_after`` (seconds, as in the ``Retry-After`` header) on 429 and 503. ``code`` is a run's
:class:`~agent_executor.ErrorCode` when a run failed or was refused, else one of
:class:`ServiceErrorCode` (the service refused the request itself: no such path, no API key, a
body too large). ``/v1/`` answers in OpenAI's shape instead (:func:`openai_error`), which OpenAI
clients read.

The request id is added by the request middleware (:func:`stamp_request_id`), so the code that
makes an error needs only its status, code and message.
"""

from __future__ import annotations

import json
import math
from enum import Enum
from typing import Any

from aiohttp import web

from agent_executor import ErrorCode, ErrorEvent, ErrorInfo

__all__ = [
    "BOT_SERVER_PREFIX",
    "CODE_BY_STATUS",
    "RETRY_AFTER_SECONDS",
    "STATUS_BY_CODE",
    "ServiceErrorCode",
    "bot_server_error",
    "code_for",
    "error_for",
    "error_of",
    "error_response",
    "json_error",
    "openai_error",
    "retry_after_seconds",
    "run_error",
    "stamp_request_id",
    "status_for",
]


class ServiceErrorCode(str, Enum):
    """Codes of errors the service answers before (or without) a run; and ``cancelled``,
    which ends the stream of a run the service stopped (an ``error`` event, never a status)."""

    UNAUTHORIZED = "unauthorized"
    FORBIDDEN = "forbidden"
    NOT_FOUND = "not_found"
    METHOD_NOT_ALLOWED = "method_not_allowed"
    CONFLICT = "conflict"
    PAYLOAD_TOO_LARGE = "payload_too_large"
    CANCELLED = "cancelled"


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
    ErrorCode.UNAVAILABLE.value: 503,
    ErrorCode.INVALID_PLAN.value: 502,
    ErrorCode.BUDGET_EXCEEDED.value: 429,
}
"""HTTP status of a failed or refused run, on both chat endpoints (and ``/v1/``)."""

CODE_BY_STATUS: dict[int, str] = {
    400: ErrorCode.INVALID_INPUT.value,
    401: ServiceErrorCode.UNAUTHORIZED.value,
    403: ServiceErrorCode.FORBIDDEN.value,
    404: ServiceErrorCode.NOT_FOUND.value,
    405: ServiceErrorCode.METHOD_NOT_ALLOWED.value,
    409: ServiceErrorCode.CONFLICT.value,
    413: ServiceErrorCode.PAYLOAD_TOO_LARGE.value,
    429: ErrorCode.RATE_LIMITED.value,
    500: ErrorCode.INTERNAL_ERROR.value,
    503: ErrorCode.UNAVAILABLE.value,
}
"""The code of an error the service answers itself, by its status (other 4xx: invalid_input,
other 5xx: internal_error)."""

RETRY_AFTER_SECONDS = 5
"""``Retry-After`` of a 503 whose cause gives no better time (no capacity, a store down,
shutting down)."""

_ERROR = web.ResponseKey("error", dict)
"""The error object of a response made here, for :func:`stamp_request_id`."""


def error_of(response: web.StreamResponse) -> dict[str, Any] | None:
    """The error object of a response made here (``code``, ``message``, ``retry_after``)."""
    return response.get(_ERROR)


def status_for(error: ErrorInfo | ErrorEvent | None) -> int:
    """200 for a successful run, else the status of its error: by its code, except that
    ``budget_exceeded`` is 429 only when waiting helps (a user's budget, ``retry_after`` until
    its period resets) and 422 when it does not (the request passes its run's own limits)."""
    if error is None:
        return 200
    if error.code == ErrorCode.BUDGET_EXCEEDED.value and error.retry_after is None:
        return 422
    return STATUS_BY_CODE.get(error.code, 500)


def json_error(
    status: int, message: str, *, code: str | None = None, **headers: str
) -> web.Response:
    """An error the service answers itself: its ``code``, else the one of ``status``
    (:data:`CODE_BY_STATUS`)."""
    return error_response(status, code or code_for(status), message, headers=headers)


def code_for(status: int) -> str:
    """The code of an error the service answers itself, by its status
    (:data:`CODE_BY_STATUS`; other 4xx: ``invalid_input``, other 5xx: ``internal_error``)."""
    return CODE_BY_STATUS.get(status, "internal_error" if status >= 500 else "invalid_input")


def run_error(error: ErrorInfo | ErrorEvent, **headers: str) -> web.Response:
    """The answer to a run that failed or was refused (before any stream started), with the
    status of :func:`status_for`."""
    status = status_for(error)
    return error_response(
        status, error.code, error.message, retry_after=error.retry_after, headers=headers
    )


def error_response(
    status: int,
    code: str,
    message: str,
    *,
    retry_after: float | None = None,
    headers: dict[str, str] | None = None,
) -> web.Response:
    """``{"error": {"code", "message"}}`` with ``status``; on 429 and 503 (or with
    ``retry_after``) the body and the ``Retry-After`` header say how many seconds to wait
    (``retry_after``, else a ``Retry-After`` among ``headers``, else
    :data:`RETRY_AFTER_SECONDS`)."""
    headers = dict(headers or {})
    error: dict[str, Any] = {"code": code, "message": message}
    if retry_after is not None or status in (429, 503):
        seconds = retry_after_seconds(retry_after, headers.get("Retry-After"))
        error["retry_after"] = seconds
        headers["Retry-After"] = str(seconds)
    response = web.Response(
        text=json.dumps({"error": error}),
        status=status,
        content_type="application/json",
        headers=headers,
    )
    response[_ERROR] = error
    return response


def stamp_request_id(response: web.StreamResponse, request_id: str) -> None:
    """Put the request id into the error object of a response made by :func:`json_error`."""
    error = response.get(_ERROR)
    if error is None or "request_id" in error or not isinstance(response, web.Response):
        return
    error["request_id"] = request_id
    response.text = json.dumps({"error": error})


def retry_after_seconds(retry_after: float | None, header: str | None = None) -> int:
    """Whole seconds to wait (at least 1): ``retry_after``, else the ``Retry-After`` header
    given, else :data:`RETRY_AFTER_SECONDS`."""
    if retry_after is not None:
        return max(1, math.ceil(retry_after))
    if header is not None and header.isdigit():
        return max(1, int(header))
    return RETRY_AFTER_SECONDS


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
    OpenAI clients report it (and retry 429s and 5xx by themselves). ``code`` is ours, the
    same as outside ``/v1/``: a run's, or else the one of the status (:func:`code_for`)."""
    kind = _OPENAI_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    code = code or code_for(status)
    body = {"error": {"message": message, "type": kind, "param": param, "code": code}}
    return web.json_response(body, status=status, headers=headers or None)


BOT_SERVER_PREFIX = "/compat/bot-server/"
"""Where the Bot Server's API is served, in its own error shape."""


def bot_server_error(
    status: int, message: str, *, code: str | None = None, **headers: str
) -> web.Response:
    """The Bot Server's error body, ``{"error": "<text>"}``, with ``status`` (``Retry-After``
    on 429 and 503, as elsewhere)."""
    if status in (429, 503) and "Retry-After" not in headers:
        headers["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return web.json_response({"error": message}, status=status, headers=headers or None)


def error_for(
    request: web.Request, status: int, message: str, *, code: str | None = None, **headers: str
) -> web.Response:
    """The error shape the caller expects: OpenAI's under ``/v1/``, the Bot Server's under
    its prefix, the service's else."""
    if request.path.startswith("/v1/"):
        return openai_error(status, message, code=code, **headers)
    if request.path.startswith(BOT_SERVER_PREFIX):
        return bot_server_error(status, message, **headers)
    return json_error(status, message, code=code, **headers)
