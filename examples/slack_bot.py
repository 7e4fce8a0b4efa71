"""A Slack bot that answers @-mentions in a thread, streaming the agent's answer as it writes.

Mention the bot in a channel and it replies in a thread under your message; mention it again in
that thread and it goes on with the same conversation (the session id is the thread).

Run it (Socket Mode: no public URL needed)::

    pip install "agent-executor[slack]" slack-bolt
    SLACK_BOT_TOKEN=xoxb-... SLACK_APP_TOKEN=xapp-... python examples/slack_bot.py

Environment:

- ``SLACK_BOT_TOKEN`` (required): the bot token (``xoxb-``), scopes ``app_mentions:read`` and
  ``chat:write``.
- ``SLACK_APP_TOKEN`` (required): an app-level token (``xapp-``) with ``connections:write``, for
  Socket Mode (turn Socket Mode on and subscribe to the ``app_mention`` bot event).
- ``SLACK_STREAMING``: ``update`` (default: placeholder + ``chat.update``) or ``native``
  (Slack's streaming messages).
- ``LLM_MODEL``: a litellm model (``openai/gpt-4o-mini``) instead of the offline DemoModel;
  ``LLM_BASE_URL`` and ``LLM_API_KEY`` point it at an OpenAI-compatible server.

Everything is built in ``main()``, so the module imports without tokens (the tests call
:func:`answer_mention` against a local stand-in of the Slack API). Started without the two
tokens it says which variables to set and exits with status 2.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import sys
from collections.abc import Mapping
from typing import Any, Literal

from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from agent_executor import AgentCommand, AgentExecutor, ChatModel, DemoModel, LiteLLMModel
from agent_executor.integrations.slack import SlackResult, SlackStreamer, workspace_budget
from agent_executor.tools.demo import DEMO_TOOLS  # the only tools the DemoModel calls

SYSTEM_PROMPT = "You are a helpful assistant in Slack. Answer briefly, in Markdown."
TOKENS = {
    "SLACK_BOT_TOKEN": "the bot token, xoxb-...",
    "SLACK_APP_TOKEN": "an app-level token, xapp-..., with connections:write, for Socket Mode",
}
"""The variables the bot needs, and what each holds."""
_MENTION = re.compile(r"<@[A-Z0-9]+>")

Strategy = Literal["update", "native"]


def build_model() -> ChatModel:
    """The offline DemoModel, or the litellm model named by ``LLM_MODEL``."""
    if name := os.environ.get("LLM_MODEL"):
        base, key = os.environ.get("LLM_BASE_URL"), os.environ.get("LLM_API_KEY")
        return LiteLLMModel(name, api_base=base, api_key=key)
    return DemoModel()


async def answer_mention(
    event: Mapping[str, Any],
    client: AsyncWebClient,
    executor: AgentExecutor,
    *,
    strategy: Strategy = "update",
    interval: float = 1.2,
) -> SlackResult:
    """Answer one ``app_mention`` event in its thread, streaming the answer into one message."""
    channel = str(event["channel"])
    # A mention in a thread continues that thread; a mention in the channel starts one under it.
    thread_ts = str(event.get("thread_ts") or event["ts"])
    user = event.get("user")
    prompt = _MENTION.sub("", str(event.get("text", ""))).strip() or "Hello!"
    command = AgentCommand(
        user_prompt=prompt,
        system_prompt=SYSTEM_PROMPT,
        user_id=user,
        # One conversation per thread; ts is unique within a channel, so qualify it.
        session_id=f"{channel}:{thread_ts}",
    )
    streamer = SlackStreamer(
        client,
        channel,
        thread_ts=thread_ts,
        strategy=strategy,
        interval=interval,
        # The native strategy needs to know whom it streams to when the thread is in a channel.
        recipient_team_id=event.get("team"),
        recipient_user_id=user,
    )
    return await streamer.stream(executor.execute_stream(command))


def create_app(executor: AgentExecutor, *, strategy: Strategy = "update") -> AsyncApp:
    """The Bolt app: one listener for mentions. Reads ``SLACK_BOT_TOKEN``."""
    app = AsyncApp(token=os.environ["SLACK_BOT_TOKEN"])
    if strategy == "native":
        # appendStream is Tier 4 (100+ a minute): the workspace can afford twice the update rate.
        workspace_budget(app.client).min_interval = 0.6

    @app.event("app_mention")
    async def on_mention(event: dict[str, Any], client: AsyncWebClient) -> None:
        # Bolt acknowledges the event before this runs, so a long answer is fine here.
        await answer_mention(event, client, executor, strategy=strategy)

    return app


def missing_tokens() -> str | None:
    """What to set when a token is missing from the environment (``None``: nothing)."""
    missing = [name for name in TOKENS if not os.environ.get(name)]
    if not missing:
        return None
    wanted = " and ".join(f"{name} ({TOKENS[name]})" for name in missing)
    return f"slack_bot: set {wanted}; see docs/integrations-slack.md"


async def main() -> None:
    logging.basicConfig(level=logging.INFO)
    strategy: Strategy = "native" if os.environ.get("SLACK_STREAMING") == "native" else "update"
    async with AgentExecutor(model=build_model(), tools=DEMO_TOOLS) as executor:
        app = create_app(executor, strategy=strategy)
        handler = AsyncSocketModeHandler(app, os.environ["SLACK_APP_TOKEN"])
        try:
            await handler.start_async()  # type: ignore[no-untyped-call]  # runs until stopped
        finally:
            await handler.close_async()  # type: ignore[no-untyped-call]


if __name__ == "__main__":
    if (problem := missing_tokens()) is not None:
        print(problem, file=sys.stderr)
        sys.exit(2)
    asyncio.run(main())
