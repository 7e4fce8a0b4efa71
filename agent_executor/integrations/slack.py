"""Stream an agent's answer into one Slack message that grows as the agent writes.

:class:`SlackStreamer` consumes the events of a run (``executor.execute_stream(...)``) and keeps
one Slack message in step with them, in one of two ways:

- ``strategy="update"`` posts a placeholder (``chat.postMessage``) and edits it
  (``chat.update``) with everything written so far. It works in every conversation, in or out of
  a thread, and re-renders the whole message each time, so a tool's status line can be shown
  under the text and removed again.
- ``strategy="native"`` uses Slack's streaming messages (``chat.startStream`` /
  ``chat.appendStream`` / ``chat.stopStream`` through slack-sdk's ``AsyncWebClient.chat_stream``
  helper): only the new text is sent and Slack renders it as it arrives. Tool calls show as task
  cards (slack-sdk >= 3.40; a status line before that). It must reply in a thread.

The model's reasoning (``ReasoningEvent``) is never sent to Slack: while the model reasons and
has not begun its answer, the message shows a short "Thinking…" status instead (a status line
with ``update``, a task card with ``native`` on slack-sdk >= 3.40), gone or completed as soon as
answer text (or a tool call) arrives.

Why all the pacing: Slack limits each method per app and workspace (``chat.update`` is Tier 3,
about 50 calls a minute) while a model writes tens of deltas a second. So the streamer never makes
one call per event: one task folds the events into the message state, another sends the newest
state at most once per ``interval``. When Slack is slower than the model, intermediate states are
skipped, never queued, and the event stream is never held up by a call in flight. On top of that
every streamer of one workspace shares one :class:`WorkspaceBudget` (a minimum spacing between all
their calls), and a 429 pauses that budget for its ``Retry-After``
(:class:`SharedRateLimitRetryHandler`), so ten concurrent answers slow down together instead of
each hammering Slack.

Text goes to Slack as ``markdown_text`` (standard Markdown, which is what models write; Slack
converts it), never as ``mrkdwn`` ``text``, so ``**bold**`` and ``[links](...)`` come out right.

This module needs the ``slack`` extra (``pip install agent-executor[slack]``); ``agent_executor``
itself never imports it.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import logging
import math
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, Final, Literal, TypeVar
from urllib.parse import urljoin

import aiohttp
from slack_sdk.errors import SlackClientError
from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse
from slack_sdk.http_retry.state import RetryState
from slack_sdk.web.async_chat_stream import AsyncChatStream
from slack_sdk.web.async_client import AsyncWebClient

from ..events import (
    AgentEvent,
    DoneEvent,
    ErrorEvent,
    MessageEvent,
    ReasoningEvent,
    ToolEndEvent,
    ToolStartEvent,
)

__all__ = [
    "MARKDOWN_LIMIT",
    "SharedRateLimitRetryHandler",
    "SlackResult",
    "SlackStreamer",
    "WorkspaceBudget",
    "default_tool_label",
    "workspace_budget",
]

logger = logging.getLogger("agent_executor.slack")

_T = TypeVar("_T")

MARKDOWN_LIMIT: Final = 12_000
"""Slack's limit for one ``markdown_text``: the update strategy cuts longer answers, with a note."""

_TRUNCATED: Final = "\n\n_… (cut: a Slack message shows at most 12,000 characters)_"

# slack-sdk 3.40 added structured "chunks" to the streaming API (task cards for tool calls);
# 3.37 to 3.39 stream markdown text only, so the native strategy shows tools as a line of text.
_NATIVE_CHUNKS: bool = "chunks" in inspect.signature(AsyncChatStream.append).parameters

# What a failed intermediate call may raise: Slack said no (also a 429 after the retries), or the
# connection failed. The next call carries the newest state anyway, so these are only logged.
_SEND_ERRORS = (SlackClientError, aiohttp.ClientError, asyncio.TimeoutError)


def default_tool_label(tool: str) -> str:
    """``"Checking get_weather"``: what the message says while a tool runs."""
    return f"Checking {tool}"


# --------------------------------------------------------------------------- shared budget


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


_BUDGETS: dict[str, WorkspaceBudget] = {}  # one per workspace; a few bytes each, never evicted


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
    return _BUDGETS.setdefault(_client_key(client), WorkspaceBudget())


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
        budget = _BUDGETS.get(_request_key(request))
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


def _ensure_retry_handler(client: AsyncWebClient) -> None:
    if not any(isinstance(h, AsyncRateLimitErrorRetryHandler) for h in client.retry_handlers):
        client.retry_handlers.append(SharedRateLimitRetryHandler())


# --------------------------------------------------------------------------- the streamer


@dataclass(frozen=True, slots=True)
class SlackResult:
    """What :meth:`SlackStreamer.stream` did: the message, its final text and the calls spent.

    ``api_calls`` counts the calls the streamer made (a call retried after a 429 counts once).
    """

    channel: str
    ts: str
    text: str
    api_calls: int


class SlackStreamer:
    """Turns one run's events into one Slack message that grows as the agent writes.

    Single use: one streamer, one :meth:`stream`, one message. See the module docstring for the
    two strategies and why calls are paced; ``docs/integrations.md`` for the whole picture.

    Args:
        client: The Slack client; a :class:`SharedRateLimitRetryHandler` is added to its
            ``retry_handlers`` unless it already has an ``AsyncRateLimitErrorRetryHandler``.
        channel: Channel (or user) id to post in.
        thread_ts: Reply in this thread (required by ``native``).
        strategy: ``"update"`` (placeholder + ``chat.update``) or ``"native"`` (Slack's
            streaming messages).
        interval: Minimum seconds between two calls of this streamer (default 1.2 s, which is
            Slack's Tier 3 rate of 50 a minute). Newer text arriving meanwhile is coalesced.
        placeholder: The first text of the update strategy, shown until the agent writes.
        empty_text: Shown when the run ends without any text (Slack refuses empty messages).
        tool_label: Turns a tool name into the status shown while it runs (``None`` hides
            tool progress).
        thinking_label: The status shown while the model reasons before its answer (``None``
            hides it). The reasoning text itself is never sent to Slack.
        budget: Shared spacing of all calls; default :func:`workspace_budget` of ``client``.
        recipient_team_id / recipient_user_id: ``native`` only; Slack requires them when
            streaming into a channel (not a DM): the team and user the answer is for.
        stream_options: ``native`` only; more arguments for ``chat_stream`` (``username``,
            ``icon_emoji``, ``task_display_mode="plan"``, ...).
    """

    def __init__(
        self,
        client: AsyncWebClient,
        channel: str,
        *,
        thread_ts: str | None = None,
        strategy: Literal["update", "native"] = "update",
        interval: float = 1.2,
        placeholder: str = "_Thinking…_",
        empty_text: str = "_(no answer)_",
        tool_label: Callable[[str], str] | None = default_tool_label,
        thinking_label: str | None = "Thinking",
        budget: WorkspaceBudget | None = None,
        recipient_team_id: str | None = None,
        recipient_user_id: str | None = None,
        stream_options: Mapping[str, Any] | None = None,
    ) -> None:
        if strategy not in ("update", "native"):
            raise ValueError(f"strategy must be 'update' or 'native', not {strategy!r}")
        if strategy == "native" and not thread_ts:
            raise ValueError("the native strategy replies in a thread: pass thread_ts")
        if not math.isfinite(interval) or interval < 0:
            raise ValueError(f"interval must be a finite number >= 0, not {interval!r}")
        if not placeholder.strip() or not empty_text.strip():
            raise ValueError("placeholder and empty_text must not be blank (Slack refuses them)")
        self._client = client
        self._channel = channel
        self._thread_ts = thread_ts
        self._strategy = strategy
        self._interval = interval
        self._placeholder = placeholder
        self._empty_text = empty_text
        self._tool_label = tool_label
        self._thinking_label = thinking_label
        self._budget = budget if budget is not None else workspace_budget(client)
        self._recipient_team_id = recipient_team_id
        self._recipient_user_id = recipient_user_id
        self._stream_options = dict(stream_options or {})
        self._chunks = _NATIVE_CHUNKS
        _ensure_retry_handler(client)

        # The message state, written by the consuming task, read by the sending one.
        self._text: list[str] = []  # the agent's text, as streamed
        self._tools: dict[str, str] = {}  # running tools: call id -> label
        self._thinking = False  # the model reasons and has not written (or called a tool) since
        self._thoughts = 0  # native: task card ids of the stretches of reasoning
        self._errors: list[str] = []
        self._pending: list[dict[str, Any]] = []  # native: chunks not sent yet
        self._native_text: list[str] = []  # native: all markdown text appended
        self._tail = ""  # native: the last two characters appended
        self._finished = False
        self._failure: Exception | None = None
        self._changed = asyncio.Event()

        self._ts = ""
        self._shown = ""
        self._calls = 0
        self._last_call = -math.inf
        self._used = False

    async def stream(self, events: AsyncIterator[AgentEvent]) -> SlackResult:
        """Consume ``events`` up to ``done`` and keep the message in step; return the result.

        The events are read in their own task, so a slow Slack call never holds up the run; the
        iterator is closed (``aclose()``) at the end, which cancels the run if it is still going
        (e.g. when posting the placeholder failed). An error event shows as a "⚠️" line and the
        message is still finished; if the iterator itself raises, the message gets a line saying
        the answer was interrupted and the exception is raised again. A failed intermediate call
        is logged and skipped; a failure of the first or last call is raised. If ``stream`` is
        cancelled, the message keeps what it showed last.
        """
        if self._used:
            raise RuntimeError("a SlackStreamer streams one message; create a new one")
        self._used = True
        consumer = asyncio.get_running_loop().create_task(self._consume(events))
        try:
            if self._strategy == "update":
                await self._run_update()
            else:
                await self._run_native()
        finally:
            if not consumer.done():
                consumer.cancel()
            await asyncio.wait([consumer])
        if self._failure is not None:
            raise self._failure
        return SlackResult(self._channel, self._ts, self._shown, self._calls)

    # ----------------------------------------------------------------- consuming

    async def _consume(self, events: AsyncIterator[AgentEvent]) -> None:
        try:
            async for event in events:
                self._apply(event)
                if isinstance(event, DoneEvent):
                    break
        except Exception as exc:  # the run failed outside the event protocol
            self._failure = exc
            self._add_error(f"The answer was interrupted ({type(exc).__name__}).")
        finally:
            self._stop_thinking()
            self._finished = True  # also when the stream ended without a done event
            self._changed.set()
            aclose = getattr(events, "aclose", None)
            if aclose is not None:
                await aclose()

    def _apply(self, event: AgentEvent) -> None:
        native = self._strategy == "native"
        if isinstance(event, ReasoningEvent):
            self._start_thinking()  # its text is never sent
            return
        if not isinstance(event, ToolEndEvent):
            self._stop_thinking()
        if isinstance(event, MessageEvent):
            self._text.append(event.text)
            if native:
                self._push_text(event.text)
        elif isinstance(event, ToolStartEvent):
            if self._tool_label is None:
                return
            label = self._tool_label(event.tool)
            self._tools[event.call_id] = label
            if native and self._chunks:
                self._push_task(event.call_id, label, "in_progress")
            elif native:  # no task cards before slack-sdk 3.40: a line that stays
                self._push_text(f"{_gap(self._tail)}_{label}…_\n\n")
        elif isinstance(event, ToolEndEvent):
            title = self._tools.pop(event.call_id, None)
            if native and self._chunks and title is not None:
                ok = event.status == "success"
                status = "complete" if ok else "error"
                self._push_task(event.call_id, title, status, None if ok else event.status)
        elif isinstance(event, ErrorEvent):
            self._add_error(event.message)
        elif isinstance(event, DoneEvent):
            self._finished = True
        self._changed.set()

    def _start_thinking(self) -> None:
        if self._thinking or self._thinking_label is None:
            return
        self._thinking = True
        if self._strategy == "native" and self._chunks:
            self._thoughts += 1
            self._push_task(f"thinking_{self._thoughts}", self._thinking_label, "in_progress")
        # (native without task cards shows nothing: a status line would stay in the answer)
        self._changed.set()

    def _stop_thinking(self) -> None:
        if not self._thinking:
            return
        self._thinking = False
        if self._strategy == "native" and self._chunks and self._thinking_label is not None:
            self._push_task(f"thinking_{self._thoughts}", self._thinking_label, "complete")
        self._changed.set()

    def _add_error(self, message: str) -> None:
        self._stop_thinking()
        self._errors.append(message)
        if self._strategy == "native":
            self._push_text(f"{_gap(self._tail)}⚠️ {message}")
        self._changed.set()

    def _push_text(self, text: str) -> None:
        if not text:
            return
        self._native_text.append(text)
        self._tail = (self._tail + text)[-2:]
        while len(text) > MARKDOWN_LIMIT:  # one chunk may hold at most Slack's limit
            self._pending.append(_markdown(text[:MARKDOWN_LIMIT]))
            text = text[MARKDOWN_LIMIT:]
        last = self._pending[-1] if self._pending else None
        if (
            last is not None
            and last["type"] == "markdown_text"
            and len(last["text"]) + len(text) <= MARKDOWN_LIMIT
        ):
            last["text"] += text  # coalesce: one chunk per run of text (within Slack's limit)
        else:
            self._pending.append(_markdown(text))

    def _push_task(self, call_id: str, title: str, status: str, details: str | None = None) -> None:
        chunk: dict[str, Any] = {
            "type": "task_update",
            "id": call_id,
            "title": title,
            "status": status,
        }
        if details:
            chunk["details"] = details
        for index, queued in enumerate(self._pending):
            if queued["type"] == "task_update" and queued["id"] == call_id:
                self._pending[index] = chunk  # only the newest state of a task is worth sending
                return
        self._pending.append(chunk)

    # ----------------------------------------------------------------- sending

    async def _call(self, request: Callable[[], Awaitable[_T]]) -> _T:
        await self._budget.acquire()
        self._last_call = time.monotonic()
        self._calls += 1
        return await request()

    async def _pace(self) -> None:
        delay = self._last_call + self._interval - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)

    def _render(self) -> str:
        """The whole message for the update strategy: text, error lines, thinking, running
        tools."""
        body = "".join(self._text)
        lines = [f"⚠️ {message}" for message in self._errors]
        if not self._finished:
            if self._thinking:
                lines.append(f"_{self._thinking_label}…_")
            lines.extend(f"_{label}…_" for label in self._tools.values())
        if lines:
            body = body + _gap(body[-2:]) + "\n".join(lines)
        if not body.strip():
            body = self._empty_text if self._finished else self._placeholder
        if len(body) > MARKDOWN_LIMIT:
            body = body[: MARKDOWN_LIMIT - len(_TRUNCATED)] + _TRUNCATED
        return body

    async def _run_update(self) -> None:
        response = await self._call(
            partial(
                self._client.chat_postMessage,
                channel=self._channel,
                thread_ts=self._thread_ts,
                markdown_text=self._placeholder,
            )
        )
        self._ts = str(response["ts"])
        # Posting to a user id opens a DM: chat.update needs the DM's channel id.
        self._channel = str(response.get("channel") or self._channel)
        self._shown = self._placeholder
        while True:
            await self._changed.wait()
            self._changed.clear()
            if self._render() == self._shown:  # e.g. a tool started and ended already
                if self._finished:
                    return
                continue
            await self._pace()
            self._changed.clear()  # what changed until now is in the render below
            finished = self._finished
            body = self._render()
            if body != self._shown:
                try:
                    await self._call(
                        partial(
                            self._client.chat_update,
                            channel=self._channel,
                            ts=self._ts,
                            markdown_text=body,
                        )
                    )
                except _SEND_ERRORS as exc:
                    if finished:
                        raise
                    logger.warning("Slack chat.update failed (the next one catches up): %s", exc)
                else:
                    self._shown = body
            if finished:
                return

    async def _run_native(self) -> None:
        assert self._thread_ts is not None
        stream = await self._client.chat_stream(
            channel=self._channel,
            thread_ts=self._thread_ts,
            recipient_team_id=self._recipient_team_id,
            recipient_user_id=self._recipient_user_id,
            # We coalesce by time ourselves; the helper's size buffer would only delay text.
            buffer_size=1,
            **self._stream_options,
        )
        while True:
            await self._changed.wait()
            self._changed.clear()
            if not self._pending and not self._finished:
                continue
            await self._pace()
            self._changed.clear()
            finished = self._finished
            chunks, self._pending = self._pending, []
            if finished:
                if stream.ts is None:  # nothing streamed yet: start with the content, then stop
                    await self._append(stream, chunks or [_markdown(self._empty_text)])
                    if not chunks:
                        self._native_text.append(self._empty_text)
                    chunks = []
                    await self._pace()
                await self._stop(stream, chunks)
                self._ts = str(stream.ts)
                self._shown = "".join(self._native_text)
                return
            try:
                await self._append(stream, chunks)
            except _SEND_ERRORS as exc:
                if stream.ts is None:
                    raise  # chat.startStream failed: there is no message to stream into
                logger.warning("Slack chat.appendStream failed (retried with the next): %s", exc)
                if self._chunks:  # the text-only helper keeps unsent text in its own buffer
                    self._pending[:0] = chunks

    async def _append(self, stream: AsyncChatStream, chunks: list[dict[str, Any]]) -> None:
        if self._chunks:
            await self._call(partial(stream.append, chunks=chunks))
        else:
            text = "".join(chunk["text"] for chunk in chunks)
            await self._call(partial(stream.append, markdown_text=text))

    async def _stop(self, stream: AsyncChatStream, chunks: list[dict[str, Any]]) -> None:
        if self._chunks:
            await self._call(partial(stream.stop, chunks=chunks or None))
        else:
            text = "".join(chunk["text"] for chunk in chunks)
            await self._call(partial(stream.stop, markdown_text=text or None))


def _markdown(text: str) -> dict[str, Any]:
    return {"type": "markdown_text", "text": text}


def _gap(tail: str) -> str:
    """What separates a new paragraph from text ending in ``tail`` (its last two characters)."""
    if not tail or tail.endswith("\n\n"):
        return ""
    return "\n" if tail.endswith("\n") else "\n\n"
