"""An agent used as another agent's tool: :class:`AgentTool`, from ``AgentExecutor.as_tool()``.

A call runs the agent on the task the calling model wrote, in the calling tool's own task, as
a run nested in the calling run:

- its events reach the caller's stream as they happen, each wrapped in a
  :class:`~agent_executor.events.NestedEvent` naming the agent and the call (not when the
  caller runs ``execute()``: nobody would see them);
- its usage is added to the caller's when it ends (also when it is cancelled: what it spent
  until then), and its sources (``done.sources``) to the caller's sources;
- cancelling the caller, or the call's timeout, cancels it (its permit is released);
- it is a run of its own agent: that agent's guards judge the task, its hooks and limits
  apply, it takes one of its permits, its metrics count it. The caller's hooks see the call
  like any other tool call. Its ``RunContext.parent`` is the caller's context;
- it acts for the caller's user, with the caller's address and headers; its request id is the
  caller's followed by ``/`` and the call id, so one search finds both in the logs;
- it may call the client's tools of the caller's streamed run (``client_tool_mode="wait"``):
  their ``tool_call`` reaches the client inside ``nested`` and the client's answer comes back
  to it, whichever agent's ``ToolResults`` it is delivered to;
- it may spend what is left of the caller's spending limits (``max_*``), no more.

Its answer (the agent's text) is the tool's result; a run that fails, or stops to wait for a
person, is a tool error the calling model is told about, and the calling run goes on.
"""

from __future__ import annotations

import dataclasses
import math
from functools import partial
from typing import Any, Literal

from .._engine.budget import kept_if_cancelled
from .._engine.orchestrator import cite
from .._engine.state import Emit, Mode, RequestOrigin, RunCommand, drop
from .._engine.tool_scope import ToolScope, current_tool_scope
from ..agent import Agent
from ..client_tools import ClientTool
from ..command import AgentCommand
from ..context import RunContext, current_run_context
from ..errors import AgentExecutorError
from ..events import AgentEvent, DoneEvent
from ..messages import Usage
from ..results import AgentResult
from ..tools import Tool

__all__ = ["MAX_DEPTH", "AgentTool", "AgentToolError", "SessionPolicy"]

SessionPolicy = Literal["none", "linked"]
"""What the agent remembers between calls: ``none``, nothing (each call starts afresh);
``linked``, its own history per session of the caller (session id
``<caller's session id>/<tool name>``, in the agent's own memory, for the same user)."""

MAX_DEPTH = 4
"""How deep agents may nest (an agent tool calling an agent tool ...); a deeper call is a tool
error, so agents that use each other as tools cannot recurse without end."""

_INPUT = (
    "The task for the agent, with everything it needs to know to do it: it does not see this "
    "conversation."
)


class AgentToolError(AgentExecutorError):
    """The agent run by an :class:`AgentTool` gave no answer: it failed, stopped to wait for a
    person, or would nest too deep. The calling model gets this as the tool's error."""


class AgentTool(Tool):
    """An agent offered to another agent's model as a tool with one parameter, ``input``.

    Build it with ``as_tool()`` of an agent, group or flow (which gives it ``run``, the way to
    run a command on that agent). ``timeout`` bounds the call (default: none beyond the
    agent's own ``request_timeout`` and the caller's).
    """

    def __init__(
        self,
        agent: Agent,
        run: RunCommand,
        *,
        name: str | None = None,
        description: str | None = None,
        input_description: str | None = None,
        session: SessionPolicy = "none",
        timeout: float = math.inf,
    ) -> None:
        name = name or agent.name
        super().__init__(
            name=name,
            description=description or _description(name, agent.description),
            parameters={
                "type": "object",
                "properties": {
                    "input": {"type": "string", "description": input_description or _INPUT}
                },
                "required": ["input"],
                "additionalProperties": False,
            },
            timeout=timeout,
        )
        self.agent = agent
        self.session: SessionPolicy = session
        self._run = run

    async def invoke(self, arguments: dict[str, Any]) -> str:
        """Run the agent on ``arguments["input"]`` and return its answer."""
        parent, scope = current_run_context(), current_tool_scope()
        if parent is not None and parent.depth >= MAX_DEPTH:
            raise AgentToolError(
                f"{self.agent.name} was not run: agents are already nested {MAX_DEPTH} deep"
            )
        emit: Emit = drop
        if scope is not None and scope.listening:
            emit = partial(_emit_nested, scope, self.agent.name)
        mode: Mode = "execute" if parent is None else parent.mode
        command = self._command(arguments["input"], parent)
        if scope is not None:
            command = command.model_copy(update=scope.limits_left())
        nested = self._run(command, mode, emit, _origin(parent, scope))
        run = await kept_if_cancelled(nested, _unkept if scope is None else scope.add_usage)
        result = run.result()
        if scope is not None:
            scope.add_usage(result.usage)
        if parent is not None:
            cite(parent, result.sources)
        return _answer(self.agent.name, result)

    def _command(self, task: str, parent: RunContext | None) -> AgentCommand:
        if parent is None:
            return AgentCommand(user_prompt=task)
        session = None
        if self.session == "linked" and parent.session_id is not None:
            session = f"{parent.session_id}/{self.name}"
        return AgentCommand(
            user_prompt=task,
            user_id=parent.user_id,
            session_id=session,
            metadata=dict(parent.command.metadata),
            client_tools=self._client_tools(parent),
        )

    def _client_tools(self, parent: RunContext) -> list[ClientTool]:
        """The caller's client tools, offered to the agent too: a call of one reaches the
        client in the caller's stream (a ``tool_call`` inside ``nested``) and its answer
        (``ToolResults``, ``POST /api/chat/tool-result``) comes back to this run. Only while
        the client sees the stream and answers as the run waits (``client_tool_mode="wait"``),
        and not those named as one of the agent's own tools."""
        command = parent.command
        if parent.mode != "stream" or command.client_tool_mode != "wait":
            return []
        return [t for t in command.client_tools if t.name not in self.agent.tools]


def _emit_nested(scope: ToolScope, agent: str, event: AgentEvent) -> None:
    """``event`` of the nested run into the caller's stream. Its ``done`` always says what the
    run spent, as the caller's usage counts it: a run that failed before spending anything
    spent zero tokens, not ``null``."""
    if isinstance(event, DoneEvent) and event.usage is None:
        event = dataclasses.replace(event, usage=Usage())
    scope.emit_nested(agent, event)


def _unkept(usage: Usage | None) -> None:
    """Where a cancelled run's spend goes when no run called the tool: nowhere."""


def _origin(parent: RunContext | None, scope: ToolScope | None) -> RequestOrigin:
    if parent is None:
        return RequestOrigin()
    request_id = None if scope is None else f"{parent.request_id}/{scope.call_id}"
    return RequestOrigin(request_id, parent.client_address, parent.request_headers)


def _answer(agent: str, result: AgentResult) -> str:
    if result.error is not None:
        raise AgentToolError(
            f"the agent {agent} failed ({result.error.code}): {result.error.message}"
        )
    if result.finish_reason == "waiting_for_approval":
        raise AgentToolError(
            f"the agent {agent} stopped to wait for a person's approval, which a nested run "
            "cannot ask for"
        )
    return result.content


def _description(name: str, about: str) -> str:
    text = f"Ask the {name} agent to do a task; it answers with its result."
    return f"{text} {about}" if about else text
