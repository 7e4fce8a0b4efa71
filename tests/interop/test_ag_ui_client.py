"""AG-UI's own client, ``@ag-ui/client``'s ``HttpAgent``, drives ``POST /api/ag-ui`` under Node.

Each test runs a scenario of tests/interop/node/ag_ui.mjs, which prints one JSON line of what
the client observed, and checks it against what the model received. The client validates every
event against the protocol's schema and runs its event verifier (order; messages, calls and the
run opened and closed) before its subscribers see it, and any violation fails the run: so each
scenario proves that the service's sequence passes it. Proves a streamed answer, the service's
own tool with its result, a client tool's round trip (the run ends after the call's
``TOOL_CALL_END``; the app adds the tool's result and runs the agent again, and the model sees
the whole exchange, the service's call restored beside the client's), ``RUN_ERROR`` when the
model fails mid-answer, and a refusal before the stream as the HTTP error the client raises.

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

from ..fakes.openai_server import Stream, text_stream
from ..fakes.tool_model import ThreadedModelServer

NODE_PROJECT = Path(__file__).resolve().parent / "node"
BOTH = 'lookup_order({"order_id": "42"}) then refund({"amount": 5})'


@pytest.fixture(scope="module")
def node() -> str:
    """The ``node`` program, with ``@ag-ui/client`` installed beside the scenarios; skipped
    without them (a failure on CI)."""
    program = shutil.which("node")
    if program is None:
        missing = "node is not installed (apt-get install nodejs npm)"
    elif not (NODE_PROJECT / "node_modules" / "@ag-ui" / "client").is_dir():
        missing = "@ag-ui/client is not installed (npm ci --prefix tests/interop/node)"
    else:
        return program
    if os.environ.get("CI") == "true":
        pytest.fail(f"{missing}; CI must run the interop tests")
    pytest.skip(missing)


def run(node: str, scenario: str, service: str) -> dict[str, Any]:
    """The JSON line a scenario printed; a failure shows all it printed. The client warned
    about nothing (it warns when it strips or translates what it does not know)."""
    done = subprocess.run(
        [node, "ag_ui.mjs", scenario, service],
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
    return observed


def text_events(pieces: int) -> list[str]:
    return ["TEXT_MESSAGE_START", *["TEXT_MESSAGE_CONTENT"] * pieces, "TEXT_MESSAGE_END"]


CALL = ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END"]


def _without_system(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in body["messages"] if m["role"] != "system"]


def test_an_answer_streams_as_one_message(
    node: str, model: ThreadedModelServer, service: str
) -> None:
    before = len(model.requests)

    observed = run(node, "text", service)

    assert observed["events"] == ["RUN_STARTED", *text_events(4), "RUN_FINISHED"]
    assert observed["newMessages"] == [
        {"role": "assistant", "content": "You said: Hello there", "toolCalls": [],
         "toolCallId": None}
    ]  # fmt: skip
    assert observed["finished"] == {"outcome": "success", "pendingToolCallIds": []}
    assert [sent["status"] for sent in observed["http"]] == [200]
    (asked,) = model.requests[before:]
    assert _without_system(asked) == [{"role": "user", "content": "Hello there"}]
    assert [t["function"]["name"] for t in asked["tools"]] == ["lookup_order"]


def test_the_services_tool_comes_with_its_result(
    node: str, model: ThreadedModelServer, service: str
) -> None:
    before = len(model.requests)

    observed = run(node, "server-tool", service)

    assert observed["events"] == [
        "RUN_STARTED", *CALL, "TOOL_CALL_RESULT", *text_events(4), "RUN_FINISHED",
    ]  # fmt: skip
    (call,) = observed["calls"]
    assert (call["name"], call["args"]) == ("lookup_order", {"order_id": "42"})
    assert observed["toolResults"] == [{"id": call["id"], "content": "order 42 shipped"}]
    assert [(m["role"], m["content"]) for m in observed["newMessages"]] == [
        ("assistant", None),
        ("tool", "order 42 shipped"),
        ("assistant", "Done: order 42 shipped"),
    ]
    asked, answered = model.requests[before:]
    assert _without_system(asked) == [
        {"role": "user", "content": 'lookup_order({"order_id": "42"})'}
    ]
    assert _without_system(answered)[-1] == {
        "role": "tool", "tool_call_id": call["id"], "content": "order 42 shipped",
    }  # fmt: skip


def test_a_client_tool_ends_the_run_and_its_result_continues_it(
    node: str, model: ThreadedModelServer, service: str
) -> None:
    before = len(model.requests)

    observed = run(node, "client-tool", service)

    first, second = observed["first"], observed["second"]
    assert first["events"] == ["RUN_STARTED", *CALL, "TOOL_CALL_RESULT", *CALL, "RUN_FINISHED"]
    lookup, refund = first["calls"]
    assert (refund["name"], refund["args"]) == ("refund", {"amount": 5})
    assert first["finished"] == {"outcome": "success", "pendingToolCallIds": [refund["id"]]}
    assert observed["refunds"] == [5]
    assert second["events"] == ["RUN_STARTED", *text_events(6), "RUN_FINISHED"]
    assert second["calls"] == second["toolResults"] == []  # the resumed calls are not repeated
    assert observed["messages"][-1]["content"] == "Done: order 42 shipped; refunded 5"
    assert [m["role"] for m in observed["messages"]] == [
        "user", "assistant", "tool", "assistant", "tool", "assistant",
    ]  # fmt: skip
    asked, resumed = model.requests[before:]
    assert [t["function"]["name"] for t in asked["tools"]] == ["lookup_order", "refund"]
    user, turn, *results = _without_system(resumed)
    assert user == {"role": "user", "content": BOTH}
    assert [c["id"] for c in turn["tool_calls"]] == [lookup["id"], refund["id"]]
    assert results == [
        {"role": "tool", "tool_call_id": lookup["id"], "content": "order 42 shipped"},
        {"role": "tool", "tool_call_id": refund["id"], "content": "refunded 5"},
    ]
    sent = observed["http"][1]["body"]
    assert (sent["threadId"], sent["messages"][-1]["toolCallId"]) == (
        "thread-client-tool",
        refund["id"],
    )


def test_a_model_failing_mid_answer_is_run_error(
    node: str, model: ThreadedModelServer, service: str
) -> None:
    model.server.script(Stream(text_stream(["Hel", "lo"]), drop_after=2))
    before = len(model.requests)

    observed = run(node, "run-error", service)

    assert observed["events"] == ["RUN_STARTED", *text_events(1), "RUN_ERROR"]
    assert observed["failed"]["code"] == "llm_error"
    assert observed["finished"] is None
    assert "rejected" not in observed  # the client resolves a run that ended with RUN_ERROR
    assert len(model.requests[before:]) == 1


def test_a_refusal_before_the_stream_is_the_http_error_the_client_raises(
    node: str, model: ThreadedModelServer, service: str
) -> None:
    before = len(model.requests)

    observed = run(node, "refused", service)

    assert observed["events"] == []
    caught = observed["caught"]
    assert caught["status"] == 400
    assert caught["payload"]["error"]["code"] == "invalid_input"
    assert caught["payload"]["error"]["message"].startswith("unknown agent 'no-such-agent'")
    assert model.requests[before:] == []
