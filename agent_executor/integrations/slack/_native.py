"""The native strategy: Slack's streaming messages, through slack-sdk's ``chat_stream`` helper.

``chat.startStream`` / ``chat.appendStream`` / ``chat.stopStream``: only the new chunks are sent
and Slack renders them as they arrive. It must reply in a thread.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from functools import partial
from typing import Any

from slack_sdk.web.async_chat_stream import AsyncChatStream
from slack_sdk.web.async_client import AsyncWebClient

from ._message import ChunkQueue, MessageState, markdown_chunk
from ._pacing import SEND_ERRORS, CallPacer

__all__ = ["NativeSender"]

logger = logging.getLogger("agent_executor.slack")


class NativeSender:
    """Streams the chunks a :class:`MessageState` queues into one message until it is finished.

    ``channel``, ``ts`` and ``shown`` say where the message is and what it shows at the end.
    """

    def __init__(
        self,
        client: AsyncWebClient,
        channel: str,
        thread_ts: str,
        *,
        state: MessageState,
        queue: ChunkQueue,
        pacer: CallPacer,
        empty_text: str,
        recipient_team_id: str | None,
        recipient_user_id: str | None,
        stream_options: Mapping[str, Any],
    ) -> None:
        self._client = client
        self._thread_ts = thread_ts
        self._state = state
        self._queue = queue
        self._pacer = pacer
        self._empty_text = empty_text
        self._recipient_team_id = recipient_team_id
        self._recipient_user_id = recipient_user_id
        self._stream_options = stream_options
        self.channel = channel
        self.ts = ""
        self.shown = ""

    async def run(self) -> None:
        """Append what is queued at the pacer's pace; stop the stream once the run is over."""
        state, queue = self._state, self._queue
        stream = await self._client.chat_stream(
            channel=self.channel,
            thread_ts=self._thread_ts,
            recipient_team_id=self._recipient_team_id,
            recipient_user_id=self._recipient_user_id,
            # We coalesce by time ourselves; the helper's size buffer would only delay text.
            buffer_size=1,
            **self._stream_options,
        )
        while True:
            await state.changed.wait()
            state.changed.clear()
            if not queue.pending and not state.finished:
                continue
            await self._pacer.pace()
            state.changed.clear()
            finished = state.finished
            chunks = queue.take()
            if finished:
                await self._finish(stream, chunks)
                return
            try:
                await self._append(stream, chunks)
            except SEND_ERRORS as exc:
                if stream.ts is None:
                    raise  # chat.startStream failed: there is no message to stream into
                logger.warning("Slack chat.appendStream failed (retried with the next): %s", exc)
                if queue.cards:  # the text-only helper keeps unsent text in its own buffer
                    queue.requeue(chunks)

    async def _finish(self, stream: AsyncChatStream, chunks: list[dict[str, Any]]) -> None:
        if stream.ts is None:  # nothing streamed yet: start with the content, then stop
            await self._append(stream, chunks or [markdown_chunk(self._empty_text)])
            if not chunks:
                self._queue.text.append(self._empty_text)
            chunks = []
            await self._pacer.pace()
        await self._stop(stream, chunks)
        self.ts = str(stream.ts)
        self.shown = "".join(self._queue.text)

    async def _append(self, stream: AsyncChatStream, chunks: list[dict[str, Any]]) -> None:
        if self._queue.cards:
            await self._pacer.call(partial(stream.append, chunks=chunks))
        else:
            text = "".join(chunk["text"] for chunk in chunks)
            await self._pacer.call(partial(stream.append, markdown_text=text))

    async def _stop(self, stream: AsyncChatStream, chunks: list[dict[str, Any]]) -> None:
        if self._queue.cards:
            await self._pacer.call(partial(stream.stop, chunks=chunks or None))
        else:
            text = "".join(chunk["text"] for chunk in chunks)
            await self._pacer.call(partial(stream.stop, markdown_text=text or None))
