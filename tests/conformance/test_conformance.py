"""Every recorded provider shape, through both model clients and ``execute_stream()``.

Each fixture (``fixtures/*.py``, each naming its provider and public source) is replayed byte
for byte by a local server. The run must call the right tools once each with the right
arguments, stream the provider's text and reasoning, report its usage, fail with a typed error
where the provider failed, and send back on the next request what the provider needs: tool
call ids that match the tool results, arguments as JSON text, and the provider's own state
(reasoning, thought signatures, thinking blocks).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from agent_executor import (
    AgentCommand,
    AgentExecutor,
    DoneEvent,
    ErrorEvent,
    LiteLLMModel,
    MessageEvent,
    OpenAICompatModel,
    ReasoningEvent,
    Tool,
    ToolEndEvent,
    ToolStartEvent,
)
from agent_executor.models.base import ChatModel

from ..fakes.openai_server import FakeOpenAIServer
from .fixtures import ALL_FIXTURES
from .wire import Fixture

# This module still passes the keyword arguments the settings objects replaced (max_turns=...);
# they warn until 0.2.0 (tests/test_settings.py checks the warning itself).
pytestmark = pytest.mark.filterwarnings(
    "ignore:.*keyword arguments are deprecated:DeprecationWarning"
)

CASES = [
    pytest.param(fixture, client, id=f"{fixture.name}-{client}")
    for fixture in ALL_FIXTURES
    for client in fixture.clients
]


class _RecordingTool(Tool):
    """Accepts any JSON object, records the call, answers ``"<name> ok"``."""

    def __init__(self, name: str, ran: list[tuple[str, dict[str, Any]]]) -> None:
        super().__init__(
            name=name,
            description=f"The {name} tool.",
            parameters={"type": "object", "properties": {}, "additionalProperties": True},
        )
        self._ran = ran

    async def invoke(self, arguments: dict[str, Any]) -> Any:
        self._ran.append((self.name, arguments))
        return f"{self.name} ok"


def _model(client: str, fixture: Fixture, server: FakeOpenAIServer) -> ChatModel:
    if client == "fast":
        return OpenAICompatModel(fixture.model, base_url=server.base_url, api_key="test-key")
    model = fixture.model if "/" in fixture.model else f"openai/{fixture.model}"
    base = server.root_url if model.startswith("anthropic/") else server.base_url
    return LiteLLMModel(model, api_base=base, api_key="test-key")


# litellm turns ``arguments`` sent as a JSON object into text, with a pydantic serializer
# warning; under ``filterwarnings = error`` that warning would make it drop the chunk, which is
# not what happens in a service.
@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning")
@pytest.mark.parametrize(("fixture", "client"), CASES)
async def test_provider_shape(fixture: Fixture, client: str) -> None:
    ran: list[tuple[str, dict[str, Any]]] = []
    async with FakeOpenAIServer() as server:
        server.script(*fixture.replies)
        executor = AgentExecutor(
            model=_model(client, fixture, server),
            tools=[_RecordingTool(name, ran) for name in fixture.tools],
            metrics=CollectorRegistry(),
            retry_backoff=0.01,
            retry_max_backoff=0.02,
            first_token_timeout=10,
            stream_idle_timeout=10,
        )
        try:
            events = [
                event
                async for event in executor.execute_stream(
                    AgentCommand(user_prompt="Please use the tools.")
                )
            ]
        finally:
            await executor.aclose()
    expect = fixture.expect
    done = events[-1]
    assert isinstance(done, DoneEvent)
    errors = [e for e in events if isinstance(e, ErrorEvent)]
    if expect.error is None:
        assert not errors, errors
        assert done.finish_reason == "stop"
    else:
        assert [e.code for e in errors] == [expect.error]
        assert done.finish_reason == "error"
    if expect.requests is not None:
        assert len(server.requests) == expect.requests

    starts = [(e.tool, e.arguments) for e in events if isinstance(e, ToolStartEvent)]
    assert starts == expect.tools
    assert sorted(map(repr, ran)) == sorted(map(repr, expect.tools)), "each tool ran once"
    ends = [e.status for e in events if isinstance(e, ToolEndEvent)]
    assert ends == ["success"] * len(expect.tools)

    if expect.error is None:
        assert "".join(e.text for e in events if isinstance(e, MessageEvent)) == expect.text
    reasoning = "".join(e.text for e in events if isinstance(e, ReasoningEvent))
    assert (reasoning or None) == expect.reasoning
    usage = (done.usage.input_tokens, done.usage.output_tokens) if done.usage else None
    if expect.usage is not None or client == "fast":
        # litellm estimates usage with a tokenizer when the provider sends none.
        assert usage == expect.usage

    if expect.tools and server.request_paths[-1].endswith("/chat/completions"):
        _check_sent_back(server.requests, expect, client)
    if expect.check is not None:
        expect.check(server.requests)


def _check_sent_back(requests: list[dict[str, Any]], expect: Any, client: str) -> None:
    """The request after the tool turn carries the calls and results back, consistently."""
    messages = requests[-1]["messages"]
    assistants = [m for m in messages if m["role"] == "assistant" and m.get("tool_calls")]
    assert assistants, "the tool-call turn was sent back"
    calls = [call for message in assistants for call in message["tool_calls"]]
    ids = [call["id"] for call in calls]
    assert all(ids) and len(set(ids)) == len(ids), f"call ids must be unique: {ids}"
    results = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
    assert sorted(results) == sorted(ids)
    assert [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in calls] == [
        (name, arguments) for name, arguments in expect.tools
    ]
    fields = dict(expect.assistant_fields)
    if client == "litellm" and "reasoning" in fields:
        # litellm reads every provider's reasoning into ``reasoning_content`` and sends it
        # back under that name.
        fields["reasoning_content"] = fields.pop("reasoning")
    for key, value in fields.items():
        assert assistants[0].get(key) == value, key
    for call, wanted in zip(calls, expect.call_fields, strict=False):
        for key, value in wanted.items():
            assert call.get(key) == value, key
