"""``after_model`` hooks that change the model's response, through the public API: the
replacement's calls are the ones that run, its text is what the conversation, memory and the
result keep; text already streamed stays streamed."""

from __future__ import annotations

import dataclasses

from prometheus_client import CollectorRegistry

from agent_executor import (
    AgentCommand,
    AgentExecutor,
    AgentResult,
    Hook,
    MessageEvent,
    ModelResponse,
    RunContext,
    ScriptedModel,
    ToolStartEvent,
    tool,
)
from agent_executor.models.scripted import call, tool_turn

ran: list[str] = []


@tool
def delete_everything() -> str:
    """Delete every file."""
    ran.append("delete_everything")
    return "deleted"


class NoDeletes(Hook):
    """Turns a call of ``delete_everything`` into a refusal the user reads."""

    async def after_model(self, ctx: RunContext, response: ModelResponse) -> ModelResponse | None:
        if any(c.name == "delete_everything" for c in response.tool_calls):
            return dataclasses.replace(response, text="I will not delete anything.", tool_calls=())
        return None


class Polite(Hook):
    async def after_model(self, ctx: RunContext, response: ModelResponse) -> ModelResponse | None:
        return dataclasses.replace(response, text=response.text + " Thank you.")


async def test_a_replaced_response_runs_its_calls_and_keeps_its_text() -> None:
    ran.clear()
    model = ScriptedModel([tool_turn(call("delete_everything"), text="Deleting now.")])
    agent = AgentExecutor(
        model=model, tools=[delete_everything], hooks=[NoDeletes()], metrics=CollectorRegistry()
    )
    command = AgentCommand(user_prompt="clean up", session_id="s")

    events = [e async for e in agent.execute_stream(command)]

    assert ran == [] and not any(isinstance(e, ToolStartEvent) for e in events)
    assert "".join(e.text for e in events if isinstance(e, MessageEvent)) == "Deleting now."
    history = await agent.memory.load(None, "s")
    assert [(m.role, m.content) for m in history] == [
        ("user", "clean up"),
        ("assistant", "I will not delete anything."),
    ]
    result = await AgentExecutor(
        model=ScriptedModel([tool_turn(call("delete_everything"), text="Deleting now.")]),
        tools=[delete_everything],
        hooks=[NoDeletes()],
        metrics=CollectorRegistry(),
    ).execute(AgentCommand(user_prompt="clean up"))
    assert (result.content, result.tool_calls) == ("I will not delete anything.", [])


async def test_the_final_answers_replacement_is_the_results_content() -> None:
    model = ScriptedModel([tool_turn(call("noop"), text="Let me check."), "All good."])

    @tool
    def noop() -> str:
        """Nothing."""
        return "ok"

    agent = AgentExecutor(model=model, tools=[noop], hooks=[Polite()], metrics=CollectorRegistry())
    result = await agent.execute(AgentCommand(user_prompt="check"))

    assert result.content == "Let me check. Thank you.\n\nAll good. Thank you."


async def test_long_turns_keep_their_text_when_a_hook_replaces_one() -> None:
    """Turns of many deltas (the run joins its older deltas as it goes): the stream, the
    model's record of each turn and a hook's replacement of the last all see whole texts."""
    first = " ".join(f"step{i}" for i in range(75)) + "."
    second = " ".join(f"word{i}" for i in range(140)) + "."
    seen: list[str] = []

    class Records(Hook):
        async def after_model(
            self, ctx: RunContext, response: ModelResponse
        ) -> ModelResponse | None:
            seen.append(response.text)
            if response.tool_calls:
                return None
            return dataclasses.replace(response, text="Short.")

    @tool
    def noop() -> str:
        """Nothing."""
        return "ok"

    def agent() -> AgentExecutor:
        return AgentExecutor(
            model=ScriptedModel([tool_turn(call("noop"), text=first), second]),
            tools=[noop],
            hooks=[Records()],
            metrics=CollectorRegistry(),
        )

    events = [e async for e in agent().execute_stream(AgentCommand(user_prompt="go"))]
    result = await agent().execute(AgentCommand(user_prompt="go"))

    streamed = "".join(e.text for e in events if isinstance(e, MessageEvent))
    assert streamed == f"{first}\n\n{second}"
    assert seen == [first, second] * 2
    assert result.content == f"{first}\n\nShort."
    assert [m.content for m in result.messages if m.role == "assistant"] == [first, "Short."]


class Signed(Hook):
    """Signs the answer, as a rewriting after-run hook did in the system this one replaces."""

    async def after_agent_complete(self, ctx: RunContext, result: AgentResult) -> AgentResult:
        return result.model_copy(update={"content": result.content + "\n-- The desk"})


async def test_a_replaced_result_is_what_execute_returns_and_memory_keeps() -> None:
    agent = AgentExecutor(
        model=ScriptedModel(["Done.", "Again."]), hooks=[Signed()], metrics=CollectorRegistry()
    )
    result = await agent.execute(AgentCommand(user_prompt="go", session_id="s"))
    assert result.content == "Done.\n-- The desk"
    history = await agent.memory.load(None, "s")
    assert [(m.role, m.content) for m in history] == [
        ("user", "go"),
        ("assistant", "Done.\n-- The desk"),
    ]
    events = [e async for e in agent.execute_stream(AgentCommand(user_prompt="more"))]
    streamed = "".join(e.text for e in events if isinstance(e, MessageEvent))
    assert streamed == "Again."  # what a stream already carried is not taken back
