"""Request keys shared by the service's modules (kept apart so every module can import them)."""

from __future__ import annotations

from aiohttp import web

__all__ = ["AUTH_USER", "REQUEST_ID"]

AUTH_USER = web.RequestKey("auth_user", str)
"""The user id an API key authenticated."""
REQUEST_ID = web.RequestKey("request_id", str)
"""The id of the request, used in logs and passed to the run."""
