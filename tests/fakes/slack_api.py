"""A local stand-in for the Slack Web API: records every call and can answer 429 on demand.

Usage::

    async with FakeSlackAPI() as slack:
        client = AsyncWebClient(token=slack.token, base_url=slack.base_url)
        slack.rate_limit("chat.update", retry_after=1)  # the next chat.update gets a 429
        ...
        assert [c.method for c in slack.calls] == ["chat.postMessage", "chat.update"]
        assert slack.messages[ts].text == "Hello"

Implemented methods: ``auth.test``, ``chat.postMessage``, ``chat.update`` and the streaming ones,
``chat.startStream`` / ``chat.appendStream`` / ``chat.stopStream``. The streaming methods take
the text as ``markdown_text`` (slack-sdk 3.37 to 3.39) or as ``chunks`` (3.40 and later:
``markdown_text`` and ``task_update`` chunks). Answers follow Slack's shapes (``ok``, ``ts``,
``channel``, ``error``) and Slack's errors where a client bug would show (``message_not_found``,
``message_not_in_streaming_state``, ``no_text``, ``invalid_auth``). Binds 127.0.0.1 only.
"""

from __future__ import annotations

import itertools
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aiohttp import web

from .local import serve_locally

if TYPE_CHECKING:
    from types import TracebackType

__all__ = ["Call", "FakeSlackAPI", "Message"]

JsonDict = dict[str, Any]


@dataclass(frozen=True)
class Call:
    """One request as the server saw it; ``time`` is ``time.monotonic()`` at arrival."""

    method: str
    params: JsonDict
    time: float
    status: int
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == 200 and self.error is None


@dataclass
class Message:
    """A message's current state: its text, every text it had, its task cards."""

    channel: str
    ts: str
    thread_ts: str | None
    text: str
    streaming: bool = False
    history: list[str] = field(default_factory=list)
    tasks: list[JsonDict] = field(default_factory=list)  # every task_update, in order


class FakeSlackAPI:
    """The Slack Web API on ``127.0.0.1:<free port>``; see the module docstring."""

    def __init__(self, *, token: str = "xoxb-test", team_id: str = "T0TEST") -> None:
        self.token = token
        self.team_id = team_id
        self.calls: list[Call] = []
        self.messages: dict[str, Message] = {}
        self._limits: dict[str, list[float]] = defaultdict(list)
        self._failures: dict[str, list[str]] = defaultdict(list)
        self._ts = itertools.count(1)
        self._runner: web.AppRunner | None = None
        self._port: int | None = None

    # ---------------------------------------------------------------- scripting

    def rate_limit(self, method: str, *, retry_after: int = 1, times: int = 1) -> None:
        """Answer the next ``times`` calls of ``method`` with 429 and ``Retry-After``."""
        self._limits[method].extend([retry_after] * times)

    def fail(self, method: str, error: str, *, times: int = 1) -> None:
        """Answer the next ``times`` calls of ``method`` with ``{"ok": false, "error": ...}``."""
        self._failures[method].extend([error] * times)

    def calls_to(self, *methods: str) -> list[Call]:
        """The answered (non-429) calls of the given methods, in order."""
        return [c for c in self.calls if c.method in methods and c.status == 200]

    # ---------------------------------------------------------------- lifecycle

    @property
    def base_url(self) -> str:
        if self._port is None:
            raise RuntimeError("FakeSlackAPI is not started")
        return f"http://127.0.0.1:{self._port}/api/"

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/api/{method}", self._handle)
        self._runner, self._port = await serve_locally(app)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeSlackAPI:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    # ---------------------------------------------------------------- handling

    async def _handle(self, request: web.Request) -> web.Response:
        arrived = time.monotonic()
        method = request.match_info["method"]
        params: JsonDict = dict(request.query)
        if request.content_type == "application/json":
            params.update(await request.json())
        else:
            params.update(await request.post())
        if self._limits[method]:
            retry_after = self._limits[method].pop(0)
            self.calls.append(Call(method, params, arrived, 429, "ratelimited"))
            return web.json_response(
                {"ok": False, "error": "ratelimited"},
                status=429,
                headers={"Retry-After": str(retry_after)},
            )
        auth = request.headers.get("Authorization", "")
        token = auth.removeprefix("Bearer ") if auth else params.get("token")
        if token != self.token:
            body: JsonDict = {"ok": False, "error": "invalid_auth"}
        elif self._failures[method]:
            body = {"ok": False, "error": self._failures[method].pop(0)}
        else:
            handler = getattr(self, "_" + method.replace(".", "_"), None)
            body = {"ok": False, "error": "unknown_method"} if handler is None else handler(params)
        self.calls.append(Call(method, params, arrived, 200, body.get("error")))
        return web.json_response(body)

    def _new_ts(self) -> str:
        n = next(self._ts)
        return f"{1_700_000_000 + n}.{n:06d}"

    def _message(self, params: JsonDict) -> Message | JsonDict:
        message = self.messages.get(str(params.get("ts")))
        if message is None or message.channel != params.get("channel"):
            return {"ok": False, "error": "message_not_found"}
        return message

    def _auth_test(self, params: JsonDict) -> JsonDict:
        return {"ok": True, "team_id": self.team_id, "user_id": "U0BOT", "bot_id": "B0BOT"}

    def _chat_postMessage(self, params: JsonDict) -> JsonDict:
        text = _text_of(params)
        if text is None:
            return {"ok": False, "error": "no_text"}
        channel = str(params["channel"])
        ts = self._new_ts()
        self.messages[ts] = Message(channel, ts, params.get("thread_ts"), text, history=[text])
        return {"ok": True, "channel": channel, "ts": ts, "message": {"text": text, "ts": ts}}

    def _chat_update(self, params: JsonDict) -> JsonDict:
        message = self._message(params)
        if not isinstance(message, Message):
            return message
        text = _text_of(params)
        if text is None:
            return {"ok": False, "error": "no_text"}
        message.text = text
        message.history.append(text)
        return {"ok": True, "channel": message.channel, "ts": message.ts, "text": text}

    def _chat_startStream(self, params: JsonDict) -> JsonDict:
        if not params.get("thread_ts"):
            return {"ok": False, "error": "invalid_thread_ts"}
        channel = str(params["channel"])
        ts = self._new_ts()
        message = Message(channel, ts, params["thread_ts"], "", streaming=True)
        self.messages[ts] = message
        self._append(message, params)
        return {"ok": True, "channel": channel, "ts": ts}

    def _chat_appendStream(self, params: JsonDict) -> JsonDict:
        message = self._message(params)
        if not isinstance(message, Message):
            return message
        if not message.streaming:
            return {"ok": False, "error": "message_not_in_streaming_state"}
        self._append(message, params)
        return {"ok": True, "channel": message.channel, "ts": message.ts}

    def _chat_stopStream(self, params: JsonDict) -> JsonDict:
        message = self._message(params)
        if not isinstance(message, Message):
            return message
        if not message.streaming:
            return {"ok": False, "error": "message_not_in_streaming_state"}
        self._append(message, params)
        message.streaming = False
        return {"ok": True, "channel": message.channel, "ts": message.ts}

    @staticmethod
    def _append(message: Message, params: JsonDict) -> None:
        if params.get("markdown_text"):
            message.text += str(params["markdown_text"])
        for chunk in params.get("chunks") or []:
            if chunk.get("type") == "markdown_text":
                message.text += str(chunk["text"])
            elif chunk.get("type") == "task_update":
                message.tasks.append(dict(chunk))
        message.history.append(message.text)


def _text_of(params: JsonDict) -> str | None:
    """The text a chat.postMessage / chat.update sets (``markdown_text`` or ``text``)."""
    for name in ("markdown_text", "text"):
        value = params.get(name)
        if isinstance(value, str) and value.strip():
            return value
    return None
