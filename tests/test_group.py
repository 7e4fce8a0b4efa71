"""Agent groups through the public API, on scripted models: each strategy (direct, auto with a
moderator's JSON plan, hybrid), the termination word and ``max_rounds``, a bad plan corrected
once and then refused, a paused agent pausing the group and the group resuming where it
stopped (in memory and in Redis), cancellation reaching the agent that speaks, usage summed
over agents and moderator, and ``execute()`` reading what the stream shows."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from prometheus_client import CollectorRegistry

from agent_executor import (
    AgentCommand,
    AgentEvent,
    AgentExecutor,
    AgentGroup,
    AgentSelectedEvent,
    AutoTurns,
    ClientTool,
    ConfigurationError,
    DirectTurns,
    DoneEvent,
    ErrorEvent,
    HybridTurns,
    MessageEvent,
    RateLimitGuard,
    ScriptedModel,
    ToolCallEvent,
    ToolResults,
    ToolStartEvent,
    handoff,
    tool,
)
from agent_executor.approvals import Approval
from agent_executor.memory import ConversationStore
from agent_executor.models.scripted import call, text_turn, tool_turn
from agent_executor.redis import RedisConversationStore
from agent_executor.tools.ask_user import ASK_USER

from .helpers import model_of, named_agent
from .test_orchestration import Sleeper

# This module still passes the keyword arguments the settings objects replaced (max_turns=...);
# they warn until 0.2.0 (tests/test_settings.py checks the warning itself).
pytestmark = pytest.mark.filterwarnings(
    "ignore:.*keyword arguments are deprecated:DeprecationWarning"
)


def group(agents: list[AgentExecutor], **options: Any) -> AgentGroup:
    return AgentGroup(agents, name="team", metrics=CollectorRegistry(), **options)


async def stream(executor: AgentExecutor, command: AgentCommand | str) -> list[AgentEvent]:
    if isinstance(command, str):
        command = AgentCommand(user_prompt=command)
    return [event async for event in executor.execute_stream(command)]


def text(events: list[AgentEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, MessageEvent))


def speakers(events: list[AgentEvent]) -> list[str]:
    return [e.agent for e in events if isinstance(e, AgentSelectedEvent)]


def plan(agent: str | None, query: str = "", action: str = "CONTINUE", **keys: str) -> str:
    return json.dumps(
        {
            "planning": "p",
            "next_agent_name": agent or "",
            "next_query": query,
            "next_action": action,
            **keys,
        }
    )


def sample(executor: AgentExecutor, name: str, **labels: str) -> float:
    value = executor.metrics.registry.get_sample_value(name, labels)
    return 0.0 if value is None else value


# -- direct ---------------------------------------------------------------------------------------


async def test_direct_handoff_passes_each_answer_to_the_next_agent_in_order() -> None:
    writer = named_agent("writer", [text_turn("Draft: cats sleep.", usage=(10, 4))])
    editor = named_agent("editor", [text_turn("Final: Cats sleep a lot.", usage=(20, 6))])
    team = group([writer, editor])

    events = await stream(team, AgentCommand(user_prompt="Write about cats.", session_id="s"))

    assert speakers(events) == ["writer", "editor"]
    selected = [e for e in events if isinstance(e, AgentSelectedEvent)]
    assert {e.selected_by for e in selected} == {"group"}
    assert selected[0].detail is not None and selected[0].detail.startswith("round 1 of 5")
    assert text(events) == "Draft: cats sleep.\n\nFinal: Cats sleep a lot."
    assert model_of(writer).requests[0].messages[-1].content == "Write about cats."
    assert model_of(editor).requests[0].messages[-1].content == "Draft: cats sleep."
    done = events[-1]
    assert isinstance(done, DoneEvent) and done.finish_reason == "stop"
    assert done.usage is not None
    assert (done.usage.input_tokens, done.usage.output_tokens) == (30, 10)
    history = await team.memory.load(None, "s")
    assert [(m.role, m.content) for m in history] == [
        ("user", "Write about cats."),
        ("assistant", "Final: Cats sleep a lot."),
    ]
    assert sample(team, "agent_executor_group_rounds_total", group="team", agent="editor") == 1


async def test_each_agent_remembers_its_own_rounds_within_the_groups_session() -> None:
    writer = named_agent("writer", ["First draft.", "Second draft."])
    team = group([writer])

    for prompt in ("one", "two"):
        await team.execute(AgentCommand(user_prompt=prompt, session_id="s"))

    second = model_of(writer).requests[1]
    assert [m.content for m in second.messages] == ["one", "First draft.", "two"]
    assert await writer.memory.load(None, "s/team/writer")


async def test_a_cycling_group_ends_on_the_termination_word_without_keeping_it() -> None:
    ping = named_agent("ping", ["ping 1", "ping 2"])
    pong = named_agent("pong", ["pong 1", "pong 2 TERMINATE"])
    team = group([ping, pong], strategy=DirectTurns(cycle=True), max_rounds=9)

    result = await team.execute(AgentCommand(user_prompt="go", session_id="s"))

    assert result.success and result.finish_reason == "stop"
    assert result.content == "ping 1\n\npong 1\n\nping 2\n\npong 2 TERMINATE"
    assert (await team.memory.load(None, "s"))[-1].content == "pong 2"


async def test_max_rounds_ends_the_group_as_max_turns_with_the_last_answer() -> None:
    ping = named_agent("ping", ["a", "c"])
    pong = named_agent("pong", ["b"])
    team = group([ping, pong], strategy=DirectTurns(cycle=True), max_rounds=3)

    result = await team.execute(AgentCommand(user_prompt="go", session_id="s"))

    assert result.finish_reason == "max_turns" and result.content == "a\n\nb\n\nc"
    assert (await team.memory.load(None, "s"))[-1].content == "c"


def test_a_group_is_checked_when_built() -> None:
    a = named_agent("a", [])
    with pytest.raises(ConfigurationError, match="at least one agent"):
        group([])
    with pytest.raises(ConfigurationError, match="different names"):
        group([a, named_agent("a", [])])
    with pytest.raises(ConfigurationError, match="not in the group"):
        group([a], strategy=HybridTurns("demo", next={"a": "b"}))
    with pytest.raises(ConfigurationError, match="as_tool"):
        named_agent("x", [], tools=[handoff(group([a]))])
    with pytest.raises(ConfigurationError, match="no tools"):
        group([a]).add_tools(ASK_USER)


# -- auto and hybrid ------------------------------------------------------------------------------


async def test_the_moderator_plans_each_round_and_ends_the_group() -> None:
    researcher = named_agent("researcher", [text_turn("Paris has 2.1M people.", usage=(5, 5))])
    writer = named_agent("writer", [text_turn("About 2 million live in Paris.", usage=(7, 7))])
    moderator = ScriptedModel(
        [
            text_turn(plan("researcher", "Find the population of Paris."), usage=(100, 10)),
            # camelCase keys, as some models write them; in a code fence
            "```json\n"
            + json.dumps(
                {
                    "nextAgentName": "writer",
                    "nextQuery": "Say it simply: 2.1M",
                    "nextAction": "terminate",
                }
            )
            + "\n```",
        ],
        name="moderator-model",
    )
    team = group([researcher, writer], strategy=AutoTurns(moderator))

    events = await stream(team, "How many people live in Paris?")

    assert speakers(events) == ["researcher", "writer"]
    assert model_of(writer).requests[0].messages[-1].content == "Say it simply: 2.1M"
    second_plan = moderator.requests[1].messages[-1].content
    assert "How many people live in Paris?" in second_plan
    assert "Paris has 2.1M people." in second_plan and "researcher" in second_plan
    done = events[-1]
    assert isinstance(done, DoneEvent) and done.finish_reason == "stop"
    assert done.usage is not None and done.usage.input_tokens == 112  # moderator's 100 counted
    assert "next_agent_name" not in text(events)  # the plans are not the group's text


async def test_a_bad_plan_is_sent_back_once_with_what_is_wrong() -> None:
    solo = named_agent("solo", ["Done."])
    moderator = ScriptedModel(
        [plan("nobody", "x"), plan("solo", "do it", "TERMINATE")], name="moderator-model"
    )
    team = group([solo], strategy=AutoTurns(moderator))

    result = await team.execute(AgentCommand(user_prompt="task"))

    assert result.success and result.content == "Done."
    correction = moderator.requests[1].messages
    assert [m.role for m in correction[-3:]] == ["user", "assistant", "user"]
    assert "'nobody' is not an agent of the group" in str(correction[-1].content)


@pytest.mark.parametrize(
    "answers",
    [
        ["no json here", "still none"],
        [plan("solo", ""), plan(None, action="CONTINUE")],
        [plan(None, action="TERMINATE"), '{"next_action": "MAYBE"}'],
    ],
)
async def test_a_second_bad_plan_ends_the_group_with_invalid_plan(answers: list[str]) -> None:
    solo = named_agent("solo", [])
    team = group([solo], strategy=AutoTurns(ScriptedModel(answers)))

    events = await stream(team, "task")

    error, done = events[-2], events[-1]
    assert isinstance(error, ErrorEvent) and error.code == "invalid_plan", events
    assert isinstance(done, DoneEvent) and done.finish_reason == "error"
    assert model_of(solo).requests == []
    assert sample(team, "agent_executor_requests_total", mode="stream", outcome="invalid_plan")


async def test_hybrid_uses_fixed_successors_and_the_moderator_elsewhere() -> None:
    writer = named_agent("writer", ["A poem."])
    reviewer = named_agent("reviewer", ["Good poem."])
    moderator = ScriptedModel(
        [plan("writer", "Write a poem."), plan(None, action="TERMINATE")], name="m"
    )
    team = group([writer, reviewer], strategy=HybridTurns(moderator, next={"writer": "reviewer"}))

    result = await team.execute(AgentCommand(user_prompt="poem please", session_id="s"))

    assert result.content == "A poem.\n\nGood poem."
    assert model_of(reviewer).requests[0].messages[-1].content == "A poem."
    assert len(moderator.requests) == 2  # round 1, and after the reviewer
    assert (await team.memory.load(None, "s"))[-1].content == "Good poem."


# -- failures and cancellation --------------------------------------------------------------------


async def test_an_agent_that_fails_ends_the_group_with_its_error() -> None:
    writer = named_agent("writer", ["Draft."])
    editor = named_agent("editor", [], max_tool_calls=1)  # its script is empty: the model fails
    team = group([writer, editor])

    events = await stream(team, AgentCommand(user_prompt="go", session_id="s"))

    error = events[-2]
    assert isinstance(error, ErrorEvent) and error.code == "llm_error"
    assert "agent editor failed" in error.message
    assert await team.memory.load(None, "s") == []  # a failed run leaves nothing


async def test_closing_the_groups_stream_cancels_the_agent_speaking() -> None:
    sleeper = Sleeper()
    worker = named_agent("worker", [tool_turn(call("wait_forever"))], tools=[sleeper.tool])
    team = group([named_agent("first", ["ok"]), worker])

    events = team.execute_stream(AgentCommand(user_prompt="go"))
    with anyio.fail_after(5):
        async for event in events:
            if isinstance(event, ToolStartEvent):
                await sleeper.started.wait()
                break
    with anyio.fail_after(2):
        await events.aclose()

    assert sleeper.cancelled.is_set()
    for executor in (worker, team):
        assert executor.metrics.in_flight._value.get() == 0  # type: ignore[attr-defined]
        assert sample(executor, "agent_executor_requests_total", mode="stream", outcome="cancelled")


async def test_the_groups_request_timeout_reaches_the_agent_speaking() -> None:
    sleeper = Sleeper()
    worker = named_agent("worker", [tool_turn(call("wait_forever"))], tools=[sleeper.tool])
    team = group([worker], request_timeout=0.3)

    with anyio.fail_after(5):
        result = await team.execute(AgentCommand(user_prompt="go"))

    assert result.error is not None and result.error.code == "timeout"
    assert sleeper.cancelled.is_set()


# -- pausing --------------------------------------------------------------------------------------


@tool(requires_approval=True)
def publish(title: str) -> str:
    """Publish the article."""
    return f"published {title}"


def publishing_team(
    memory: ConversationStore | None = None, *, resumed: bool = False
) -> tuple[AgentGroup, AgentExecutor]:
    """Writer, publisher (whose call to publish needs approval), checker. ``resumed``: the
    publisher's model is past its tool call (another replica resuming the paused run)."""
    writer = named_agent("writer", [text_turn("Cats.", usage=(1, 1))])
    turns = [tool_turn(call("publish", {"title": "Cats"}), usage=(2, 2))]
    publisher = named_agent(
        "publisher",
        [*([] if resumed else turns), text_turn("Published.", usage=(3, 3))],
        tools=[publish],
        memory=memory,
        approval_secret="the publisher's secret",
    )
    checker = named_agent("checker", [text_turn("Live.", usage=(4, 4))])
    team = AgentGroup(
        [writer, publisher, checker], name="team", metrics=CollectorRegistry(), memory=memory
    )
    return team, publisher


async def pause_and_resume(team: AgentGroup, approved: bool) -> tuple[DoneEvent, list[AgentEvent]]:
    first = await stream(team, AgentCommand(user_prompt="Write and publish.", session_id="s"))
    paused = first[-1]
    assert isinstance(paused, DoneEvent) and paused.finish_reason == "waiting_for_approval"
    assert speakers(first) == ["writer", "publisher"]
    assert await team.waiting_for_approval(None, "s")
    (pending,) = paused.pending_approvals
    approval = Approval(
        call_id=pending.call_id, approved=approved, approval_token=pending.approval_token
    )
    resumed = await stream(team, AgentCommand(user_prompt="", session_id="s", approvals=[approval]))
    return paused, resumed


async def test_an_agent_waiting_for_approval_pauses_the_group_which_resumes_where_it_stopped() -> (
    None
):
    team, publisher = publishing_team()

    paused, events = await pause_and_resume(team, approved=True)

    assert [p.tool for p in paused.pending_approvals] == ["publish"]
    assert speakers(events) == ["publisher", "checker"]  # the publisher goes on, then round 3
    resumed = events[0]
    assert isinstance(resumed, AgentSelectedEvent)
    assert resumed.detail == "round 2 of 5: resuming its paused run"
    assert text(events) == "Published.\n\nLive."
    done = events[-1]
    assert isinstance(done, DoneEvent) and done.finish_reason == "stop"
    assert [(r.tool, r.status) for r in done.tool_calls] == [("publish", "success")]
    assert done.usage is not None and done.usage.input_tokens == 10  # 1 + 2 + 3 + 4
    assert model_of(publisher).requests[-1].messages[-1].content == "published Cats"
    history = await team.memory.load(None, "s")
    assert [(m.role, m.content) for m in history] == [
        ("user", "Write and publish."),
        ("assistant", "Live."),
    ]
    assert not await team.waiting_for_approval(None, "s")


async def test_a_declined_call_is_reported_to_the_agent_and_the_group_goes_on() -> None:
    team, publisher = publishing_team()

    _, events = await pause_and_resume(team, approved=False)

    assert isinstance(events[-1], DoneEvent) and events[-1].finish_reason == "stop"
    refused = model_of(publisher).requests[-1].messages[-1]
    assert refused.role == "tool" and "did not approve" in str(refused.content)


async def test_a_group_without_a_session_cannot_pause() -> None:
    team, _ = publishing_team()

    result = await team.execute(AgentCommand(user_prompt="Write and publish."))

    assert result.error is not None and result.error.code == "invalid_input"
    assert "publisher failed" in result.error.message


async def test_a_group_paused_in_redis_resumes_on_a_fresh_group(
    redis_store: RedisConversationStore,
) -> None:
    store = redis_store
    team, _ = publishing_team(memory=store)
    first = await stream(team, AgentCommand(user_prompt="Write and publish.", session_id="s"))
    paused = first[-1]
    assert isinstance(paused, DoneEvent)
    (pending,) = paused.pending_approvals

    # Another replica: new objects, the same Redis and approval secret.
    again, _ = publishing_team(memory=store, resumed=True)
    approval = Approval(
        call_id=pending.call_id, approved=True, approval_token=pending.approval_token
    )
    events = await stream(again, AgentCommand(user_prompt="", session_id="s", approvals=[approval]))

    assert speakers(events) == ["publisher", "checker"] and text(events) == "Published.\n\nLive."
    assert [(m.role, m.content) for m in await store.load(None, "s")][-1] == ("assistant", "Live.")


async def test_ask_user_inside_a_group_gets_the_answer() -> None:
    asker = named_agent(
        "asker",
        [tool_turn(call("ask_user", {"question": "Which city?"})), "Paris it is."],
        tools=[ASK_USER],
    )
    team = group([asker])
    asked = await team.execute(AgentCommand(user_prompt="Plan a trip.", session_id="s"))
    (pending,) = asked.pending_approvals
    answer = Approval(
        call_id=pending.call_id,
        approved=True,
        approval_token=pending.approval_token,
        answer="Paris",
    )

    result = await team.execute(AgentCommand(user_prompt="", session_id="s", approvals=[answer]))

    assert result.success and result.content == "Paris it is."
    assert model_of(asker).requests[-1].messages[-1].content == "Paris"


async def test_execute_reads_what_the_stream_shows() -> None:
    def team() -> AgentGroup:
        return group([named_agent("a", ["one\n"]), named_agent("b", ["two"])])

    events = await stream(team(), "go")
    result = await team().execute(AgentCommand(user_prompt="go"))

    assert result.content == text(events) == "one\n\ntwo"


async def test_each_round_is_a_span_under_the_groups_span() -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("tests")
    writer = named_agent("writer", ["Draft."], tracer=tracer)
    editor = named_agent("editor", ["Final."], tracer=tracer)
    team = group([writer, editor], tracer=tracer)

    await team.execute(AgentCommand(user_prompt="go"))

    spans = {span.name: span for span in exporter.get_finished_spans()}
    root = spans["invoke_agent team"]
    for name in ("writer", "editor"):
        run = spans[f"invoke_agent {name}"]
        assert run.parent is not None and run.parent.span_id == root.context.span_id
        chat = spans[f"chat {name}-model"]
        assert chat.parent is not None and chat.parent.span_id == run.context.span_id


async def test_a_groups_agent_calls_the_clients_tool_through_the_shared_results() -> None:
    results = ToolResults()
    picker = named_agent(
        "picker",
        [tool_turn(call("pick_color", {"options": ["red", "blue"]})), "Blue it is."],
        tool_results=results,
    )
    team = group([picker], tool_results=results)
    command = AgentCommand(
        user_prompt="Pick a colour.",
        user_id="u",
        client_tools=[ClientTool(name="pick_color", description="Ask the user for a colour.")],
    )

    events: list[AgentEvent] = []
    async for event in team.execute_stream(command):
        events.append(event)
        if isinstance(event, ToolCallEvent):
            assert team.tool_results.deliver(event.call_id, "u", result="blue") == "delivered"

    assert text(events) == "Blue it is."
    assert model_of(picker).requests[-1].messages[-1].content == "blue"


async def test_the_rate_limit_counts_the_users_request_once_not_each_round() -> None:
    limit = RateLimitGuard("1/minute")
    writer = named_agent("writer", ["Draft."], guards=[limit])
    editor = named_agent("editor", ["Final."], guards=[limit])
    team = group([writer, editor], guards=[limit])

    first = await team.execute(AgentCommand(user_prompt="go", user_id="u"))
    second = await team.execute(AgentCommand(user_prompt="again", user_id="u"))

    assert first.success and first.content == "Draft.\n\nFinal."
    assert second.error is not None and second.error.code == "rate_limited"


async def test_a_query_too_long_for_the_next_agent_is_shortened_first() -> None:
    long_draft = "The cat sat on the mat. " * 100  # 2,400 characters: ~600 tokens
    writer = named_agent("writer", [long_draft])
    editor = named_agent("editor", ["A cat sat."])
    shortener = named_agent("shortener", [text_turn("Cat on mat, repeated.", usage=(600, 5))])
    team = group([writer, editor], shortener=shortener, max_query_tokens=100)

    events = await stream(team, "Write.")

    assert model_of(editor).requests[0].messages[-1].content == "Cat on mat, repeated."
    asked = model_of(shortener).requests[0].messages[-1].content
    assert "at most 400 characters" in str(asked) and long_draft in str(asked)
    assert "Cat on mat" not in text(events)  # the shortener's text is not the group's
    done = events[-1]
    assert isinstance(done, DoneEvent) and done.usage is not None
    assert done.usage.input_tokens == 600  # counted (the others report no usage)
    assert len(model_of(writer).requests) == 1  # the first query was short enough
