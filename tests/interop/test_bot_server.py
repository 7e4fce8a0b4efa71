"""A Bot Server client, written as that service's README shows one (fetch, a body reader, one
JSON step per line), works against ``/compat/bot-server`` with only its base URL changed: the
plain text answer, the ReAct steps, the suspend/resume flow with ``reactInitialSteps`` (the
tool that ran before the pause does not run again), its health answer and its error body."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator

import pytest

from ..fakes.tool_model import ThreadedModelServer
from ..server_helpers import service_process
from .test_ai_sdk import NODE_PROJECT, node  # noqa: F401  (the fixture)

TASK = 'lookup_order({"order_id": "42"}) then ask_user({"question": "Which address?"})'
REPLY = "Ship it to Paris"


@pytest.fixture(scope="module")
def bot_service(model: ThreadedModelServer) -> Iterator[str]:
    with service_process(
        "--model", "openai/test-model", "--api-base", model.base_url, "--api-key", "sk-test",
        "--tools", "tests/interop/bot_server_tools.py",
    ) as (_, url):  # fmt: skip
        yield url


def test_a_bot_server_client_suspends_and_resumes_through_the_prefix(
    node: str,  # noqa: F811
    bot_service: str,
    model: ThreadedModelServer,
) -> None:
    before = len(model.requests)
    done = subprocess.run(
        [node, "bot_server.mjs", f"{bot_service}/compat/bot-server", TASK, REPLY],
        cwd=NODE_PROJECT, capture_output=True, text=True, timeout=40, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    seen = json.loads(done.stdout)

    plain = seen["plain"]
    assert (plain["status"], plain["text"]) == (200, "You said: hello there")
    assert plain["contentType"] == "text/plain; charset=utf-8"

    first = seen["first"]
    assert first["status"] == 200
    assert first["steps"] == [
        {
            "thought": "",
            "action": "tool_call",
            "action_input": {"tool_name": "lookup_order", "parameters": {"order_id": "42"}},
            "observation": "order 42 shipped",
        },
        {
            "thought": "Which address?",
            "action": "user_input",
            "action_input": {"tool_name": "ask_user", "parameters": {"question": "Which address?"}},
        },
    ]

    second = seen["second"]
    assert second["steps"] == [
        {"thought": "", "action": "final_answer", "answer": f"You said: {REPLY}"}
    ]
    asked = model.requests[before:]
    assert len(asked) == 3  # plain, the first run's one turn, the resumed run's one turn
    resumed = asked[2]["messages"]
    roles = [m["role"] for m in resumed]
    assert roles[-5:] == ["user", "assistant", "tool", "assistant", "user"]
    call = resumed[-4]["tool_calls"][0]
    assert (call["function"]["name"], json.loads(call["function"]["arguments"])) == (
        "lookup_order",
        {"order_id": "42"},
    )
    assert resumed[-3] == {
        "role": "tool",
        "tool_call_id": call["id"],
        "content": "order 42 shipped",
    }
    assert (resumed[-2]["content"], resumed[-1]["content"]) == ("Which address?", REPLY)

    health = seen["health"]
    assert health["success"] is True
    assert set(health["data"]) == {"status", "timestamp", "uptime"}
    assert health["data"]["status"] == "healthy"
    assert health["data"]["timestamp"].endswith("Z")
    error = seen["error"]
    assert error["status"] == 400
    assert list(error["body"]) == ["error"] and isinstance(error["body"]["error"], str)
