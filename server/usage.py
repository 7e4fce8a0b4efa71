"""``GET /api/usage``: what a user has spent of the ``--user-budget`` in the current period.

A caller reads their own spend (the API key's user, else ``X-User-Id``; without either, the
shared ``anonymous`` budget). An operator (an API key of a user in
``Settings.operator_users``) may read another user's (``?user=ID``) or everyone's
(``?all=1``: the users who spent something this period); anyone else asking for that gets 403.
Without a budget there is nothing to report: 404.
"""

from __future__ import annotations

from aiohttp import web

from agent_executor import StoreUnavailable
from agent_executor.spend import BudgetUsage, UserBudget

from .errors import json_error
from .keys import AUTH_USER
from .request import Caller
from .state import SETTINGS

__all__ = ["BUDGET", "usage"]

BUDGET = web.AppKey("budget", UserBudget)
"""The user budget the agents record their spend in (absent without ``--user-budget``)."""


async def usage(request: web.Request) -> web.Response:
    """The caller's spend (a :class:`BudgetUsage`), another user's or everyone's (operators:
    ``{"users": [...]}``)."""
    budget = request.app.get(BUDGET)
    if budget is None:
        return json_error(404, "no user budget is configured (--user-budget)")
    own = Caller.of(request).user
    wanted = request.query.get("user") or None
    everyone = request.query.get("all", "") not in ("", "0", "false")
    if (everyone or (wanted is not None and wanted != own)) and not _is_operator(request):
        return json_error(403, "only an operator's API key may read other users' spend")
    try:
        if everyone:
            users = await budget.everyone()
            return web.json_response({"users": [u.model_dump() for u in users]})
        found: BudgetUsage = await budget.usage(wanted or own)
    except StoreUnavailable as exc:
        return json_error(503, str(exc))
    return web.json_response(found.model_dump())


def _is_operator(request: web.Request) -> bool:
    """Only an API key proves who the caller is (``X-User-Id`` is the caller's word)."""
    user = request.get(AUTH_USER)
    return user is not None and user in request.app[SETTINGS].operator_users
