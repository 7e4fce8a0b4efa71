"""EventSource, the browser's own client (the ``eventsource`` package under Node), survives a
connection cut mid-answer: it reconnects by itself with ``Last-Event-ID`` and gets the rest of
the same run. One run, one model call per turn, the tool run once, the exact text; a reconnect
after ``done`` is told to stop (204)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator

import pytest

from ..fakes.tool_model import ThreadedModelServer
from ..server_helpers import service_process
from .test_ai_sdk import NODE_PROJECT, node  # noqa: F401  (the fixture)

MESSAGE = 'slow_lookup({"order_id": "42"})'


@pytest.fixture(scope="module")
def slow_service(model: ThreadedModelServer) -> Iterator[str]:
    with service_process(
        "--model", "openai/test-model", "--api-base", model.base_url, "--api-key", "sk-test",
        "--tools", "tests/interop/slow_tools.py",
    ) as (_, url):  # fmt: skip
        yield url


def test_a_cut_connection_reconnects_to_the_same_run(
    node: str,  # noqa: F811
    slow_service: str,
    model: ThreadedModelServer,
) -> None:
    before = len(model.requests)
    done = subprocess.run(
        [node, "eventsource.mjs", slow_service, MESSAGE],
        cwd=NODE_PROJECT, capture_output=True, text=True, timeout=40, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    seen = json.loads(done.stdout)

    first, second = seen["requests"]
    assert (first["status"], first["lastEventId"]) == (200, None)
    tool_start = next(e for e in seen["events"] if e["type"] == "tool_start")
    assert second == {"status": 200, "lastEventId": tool_start["id"], "runId": first["runId"]}
    # EventSource reports the dropped connection as an ``error`` without data: not ours
    dropped = [e for e in seen["events"] if e["type"] == "error" and "data" not in e]
    events = [e for e in seen["events"] if e not in dropped]
    assert len(dropped) == 1
    kinds = [e["type"] for e in events]
    assert kinds[-1] == "done" and kinds.count("tool_start") == kinds.count("tool_end") == 1
    ids = [e["id"] for e in events]
    assert len(set(ids)) == len(ids)  # nothing twice
    text = "".join(json.loads(e["data"])["text"] for e in events if e["type"] == "message")
    assert text == "Done: order 42 shipped"
    assert seen["afterDone"] == 204
    asked = model.requests[before:]
    assert len(asked) == 2  # one model call per turn: nothing ran twice
    assert [m["content"] for m in asked[1]["messages"] if m["role"] == "tool"] == [
        "order 42 shipped"
    ]
