"""The pace of Slack calls: the budget all streamers of a workspace share, and one streamer's own.

Slack limits each method per app and workspace, not per message, so the spacing that matters is
the one between *all* calls to a workspace (:class:`WorkspaceBudget`, one per workspace in
:data:`BUDGETS`), and a 429 must slow every streamer of that workspace down at once
(:class:`SharedRateLimitRetryHandler`). :class:`CallPacer` is one streamer's side of it: every
call takes a slot of the shared budget, and the streamer's own calls keep its ``interval`` apart.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import math
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TypeVar
from urllib.parse import urljoin

import aiohttp
from slack_sdk.errors import SlackClientError
from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse
from slack_sdk.http_retry.state import RetryState
from slack_sdk.web.async_client import AsyncWebClient

__all__ = [
    "BUDGETS",
    "SEND_ERRORS",
    "CallPacer",
    "SharedRateLimitRetryHandler",
    "WorkspaceBudget",
    "ensure_retry_handler",
    "workspace_budget",
]

logger = logging.getLogger("agent_executor.slack")

_T = TypeVar("_T")

# What a failed intermediate call may raise: Slack said no (also a 429 after the retries), or the
# connection failed. The next call carries the newest state anyway, so these are only logged.
SEND_ERRORS = (SlackClientError, aiohttp.ClientError, asyncio.TimeoutError)


class WorkspaceBudget:
    """A minimum spacing between the Slack calls of every streamer that shares it.

    Slack's limits are per app and workspace, not per message, so N concurrent answers must split
    one budget. Guarantee: calls made through one budget *start* at least ``min_interval`` seconds
    apart (a slot is reserved first, then the newest state is read, so waiting never sends stale
    text); after a 429 (see :class:`SharedRateLimitRetryHandler`) none starts until its
    ``Retry-After`` plus ``min_interval`` has passed, except the limited call's own retry.

    The default, 1.2 s, is Slack's Tier 3 rate (50 a minute, the tier of ``chat.update``) for the
    whole workspace; the streaming methods are Tier 4, so a bot on the native strategy may lower
    it. It is plain arithmetic on a monotonic clock (no lock, no task), so one budget can serve any
    number of streamers on any event loop.
    """

    def __init__(self, min_interval: float = 1.2) -> None:
        if not math.isfinite(min_interval) or min_interval < 0:
            raise ValueError(f"min_interval must be a finite number >= 0, not {min_interval!r}")
        self.min_interval = min_interval
        self._next = 0.0  # monotonic time of the next free slot
        self._blocked_until = 0.0  # set by a 429

    async def acquire(self) -> None:
        """Wait for this caller's slot (first come, first served)."""
        while True:
            now = time.monotonic()
            slot = max(now, self._next)
            self._next = slot + self.min_interval
            if slot > now:
                await asyncio.sleep(slot - now)
            # A 429 while we waited moves everyone behind the pause: take a new slot.
            if time.monotonic() + 1e-3 >= self._blocked_until:
                return

    def pause(self, seconds: float) -> None:
        """Slack answered 429: nobody starts a call for ``seconds`` (+ ``min_interval``)."""
        until = time.monotonic() + max(seconds, 0.0) + self.min_interval
        self._blocked_until = max(self._blocked_until, until)
        self._next = max(self._next, until)


BUDGETS: dict[str, WorkspaceBudget] = {}
"""One budget per workspace, process-wide; a few bytes each, never evicted."""


def _budget_key(api_base: str, token: str | None) -> str:
    # A bot token belongs to one workspace. Bolt makes a new AsyncWebClient for every request,
    # so keying by client object would give every message its own budget; the token (hashed, so
    # the registry never holds it) and the API URL (one budget per fake server in tests) do not.
    return hashlib.sha256(f"{api_base}\n{token or ''}".encode()).hexdigest()


def _client_key(client: AsyncWebClient) -> str:
    api_base = urljoin(client.base_url, "x")[:-1]  # exactly as slack-sdk joins method URLs
    return _budget_key(api_base, client.token)


def workspace_budget(client: AsyncWebClient) -> WorkspaceBudget:
    """The budget shared by every streamer for ``client``'s workspace (same API URL and token).

    Tune it once at start-up, e.g. ``workspace_budget(app.client).min_interval = 0.6``.
    """
    return BUDGETS.setdefault(_client_key(client), WorkspaceBudget())


class SharedRateLimitRetryHandler(AsyncRateLimitErrorRetryHandler):
    """slack-sdk's 429 retry handler that also pauses the workspace's :class:`WorkspaceBudget`.

    The stock handler only makes the limited call wait; the other streamers of the workspace
    would run into the same limit one after the other. This one waits ``Retry-After`` (plus at
    most 0.1 s of jitter, instead of the stock handler's full second) and pauses the shared budget
    for as long, so everybody waits once. It finds the budget from the request's URL and token,
    so one handler instance serves any number of clients (Bolt copies the handler list of
    ``app.client`` into each per-request client). ``SlackStreamer`` adds one to its client's
    ``retry_handlers`` unless an ``AsyncRateLimitErrorRetryHandler`` is there already.
    """

    def __init__(self, max_retry_count: int = 3) -> None:
        super().__init__(max_retry_count=max_retry_count)

    async def prepare_for_next_attempt_async(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> None:
        if response is None:  # not a 429 (never reached: _can_retry_async checks the status)
            await super().prepare_for_next_attempt_async(
                state=state, request=request, response=response, error=error
            )
            return
        delay = _retry_after(response.headers) + random.uniform(0, 0.1)
        budget = BUDGETS.get(_request_key(request))
        if budget is not None:
            budget.pause(delay)
        logger.info("Slack rate limit on %s: retrying in %.1f s", request.url, delay)
        state.next_attempt_requested = True
        await asyncio.sleep(delay)
        state.increment_current_attempt()


def _retry_after(headers: Mapping[str, str | list[str]]) -> float:
    for name, value in headers.items():
        if name.lower() == "retry-after":
            raw = value[0] if isinstance(value, list) else value
            try:
                return max(float(raw), 0.0)
            except ValueError:
                break
    return 1.0  # Slack always sends Retry-After with a 429; this is only a fallback


def _request_key(request: HttpRequest) -> str:
    token = None
    for name, value in request.headers.items():
        if name.lower() == "authorization":
            raw = value[0] if isinstance(value, list) else value
            token = raw.removeprefix("Bearer ").strip()
    return _budget_key(request.url[: request.url.rfind("/") + 1], token)


def ensure_retry_handler(client: AsyncWebClient) -> None:
    """Give ``client`` a :class:`SharedRateLimitRetryHandler` unless it handles 429s already."""
    if not any(isinstance(h, AsyncRateLimitErrorRetryHandler) for h in client.retry_handlers):
        client.retry_handlers.append(SharedRateLimitRetryHandler())


class CallPacer:
    """One streamer's calls: each waits for a slot of the shared budget and is counted.

    Between two of its own calls a streamer also waits ``interval`` (:meth:`pace`), which is what
    lets newer text coalesce into one call instead of one call per event.
    """

    def __init__(self, budget: WorkspaceBudget, interval: float) -> None:
        self.budget = budget
        self.interval = interval
        self.calls = 0  # a call retried after a 429 counts once
        self._last_call = -math.inf

    async def call(self, request: Callable[[], Awaitable[_T]]) -> _T:
        """Make one Slack call in the budget's next slot."""
        await self.budget.acquire()
        self._last_call = time.monotonic()
        self.calls += 1
        return await request()

    async def pace(self) -> None:
        """Wait until ``interval`` has passed since this streamer's last call."""
        delay = self._last_call + self.interval - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
