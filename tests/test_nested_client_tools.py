"""Frontend tools inside an agent used as a tool (issue 30, item 9).

The caller's client tools (``client_tool_mode="wait"``) are offered to the agent it runs as a
tool; that agent's call reaches the client in the caller's stream, as a ``tool_call`` inside
``nested``, and the client's answer comes back to the nested run, whichever agent's registry
it is delivered to (each executor here has its own ``ToolResults``, as a script's would). At
the HTTP boundary, ``POST /api/chat/tool-result`` reaches it too.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import anyio
import httpx
from prometheus_client import CollectorRegistry

from agent_executor import (
    AgentCommand,
    AgentEvent,
    AgentExecutor,
    AgentGroup,
    ClientTool,
    DoneEvent,
    MessageEvent,
    NestedEvent,
    ToolCallEvent,
    ToolEndEvent,
    ToolStartEvent,
    tool,
)
from agent_executor.models.scripted import call, tool_turn

from .helpers import model_of, named_agent, strip_timing
from .server_helpers import serve

LOCATION = ClientTool(
    name="get_location",
    description="Where the user is, as the browser knows it.",
    timeout=5,
)


def agents(
    researcher_turns: list[Any] | None = None, **researcher_options: Any
) -> tuple[AgentExecutor, AgentExecutor]:
    """A writer that asks a researcher (an agent used as a tool) where the user is; the
    researcher calls the client's ``get_location``. Each has its own registry."""
    researcher = named_agent(
        "researcher",
        researcher_turns or [tool_turn(call("get_location", {}, id="n1")), "You are in Paris."],
        **researcher_options,
    )
    writer = named_agent(
        "writer",
        [tool_turn(call("researcher", {"input": "Where is the user?"}, id="w1")), "Paris it is."],
        tools=[researcher.as_tool()],
    )
    assert writer.tool_results is not researcher.tool_results
    return writer, researcher


async def answered(
    executor: AgentExecutor, command: AgentCommand, answer: dict[str, Any]
) -> tuple[list[AgentEvent], list[str]]:
    """Stream a run; answer each nested ``tool_call`` at the executor's own registry (the one
    a client of this agent knows). The events, and each delivery's outcome."""
    events: list[AgentEvent] = []
    outcomes: list[str] = []
    async for event in executor.execute_stream(command):
        events.append(event)
        if isinstance(event, NestedEvent) and isinstance(event.event, ToolCallEvent):
            inner = event.event
            outcomes.append(executor.tool_results.deliver(inner.call_id, "u", **answer))
    return events, outcomes


def nested(event: AgentEvent) -> AgentEvent:
    return NestedEvent(agent="researcher", call_id="w1", event=event)


def untimed(event: AgentEvent) -> AgentEvent:
    """``event`` with its duration (and that of an event nested in it) zeroed."""
    if isinstance(event, NestedEvent):
        return dataclasses.replace(event, event=untimed(event.event))
    [event] = strip_timing([event])
    return event


async def test_the_nested_agents_client_tool_call_reaches_the_client_and_comes_back() -> None:
    writer, researcher = agents()
    command = AgentCommand(user_prompt="Where am I?", user_id="u", client_tools=[LOCATION])

    events, outcomes = await answered(writer, command, {"result": "Paris, France"})

    assert outcomes == ["delivered"]
    shown = [untimed(event) for event in events]
    assert shown[:4] == [
        ToolStartEvent(tool="researcher", call_id="w1", arguments={"input": "Where is the user?"}),
        nested(ToolStartEvent(tool="get_location", call_id="n1", arguments={})),
        nested(ToolCallEvent(tool="get_location", call_id="n1", arguments={})),
        nested(
            ToolEndEvent(
                tool="get_location",
                call_id="n1",
                status="success",
                duration_ms=0,
                result="Paris, France",
            )
        ),
    ]
    assert isinstance(shown[-1], DoneEvent) and shown[-1].finish_reason == "stop"
    text = "".join(e.text for e in events if isinstance(e, MessageEvent))
    assert text == "Paris it is."
    [record] = shown[-1].tool_calls
    assert (record.tool, record.status, record.result) == (
        "researcher",
        "success",
        "You are in Paris.",
    )
    offered = [spec["function"]["name"] for spec in model_of(researcher).requests[0].tools]
    assert offered == ["get_location"]


async def test_the_answer_may_go_to_the_nested_agents_own_registry_too() -> None:
    writer, researcher = agents()
    command = AgentCommand(user_prompt="Where am I?", user_id="u", client_tools=[LOCATION])
    outcomes: list[str] = []

    async for event in writer.execute_stream(command):
        if isinstance(event, NestedEvent) and isinstance(event.event, ToolCallEvent):
            outcomes.append(researcher.tool_results.deliver("n1", "u", result="Lyon"))
            outcomes.append(writer.tool_results.deliver("n1", "u", result="again"))
            outcomes.append(writer.tool_results.deliver("n1", "someone-else", result="x"))

    assert outcomes == ["delivered", "unknown", "unknown"]
    assert model_of(researcher).requests[1].messages[-1].content == "Lyon"


async def test_a_second_answer_through_the_callers_registry_is_already_answered() -> None:
    writer, _ = agents()
    command = AgentCommand(user_prompt="Where am I?", user_id="u", client_tools=[LOCATION])
    outcomes: list[str] = []

    async for event in writer.execute_stream(command):
        if isinstance(event, NestedEvent) and isinstance(event.event, ToolCallEvent):
            outcomes.append(writer.tool_results.deliver("n1", "u", result="Paris"))
            outcomes.append(writer.tool_results.deliver("n1", "u", result="Paris"))

    assert outcomes == ["delivered", "answered"]


async def test_an_unanswered_nested_call_times_out_and_is_forgotten() -> None:
    quick = LOCATION.model_copy(update={"timeout": 0.05})
    writer, researcher = agents([tool_turn(call("get_location", {}, id="n1")), "I could not tell."])
    command = AgentCommand(user_prompt="Where am I?", user_id="u", client_tools=[quick])

    events = [event async for event in writer.execute_stream(command)]

    ends = [e.event for e in events if isinstance(e, NestedEvent)]
    assert [e.status for e in ends if isinstance(e, ToolEndEvent)] == ["timeout"]
    assert writer.tool_results.deliver("n1", "u", result="late") == "unknown"
    assert len(researcher.tool_results) == 0


async def test_client_tools_are_offered_only_to_a_client_that_answers_while_the_run_waits() -> None:
    waiting = AgentCommand(user_prompt="Where am I?", user_id="u", client_tools=[LOCATION])
    returning = waiting.model_copy(update={"client_tool_mode": "return"})
    in_execute, execute_researcher = agents(["No tools."])
    in_return, return_researcher = agents(["No tools."])

    await in_execute.execute(waiting)  # nobody would see a tool_call in execute()
    events = [event async for event in in_return.execute_stream(returning)]

    assert isinstance(events[-1], DoneEvent)
    for researcher in (execute_researcher, return_researcher):
        assert model_of(researcher).requests[0].tools == []


async def test_the_agents_own_tool_of_the_same_name_wins() -> None:
    @tool
    def get_location() -> str:
        """The researcher's own way of telling where the user is."""
        return "Berlin"

    writer, researcher = agents(
        [tool_turn(call("get_location", {}, id="n1")), "Berlin."], tools=[get_location]
    )
    command = AgentCommand(user_prompt="Where am I?", user_id="u", client_tools=[LOCATION])

    events = [event async for event in writer.execute_stream(command)]

    assert not [e for e in events if isinstance(e, NestedEvent) and e.event.type == "tool_call"]
    requests = model_of(researcher).requests
    assert [spec["function"]["description"] for spec in requests[0].tools] == [
        "The researcher's own way of telling where the user is."
    ]
    assert requests[1].messages[-1].content == "Berlin"


# ---- over HTTP: POST /api/chat/tool-result reaches the nested run ---------------------------


async def stream_answering(
    client: httpx.AsyncClient, body: dict[str, Any], answer: dict[str, Any]
) -> tuple[list[tuple[str, Any]], list[int]]:
    """POST /api/chat/stream in json mode; answer each ``tool_call`` (top-level or inside
    ``nested``) with POST /api/chat/tool-result as the chat page does. The events (type,
    data) and the tool-result statuses."""
    events: list[tuple[str, Any]] = []
    statuses: list[int] = []
    async with client.stream("POST", "/api/chat/stream", json=body) as response:
        kind = ""
        async for line in response.aiter_lines():
            if line.startswith("event: "):
                kind = line.removeprefix("event: ")
            elif line.startswith("data: "):
                data = json.loads(line.removeprefix("data: "))
                events.append((kind, data))
                call_id = client_call(kind, data)
                if call_id is not None:
                    posted = await client.post(
                        "/api/chat/tool-result", json={"call_id": call_id, **answer}
                    )
                    statuses.append(posted.status_code)
    return events, statuses


def client_call(kind: str, data: dict[str, Any]) -> str | None:
    """The call id of a ``tool_call``, top-level or inside ``nested`` (at any depth)."""
    while kind == "nested":
        kind, data = data["event"]["type"], data["event"]
    return str(data["call_id"]) if kind == "tool_call" else None


async def test_the_service_routes_the_answer_of_a_nested_call_to_the_nested_run() -> None:
    writer, _ = agents()
    body = {
        "message": "Where am I?",
        "events": "json",
        "tools": [LOCATION.model_dump(exclude_none=True)],
    }

    async with serve(writer) as client:
        with anyio.fail_after(30):
            events, statuses = await stream_answering(client, body, {"result": "Paris"})

    assert statuses == [200]
    nested_calls = [d["event"] for k, d in events if k == "nested"]
    assert {"type": "tool_call", "call_id": "n1", "tool": "get_location", "arguments": {}} in (
        nested_calls
    )
    kinds = [k for k, _ in events]
    assert kinds[-1] == "done" and "error" not in kinds
    assert "".join(d["text"] for k, d in events if k == "message") == "Paris it is."


async def test_a_group_members_client_call_reaches_it_through_the_groups_service() -> None:
    member = named_agent("finder", [tool_turn(call("get_location", {}, id="g1")), "Found: Oslo."])
    group = AgentGroup([member], name="team", metrics=CollectorRegistry())
    assert group.tool_results is not member.tool_results
    body = {"message": "Where am I?", "events": "json", "tools": [LOCATION.model_dump()]}

    async with serve(group) as client:
        with anyio.fail_after(30):
            events, statuses = await stream_answering(client, body, {"result": "Oslo"})

    assert statuses == [200]
    assert ("tool_call", {"call_id": "g1", "tool": "get_location", "arguments": {}}) in events
    assert "".join(d["text"] for k, d in events if k == "message") == "Found: Oslo."
