"""The update strategy: a placeholder (``chat.postMessage``) edited with ``chat.update``.

It works in every conversation, in or out of a thread, and re-renders the whole message each
time, so a tool's status line can be shown under the text and removed again.
"""

from __future__ import annotations

import logging
from functools import partial

from slack_sdk.web.async_client import AsyncWebClient

from ._message import MessageState
from ._pacing import SEND_ERRORS, CallPacer

__all__ = ["UpdateSender"]

logger = logging.getLogger("agent_executor.slack")


class UpdateSender:
    """Keeps one posted message in step with a :class:`MessageState` until it is finished.

    ``channel``, ``ts`` and ``shown`` say where the message is and what it shows now.
    """

    def __init__(
        self,
        client: AsyncWebClient,
        channel: str,
        thread_ts: str | None,
        placeholder: str,
        state: MessageState,
        pacer: CallPacer,
    ) -> None:
        self._client = client
        self._thread_ts = thread_ts
        self._placeholder = placeholder
        self._state = state
        self._pacer = pacer
        self.channel = channel
        self.ts = ""
        self.shown = ""

    async def run(self) -> None:
        """Post the placeholder, then send the newest render at the pacer's pace until done."""
        state = self._state
        response = await self._pacer.call(
            partial(
                self._client.chat_postMessage,
                channel=self.channel,
                thread_ts=self._thread_ts,
                markdown_text=self._placeholder,
            )
        )
        self.ts = str(response["ts"])
        # Posting to a user id opens a DM: chat.update needs the DM's channel id.
        self.channel = str(response.get("channel") or self.channel)
        self.shown = self._placeholder
        while True:
            await state.changed.wait()
            state.changed.clear()
            if state.render() == self.shown:  # e.g. a tool started and ended already
                if state.finished:
                    return
                continue
            await self._pacer.pace()
            state.changed.clear()  # what changed until now is in the render below
            finished = state.finished
            await self._update(state.render(), finished)
            if finished:
                return

    async def _update(self, body: str, finished: bool) -> None:
        if body == self.shown:
            return
        try:
            await self._pacer.call(
                partial(
                    self._client.chat_update,
                    channel=self.channel,
                    ts=self.ts,
                    markdown_text=body,
                )
            )
        except SEND_ERRORS as exc:
            if finished:
                raise
            logger.warning("Slack chat.update failed (the next one catches up): %s", exc)
        else:
            self.shown = body
