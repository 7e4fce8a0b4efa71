"""The AI SDK's own chat client (``AbstractChat``, which React's ``useChat`` is built on, with
``DefaultChatTransport``) drives ``POST /api/chat/ui`` of the real service under Node.

Each test runs a scenario of tests/interop/node/ui_chat.mjs, which prints the chat's messages
as the SDK built them and the requests its transport sent, and checks them against what the
model received. Proves that the SDK reads the service's UI message stream into the parts an
app renders (text, the service's own tool with its output), that the SDK's client-tool flow
(``onToolCall``, ``addToolOutput``, ``sendAutomaticallyWhen``) and its approval flow
(``addToolApprovalResponse``) go on with the paused run in the same assistant message while the
model sees the whole exchange, that ``regenerate()`` replaces the answer in the service's
memory too, that ``resumeStream()`` from a reloaded page gets an answer still in flight (and a
204 once there is none), and that a refused request is the SDK's error.

Needs ``node`` and ``npm ci --prefix tests/interop/node``: without them the tests are skipped
locally and fail on CI (``CI=true``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ..fakes.tool_model import ThreadedModelServer
from ..server_helpers import service_process

NODE_PROJECT = Path(__file__).resolve().parent / "node"
UI_TOOLS = "tests/interop/ui_tools.py"


@pytest.fixture(scope="module")
def node() -> str:
    """The ``node`` program, with the AI SDK installed beside the scenario; skipped without
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


@pytest.fixture(scope="module")
def service(model: ThreadedModelServer) -> Iterator[str]:
    """The service on :func:`model`, with the tools of tests/interop/ui_tools.py."""
    with service_process(
        "--model", "openai/test-model",
        "--api-base", model.base_url,
        "--api-key", "sk-test",
        "--tools", UI_TOOLS,
    ) as (_, url):  # fmt: skip
        yield url


def run(node: str, scenario: str, service: str) -> dict[str, Any]:
    """The JSON line the scenario printed; a failure shows all it printed."""
    done = subprocess.run(
        [node, "ui_chat.mjs", scenario, service],
        cwd=NODE_PROJECT,
        capture_output=True,
        text=True,
        timeout=40,
        check=False,
    )
    shown = f"exit {done.returncode}\nstdout: {done.stdout}\nstderr: {done.stderr}"
    lines = done.stdout.splitlines()
    assert done.returncode == 0 and len(lines) == 1, shown
    observed: dict[str, Any] = json.loads(lines[0])
    return observed


def _without_system(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in body["messages"] if m["role"] != "system"]


def _statuses(observed: dict[str, Any]) -> list[tuple[str, str, int]]:
    return [(sent["method"], sent["path"], sent["status"]) for sent in observed["http"]]


def _tool_part(message: dict[str, Any], name: str) -> dict[str, Any]:
    (part,) = (p for p in message["parts"] if p["type"] == f"tool-{name}")
    return dict(part)


def test_a_text_answer(node: str, model: ThreadedModelServer, service: str) -> None:
    before = len(model.requests)

    observed = run(node, "text", service)

    assert observed["status"] == "ready"
    user, answer = observed["messages"]
    assert user["parts"] == [{"type": "text", "text": "Hello there"}]
    assert answer["parts"] == [
        {"type": "step-start"},
        {"type": "text", "text": "You said: Hello there", "state": "done"},
    ]
    metadata = answer["metadata"]
    assert answer["id"] == f"msg-{metadata['run_id']}"
    assert metadata["agent"] == "default"
    assert len(metadata["request_id"]) == 32
    assert (metadata["finish_reason"], metadata["usage"]) == (
        "stop",
        {"input_tokens": 12, "output_tokens": 5},
    )
    (sent,) = observed["http"]
    assert (sent["status"], sorted(sent["body"])) == (200, ["id", "messages", "trigger"])
    (asked,) = model.requests[before:]
    assert _without_system(asked) == [{"role": "user", "content": "Hello there"}]


def test_the_services_own_tool_is_a_tool_part_with_its_output(
    node: str, model: ThreadedModelServer, service: str
) -> None:
    before = len(model.requests)

    observed = run(node, "server-tool", service)

    _, answer = observed["messages"]
    lookup = _tool_part(answer, "lookup_order")
    assert [part["type"] for part in answer["parts"]] == [
        "step-start",
        "tool-lookup_order",
        "step-start",
        "text",
    ]
    assert lookup == {
        "type": "tool-lookup_order",
        "toolCallId": lookup["toolCallId"],
        "state": "output-available",
        "input": {"order_id": "42"},
        "output": "order 42 shipped",
        "providerExecuted": True,
    }
    assert answer["parts"][-1]["text"] == "Done: order 42 shipped"
    _, answered = model.requests[before:]
    assert _without_system(answered)[1:] == [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": lookup["toolCallId"],
                    "type": "function",
                    "function": {"name": "lookup_order", "arguments": '{"order_id":"42"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": lookup["toolCallId"], "content": "order 42 shipped"},
    ]


def test_a_client_tool_round_trip_goes_on_in_the_same_message(
    node: str, model: ThreadedModelServer, service: str
) -> None:
    before = len(model.requests)

    observed = run(node, "client-tool", service)

    assert observed["calls"] == [{"name": "refund", "input": {"amount": 5}}]
    assert _statuses(observed) == [("POST", "/api/chat/ui", 200)] * 2
    _, answer = observed["messages"]
    assert [part["type"] for part in answer["parts"]] == [
        "step-start",
        "tool-lookup_order",
        "tool-refund",
        "step-start",
        "text",
    ]
    refund = _tool_part(answer, "refund")
    assert (refund["state"], refund["output"]) == ("output-available", "refunded 5")
    assert "providerExecuted" not in refund
    assert answer["parts"][-1]["text"] == "Done: order 42 shipped; refunded 5"
    first, resumed = (sent["body"] for sent in observed["http"])
    assert resumed["messages"][-1]["id"] == answer["id"]  # the SDK continued its message
    declared = first["tools"][0]
    asked, answered = model.requests[before:]
    (offered,) = (t["function"] for t in asked["tools"] if t["function"]["name"] == "refund")
    assert offered == {
        "name": "refund",
        "description": declared["description"],
        "parameters": declared["parameters"],
    }
    assistant, *results = _without_system(answered)[1:]
    lookup_id = _tool_part(answer, "lookup_order")["toolCallId"]
    assert [call["id"] for call in assistant["tool_calls"]] == [lookup_id, refund["toolCallId"]]
    assert results == [
        {"role": "tool", "tool_call_id": lookup_id, "content": "order 42 shipped"},
        {"role": "tool", "tool_call_id": refund["toolCallId"], "content": "refunded 5"},
    ]


@pytest.mark.parametrize(
    ("scenario", "state", "result"),
    [
        ("approve", "output-available", "order 42 cancelled"),
        ("deny", "output-denied", "the user did not approve this call"),
    ],
)
def test_an_approval_with_the_sdks_approval_response(
    node: str, model: ThreadedModelServer, service: str, scenario: str, state: str, result: str
) -> None:
    before = len(model.requests)

    observed = run(node, scenario, service)

    asked = _tool_part(observed["asked"], "cancel_order")
    assert (asked["state"], asked["providerExecuted"]) == ("approval-requested", True)
    token = asked["approval"]["id"]
    _, answer = observed["messages"]
    cancel = _tool_part(answer, "cancel_order")
    assert cancel["state"] == state
    assert answer["parts"][-1] == {"type": "text", "text": f"Done: {result}", "state": "done"}
    sent = _tool_part(observed["http"][1]["body"]["messages"][-1], "cancel_order")
    assert (sent["state"], sent["approval"]) == (
        "approval-responded",
        {"id": token, "approved": scenario == "approve"},
    )
    _, resumed = model.requests[before:]
    assert _without_system(resumed)[-1] == {
        "role": "tool",
        "tool_call_id": cancel["toolCallId"],
        "content": result,
    }


def test_regenerate_replaces_the_answer_in_the_services_memory(
    node: str, model: ThreadedModelServer, service: str
) -> None:
    before = len(model.requests)

    observed = run(node, "regenerate", service)

    *_, regenerated = observed["regenerated"]
    assert regenerated["parts"][-1]["text"] == "You said: Second"
    assert regenerated["id"] != observed["replaced"]
    assert observed["http"][2]["body"]["trigger"] == "regenerate-message"
    _, second, again, third = (_without_system(body) for body in model.requests[before:])
    assert second == [
        {"role": "user", "content": "First"},
        {"role": "assistant", "content": "You said: First"},
        {"role": "user", "content": "Second"},
    ]
    assert again == second
    assert third == [
        *second,
        {"role": "assistant", "content": "You said: Second"},
        {"role": "user", "content": "Third"},
    ]


def test_resume_stream_gets_an_answer_still_in_flight(
    node: str, model: ThreadedModelServer, service: str
) -> None:
    before = len(model.requests)

    observed = run(node, "resume", service)

    assert _statuses(observed) == [
        ("POST", "/api/chat/ui", 200),
        ("GET", "/api/chat/ui/ui-resume/stream", 200),
        ("GET", "/api/chat/ui/ui-resume/stream", 204),
    ]
    left = observed["left"][-1]
    assert _tool_part(left, "hold")["state"] == "input-available"
    assert observed["replayed"]["id"] == left["id"]
    user, answer = observed["messages"]
    assert user == observed["left"][0]
    assert answer["id"] == left["id"]
    assert [part["type"] for part in answer["parts"]] == [
        "step-start",
        "tool-hold",
        "step-start",
        "text",
    ]
    assert _tool_part(answer, "hold")["output"] == "released"
    assert answer["parts"][-1]["text"] == "Done: released"
    _, answered = model.requests[before:]  # nothing ran twice
    assert _without_system(answered)[-1]["content"] == "released"


def test_a_refused_request_is_the_sdks_error(
    node: str, model: ThreadedModelServer, service: str
) -> None:
    before = len(model.requests)

    observed = run(node, "unknown-agent", service)

    assert observed["status"] == "error"
    error = observed["error"]
    assert (error["name"], error["statusCode"]) == ("AI_APICallError", 400)
    detail = json.loads(error["message"])["error"]
    assert detail["code"] == "invalid_input"
    assert detail["message"] == "unknown agent 'no-such-agent'; configured agents: default"
    assert len(observed["messages"]) == 1
    assert model.requests[before:] == []
