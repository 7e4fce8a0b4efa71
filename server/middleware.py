"""The service's middlewares: request id and JSON errors (always), CORS and API keys (when
configured).

Only the layers in use are installed: each one stays in memory for as long as a stream is open.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable, Collection

from aiohttp import web

from .errors import error_for, stamp_request_id
from .keys import AUTH_USER, REQUEST_ID
from .settings import Settings
from .state import STATE

__all__ = ["Handler", "Middleware", "auth_middleware", "cors_middleware", "request_middleware"]

logger = logging.getLogger("server")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
Middleware = Callable[..., Awaitable[web.StreamResponse]]


@web.middleware
async def request_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Give the request its id (``X-Request-Id``: the caller's if sane, else a new one, echoed
    back), and answer every error in the service's JSON error shape (OpenAI's under ``/v1/``),
    aiohttp's own 404, 405 and 413 included: no input ever yields a traceback or an HTML page."""
    incoming = request.headers.get("X-Request-Id", "")
    request_id = (
        incoming if 0 < len(incoming) <= 128 and incoming.isprintable() else (uuid.uuid4().hex)
    )
    request[REQUEST_ID] = request_id
    state = request.app[STATE]
    state.requests_in_flight += 1
    try:
        response = await handler(request)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        response = error_for(request, exc.status, _message(request, exc), **_kept_headers(exc))
    except asyncio.CancelledError:
        raise
    except Exception:
        logger.exception("unhandled error (request id %s)", request_id)
        response = error_for(request, 500, f"internal error (request id {request_id})")
    finally:
        state.requests_in_flight -= 1
    if not response.prepared:
        response.headers["X-Request-Id"] = request_id
        stamp_request_id(response, request_id)
    return response


def _message(request: web.Request, exc: web.HTTPException) -> str:
    """What an aiohttp error says, in words a client can act on."""
    if exc.status == 404:
        return f"there is no endpoint at {request.path}"
    if exc.status == 405:
        allowed = exc.headers.get("Allow", "")
        return f"{request.method} is not allowed on {request.path} (allowed: {allowed})"
    if exc.status == 413:
        return f"the body is over the limit of {request.client_max_size} bytes"
    if exc.text is None or exc.text.startswith(f"{exc.status}:"):
        return exc.reason
    return exc.text


def _kept_headers(exc: web.HTTPException) -> dict[str, str]:
    keep = ("Allow", "Retry-After", "WWW-Authenticate")
    return {name: exc.headers[name] for name in keep if name in exc.headers}


def cors_middleware(settings: Settings) -> Middleware:
    origins = set(settings.cors_origins)

    @web.middleware
    async def cors(request: web.Request, handler: Handler) -> web.StreamResponse:
        origin = request.headers.get("Origin")
        allowed = origin is not None and ("*" in origins or origin in origins)
        if (
            allowed
            and request.method == "OPTIONS"
            and "Access-Control-Request-Method" in (request.headers)
        ):
            response: web.StreamResponse = web.Response(status=204)
        else:
            response = await handler(request)
        if allowed and not response.prepared:
            response.headers["Access-Control-Allow-Origin"] = (
                "*" if "*" in origins else (origin or "")
            )
            response.headers["Vary"] = "Origin"
            response.headers["Access-Control-Allow-Headers"] = (
                "Authorization, Content-Type, X-User-Id, X-Request-Id, Last-Event-ID"
            )
            response.headers["Access-Control-Allow-Methods"] = "GET, POST, OPTIONS"
            response.headers["Access-Control-Expose-Headers"] = "X-Request-Id, Retry-After"
        return response

    return cors


def auth_middleware(settings: Settings, public: Collection[Handler]) -> Middleware:
    """With API keys configured, ``/api/*`` and ``/v1/*`` need ``Authorization: Bearer``.

    The ``public`` handlers stay open: ``/api/health`` so load balancers and orchestrators can
    probe it, ``/metrics``, ``/openapi.json`` and the chat page (useless without a key anyway).
    """
    keys = dict(settings.api_keys)

    @web.middleware
    async def auth(request: web.Request, handler: Handler) -> web.StreamResponse:
        if keys and request.method != "OPTIONS" and _protected(request, public):
            scheme, _, key = request.headers.get("Authorization", "").partition(" ")
            user = keys.get(key.strip()) if scheme.lower() == "bearer" else None
            if user is None:
                return error_for(
                    request, 401, "missing or invalid API key", **{"WWW-Authenticate": "Bearer"}
                )
            request[AUTH_USER] = user
        return await handler(request)

    return auth


def _protected(request: web.Request, public: Collection[Handler]) -> bool:
    """Every matched route but the public ones (health, metrics, OpenAPI, the chat page).

    Decided by the route's handler, not by path, so it holds when the app is mounted under a
    prefix; unmatched paths answer 404/405 without a key.
    """
    match = request.match_info
    return match.http_exception is None and match.handler not in public
