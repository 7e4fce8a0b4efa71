"""Frontend tools (run by the client) and human approval with resume, through the public API."""

from __future__ import annotations

import anyio
import pytest

from agent_executor import (
    AgentCommand,
    AgentEvent,
    AgentExecutor,
    ApprovalRequiredEvent,
    AssistantMessage,
    DoneEvent,
    FrontendTool,
    ToolCallEvent,
    ToolEndEvent,
    ToolMessage,
    ToolStartEvent,
    UserMessage,
    tool,
)
from agent_executor.approvals import Approval
from agent_executor.models import ModelRequest
from agent_executor.models.scripted import call, tool_turn
from agent_executor.tools.ask_user import ASK_USER

from .helpers import make_executor

BROWSER_TZ = FrontendTool(
    "get_browser_timezone",
    "The time zone of the user's browser.",
    {"type": "object", "properties": {}, "additionalProperties": False},
    timeout=5,
)


async def run_until_tool_call(
    executor: AgentExecutor, command: AgentCommand, answer: dict[str, object]
) -> list[AgentEvent]:
    """Stream a run; answer its frontend call as the client would."""
    events: list[AgentEvent] = []
    async for event in executor.execute_stream(command):
        events.append(event)
        if isinstance(event, ToolCallEvent):
            outcome = executor.tool_results.deliver(event.call_id, command.user_id, **answer)
            assert outcome == "delivered"
    return events


async def test_a_frontend_tool_is_answered_by_the_client() -> None:
    executor = make_executor(
        [tool_turn(call("get_browser_timezone", id="tz")), "You are in Oslo."], [BROWSER_TZ]
    )
    command = AgentCommand(user_prompt="where am I?", user_id="alice")

    events = await run_until_tool_call(executor, command, {"result": {"tz": "Europe/Oslo"}})

    kinds = [type(e).__name__ for e in events]
    assert kinds[:3] == ["ToolStartEvent", "ToolCallEvent", "ToolEndEvent"]
    assert events[1] == ToolCallEvent(tool="get_browser_timezone", call_id="tz", arguments={})
    assert isinstance(events[2], ToolEndEvent) and events[2].status == "success"
    seen = executor.model.requests[1].messages[-1]  # type: ignore[attr-defined]
    assert seen == ToolMessage(
        tool_call_id="tz", name="get_browser_timezone", content='{"tz":"Europe/Oslo"}'
    )
    assert len(executor.tool_results) == 0


async def test_only_the_same_user_may_answer_and_only_once() -> None:
    executor = make_executor([tool_turn(call("get_browser_timezone", id="tz")), "ok"], [BROWSER_TZ])
    command = AgentCommand(user_prompt="where?", user_id="alice")
    outcomes = []

    async for event in executor.execute_stream(command):
        if isinstance(event, ToolCallEvent):
            results = executor.tool_results
            outcomes.append(results.deliver("nope", "alice", result="x"))
            outcomes.append(results.deliver("tz", "mallory", result="evil"))
            outcomes.append(results.deliver("tz", "alice", result="UTC"))
            outcomes.append(results.deliver("tz", "alice", result="again"))
            outcomes.append(results.deliver("tz", "mallory", result="again"))

    assert outcomes == ["unknown", "unknown", "delivered", "answered", "unknown"]
    assert executor.model.requests[1].messages[-1].content == "UTC"  # type: ignore[attr-defined]


async def test_a_frontend_call_nobody_answers_times_out() -> None:
    slow = FrontendTool("confirm", "Ask the user to confirm.", timeout=0.05)
    executor = make_executor([tool_turn(call("confirm", id="c")), "no answer then"], [slow])

    result = await executor.execute(AgentCommand(user_prompt="delete?", user_id="u"))

    assert [(r.tool, r.status) for r in result.tool_calls] == [("confirm", "timeout")]
    assert executor.tool_results.deliver("c", "u", result="late") == "unknown"


async def test_the_client_can_report_its_tool_failed() -> None:
    executor = make_executor([tool_turn(call("get_browser_timezone", id="tz")), "ok"], [BROWSER_TZ])
    command = AgentCommand(user_prompt="where?", user_id="u")

    events = await run_until_tool_call(executor, command, {"error": "permission denied"})

    done = events[-1]
    assert isinstance(done, DoneEvent)
    assert (done.tool_calls[0].status, done.tool_calls[0].result) == (
        "error",
        "ClientToolError: permission denied",
    )


async def test_client_tools_come_with_the_command() -> None:
    executor = make_executor([tool_turn(call("pick_file", {"kind": "pdf"}, id="f")), "got it"])
    command = AgentCommand.model_validate(
        {
            "user_prompt": "attach a file",
            "user_id": "u",
            "client_tools": [
                {
                    "name": "pick_file",
                    "description": "Let the user pick a file.",
                    "parameters": {
                        "type": "object",
                        "properties": {"kind": {"type": "string"}},
                        "required": ["kind"],
                    },
                }
            ],
        }
    )

    events = await run_until_tool_call(executor, command, {"result": "report.pdf"})

    offered = executor.model.requests[0].tools  # type: ignore[attr-defined]
    assert [t["function"]["name"] for t in offered] == ["pick_file"]
    assert isinstance(events[-1], DoneEvent)
    assert events[-1].tool_calls[0].result == "report.pdf"


async def test_client_tools_may_not_shadow_the_agents_tools() -> None:
    executor = make_executor([], [BROWSER_TZ])
    command = AgentCommand(user_prompt="x", client_tools=[{"name": "get_browser_timezone"}])

    result = await executor.execute(command)

    assert result.error is not None and result.error.code == "invalid_input"


deleted: list[str] = []


@tool(requires_approval=True)
def delete_file(path: str) -> str:
    """Delete a file (needs a person's approval)."""
    deleted.append(path)
    return f"deleted {path}"


@tool
def list_files() -> list[str]:
    """List files."""
    return ["a.txt", "b.txt"]


def approval_executor(*turns: object) -> AgentExecutor:
    deleted.clear()
    first = tool_turn(call("list_files", id="l"), call("delete_file", {"path": "a.txt"}, id="d"))
    return make_executor(
        [first, *turns], [list_files, delete_file, ASK_USER], approval_secret="test-secret"
    )


SESSION = {"user_id": "alice", "session_id": "s1"}


async def test_a_call_needing_approval_pauses_the_run() -> None:
    executor = approval_executor()

    events = [
        e async for e in executor.execute_stream(AgentCommand(user_prompt="clean up", **SESSION))
    ]

    ends = [(e.call_id, e.status) for e in events if isinstance(e, ToolEndEvent)]
    assert ends == [("l", "success")]
    [request] = [e for e in events if isinstance(e, ApprovalRequiredEvent)]
    assert (request.call_id, request.tool, request.arguments) == (
        "d",
        "delete_file",
        {"path": "a.txt"},
    )
    done = events[-1]
    assert isinstance(done, DoneEvent) and done.finish_reason == "waiting_for_approval"
    assert [p.call_id for p in done.pending_approvals] == ["d"]
    assert done.pending_approvals[0].approval_token == request.approval_token
    assert deleted == []
    assert await executor.memory.load("alice", "s1") == []  # nothing half-done in the history


@pytest.mark.parametrize("approved", [True, False])
async def test_resuming_runs_or_refuses_the_call_and_goes_on(approved: bool) -> None:
    executor = approval_executor("Done." if approved else "Left it alone.")
    paused = await executor.execute(AgentCommand(user_prompt="clean up", **SESSION))
    token = paused.pending_approvals[0].approval_token

    resumed = await executor.execute(
        AgentCommand(
            user_prompt="",
            approvals=[Approval(call_id="d", approved=approved, approval_token=token)],
            **SESSION,
        )
    )

    assert resumed.success and resumed.finish_reason == "stop"
    assert [(r.call_id, r.status) for r in resumed.tool_calls] == [
        ("d", "success" if approved else "rejected")
    ]
    assert deleted == (["a.txt"] if approved else [])
    history = await executor.memory.load("alice", "s1")
    assert [type(m).__name__ for m in history] == [
        "UserMessage",
        "AssistantMessage",
        "ToolMessage",
        "ToolMessage",
        "AssistantMessage",
    ]
    assert history[0] == UserMessage(content="clean up")
    assert isinstance(history[1], AssistantMessage)
    assert [m.tool_call_id for m in history[2:4]] == ["l", "d"]  # in the assistant's call order
    if not approved:
        assert history[3].content == "the user did not approve this call"  # type: ignore[union-attr]
    assert executor.model.requests[1].messages[-2:] == history[2:4]  # type: ignore[attr-defined]


async def test_forged_or_foreign_tokens_are_refused_and_change_nothing() -> None:
    executor = approval_executor("never")
    paused = await executor.execute(AgentCommand(user_prompt="clean up", **SESSION))
    good = paused.pending_approvals[0].approval_token
    other = AgentExecutor(model=executor.model, approval_secret="other-secret")
    other_token = other._signer.token("alice", "s1", paused_call(executor))

    attempts = [
        AgentCommand(
            user_prompt="",
            approvals=[Approval(call_id="d", approved=True, approval_token="forged")],
            **SESSION,
        ),
        AgentCommand(
            user_prompt="",
            approvals=[Approval(call_id="d", approved=True, approval_token=other_token)],
            **SESSION,
        ),
        AgentCommand(
            user_prompt="",
            approvals=[Approval(call_id="d", approved=True, approval_token=good)],
            user_id="mallory",
            session_id="s1",
        ),
        AgentCommand(
            user_prompt="",
            approvals=[Approval(call_id="x", approved=True, approval_token=good)],
            **SESSION,
        ),
    ]
    for command in attempts:
        result = await executor.execute(command)
        assert result.error is not None and result.error.code == "invalid_input"
    assert deleted == []
    still = await executor.execute(
        AgentCommand(
            user_prompt="",
            approvals=[Approval(call_id="d", approved=True, approval_token=good)],
            **SESSION,
        )
    )
    assert still.success and deleted == ["a.txt"]


def paused_call(executor: AgentExecutor) -> object:
    from agent_executor import ToolCall

    return ToolCall(id="d", name="delete_file", arguments='{"path": "a.txt"}')


async def test_ask_user_pauses_and_the_answer_is_the_result() -> None:
    executor = make_executor(
        [tool_turn(call("ask_user", {"question": "Which file?"}, id="q")), "Deleting b.txt."],
        [ASK_USER],
    )
    paused = await executor.execute(AgentCommand(user_prompt="delete a file", **SESSION))
    [pending] = paused.pending_approvals

    resumed = await executor.execute(
        AgentCommand(
            user_prompt="",
            approvals=[
                Approval(
                    call_id="q",
                    approved=True,
                    approval_token=pending.approval_token,
                    answer="b.txt",
                )
            ],
            **SESSION,
        )
    )

    assert pending.tool == "ask_user" and pending.arguments == {"question": "Which file?"}
    assert resumed.tool_calls[0].result == "b.txt"
    assert executor.model.requests[1].messages[-1].content == "b.txt"  # type: ignore[attr-defined]


async def test_approvals_need_a_session_and_a_paused_run() -> None:
    no_session = approval_executor()
    result = await no_session.execute(AgentCommand(user_prompt="clean up", user_id="u"))
    nothing_paused = await make_executor([]).execute(
        AgentCommand(
            user_prompt="",
            approvals=[Approval(call_id="d", approved=True, approval_token="t")],
            **SESSION,
        )
    )

    assert result.error is not None and "needs a session_id" in result.error.message
    assert nothing_paused.error is not None
    assert "nothing in this session is waiting" in nothing_paused.error.message


async def test_a_new_message_abandons_the_paused_run() -> None:
    executor = approval_executor("Fine, something else.")
    paused = await executor.execute(AgentCommand(user_prompt="clean up", **SESSION))
    token = paused.pending_approvals[0].approval_token

    await executor.execute(AgentCommand(user_prompt="never mind", **SESSION))
    late = await executor.execute(
        AgentCommand(
            user_prompt="",
            approvals=[Approval(call_id="d", approved=True, approval_token=token)],
            **SESSION,
        )
    )

    assert late.error is not None and late.error.code == "invalid_input"
    assert deleted == []


async def test_stream_and_execute_agree_on_a_paused_run() -> None:
    streamed = approval_executor()
    executed = approval_executor()
    command = AgentCommand(user_prompt="clean up", **SESSION)

    events = [e async for e in streamed.execute_stream(command)]
    result = await executed.execute(command)

    done = events[-1]
    assert isinstance(done, DoneEvent)
    assert result.finish_reason == done.finish_reason == "waiting_for_approval"
    assert result.pending_approvals == done.pending_approvals
    assert [e.call_id for e in events if isinstance(e, ToolStartEvent)] == ["l"]


async def test_cancel_while_waiting_for_the_client_leaves_nothing_behind() -> None:
    executor = make_executor([tool_turn(call("get_browser_timezone", id="tz"))], [BROWSER_TZ])

    with anyio.move_on_after(0.1):
        await executor.execute(AgentCommand(user_prompt="where?", user_id="u"))

    assert len(executor.tool_results) == 0


def echo_result(request: ModelRequest) -> str:
    """A model turn answering with the tool result it was given."""
    last = request.messages[-1]
    assert isinstance(last, ToolMessage)
    return f"got {last.content}"


async def test_runs_that_reuse_a_call_id_get_their_own_answers() -> None:
    """Models such as local ones number their calls (``call_0``): two users' runs waiting on
    the same id each get their own answer; the same user's second run cannot be told apart from
    the first, so its call fails instead of taking the other's answer."""
    turn = tool_turn(call("get_browser_timezone", id="call_0"))
    executor = make_executor([turn] * 3 + [echo_result] * 3, [BROWSER_TZ])
    results: dict[str, str] = {}

    async def run(name: str, user: str) -> None:
        result = await executor.execute(AgentCommand(user_prompt="tz?", user_id=user))
        results[name] = f"{result.tool_calls[0].status}: {result.content}"

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run, "alice", "alice")
            while not executor.tool_results.waiting_for("call_0", "alice"):
                await anyio.sleep(0.001)
            tg.start_soon(run, "bob", "bob")
            while not executor.tool_results.waiting_for("call_0", "bob"):
                await anyio.sleep(0.001)
            tg.start_soon(run, "alice again", "alice")
            while "alice again" not in results:
                await anyio.sleep(0.001)
            assert executor.tool_results.deliver("call_0", "bob", result="Asia/Tokyo") == (
                "delivered"
            )
            assert executor.tool_results.deliver("call_0", "alice", result="Europe/Oslo") == (
                "delivered"
            )

    assert results["alice"] == "success: got Europe/Oslo"
    assert results["bob"] == "success: got Asia/Tokyo"
    assert results["alice again"].startswith("error: got ClientToolError: another call")
    assert len(executor.tool_results) == 0
