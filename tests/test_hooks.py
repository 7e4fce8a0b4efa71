"""Hook points that steer a run: changing the command, the request, arguments and results,
and failing closed when a hook breaks."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from agent_executor import (
    AgentCommand,
    Hook,
    HookRejection,
    ModelRequest,
    RunContext,
    ToolCall,
    UserMessage,
    tool,
)
from agent_executor.models.scripted import call, tool_turn
from agent_executor.results import ToolCallRecord

from .helpers import make_executor, sample


@tool
def delete_file(path: str) -> str:
    """Deletes a file (in tests, only says so)."""
    return f"deleted {path}"


class Steering(Hook):
    async def before_agent_start(self, ctx: RunContext) -> AgentCommand:
        return ctx.command.model_copy(update={"user_prompt": ctx.command.user_prompt.upper()})

    async def before_model(self, ctx: RunContext, request: ModelRequest) -> ModelRequest:
        request.params["temperature"] = 0
        return request

    async def before_tool_call(self, ctx: RunContext, call: ToolCall) -> ToolCall:
        return call.model_copy(update={"arguments": '{"path": "/tmp/safe"}'})

    async def after_tool_call(
        self, ctx: RunContext, call: ToolCall, record: ToolCallRecord
    ) -> ToolCallRecord:
        return record.model_copy(update={"result": record.result + " (audited)"})


async def test_hooks_can_change_command_request_arguments_and_results() -> None:
    executor = make_executor(
        [tool_turn(call("delete_file", {"path": "/etc/passwd"})), "done"],
        [delete_file],
        hooks=[Steering()],
    )

    result = await executor.execute(AgentCommand(user_prompt="clean up"))

    requests = executor.model.requests  # type: ignore[attr-defined]
    assert requests[0].messages == [UserMessage(content="CLEAN UP")]
    assert requests[0].params == {"temperature": 0}
    assert result.tool_calls[0].result == "deleted /tmp/safe (audited)"
    assert requests[1].messages[-1].content == "deleted /tmp/safe (audited)"


class Broken(Hook):
    def __init__(self, point: str) -> None:
        self.point = point

    async def before_agent_start(self, ctx: RunContext) -> None:
        self._maybe("before_agent_start")

    async def before_tool_call(self, ctx: RunContext, call: ToolCall) -> None:
        self._maybe("before_tool_call")

    async def after_agent_complete(self, ctx: RunContext, result: Any) -> None:
        self._maybe("after_agent_complete")

    def _maybe(self, point: str) -> None:
        if point == self.point:
            raise RuntimeError(f"bug in {point}")


async def test_a_broken_before_agent_start_hook_refuses_the_run() -> None:
    executor = make_executor([], hooks=[Broken("before_agent_start")])

    result = await executor.execute(AgentCommand(user_prompt="hi"))

    assert result.error is not None
    assert result.error.code == "hook_rejected"
    assert result.error.message == "before_agent_start hook Broken failed"
    assert (
        sample(
            executor.metrics.registry,
            "agent_executor_hook_rejections_total",
            hook="before_agent_start",
        )
        == 1
    )


async def test_a_broken_before_tool_call_hook_refuses_the_call_not_the_run() -> None:
    executor = make_executor(
        [tool_turn(call("delete_file", {"path": "x"})), "ok"],
        [delete_file],
        hooks=[Broken("before_tool_call")],
    )

    result = await executor.execute(AgentCommand(user_prompt="hi"))

    assert result.success
    assert result.tool_calls[0].status == "rejected"
    assert "before_tool_call hook Broken failed" in result.tool_calls[0].result


async def test_a_broken_notification_hook_does_not_change_the_result() -> None:
    executor = make_executor(["fine"], hooks=[Broken("after_agent_complete")])

    result = await executor.execute(AgentCommand(user_prompt="hi"))

    assert result.success and result.content == "fine"


class Blocker(Hook):
    async def before_tool_call(self, ctx: RunContext, call: ToolCall) -> None:
        if call.name == "delete_file":
            raise HookRejection("deleting files needs a human")


async def test_a_blocking_hook_lets_the_run_finish_with_an_answer() -> None:
    executor = make_executor(
        [tool_turn(call("delete_file", {"path": "/"})), "I may not delete files."],
        [delete_file],
        hooks=[Blocker()],
    )

    result = await executor.execute(AgentCommand(user_prompt="rm -rf /"))

    assert result.success and result.content == "I may not delete files."
    assert result.tool_calls[0].status == "rejected"
    assert result.tool_calls[0].result == "the call was refused: deleting files needs a human"
    assert (
        sample(
            executor.metrics.registry,
            "agent_executor_hook_rejections_total",
            hook="before_tool_call",
        )
        == 1
    )


async def test_hooks_run_in_registration_order() -> None:
    order: list[str] = []

    class Named(Hook):
        def __init__(self, label: str) -> None:
            self.label = label

        async def before_model(self, ctx: RunContext, request: ModelRequest) -> None:
            order.append(self.label)

    executor = make_executor(["x"], hooks=[Named("first"), Named("second"), Named("third")])
    await executor.execute(AgentCommand(user_prompt="hi"))

    assert order == ["first", "second", "third"]


async def test_tool_allowlist_limits_what_the_model_is_offered_and_may_call() -> None:
    from agent_executor import ToolAllowlistHook

    @tool
    def read_file(path: str) -> str:
        """Reads a file."""
        return f"contents of {path}"

    hook = ToolAllowlistHook(users={"intern": ["read_file"]}, roles={"admin": ["*"]}, default=[])
    executor = make_executor(
        [
            tool_turn(call("delete_file", {"path": "/"})),
            "not allowed, sorry",
            tool_turn(call("delete_file", {"path": "/tmp/x"})),
            "deleted",
        ],
        [delete_file, read_file],
        hooks=[hook],
    )

    intern = await executor.execute(AgentCommand(user_prompt="rm /", user_id="intern"))
    admin = await executor.execute(
        AgentCommand(user_prompt="rm /tmp/x", user_id="ops", metadata={"role": "admin"})
    )

    offered = [[t["function"]["name"] for t in r.tools] for r in executor.model.requests]  # type: ignore[attr-defined]
    assert offered[0] == ["read_file"]
    assert offered[2] == ["delete_file", "read_file"]
    assert intern.tool_calls[0].status == "rejected"
    assert intern.tool_calls[0].result == (
        "the call was refused: delete_file is not allowed for this user"
    )
    assert admin.tool_calls[0].status == "success"


async def test_users_without_an_entry_get_the_default() -> None:
    from agent_executor import ToolAllowlistHook

    open_hook = ToolAllowlistHook(users={"x": ["read_file"]})
    closed_hook = ToolAllowlistHook(users={"x": ["read_file"]}, default=[])
    context = RunContext(
        command=AgentCommand(user_prompt="hi", user_id="nobody"), request_id="r", mode="execute"
    )

    assert open_hook.allowed(context) is None
    assert closed_hook.allowed(context) == frozenset()


async def test_the_audit_hook_records_every_step(caplog: pytest.LogCaptureFixture) -> None:
    from agent_executor import AuditLogHook

    executor = make_executor(
        [tool_turn(call("delete_file", {"path": "/tmp/a"})), "done"],
        [delete_file],
        hooks=[AuditLogHook()],
    )
    caplog.set_level(logging.INFO, logger="agent_executor.audit")

    await executor.execute(AgentCommand(user_prompt="secret prompt", user_id="alice"))

    audits = [r.audit for r in caplog.records if hasattr(r, "audit")]  # type: ignore[attr-defined]
    assert [a["event"] for a in audits] == [
        "run_started",
        "model_turn",
        "tool_call",
        "tool_result",
        "model_turn",
        "run_completed",
    ]
    assert all(a["user_id"] == "alice" for a in audits)
    assert audits[0]["prompt_chars"] == len("secret prompt")
    assert "secret prompt" not in caplog.text
    assert audits[3]["status"] == "success"
    assert audits[3].get("result") is None
