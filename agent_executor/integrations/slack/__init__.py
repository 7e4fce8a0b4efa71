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

This package needs the ``slack`` extra (``pip install agent-executor[slack]``); ``agent_executor``
itself never imports it.
"""

from __future__ import annotations

from ..._extras import requires_extra

with requires_extra("slack", __name__):  # the streamer and its pacing import slack_sdk
    from ._message import MARKDOWN_LIMIT, default_tool_label
    from ._pacing import SharedRateLimitRetryHandler, WorkspaceBudget, workspace_budget
    from ._streamer import SlackResult, SlackStreamer

__all__ = [
    "MARKDOWN_LIMIT",
    "SharedRateLimitRetryHandler",
    "SlackResult",
    "SlackStreamer",
    "WorkspaceBudget",
    "default_tool_label",
    "workspace_budget",
]
