"""The Vercel AI SDK (``ai`` with ``@ai-sdk/openai-compatible``) drives the service under Node.

Each test runs a scenario of tests/interop/node/scenarios.mjs, which prints one JSON line of
what the SDK observed, and checks it against what the model received. Proves that the SDK's
client tools make their round trip (``generateText`` and ``streamText`` over several steps,
``execute`` run by the SDK) while the model calls the service's ``lookup_order`` in the same
turn, which the service restores when the SDK sends the result back; that the service's
streamed tool-call deltas, text, finish reasons and usage parse without a warning; that
structured output (``Output.object``) sends a strict ``json_schema`` which reaches the model;
that a forced ``toolChoice`` does too; that a chat app's next turn, replaying the client tool's
call and result, is accepted; and that the SDK raises the service's errors without retrying
what cannot succeed.

Needs ``node`` and ``npm ci --prefix tests/interop/node`` (``.ci/run`` does both): without them
the tests are skipped locally and fail on CI (``CI=true``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ..fakes.tool_model import ThreadedModelServer

NODE_PROJECT = Path(__file__).resolve().parent / "node"
PROMPT = 'lookup_order({"order_id": "42"}) then refund({"amount": 5})'
REFUND_PARAMETERS = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "properties": {"amount": {"type": "number"}},
    "required": ["amount"],
    "additionalProperties": False,
}
ANSWER_SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "properties": {"answer": {"type": "string"}, "confidence": {"type": "number"}},
    "required": ["answer", "confidence"],
    "additionalProperties": False,
}


@pytest.fixture(scope="module")
def node() -> str:
    """The ``node`` program, with the AI SDK installed beside the scenarios; skipped without
    them (a failure on CI)."""
    program = shutil.which("node")
    if program is None:
        missing = "node is not installed (apt-get install nodejs npm)"
    elif not (NODE_PROJECT / "node_modules" / "ai").is_dir():
        missing = "the AI SDK is not installed (npm ci --prefix tests/interop/node)"
    else:
        return program
    if os.environ.get("CI") == "true":
        pytest.fail(f"{missing}; CI must run the interop tests")
    pytest.skip(missing)


def run(node: str, scenario: str, service: str, status: int = 200) -> dict[str, Any]:
    """The JSON line a scenario printed, whose requests were all answered with ``status``; a
    failure shows all it printed."""
    done = subprocess.run(
        [node, "scenarios.mjs", scenario, service],
        cwd=NODE_PROJECT,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    shown = f"exit {done.returncode}\nstdout: {done.stdout}\nstderr: {done.stderr}"
    lines = done.stdout.splitlines()
    assert done.returncode == 0 and len(lines) == 1, shown
    observed: dict[str, Any] = json.loads(lines[0])
    assert observed["warnings"] == [], shown
    assert [sent["status"] for sent in observed["http"]] == [status] * len(observed["http"]), shown
    return observed


def _names(body: dict[str, Any]) -> list[str]:
    return [tool["function"]["name"] for tool in body.get("tools") or ()]


def _offered(body: dict[str, Any], name: str) -> dict[str, Any]:
    (function,) = (t["function"] for t in body["tools"] if t["function"]["name"] == name)
    return dict(function)


def _without_system(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in body["messages"] if m["role"] != "system"]


def _call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def _whole_exchange(body: dict[str, Any], refund_id: str) -> None:
    """The model, resumed, sees its turn as it made it: the server tool's call and result
    (restored by the service) beside the client tool's (sent back by the SDK)."""
    user, assistant, *results = _without_system(body)
    assert user == {"role": "user", "content": PROMPT}
    lookup, refund = assistant["tool_calls"]
    assert refund == _call(refund_id, "refund", '{"amount":5}')
    assert lookup["function"] == {"name": "lookup_order", "arguments": '{"order_id":"42"}'}
    assert results == [
        {"role": "tool", "tool_call_id": lookup["id"], "content": "order 42 shipped"},
        {"role": "tool", "tool_call_id": refund_id, "content": "refunded 5"},
    ]


def test_generate_text_runs_a_client_tool_beside_a_server_tool(
    node: str, model: ThreadedModelServer, service: str
) -> None:
    before = len(model.requests)

    observed = run(node, "generate-tools", service)

    first, second = observed["steps"]
    (call,) = first["toolCalls"]
    assert (call["name"], call["input"]) == ("refund", {"amount": 5})
    assert first["finishReason"] == "tool-calls"
    assert first["toolResults"] == [{"id": call["id"], "output": "refunded 5"}]
    assert second["finishReason"] == "stop"
    assert observed["text"] == second["text"] == "Done: order 42 shipped; refunded 5"
    assert observed["refunds"] == [5]
    assert observed["usage"] == {"input": 24, "output": 10}
    assert observed["response"]["modelId"] == "default"
    assert observed["response"]["id"].startswith("chatcmpl-")
    asked, resumed = model.requests[before:]
    assert _names(asked) == ["lookup_order", "refund"]
    assert _offered(asked, "refund") == {
        "name": "refund",
        "description": "Refund an amount to the customer.",
        "parameters": REFUND_PARAMETERS,
    }
    assert asked["tool_choice"] == "auto"
    _whole_exchange(resumed, call["id"])


def test_stream_text_streams_the_answer(
    node: str, model: ThreadedModelServer, service: str
) -> None:
    before = len(model.requests)

    observed = run(node, "stream-text", service)

    assert observed["pieces"] == ["You sa", "id: He", "llo th", "ere"]
    assert observed["text"] == "You said: Hello there"
    assert observed["finishReason"] == "stop"
    assert observed["usage"] == {"input": 12, "output": 5}
    (sent,) = observed["http"]
    assert sent["body"]["stream"] is True
    (asked,) = model.requests[before:]
    assert _without_system(asked) == [{"role": "user", "content": "Hello there"}]
    assert _names(asked) == ["lookup_order"]


def test_stream_text_runs_a_client_tool_from_the_full_stream(
    node: str, model: ThreadedModelServer, service: str
) -> None:
    before = len(model.requests)

    observed = run(node, "stream-tools", service)

    assert observed["parts"] == [
        "start",
        "start-step",
        "tool-input-start",
        "tool-input-delta",
        "tool-input-end",
        "tool-call",
        "tool-result",
        "finish-step",
        "start-step",
        "text-start",
        "text-delta",
        "text-end",
        "finish-step",
        "finish",
    ]
    assert observed["calls"] == [{"name": "refund", "input": {"amount": 5}, "output": "refunded 5"}]
    assert observed["text"] == "Done: order 42 shipped; refunded 5"
    assert observed["usage"] == {"input": 24, "output": 10}
    asked, resumed = model.requests[before:]
    assert _names(asked) == ["lookup_order", "refund"]
    (refund_id,) = (
        call["id"]
        for message in observed["http"][1]["body"]["messages"]
        for call in message.get("tool_calls") or ()
    )
    _whole_exchange(resumed, refund_id)


def test_structured_output_sends_the_schema_to_the_model(
    node: str, model: ThreadedModelServer, service: str
) -> None:
    before = len(model.requests)

    observed = run(node, "structured", service)

    assert observed["object"] == {"answer": "You said: How sure are you?", "confidence": 1.5}
    (asked,) = model.requests[before:]
    assert asked["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "answer", "strict": True, "schema": ANSWER_SCHEMA},
    }
    assert asked["response_format"] == observed["http"][0]["body"]["response_format"]


def test_structured_output_after_a_client_tool(
    node: str, model: ThreadedModelServer, service: str
) -> None:
    before = len(model.requests)

    observed = run(node, "structured-tools", service)

    assert observed["object"] == {
        "answer": "Done: order 42 shipped; refunded 5",
        "confidence": 1.5,
    }
    assert (observed["steps"], observed["refunds"]) == (2, [5])
    asked, resumed = model.requests[before:]
    assert asked["response_format"] == resumed["response_format"]
    assert resumed["response_format"]["json_schema"]["schema"] == ANSWER_SCHEMA
    assert _names(resumed) == ["lookup_order", "refund"]


def test_a_forced_tool_choice_reaches_the_model(
    node: str, model: ThreadedModelServer, service: str
) -> None:
    before = len(model.requests)

    observed = run(node, "forced-tool", service)

    (step,) = observed["steps"]
    (call,) = step["toolCalls"]
    assert (call["name"], call["input"]) == ("refund", {"amount": 1.5})
    assert step["toolResults"] == [{"id": call["id"], "output": "refunded 1.5"}]
    (asked,) = model.requests[before:]
    assert asked["tool_choice"] == {"type": "function", "function": {"name": "refund"}}


def test_the_next_turn_replays_the_client_tool(
    node: str, model: ThreadedModelServer, service: str
) -> None:
    before = len(model.requests)

    observed = run(node, "follow-up", service)

    assert observed["first"] == "Done: order 42 shipped; refunded 5"
    assert observed["text"] == "You said: Thanks. Anything else?"
    *_, next_turn = model.requests[before:]
    history = _without_system(next_turn)
    refund_id = observed["http"][-1]["body"]["messages"][1]["tool_calls"][0]["id"]
    assert history[0] == {"role": "user", "content": PROMPT}
    assert {"role": "tool", "tool_call_id": refund_id, "content": "refunded 5"} in history
    assert history[-2:] == [
        {"role": "assistant", "content": "Done: order 42 shipped; refunded 5"},
        {"role": "user", "content": "Thanks. Anything else?"},
    ]


def test_an_unknown_agent_is_an_error_the_sdk_does_not_retry(
    node: str, model: ThreadedModelServer, service: str
) -> None:
    before = len(model.requests)

    observed = run(node, "unknown-model", service, status=404)

    assert observed["caught"] == {
        "name": "AI_APICallError",
        "message": "The model `no-such-agent` does not exist; see GET /v1/models",
        "statusCode": 404,
        "isRetryable": False,
    }
    assert len(observed["http"]) == 1
    assert model.requests[before:] == []
