"""``GET /api/memory``, ``DELETE /api/memory`` and ``DELETE /api/memory/{fact_id}``: what the
agents remember about the caller (``--long-term-memory``), and forgetting it.

The caller is the API key's user, else ``X-User-Id``; a request with neither is a 400 (facts
are kept per user only). Without long-term memory there is nothing to read: 404.
"""

from __future__ import annotations

from aiohttp import web

from agent_executor import StoreUnavailable
from agent_executor.memory import MemoryStore

from .errors import json_error
from .request import Caller

__all__ = ["FACTS", "add_memory_routes"]

FACTS = web.AppKey("facts", MemoryStore)
"""The long-term memory the agents' remember/recall tools use (absent without it)."""


def add_memory_routes(app: web.Application) -> None:
    app.router.add_get("/api/memory", list_facts)
    app.router.add_delete("/api/memory", forget_facts)
    app.router.add_delete("/api/memory/{fact_id}", forget_facts)


async def list_facts(request: web.Request) -> web.Response:
    """``{"user_id", "facts": [{"id", "text", "created_at"}]}``, oldest first."""
    found = _store_and_user(request)
    if isinstance(found, web.Response):
        return found
    store, user = found
    try:
        facts = await store.facts(user)
    except StoreUnavailable as exc:
        return json_error(503, str(exc))
    return web.json_response(
        {"user_id": user, "facts": [fact.model_dump(mode="json") for fact in facts]}
    )


async def forget_facts(request: web.Request) -> web.Response:
    """Forget one fact (``/{fact_id}``: 404 if the caller has none of that id) or all of the
    caller's: ``{"user_id", "forgotten": <count>}``."""
    found = _store_and_user(request)
    if isinstance(found, web.Response):
        return found
    store, user = found
    fact_id = request.match_info.get("fact_id")
    try:
        forgotten = await store.forget(user, fact_id)
    except StoreUnavailable as exc:
        return json_error(503, str(exc))
    if fact_id is not None and not forgotten:
        return json_error(404, f"no fact {fact_id!r} of this user")
    return web.json_response({"user_id": user, "forgotten": forgotten})


def _store_and_user(request: web.Request) -> tuple[MemoryStore, str] | web.Response:
    store = request.app.get(FACTS)
    if store is None:
        return json_error(404, "long-term memory is off (--long-term-memory)")
    user = Caller.of(request).user
    if not user:
        return json_error(400, "facts are kept per user: send an API key or X-User-Id")
    return store, user
