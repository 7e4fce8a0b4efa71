"""What the OpenAI-style endpoints share: a client's conversation, tools, tool choice and
response format turned into one :class:`AgentCommand`.

Both APIs (Chat Completions and Responses) parse their own wire shapes into our messages; from
there the rules are the same. A conversation ending with the user's message starts a run; one
ending with tool results (the client ran the tools an earlier answer handed back) resumes that
run, which the engine finds by the calls' ids: the server tools called in the same turns are
then back in the conversation as the model made them, although the client never saw them.
Anything that cannot be honoured is a :class:`WireError` naming the request field (``param``),
answered as a 400 in OpenAI's error shape.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from agent_executor import (
    AgentCommand,
    AssistantMessage,
    ClientTool,
    ClientToolResult,
    Message,
    NamedToolChoice,
    Tool,
    ToolChoice,
    ToolMessage,
    UserMessage,
)

__all__ = ["Request", "WireError", "client_tools", "tool_choice", "tool_results_of"]


class WireError(ValueError):
    """A request the endpoint cannot honour; ``param`` names the field (OpenAI's ``param``)."""

    def __init__(self, message: str, param: str) -> None:
        super().__init__(message)
        self.param = param


@dataclass(slots=True)
class Request:
    """An OpenAI-style request in our terms, ready to become the run's command."""

    messages: list[Message]
    user_id: str | None
    history: list[Message] = field(default_factory=list)
    """The conversation before ``messages``, kept by the service (a stored response)."""
    tools: list[ClientTool] = field(default_factory=list)
    choice: ToolChoice | None = None
    parallel_tool_calls: bool | None = None
    response_format: dict[str, Any] | None = None
    params: dict[str, Any] = field(default_factory=dict)

    def command(self, server_tools: Mapping[str, Tool]) -> AgentCommand:
        """The command: a run from the last user message, or the resume of the run whose
        handed-back calls the trailing tool messages answer."""
        clash = sorted(t.name for t in self.tools if t.name in server_tools)
        if clash:
            raise WireError(
                f"tools {clash} clash with the agent's own tools of the same name: rename them",
                "tools",
            )
        tool_results_of([*self.history, *self.messages])
        history, prompt, results = _split(self.messages)
        return AgentCommand(
            user_prompt=prompt,
            user_id=self.user_id,
            messages=[*self.history, *history],
            model_params=self.params,
            client_tools=self.tools,
            client_tool_mode="return",
            tool_results=results,
            tool_choice=self.choice,
            parallel_tool_calls=self.parallel_tool_calls,
            response_format=self.response_format or "text",
        )


def client_tools(specs: Iterable[Mapping[str, Any]], param: str = "tools") -> list[ClientTool]:
    """Function tools (``name``, ``description``, ``parameters``) as the run's client tools."""
    tools: list[ClientTool] = []
    for index, spec in enumerate(specs):
        try:
            tool = ClientTool(
                name=spec.get("name"),
                description=spec.get("description") or "",
                parameters=spec.get("parameters") or {"type": "object", "properties": {}},
                strict=bool(spec.get("strict")),
            )
        except ValidationError as exc:
            problem = exc.errors(include_url=False)[0]
            where = ".".join(str(part) for part in problem["loc"])
            raise WireError(f"{param}[{index}].{where}: {problem['msg']}", param) from None
        if any(t.name == tool.name for t in tools):
            raise WireError(f"two tools are named {tool.name!r}", param)
        tools.append(tool)
    return tools


def tool_choice(
    value: Any, tools: Sequence[ClientTool], server_tools: Mapping[str, Tool]
) -> ToolChoice | None:
    """``auto``, ``none``, ``required`` or a named function (``{"name"}``, as given inside
    ``{"type": "function", ...}``), which must be one of the tools on offer."""
    if value is None or value in ("auto", "none", "required"):
        return value  # type: ignore[no-any-return]
    name = value.get("name") if isinstance(value, dict) else None
    if not isinstance(name, str):
        raise WireError(
            "tool_choice must be 'auto', 'none', 'required' or a named function", "tool_choice"
        )
    if name not in server_tools and all(t.name != name for t in tools):
        raise WireError(f"tool_choice names {name!r}, which is not a tool on offer", "tool_choice")
    return NamedToolChoice(name=name)


def tool_results_of(messages: Sequence[Message]) -> None:
    """Check that every tool message answers a call an earlier assistant message made."""
    made: set[str] = set()
    for message in messages:
        if isinstance(message, AssistantMessage):
            made.update(call.id for call in message.tool_calls)
        elif isinstance(message, ToolMessage) and message.tool_call_id not in made:
            raise WireError(
                f"a tool message answers the call {message.tool_call_id!r}, which no earlier "
                "assistant message made",
                "messages",
            )


def _split(
    messages: list[Message],
) -> tuple[list[Message], str, list[ClientToolResult] | None]:
    """The history, the user's prompt, and the client's results when the conversation ends
    with tool messages (the prompt is then empty)."""
    if not messages:
        raise WireError("the conversation is empty", "messages")
    last = messages[-1]
    if isinstance(last, UserMessage):
        if not last.content.strip():
            raise WireError("the last user message is empty", "messages")
        return messages[:-1], last.content, None
    if not isinstance(last, ToolMessage):
        raise WireError("the conversation must end with a user message or tool results", "messages")
    cut = len(messages)
    while cut and isinstance(messages[cut - 1], ToolMessage):
        cut -= 1
    results = [
        ClientToolResult(call_id=m.tool_call_id, result=m.content)
        for m in messages[cut:]
        if isinstance(m, ToolMessage)
    ]
    return messages[:cut], "", results
