"""The streamer: reads a run's events in one task and keeps one Slack message in step in another.

What the message shows is folded from the events by :class:`~._message.MessageState`; how it
gets to Slack is the strategy's (:mod:`._update`, :mod:`._native`); how fast is
:mod:`._pacing`'s.
"""

from __future__ import annotations

import asyncio
import inspect
import math
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from slack_sdk.web.async_chat_stream import AsyncChatStream
from slack_sdk.web.async_client import AsyncWebClient

from ...events import AgentEvent, DoneEvent
from ._message import ChunkQueue, MessageState, default_tool_label
from ._native import NativeSender
from ._pacing import CallPacer, WorkspaceBudget, ensure_retry_handler, workspace_budget
from ._update import UpdateSender

__all__ = ["NATIVE_CHUNKS", "SlackResult", "SlackStreamer"]

NATIVE_CHUNKS: bool = "chunks" in inspect.signature(AsyncChatStream.append).parameters
"""Whether Slack's streaming API takes structured chunks here (task cards for tool calls).

slack-sdk 3.40 added them; 3.37 to 3.39 stream markdown text only, so the native strategy shows
tools as a line of text. Read when a streamer is created.
"""


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

    Single use: one streamer, one :meth:`stream`, one message. See
    :mod:`agent_executor.integrations.slack` for the two strategies and why calls are paced;
    ``docs/integrations.md`` for the whole picture.

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
        pacer = CallPacer(budget if budget is not None else workspace_budget(client), interval)
        queue = ChunkQueue(cards=NATIVE_CHUNKS) if strategy == "native" else None
        ensure_retry_handler(client)
        # The message state, written by the consuming task, read by the sending one.
        self._state = MessageState(
            queue=queue,
            tool_label=tool_label,
            thinking_label=thinking_label,
            placeholder=placeholder,
            empty_text=empty_text,
        )
        self._pacer = pacer
        self._sender: UpdateSender | NativeSender
        if queue is None:
            self._sender = UpdateSender(client, channel, thread_ts, placeholder, self._state, pacer)
        else:
            assert thread_ts is not None
            self._sender = NativeSender(
                client,
                channel,
                thread_ts,
                state=self._state,
                queue=queue,
                pacer=pacer,
                empty_text=empty_text,
                recipient_team_id=recipient_team_id,
                recipient_user_id=recipient_user_id,
                stream_options=dict(stream_options or {}),
            )
        self._failure: Exception | None = None
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
            await self._sender.run()
        finally:
            if not consumer.done():
                consumer.cancel()
            await asyncio.wait([consumer])
        if self._failure is not None:
            raise self._failure
        sender = self._sender
        return SlackResult(sender.channel, sender.ts, sender.shown, self._pacer.calls)

    async def _consume(self, events: AsyncIterator[AgentEvent]) -> None:
        try:
            async for event in events:
                self._state.apply(event)
                if isinstance(event, DoneEvent):
                    break
        except Exception as exc:  # the run failed outside the event protocol
            self._failure = exc
            self._state.add_error(f"The answer was interrupted ({type(exc).__name__}).")
        finally:
            self._state.finish()  # also when the stream ended without a done event
            aclose = getattr(events, "aclose", None)
            if aclose is not None:
                await aclose()
