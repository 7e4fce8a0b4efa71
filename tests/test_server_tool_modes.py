"""Frontend tools and approvals through the service: a second client answers, tokens hold."""

from __future__ import annotations

import json

import anyio
import httpx

from agent_executor import FrontendTool, InMemoryConversationStore, tool
from agent_executor.models.scripted import call, tool_turn
from agent_executor.tools.ask_user import ASK_USER
from server import Settings

from .helpers import make_executor
from .server_helpers import serve

BROWSER_TZ = FrontendTool("get_browser_timezone", "The browser's time zone.", timeout=5)
KEYS = Settings(api_keys={"key-alice": "alice", "key-bob": "bob"})
ALICE = {"Authorization": "Bearer key-alice"}
BOB = {"Authorization": "Bearer key-bob"}


def parse(text: str) -> list[tuple[str, str]]:
    events = []
    for frame in text.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in frame.split("\n") if ": " in line)
        if "event" in fields:
            events.append((fields["event"], fields.get("data", "")))
    return events


async def test_a_frontend_tool_answered_by_a_second_client_while_the_stream_waits() -> None:
    executor = make_executor(
        [tool_turn(call("get_browser_timezone", id="tz")), "You are on Europe/Oslo time."],
        [BROWSER_TZ],
    )
    outcomes: dict[str, object] = {}

    async with serve(executor, KEYS) as client:

        async def stream() -> None:
            async with client.stream(
                "POST",
                "/api/chat/stream",
                headers=ALICE,
                json={"message": "what time zone am I in?"},
            ) as response:
                outcomes["text"] = "".join([chunk async for chunk in response.aiter_text()])

        async with anyio.create_task_group() as tg:
            tg.start_soon(stream)
            with anyio.fail_after(5):
                while not executor.tool_results.waiting_for("tz", "alice"):
                    await anyio.sleep(0.01)
            answer = {"call_id": "tz", "result": {"timezone": "Europe/Oslo"}}
            outcomes["bob"] = (
                await client.post("/api/chat/tool-result", json=answer, headers=BOB)
            ).status_code
            outcomes["unknown"] = (
                await client.post(
                    "/api/chat/tool-result", json={"call_id": "nope", "result": 1}, headers=ALICE
                )
            ).status_code
            outcomes["alice"] = (
                await client.post("/api/chat/tool-result", json=answer, headers=ALICE)
            ).status_code
            outcomes["again"] = (
                await client.post("/api/chat/tool-result", json=answer, headers=ALICE)
            ).status_code

    assert (outcomes["bob"], outcomes["unknown"], outcomes["alice"], outcomes["again"]) == (
        404,
        404,
        200,
        409,
    )
    events = parse(str(outcomes["text"]))
    kinds = [kind for kind, _ in events]
    assert kinds[:3] == ["tool_start", "tool_call", "tool_end"]
    assert json.loads(events[1][1]) == {
        "call_id": "tz",
        "tool": "get_browser_timezone",
        "arguments": {},
    }
    assert kinds[-1] == "done"
    seen = executor.model.requests[1].messages[-1]  # type: ignore[attr-defined]
    assert seen.content == '{"timezone":"Europe/Oslo"}'


async def test_tool_result_requests_are_validated() -> None:
    async with serve(make_executor([])) as client:
        missing = await client.post("/api/chat/tool-result", json={"call_id": "x"})
        both = await client.post(
            "/api/chat/tool-result", json={"call_id": "x", "result": 1, "error": "e"}
        )
        bad = await client.post("/api/chat/tool-result", content=b"[1]")

    assert [r.status_code for r in (missing, both, bad)] == [400, 400, 400]
    assert "give 'result' or 'error'" in missing.json()["error"]["message"]


deleted: list[str] = []


@tool(requires_approval=True)
def delete_file(path: str) -> str:
    """Delete a file."""
    deleted.append(path)
    return f"deleted {path}"


async def pause(client: httpx.AsyncClient, headers: dict[str, str]) -> dict[str, object]:
    response = await client.post(
        "/api/chat/stream",
        headers=headers,
        json={"message": "delete a.txt", "session_id": "s", "events": "json"},
    )
    events = parse(response.text)
    [approval] = [json.loads(data) for kind, data in events if kind == "approval_required"]
    done = json.loads(events[-1][1])
    assert done["finish_reason"] == "waiting_for_approval"
    assert done["pending_approvals"][0]["approval_token"] == approval["approval_token"]
    return approval


async def test_approve_and_reject_through_the_service() -> None:
    deleted.clear()
    turns = [
        tool_turn(call("delete_file", {"path": "a.txt"}, id="d")),
        "Deleted.",
        tool_turn(call("delete_file", {"path": "a.txt"}, id="d")),
        "Kept it.",
    ]
    executor = make_executor(turns, [delete_file], approval_secret="s3cret")

    async with serve(executor, KEYS) as client:
        approval = await pause(client, ALICE)
        forged = await client.post(
            "/api/chat",
            headers=ALICE,
            json={
                "session_id": "s",
                "approvals": [{"call_id": "d", "approved": True, "approval_token": "forged"}],
            },
        )
        stolen = await client.post(
            "/api/chat",
            headers=BOB,
            json={
                "session_id": "s",
                "approvals": [
                    {"call_id": "d", "approved": True, "approval_token": approval["approval_token"]}
                ],
            },
        )
        approved = await client.post(
            "/api/chat",
            headers=ALICE,
            json={
                "session_id": "s",
                "approvals": [
                    {"call_id": "d", "approved": True, "approval_token": approval["approval_token"]}
                ],
            },
        )
        approval = await pause(client, ALICE)
        rejected = await client.post(
            "/api/chat/stream",
            headers=ALICE,
            json={
                "session_id": "s",
                "events": "json",
                "approvals": [
                    {
                        "call_id": "d",
                        "approved": False,
                        "approval_token": approval["approval_token"],
                    }
                ],
            },
        )

    assert forged.status_code == 400 and "not valid" in forged.json()["error"]["message"]
    assert stolen.status_code == 400
    assert approved.status_code == 200
    assert approved.json()["content"] == "Deleted."
    assert approved.json()["tool_calls"][0]["status"] == "success"
    assert deleted == ["a.txt"]
    ends = [json.loads(d) for k, d in parse(rejected.text) if k == "tool_end"]
    assert ends[0]["status"] == "rejected"
    assert deleted == ["a.txt"]


async def test_a_paused_run_resumes_after_a_restart_with_the_same_store_and_secret() -> None:
    """The service goes away between the pause and the resume: a new executor on the same
    conversation store and approval secret (``--approval-secret``) picks the run up; one with
    another secret refuses the token and leaves the paused run as it was."""
    deleted.clear()
    store = InMemoryConversationStore()
    first = make_executor(
        [tool_turn(call("delete_file", {"path": "a.txt"}, id="d"))],
        [delete_file],
        memory=store,
        approval_secret="s3cret",
    )
    async with serve(first, KEYS) as client:
        approval = await pause(client, ALICE)
    await first.aclose()

    decision = {
        "session_id": "s",
        "approvals": [
            {"call_id": "d", "approved": True, "approval_token": approval["approval_token"]}
        ],
    }
    stranger = make_executor(["never"], [delete_file], memory=store, approval_secret="other")
    async with serve(stranger, KEYS) as client:
        refused = await client.post("/api/chat", headers=ALICE, json=decision)
    restarted = make_executor(["Deleted."], [delete_file], memory=store, approval_secret="s3cret")
    async with serve(restarted, KEYS) as client:
        resumed = await client.post("/api/chat", headers=ALICE, json=decision)

    assert refused.status_code == 400
    assert resumed.status_code == 200, resumed.text
    assert resumed.json()["content"] == "Deleted."
    assert deleted == ["a.txt"]
    history = await store.load("alice", "s")
    assert [m.role for m in history] == ["user", "assistant", "tool", "assistant"]


async def test_ask_user_through_the_service() -> None:
    executor = make_executor(
        [tool_turn(call("ask_user", {"question": "Which colour?"}, id="q")), "Blue it is."],
        [ASK_USER],
    )

    async with serve(executor) as client:
        paused = await client.post(
            "/api/chat", json={"message": "paint it", "session_id": "s", "user_id": "u"}
        )
        [pending] = paused.json()["pending_approvals"]
        answered = await client.post(
            "/api/chat",
            json={
                "session_id": "s",
                "user_id": "u",
                "approvals": [
                    {
                        "call_id": "q",
                        "approved": True,
                        "answer": "blue",
                        "approval_token": pending["approval_token"],
                    }
                ],
            },
        )

    assert paused.json()["finish_reason"] == "waiting_for_approval"
    assert pending["arguments"] == {"question": "Which colour?"}
    assert answered.json()["content"] == "Blue it is."
    assert answered.json()["tool_calls"][0]["result"] == "blue"


async def test_client_declared_tools_through_the_service() -> None:
    executor = make_executor([tool_turn(call("confirm", {"text": "sure?"}, id="c")), "ok"])

    async with serve(executor) as client:

        async def stream() -> str:
            response = await client.post(
                "/api/chat/stream",
                json={
                    "message": "do it",
                    "user_id": "u",
                    "tools": [
                        {
                            "name": "confirm",
                            "description": "Ask the user to confirm.",
                            "parameters": {
                                "type": "object",
                                "properties": {"text": {"type": "string"}},
                            },
                        }
                    ],
                },
            )
            return response.text

        async with anyio.create_task_group() as tg:
            results: list[str] = []

            async def run() -> None:
                results.append(await stream())

            tg.start_soon(run)
            with anyio.fail_after(5):
                while not executor.tool_results.waiting_for("c", "u"):
                    await anyio.sleep(0.01)
            ok = await client.post(
                "/api/chat/tool-result", json={"call_id": "c", "result": True, "user_id": "u"}
            )

    assert ok.status_code == 200
    assert "event: tool_call" in results[0]
    assert results[0].rstrip().endswith("event: done\ndata:")
