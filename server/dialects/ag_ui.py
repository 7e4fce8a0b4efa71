"""AG-UI (docs.ag-ui.com), the protocol of CopilotKit and the frameworks that adopted it, both
ways: a ``RunAgentInput`` read as one command (:func:`read_input`), and a run's events written
as AG-UI events (:class:`AGUIEncoder`) with the protocol package's models and SSE encoder, so
what goes out is what its clients validate.

Why this shape: an AG-UI client sends its whole conversation with every run, but the service
keeps each thread (``threadId`` is the session) with what the client never sees: provider
fields some models need back, and the run a client tool's call paused. So the service's memory
is the history; the client's earlier messages count only where it has none. Going out, each
model turn's text is a message of its own, a turn's calls belong to the message before them,
a group's agents and a flow's nodes are steps, and an agent run as a tool is a subagent.

Needs the ``[ag-ui]`` extra: ``server/ag_ui_route.py`` imports it when first needed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError
from pydantic_core import PydanticSerializationError

from agent_executor import (
    AgentCommand,
    AgentEvent,
    AgentSelectedEvent,
    Approval,
    ApprovalRequiredEvent,
    AssistantMessage,
    ClientTool,
    ClientToolResult,
    DoneEvent,
    ErrorEvent,
    Message,
    MessageEvent,
    NestedEvent,
    NodeEndEvent,
    NodeStartEvent,
    PendingApproval,
    ReasoningEvent,
    SystemMessage,
    ToolCall,
    ToolCallEvent,
    ToolEndEvent,
    ToolMessage,
    ToolStartEvent,
    Usage,
    UserMessage,
)
from agent_executor._extras import requires_extra

from ..schemas import describe_validation_error
from ..v1.conversation import WireError, client_tools
from .base import EventTable
from .framing import HEARTBEAT

with requires_extra("ag-ui", "the AG-UI endpoint"):
    from ag_ui import core as agui
    from ag_ui.encoder import EventEncoder

__all__ = ["AGUIEncoder", "AGUIRequest", "InputError", "read_input", "reattached"]

_SSE = EventEncoder()
_BREAKS = ("\n\n", "\n")  # between two turns' text: here each turn's text is a message


class InputError(ValueError):
    """A ``RunAgentInput`` the endpoint cannot honour (answered 400, saying why)."""


@dataclass(frozen=True, slots=True)
class AGUIRequest:
    """A ``RunAgentInput`` in the engine's terms: a new user message (``prompt``), or the
    results of the client tools a run handed back (``tool_results``), or the answers to its
    interrupts (``approvals``); the client's messages before that (``earlier``), which are the
    history only when the service has no memory of the thread."""

    thread_id: str
    run_id: str
    agent: str | None
    prompt: str
    earlier: list[Message]
    tools: list[ClientTool]
    tool_results: list[ClientToolResult] | None
    approvals: list[Approval] | None
    metadata: dict[str, Any]

    @property
    def resumes(self) -> bool:
        """Whether this run goes on with a paused one (tool results or answered interrupts)."""
        return self.tool_results is not None or self.approvals is not None

    def command(self, user_id: str | None) -> AgentCommand:
        """The command, on the thread's session, its history the session's memory."""
        return AgentCommand(
            user_prompt=self.prompt,
            user_id=user_id,
            session_id=self.thread_id,
            metadata=self.metadata,
            client_tools=self.tools,
            client_tool_mode="return",
            tool_results=self.tool_results,
            approvals=self.approvals,
        )

    def encoder(self, stream_id: str) -> AGUIEncoder:
        """This run's events as AG-UI's, for its client; ``stream_id`` is the run hub's id."""
        answered = frozenset(result.call_id for result in self.tool_results or ())
        resumed = answered | {approval.call_id for approval in self.approvals or ()}
        return AGUIEncoder(
            self.thread_id, self.run_id, stream_id, resumed=resumed, answered=answered
        )


def reattached(stream_id: str, start: int) -> AGUIEncoder:
    """The dialect of a client re-attaching to run ``stream_id`` at event ``start``, rebuilt
    from the run's id alone (the run hub's rule): the stream is valid AG-UI, with the run's id
    for ``threadId`` and ``runId``, and a resume's calls announced again."""
    return AGUIEncoder(stream_id, stream_id, stream_id, start=start)


def read_input(data: Mapping[str, Any]) -> AGUIRequest:
    """The request a ``RunAgentInput`` body makes; :class:`InputError` if it cannot be run."""
    try:
        given = agui.RunAgentInput.model_validate(data)
    except ValidationError as exc:
        raise InputError(describe_validation_error(exc)) from None
    earlier, prompt, results = _split(given.messages, resuming=bool(given.resume))
    specs = [{"name": t.name, "description": t.description, "parameters": t.parameters}
             for t in given.tools or ()]  # fmt: skip
    try:
        tools = client_tools(specs)
    except WireError as exc:
        raise InputError(str(exc)) from None
    props = given.forwarded_props
    agent = props.get("agent") if isinstance(props, dict) else None
    if agent is not None and not isinstance(agent, str):
        raise InputError("forwardedProps.agent: must be the name of an agent, group or flow")
    context = [item.model_dump() for item in given.context or ()]
    metadata = {"thread_id": given.thread_id, "run_id": given.run_id, "state": given.state,
                "context": context, "forwarded_props": props}  # fmt: skip
    return AGUIRequest(
        thread_id=given.thread_id,
        run_id=given.run_id,
        agent=agent or None,
        prompt=prompt,
        earlier=earlier,
        tools=tools,
        tool_results=results,
        approvals=_approvals(given.resume or ()),
        metadata={"ag_ui": metadata},
    )


def _split(
    messages: Sequence[agui.Message], *, resuming: bool
) -> tuple[list[Message], str, list[ClientToolResult] | None]:
    """The history before the run, the user's prompt, and the client tools' results when the
    conversation ends with them (the prompt is then empty, as when interrupts are answered)."""
    if resuming:
        return _history(messages), "", None
    last = messages[-1] if messages else None
    if isinstance(last, agui.UserMessage):
        prompt = _text(last.content, f"messages[{len(messages) - 1}]")
        if not prompt.strip():
            raise InputError("the last message, the user's, is empty")
        return _history(messages[:-1]), prompt, None
    if not isinstance(last, agui.ToolMessage):
        raise InputError(
            "messages must end with the user's message, or with the results of the tool calls "
            "a run handed back"
        )
    cut = len(messages)
    while cut and isinstance(messages[cut - 1], agui.ToolMessage):
        cut -= 1
    tail = enumerate(messages[cut:], cut)
    results = [_result(m, i) for i, m in tail if isinstance(m, agui.ToolMessage)]
    return _history(messages[:cut]), "", results


def _result(message: agui.ToolMessage, index: int) -> ClientToolResult:
    if message.error is not None:
        return ClientToolResult(call_id=message.tool_call_id, error=message.error)
    content = _text(message.content, f"messages[{index}]")
    return ClientToolResult(call_id=message.tool_call_id, result=content)


def _history(messages: Sequence[agui.Message]) -> list[Message]:
    """The client's messages as the engine's (reasoning and activity messages left out)."""
    names: dict[str, str] = {}
    out: list[Message] = []
    for index, message in enumerate(messages):
        where = f"messages[{index}]"
        if isinstance(message, agui.UserMessage):
            out.append(UserMessage(content=_text(message.content, where)))
        elif isinstance(message, (agui.SystemMessage, agui.DeveloperMessage)):
            out.append(SystemMessage(content=message.content))
        elif isinstance(message, agui.AssistantMessage):
            calls = tuple(
                ToolCall(id=c.id, name=c.function.name, arguments=c.function.arguments or "{}")
                for c in message.tool_calls or ()
            )
            names.update((call.id, call.name) for call in calls)
            out.append(AssistantMessage(content=message.content or "", tool_calls=calls))
        elif isinstance(message, agui.ToolMessage):
            content = message.error or _text(message.content, where)
            name = names.get(message.tool_call_id, "")
            out.append(ToolMessage(tool_call_id=message.tool_call_id, name=name, content=content))
    return out


def _text(content: str | Sequence[Any], where: str) -> str:
    """Text content: a string, or text parts (joined by line breaks)."""
    if isinstance(content, str):
        return content
    texts = [part.text for part in content if isinstance(part, agui.TextPart)]
    if len(texts) != len(content):
        raise InputError(f"{where}.content: only text is supported")
    return "\n".join(texts)


def _approvals(entries: Sequence[agui.ResumeEntry]) -> list[Approval] | None:
    """Answers to the interrupts a run ended with: ``cancelled`` or a ``false`` payload
    refuses the call; a string payload is ``ask_user``'s answer; ``{"approved", "answer"}``
    says both; anything else approves."""
    if not entries:
        return None
    approvals = []
    for index, entry in enumerate(entries):
        call_id, _, token = entry.interrupt_id.rpartition(":")
        if not call_id or not token:
            raise InputError(f"resume[{index}].interruptId: not an interrupt of this service")
        approved, answer = entry.status == "resolved", None
        payload = entry.payload
        if isinstance(payload, dict):
            approved = approved and payload.get("approved", True) is not False
            answer = payload.get("answer") if isinstance(payload.get("answer"), str) else None
        elif isinstance(payload, str):
            answer = payload
        elif payload is False:
            approved = False
        approvals.append(
            Approval(call_id=call_id, approved=approved, approval_token=token, answer=answer)
        )
    return approvals


def _frame(event: agui.BaseEvent) -> bytes:
    """One event as SSE, by the protocol package's encoder (``data: <json>``)."""
    try:
        return _SSE.encode(event).encode()
    except PydanticSerializationError:  # lone surrogates, which UTF-8 refuses: escape them
        fields = event.model_dump(mode="json", by_alias=True)
        return f"data: {json.dumps(fields, separators=(',', ':'))}\n\n".encode()


class AGUIEncoder:
    """One run's events as AG-UI events: ``RUN_STARTED`` first, then each event as the table
    below maps it, then ``RUN_FINISHED`` (or, after an error, ``RUN_ERROR``) with the ``done``.

    ``thread_id`` and ``run_id`` are the client's; ``stream_id`` is the run hub's (the
    ``X-Run-Id`` header). A run that resumes another does not announce again the calls it
    resumes (``resumed``, whose ``TOOL_CALL_*`` the client has), nor the results the client
    gave (``answered``). Ids of messages are unique across runs and re-attached streams.
    """

    media_type = "text/event-stream"
    heartbeat = HEARTBEAT
    __slots__ = (
        "_count", "_prefix", "_root", "answered", "resumed", "run_id", "stream_id", "thread_id",
    )  # fmt: skip

    def __init__(
        self,
        thread_id: str,
        run_id: str,
        stream_id: str,
        *,
        start: int = 0,
        resumed: frozenset[str] = frozenset(),
        answered: frozenset[str] = frozenset(),
    ) -> None:
        self.thread_id = thread_id
        self.run_id = run_id
        self.resumed = resumed
        self.answered = answered
        self.stream_id = stream_id
        self._prefix = f"{stream_id}-{start}-"
        self._count = 0
        self._root = _Lane(self)

    @property
    def headers(self) -> Mapping[str, str]:
        return {"X-Run-Id": self.stream_id}

    def opening(self) -> bytes:
        return _frame(agui.RunStartedEvent(
            thread_id=self.thread_id, run_id=self.run_id, protocol_version=agui.PROTOCOL_VERSION
        ))  # fmt: skip

    def encode(self, event: AgentEvent) -> bytes:
        return _TABLE.encode(self._root, event)

    def new_id(self) -> str:
        """A fresh message id."""
        self._count += 1
        return f"{self._prefix}{self._count}"

    def finish(self, done: DoneEvent, error: ErrorEvent | None) -> bytes:
        """The run's last event: ``RUN_ERROR`` for a failed run, else ``RUN_FINISHED`` (with
        the calls handed back, or the interrupts that wait for a person)."""
        usage = _usage(done.usage)
        if error is not None or done.finish_reason == "error":
            message = error.message if error is not None else "the run failed"
            code = error.code if error is not None else "internal_error"
            return _frame(agui.RunErrorEvent(message=message, code=code, usage=usage))
        return _frame(agui.RunFinishedEvent(
            thread_id=self.thread_id, run_id=self.run_id, result=done.output,
            outcome=_outcome(done), usage=usage,
        ))  # fmt: skip


def _outcome(done: DoneEvent) -> agui.RunFinishedOutcome | None:
    if done.finish_reason == "waiting_for_approval" and done.pending_approvals:
        return agui.RunFinishedInterruptOutcome(
            interrupts=[_interrupt(p) for p in done.pending_approvals]
        )
    if done.finish_reason == "tool_calls":
        pending = [call.id for call in done.client_tool_calls]
        return agui.RunFinishedSuccessOutcome(pending_tool_call_ids=pending)
    return None


def _interrupt(pending: PendingApproval) -> agui.Interrupt:
    """A call waiting for a person; its id carries the approval token back (``call:token``)."""
    question = pending.arguments.get("question") if pending.tool == "ask_user" else None
    return agui.Interrupt(
        id=f"{pending.call_id}:{pending.approval_token}",
        reason="input_required" if question is not None else "approval_required",
        message=str(question) if question is not None else f"{pending.tool} needs your approval",
        tool_call_id=pending.call_id,
        metadata={"tool": pending.tool, "arguments": pending.arguments},
    )


def _usage(usage: Usage | None) -> list[agui.TokenUsage] | None:
    if usage is None:
        return None
    given, written = usage.input_tokens, usage.output_tokens
    return [agui.TokenUsage(
        input_tokens=given, output_tokens=written, total_tokens=given + written,
        cached_input_tokens=usage.cached_input_tokens or None,
    )]  # fmt: skip


def _arguments(arguments: dict[str, Any]) -> str:
    return json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))


class _Lane:
    """One producer's part of the stream, and what it has open: the run's own part, or that
    of an agent it runs as a tool (``subagent``, the id its events are attributed to). Open:
    a text or a reasoning message, the assistant message the turn's calls belong to, its steps
    (nodes, and the agent speaking), its subagents."""

    __slots__ = (
        "_agent_step", "_assistant", "_children", "_error", "_reasoning", "_speaker", "_steps",
        "_stream", "_text", "subagent",
    )  # fmt: skip

    def __init__(self, stream: AGUIEncoder, subagent: str | None = None) -> None:
        self._stream = stream
        self.subagent = subagent
        self._text: str | None = None
        self._reasoning: str | None = None
        self._assistant: str | None = None
        self._speaker: str | None = None
        self._steps: list[str] = []
        self._agent_step: str | None = None
        self._children: dict[str, _Lane] = {}
        self._error: ErrorEvent | None = None

    # Text and reasoning: a message from the first piece of a turn's text to what follows it.

    def _message(self, event: MessageEvent) -> bytes:
        out = b""
        if self._text is None:
            if not event.text or event.text in _BREAKS:
                return b""
            out = self._end_reasoning()
            self._text = self._assistant = self._stream.new_id()
            out += _frame(agui.TextMessageStartEvent(
                message_id=self._text, role="assistant", name=self._speaker,
                subagent_run_id=self.subagent,
            ))  # fmt: skip
        content = agui.TextMessageContentEvent(
            message_id=self._text, delta=event.text, subagent_run_id=self.subagent
        )
        return out + _frame(content)

    def _thinking(self, event: ReasoningEvent) -> bytes:
        if not event.text:
            return b""
        out = b""
        if self._reasoning is None:
            out = self._end_text()
            self._reasoning = message_id = self._stream.new_id()
            out += _frame(
                agui.ReasoningStartEvent(message_id=message_id, subagent_run_id=self.subagent)
            )
            out += _frame(agui.ReasoningMessageStartEvent(
                message_id=message_id, role="reasoning", subagent_run_id=self.subagent
            ))  # fmt: skip
        content = agui.ReasoningMessageContentEvent(
            message_id=self._reasoning, delta=event.text, subagent_run_id=self.subagent
        )
        return out + _frame(content)

    def _end_text(self) -> bytes:
        if self._text is None:
            return b""
        message_id, self._text = self._text, None
        return _frame(
            agui.TextMessageEndEvent(message_id=message_id, subagent_run_id=self.subagent)
        )

    def _end_reasoning(self) -> bytes:
        if self._reasoning is None:
            return b""
        message_id, self._reasoning = self._reasoning, None
        subagent = self.subagent
        return _frame(
            agui.ReasoningMessageEndEvent(message_id=message_id, subagent_run_id=subagent)
        ) + _frame(agui.ReasoningEndEvent(message_id=message_id, subagent_run_id=subagent))

    def _settle(self) -> bytes:
        return self._end_text() + self._end_reasoning()

    # Tool calls: announced whole (start, arguments, end) once the model has made them.

    def _call(self, event: ToolStartEvent | ToolCallEvent | ApprovalRequiredEvent) -> bytes:
        """A call of the agent's own tool, of a client tool, or one waiting for approval."""
        out = self._settle()
        if self.subagent is None and event.call_id in self._stream.resumed:
            return out
        if self._assistant is None:
            self._assistant = self._stream.new_id()
        tool_call_id, subagent = self._call_id(event.call_id), self.subagent
        start = agui.ToolCallStartEvent(
            tool_call_id=tool_call_id, tool_call_name=event.tool,
            parent_message_id=self._assistant, subagent_run_id=subagent,
        )  # fmt: skip
        args = agui.ToolCallArgsEvent(
            tool_call_id=tool_call_id, delta=_arguments(event.arguments), subagent_run_id=subagent
        )
        end = agui.ToolCallEndEvent(tool_call_id=tool_call_id, subagent_run_id=subagent)
        return out + _frame(start) + _frame(args) + _frame(end)

    def _tool_end(self, event: ToolEndEvent) -> bytes:
        self._assistant = None  # the next calls are of the next turn
        if self.subagent is None and event.call_id in self._stream.answered:
            return b""
        content = event.result if event.result is not None else event.status
        return _frame(agui.ToolCallResultEvent(
            message_id=self._stream.new_id(), tool_call_id=self._call_id(event.call_id),
            content=content, role="tool", metadata={"status": event.status},
            subagent_run_id=self.subagent,
        ))  # fmt: skip

    def _call_id(self, call_id: str) -> str:
        """A call's id on the wire: the model's, prefixed in a subagent (whose model may use
        the ids the run's own model used)."""
        return call_id if self.subagent is None else f"{self.subagent}/{call_id}"

    # Steps: a flow's nodes, and the agent speaking in a group (or picked by the router).

    def _selected(self, event: AgentSelectedEvent) -> bytes:
        out = self._settle()
        self._speaker = event.agent
        if event.selected_by == "flow":  # the node is the step
            return out
        out += self._end_agent_step()
        if event.agent not in self._steps:
            self._agent_step = event.agent
            out += self._start_step(event.agent)
        return out

    def _node_start(self, event: NodeStartEvent) -> bytes:
        out = self._settle() + self._end_agent_step()
        return out if event.node in self._steps else out + self._start_step(event.node)

    def _node_end(self, event: NodeEndEvent) -> bytes:
        out = self._settle()
        self._speaker = None
        if event.node in self._steps:
            while self._steps[-1] != event.node:
                out += self._finish_step()
            out += self._finish_step()
        return out

    def _start_step(self, name: str) -> bytes:
        self._steps.append(name)
        return _frame(agui.StepStartedEvent(step_name=name, subagent_run_id=self.subagent))

    def _finish_step(self) -> bytes:
        name = self._steps.pop()
        if name == self._agent_step:
            self._agent_step = None
        return _frame(agui.StepFinishedEvent(step_name=name, subagent_run_id=self.subagent))

    def _end_agent_step(self) -> bytes:
        out = b""
        while self._agent_step is not None and self._steps:
            out += self._finish_step()
        return out

    # Subagents: an agent run as a tool, its events attributed to it.

    def _nested(self, event: NestedEvent) -> bytes:
        subagent = self._call_id(event.call_id)
        child = self._children.get(subagent)
        out = b""
        if child is None:
            child = self._children[subagent] = _Lane(self._stream, subagent)
            out = _frame(agui.SubagentStartedEvent(
                subagent_run_id=subagent, name=event.agent, parent_tool_call_id=subagent,
                parent_subagent_run_id=self.subagent,
            ))  # fmt: skip
        out += _TABLE.encode(child, event.event)
        if type(event.event) is DoneEvent:
            del self._children[subagent]
        return out

    # The end: of the run, or of a subagent.

    def _failed(self, event: ErrorEvent) -> bytes:
        self._error = event  # sent with the done
        return b""

    def _done(self, event: DoneEvent) -> bytes:
        out = self._close()
        if self.subagent is None:
            return out + self._stream.finish(event, self._error)
        if self._error is None and event.finish_reason != "error":
            return out + _frame(agui.SubagentFinishedEvent(
                subagent_run_id=self.subagent, result=event.output
            ))  # fmt: skip
        error = self._error or ErrorEvent("internal_error", "the agent failed")
        return out + _frame(agui.SubagentErrorEvent(
            subagent_run_id=self.subagent, message=error.message, code=error.code
        ))  # fmt: skip

    def _close(self) -> bytes:
        """Close everything still open: messages, steps, subagents (which did not finish)."""
        out = self._settle()
        while self._steps:
            out += self._finish_step()
        for subagent, child in self._children.items():
            out += child._close() + _frame(agui.SubagentErrorEvent(
                subagent_run_id=subagent, message="the run ended first", code="cancelled"
            ))  # fmt: skip
        self._children.clear()
        return out


_TABLE = EventTable(
    {
        MessageEvent: _Lane._message,
        ReasoningEvent: _Lane._thinking,
        ToolStartEvent: _Lane._call,
        ToolEndEvent: _Lane._tool_end,
        ToolCallEvent: _Lane._call,
        ApprovalRequiredEvent: _Lane._call,
        AgentSelectedEvent: _Lane._selected,
        NodeStartEvent: _Lane._node_start,
        NodeEndEvent: _Lane._node_end,
        NestedEvent: _Lane._nested,
        ErrorEvent: _Lane._failed,
        DoneEvent: _Lane._done,
    }
)
"""Each event type's AG-UI events: text → ``TEXT_MESSAGE_*``; reasoning → ``REASONING_*``;
a tool call (the agent's own, a client tool's, one waiting for approval) → ``TOOL_CALL_START``,
``ARGS``, ``END``; the agent's own call's end → ``TOOL_CALL_RESULT`` (the text the model was
given, ``metadata.status``); a node, or the agent now speaking in a group → ``STEP_STARTED``
and ``STEP_FINISHED``; a nested run → ``SUBAGENT_STARTED``, its events, ``SUBAGENT_FINISHED``
or ``SUBAGENT_ERROR``; ``done`` → ``RUN_FINISHED`` or ``RUN_ERROR``."""
