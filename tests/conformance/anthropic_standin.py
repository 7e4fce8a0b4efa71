"""Anthropic Messages event streams for the shared fake server, and what litellm 1.106.2 makes
of them.

From litellm's source (paths under ``site-packages/litellm``), checked end to end:

- **URL**: ``api_base`` gets ``/v1/messages`` appended unless it ends with it already
  (``main.py`` ``_complete_anthropic``): pass the fake server's ``root_url``, not ``base_url``.
- **Stream to deltas** (``llms/anthropic/chat/handler.py``, ``ModelResponseIterator``; only
  ``data:`` lines are read, the JSON ``type`` names the event). ``thinking_delta``:
  ``reasoning_content="<piece>"``, ``thinking_blocks=[{"type": "thinking", "thinking":
  "<piece>"}]``, the same list in ``provider_specific_fields["thinking_blocks"]`` (l. 690-701).
  ``signature_delta``: ``thinking_blocks=[{"type": "thinking", "thinking": "", "signature":
  "<sig>"}]``, ``reasoning_content=""`` (l. 703-708). ``redacted_thinking`` (its
  ``content_block_start``): ``thinking_blocks=[{"type": "redacted_thinking", "data": "<d>"}]``
  (l. 724-740, 882-889). ``tool_use`` start: a call ``{index, id, name, arguments: ""}``; each
  ``input_json_delta``: ``{index, arguments: "<part>"}``. ``index`` counts tool_use blocks
  from 0 (``tool_index`` starts at -1, +1 per start, l. 557, 843), not content blocks.
  The consumer merges thinking pieces: all text up to a signature is one block (as litellm's
  ``streaming_chunk_builder_utils.py`` ``get_combined_thinking_content`` does).
- **Sending it back** (``litellm_core_utils/prompt_templates/factory.py``
  ``anthropic_messages_pt``): only the assistant message's top-level ``thinking_blocks`` is
  read (l. 2613-2616); blocks without a non-empty ``signature`` are dropped
  (``common_utils.is_unsignable_thinking_block``); the rest go first, before text and tool_use
  (l. 2768-2771). ``reasoning_content`` and ``provider_specific_fields`` are ignored for this.
  Working shape: ``{"role": "assistant", "content": "<text>", "tool_calls": [...],
  "thinking_blocks": [{"type": "thinking", "thinking": "<all text>", "signature": "<sig>"},
  {"type": "redacted_thinking", "data": "<d>"}]}``. Without ``thinking_blocks`` the block is
  missing (Anthropic: 400), or with ``litellm.modify_params`` ``thinking`` is dropped instead
  (``llms/anthropic/chat/transformation.py`` l. 1992-2010).
- **Usage**: ``message_start.message.usage`` and ``message_delta.usage`` are merged, later keys
  winning (``handler.py`` ``_handle_usage``); ``prompt_tokens = input_tokens +
  cache_creation_input_tokens + cache_read_input_tokens``, ``completion_tokens =
  output_tokens`` (``transformation.py`` ``calculate_usage``), in one usage chunk at the end.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from tests.conformance.wire import Reply

__all__ = [
    "anthropic_events",
    "anthropic_reply",
    "assistant_blocks",
    "message_start",
    "redacted_thinking_block",
    "text_block",
    "thinking_block",
    "tool_use_block",
]

# Event shapes: https://platform.claude.com/docs/en/build-with-claude/streaming (``event:`` and
# ``data:`` lines, ``ping``, thinking then ``signature_delta`` before ``content_block_stop``),
# https://platform.claude.com/docs/en/build-with-claude/extended-thinking (``redacted_thinking``:
# its ``data`` in ``content_block_start``, no deltas), anthropic-sdk-python
# ``tests/lib/streaming/fixtures/tool_use_response.txt`` (tool_use, empty first
# ``input_json_delta``), charmbracelet/fantasy
# ``providertests/testdata/TestAnthropicThinking/claude-sonnet-4/thinking-streaming.yaml`` (a
# recorded stream: thinking start ``{"thinking": "", "signature": ""}``, signature, tool_use).
MODEL = "claude-sonnet-4-5-20250929"
Event = dict[str, Any]


def anthropic_events(*events: Event | str, eol: str = "\n") -> bytes:
    """An Anthropic SSE body: ``event: <type>`` and ``data: <json>`` per event, a blank line after.

    A ``str`` event goes on the wire as it is (include its own line ends).
    """
    out: list[str] = []
    for event in events:
        if isinstance(event, str):
            out.append(event)
        else:
            data = json.dumps(event, separators=(",", ":"), ensure_ascii=False)
            out.append(f"event: {event['type']}{eol}data: {data}{eol}{eol}")
    return "".join(out).encode()


def message_start(
    input_tokens: int, *, message_id: str = "msg_01", output_tokens: int = 1
) -> Event:
    """``message_start``: the empty message with the input usage."""
    return {
        "type": "message_start",
        "message": {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": MODEL,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {
                "input_tokens": input_tokens,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "output_tokens": output_tokens,
            },
        },
    }


def _delta(index: int, delta: dict[str, Any]) -> Event:
    return {"type": "content_block_delta", "index": index, "delta": delta}


def _stop(index: int) -> Event:
    return {"type": "content_block_stop", "index": index}


def thinking_block(index: int, parts: Sequence[str], signature: str) -> list[Event]:
    """A ``thinking`` block: start, a ``thinking_delta`` per part, ``signature_delta``, stop."""
    start = {
        "type": "content_block_start",
        "index": index,
        "content_block": {"type": "thinking", "thinking": "", "signature": ""},
    }
    deltas = [_delta(index, {"type": "thinking_delta", "thinking": part}) for part in parts]
    sign = _delta(index, {"type": "signature_delta", "signature": signature})
    return [start, *deltas, sign, _stop(index)]


def redacted_thinking_block(index: int, data: str) -> list[Event]:
    """A ``redacted_thinking`` block: all of it in ``content_block_start``, then stop."""
    start = {
        "type": "content_block_start",
        "index": index,
        "content_block": {"type": "redacted_thinking", "data": data},
    }
    return [start, _stop(index)]


def text_block(index: int, parts: Sequence[str]) -> list[Event]:
    """A ``text`` block: start with empty text, one ``text_delta`` per part, stop."""
    start = {
        "type": "content_block_start",
        "index": index,
        "content_block": {"type": "text", "text": ""},
    }
    deltas = [_delta(index, {"type": "text_delta", "text": part}) for part in parts]
    return [start, *deltas, _stop(index)]


def tool_use_block(index: int, call_id: str, name: str, json_parts: Sequence[str]) -> list[Event]:
    """A ``tool_use`` block: start with ``input: {}``, an empty ``input_json_delta`` (as the API
    sends first), one ``input_json_delta`` per part, stop."""
    start = {
        "type": "content_block_start",
        "index": index,
        "content_block": {"type": "tool_use", "id": call_id, "name": name, "input": {}},
    }
    deltas = [
        _delta(index, {"type": "input_json_delta", "partial_json": part})
        for part in ("", *json_parts)
    ]
    return [start, *deltas, _stop(index)]


def anthropic_reply(
    *blocks: Iterable[Event],
    input_tokens: int,
    output_tokens: int,
    stop_reason: str,
    message_id: str = "msg_01",
    full_delta_usage: bool = False,
) -> Reply:
    """One streamed Messages answer: ``message_start``, a ``ping``, the blocks, ``message_delta``
    (stop reason and the cumulative usage) and ``message_stop``.

    ``message_delta.usage`` has ``output_tokens`` only, as in Anthropic's docs; with
    ``full_delta_usage`` it repeats the input and cache counts too, as recent streams do.
    """
    events: list[Event] = [message_start(input_tokens, message_id=message_id), {"type": "ping"}]
    for block in blocks:
        events.extend(block)
    usage: dict[str, int] = {"output_tokens": output_tokens}
    if full_delta_usage:
        usage = {
            "input_tokens": input_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            **usage,
        }
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": usage,
        }
    )
    events.append({"type": "message_stop"})
    return Reply(body=anthropic_events(*events))


def assistant_blocks(request: dict[str, Any], number: int = 0) -> list[dict[str, Any]]:
    """The content blocks of the ``number``-th assistant message of an Anthropic request body."""
    turns = [m for m in request["messages"] if m["role"] == "assistant"]
    assert len(turns) > number, (
        f"request has {len(turns)} assistant messages: {request['messages']}"
    )
    content = turns[number]["content"]
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
