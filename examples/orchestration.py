"""Agents working together, offline: one agent used as another's tool, then a handoff.

The models are ScriptedModels (each plays the turns written below), so the example runs without
a provider and shows exactly what a stream carries: who speaks, the nested agent's events inside
the caller's stream, the usage adding up, and a handoff that gives the conversation to another
agent. Run it: ``python examples/orchestration.py``.
"""

from __future__ import annotations

import asyncio

from agent_executor import (
    AgentCommand,
    AgentEvent,
    AgentExecutor,
    AgentSelectedEvent,
    DoneEvent,
    MessageEvent,
    NestedEvent,
    ScriptedModel,
    ToolEndEvent,
    ToolStartEvent,
    handoff,
    tool,
)
from agent_executor.models.scripted import call, text_turn, tool_turn


class Transcript:
    """Prints a stream: each speaker's text on one line, other events on their own lines, a
    nested agent's events indented under the tool call that runs it."""

    def __init__(self, speaker: str) -> None:
        self.speaker = speaker
        self.talking: tuple[str, str] | None = None  # who is writing the current line

    def show(self, event: AgentEvent, speaker: str | None = None, indent: str = "") -> None:
        speaker = speaker or self.speaker
        if isinstance(event, NestedEvent):
            self.show(event.event, event.agent, indent + "    ")
        elif isinstance(event, MessageEvent):
            if self.talking != (speaker, indent):
                self.end_line()
                print(f"{indent}[{speaker}] ", end="")
                self.talking = (speaker, indent)
            print(event.text.strip("\n"), end="")
        else:
            self.end_line()
            print(f"{indent}[{speaker}] {describe(event)}")
            if isinstance(event, AgentSelectedEvent):
                self.speaker = event.agent  # the agent that speaks from now on

    def end_line(self) -> None:
        if self.talking is not None:
            print()
            self.talking = None


def describe(event: AgentEvent) -> str:
    if isinstance(event, ToolStartEvent):
        return f"tool start {event.tool} {event.arguments}"
    if isinstance(event, ToolEndEvent):
        return f"tool end {event.tool}: {event.status}"
    if isinstance(event, AgentSelectedEvent):
        return f"hands over to {event.agent} ({event.selected_by})"
    if isinstance(event, DoneEvent):
        usage = event.usage
        spent = f"{usage.input_tokens} in / {usage.output_tokens} out" if usage else "no usage"
        return f"done: {event.finish_reason}, {spent}"
    return event.type


async def agent_as_tool() -> None:
    # each model plays its turns once per run; the example runs the writer twice
    research = [text_turn("Paris has about 2.1 million people.", usage=(12, 8))]
    researcher = AgentExecutor(
        model=ScriptedModel(research * 2),
        name="researcher",
        description="Looks facts up and answers with them.",
        system_prompt="You look facts up.",
    )
    writing = [
        tool_turn(call("researcher", {"input": "How many people live in Paris?"}), usage=(40, 9)),
        text_turn("Paris is home to some 2.1 million people.", usage=(60, 11)),
    ]
    writer = AgentExecutor(
        model=ScriptedModel(writing * 2),
        name="writer",
        tools=[researcher.as_tool()],  # the researcher, as a tool of the writer
    )
    print("== an agent as a tool")
    transcript = Transcript("writer")
    async for event in writer.execute_stream(AgentCommand(user_prompt="Write about Paris.")):
        transcript.show(event)
    result = await writer.execute(AgentCommand(user_prompt="Write about Paris."))
    print(f"execute(): {result.content!r}, usage {result.usage}")


@tool
def invoice_status(number: str) -> str:
    """The payment status of an invoice.

    Args:
        number: The invoice number.
    """
    return f"invoice {number}: paid on 3 March"


async def a_handoff() -> None:
    billing = AgentExecutor(
        model=ScriptedModel(
            [
                tool_turn(call("invoice_status", {"number": "42"})),
                "Invoice 42 was paid on 3 March.",
            ]
        ),
        name="billing",
        description="Invoices, payments and refunds.",
        system_prompt="You handle billing questions.",
        tools=[invoice_status],
    )
    triage = AgentExecutor(
        model=ScriptedModel([tool_turn(call("transfer_to_billing"), text="Billing can help. ")]),
        name="triage",
        system_prompt="You send each question to the agent that can answer it.",
        tools=[handoff(billing)],
    )
    print("\n== a handoff")
    transcript = Transcript("triage")
    command = AgentCommand(user_prompt="Was invoice 42 paid?", session_id="help-1")
    async for event in triage.execute_stream(command):
        transcript.show(event)
    history = await triage.memory.load(None, "help-1")
    print(f"session 'help-1' of triage holds {len(history)} messages")


async def main() -> None:
    await agent_as_tool()
    await a_handoff()


if __name__ == "__main__":
    asyncio.run(main())
