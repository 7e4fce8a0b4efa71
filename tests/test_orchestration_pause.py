"""A run that pauses for approval after a handoff resumes on the agent that paused it: the
resume goes to the agent the run was sent to, which gives the run back to the agent speaking
at the pause (its tools, prompt, model and signer), in memory, in Redis and through the
service."""

from __future__ import annotations

import json

import redis.asyncio

from agent_executor import (
    AgentCommand,
    AgentEvent,
    AgentExecutor,
    AgentSelectedEvent,
    DoneEvent,
    ErrorEvent,
    MessageEvent,
    ToolEndEvent,
    ToolStartEvent,
    handoff,
    tool,
)
from agent_executor.approvals import Approval, PendingRun
from agent_executor.memory import ConversationStore
from agent_executor.models.scripted import call, text_turn, tool_turn
from agent_executor.redis import RedisConversationStore
from agent_executor.tools.ask_user import ASK_USER

from .helpers import model_of
from .helpers import named_agent as agent
from .redis_server import RedisServer
from .server_helpers import resume_body, serve

RESUMED = AgentSelectedEvent(
    agent="billing", selected_by="handoff", detail="from triage, resuming its paused run"
)


@tool(requires_approval=True)
def refund(amount: int) -> str:
    """Refund an amount to the customer."""
    return f"refunded {amount}"


def triage_and_billing(
    answer: str, memory: ConversationStore | None = None
) -> tuple[AgentExecutor, AgentExecutor]:
    """Triage hands over to billing, which asks to refund 5 and then answers ``answer``.
    Each agent has its own approval secret (random), as agents built apart have."""
    billing = agent(
        "billing",
        [tool_turn(call("refund", {"amount": 5}), usage=(7, 2)), text_turn(answer, usage=(9, 3))],
        system_prompt="You are billing.",
        tools=[refund],
    )
    triage = agent(
        "triage",
        [tool_turn(call("transfer_to_billing"), usage=(5, 1))],
        system_prompt="You triage.",
        tools=[handoff(billing)],
        memory=memory,
    )
    return triage, billing


async def stream(executor: AgentExecutor, command: AgentCommand) -> list[AgentEvent]:
    return [event async for event in executor.execute_stream(command)]


async def pause(triage: AgentExecutor) -> DoneEvent:
    events = await stream(triage, AgentCommand(user_prompt="Refund me 5.", session_id="s"))
    done = events[-1]
    assert isinstance(done, DoneEvent) and done.finish_reason == "waiting_for_approval"
    assert [e.agent for e in events if isinstance(e, AgentSelectedEvent)] == ["billing"]
    assert [p.tool for p in done.pending_approvals] == ["refund"]
    return done


def decide(paused: DoneEvent, approved: bool) -> AgentCommand:
    (pending,) = paused.pending_approvals
    approval = Approval(
        call_id=pending.call_id, approved=approved, approval_token=pending.approval_token
    )
    return AgentCommand(user_prompt="", session_id="s", approvals=[approval])


async def check_resumed(
    triage: AgentExecutor, billing: AgentExecutor, events: list[AgentEvent], status: str
) -> None:
    """Billing got the run back: its tool call settled, its model answered with its prompt
    and tools, the stream said so first, and triage saved the whole run."""
    assert events[0] == RESUMED
    start, end = events[1], events[2]
    assert isinstance(start, ToolStartEvent) and start.tool == "refund"
    assert isinstance(end, ToolEndEvent) and end.status == status
    done = events[-1]
    assert isinstance(done, DoneEvent) and done.finish_reason == "stop", events
    assert done.usage is not None and done.usage.input_tokens == 21  # 5 + 7 + 9
    assert len(model_of(triage).requests) == 1
    answer = model_of(billing).requests[-1]
    assert answer.messages[0].content == "You are billing."
    assert [spec["function"]["name"] for spec in answer.tools] == ["refund"]
    assert [m.role for m in answer.messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
    ]
    history = await triage.memory.load(None, "s")
    assert [m.role for m in history] == [*(m.role for m in answer.messages[1:]), "assistant"]
    assert not await triage.waiting_for_approval(None, "s")


async def test_an_approved_call_runs_on_the_agent_that_paused_after_a_handoff() -> None:
    triage, billing = triage_and_billing("Refunded 5.")
    paused = await pause(triage)

    events = await stream(triage, decide(paused, approved=True))

    await check_resumed(triage, billing, events, "success")
    assert model_of(billing).requests[-1].messages[-1].content == "refunded 5"
    text = "".join(e.text for e in events if isinstance(e, MessageEvent))
    assert text == "Refunded 5."


async def test_a_declined_call_is_refused_on_the_agent_that_paused_after_a_handoff() -> None:
    triage, billing = triage_and_billing("No refund then.")
    paused = await pause(triage)

    result = await triage.execute(decide(paused, approved=False))

    assert result.success and result.content == "No refund then."
    refused = model_of(billing).requests[-1].messages[-1]
    assert refused.role == "tool" and "did not approve" in str(refused.content)


async def test_ask_user_after_a_handoff_gets_the_answer_on_the_agent_that_asked() -> None:
    billing = agent(
        "billing",
        [tool_turn(call("ask_user", {"question": "Which invoice?"})), "Invoice 42 it is."],
        tools=[ASK_USER],
    )
    triage = agent("triage", [tool_turn(call("transfer_to_billing"))], tools=[handoff(billing)])
    asked = await triage.execute(AgentCommand(user_prompt="Help.", session_id="s"))
    assert asked.finish_reason == "waiting_for_approval"
    (pending,) = asked.pending_approvals
    answer = Approval(
        call_id=pending.call_id,
        approved=True,
        approval_token=pending.approval_token,
        answer="42",
    )

    result = await triage.execute(AgentCommand(user_prompt="", session_id="s", approvals=[answer]))

    assert result.success and result.content == "Invoice 42 it is."
    assert model_of(billing).requests[-1].messages[-1].content == "42"


async def test_a_paused_run_on_an_agent_no_longer_reachable_is_refused() -> None:
    triage, _ = triage_and_billing("Refunded 5.")
    paused = await pause(triage)
    stranger = agent("triage", [], memory=triage.memory)  # same name and store, no handoff

    events = await stream(stranger, decide(paused, approved=True))

    error = events[-2]
    assert isinstance(error, ErrorEvent) and error.code == "invalid_input"
    assert "'billing'" in error.message


# -- Redis --------------------------------------------------------------------------------------


async def test_a_paused_run_in_redis_resumes_on_the_agent_that_paused(
    redis_store: RedisConversationStore,
) -> None:
    store = redis_store
    triage, billing = triage_and_billing("Refunded 5.", memory=store)
    paused = await pause(triage)
    stored = await store.load_pending(None, "s")
    assert stored is not None and (stored.agent, stored.handoffs) == ("billing", 1)

    events = await stream(triage, decide(paused, approved=True))

    await check_resumed(triage, billing, events, "success")


async def test_a_paused_run_stored_without_its_agent_still_loads_and_resumes(
    redis_store: RedisConversationStore, redis_module: RedisServer
) -> None:
    store = redis_store
    executor = agent(
        "solo", [tool_turn(call("refund", {"amount": 5})), "Done."], tools=[refund], memory=store
    )
    result = await executor.execute(AgentCommand(user_prompt="Refund me 5.", session_id="s"))
    # as an older version stored it: no agent or handoffs, and a field this one does not know
    client = redis.asyncio.Redis.from_url(redis_module.url)
    (key,) = await client.keys("agent-executor:pending:*")
    entry = json.loads(await client.get(key))
    del entry["agent"], entry["handoffs"]
    entry["a_later_field"] = 1
    await client.set(key, json.dumps(entry))
    await client.aclose()
    loaded = await store.load_pending(None, "s")
    assert isinstance(loaded, PendingRun) and (loaded.agent, loaded.handoffs) == (None, 0)

    (pending,) = result.pending_approvals
    approval = Approval(
        call_id=pending.call_id, approved=True, approval_token=pending.approval_token
    )
    resumed = await executor.execute(
        AgentCommand(user_prompt="", session_id="s", approvals=[approval])
    )

    assert resumed.success and resumed.content == "Done."
    assert [r.status for r in resumed.tool_calls] == ["success"]


# -- the service --------------------------------------------------------------------------------


async def test_the_service_resumes_a_paused_run_on_the_agent_that_paused() -> None:
    triage, billing = triage_and_billing("Refunded 5.")
    async with serve({"triage": triage, "billing": billing}) as client:
        first = await client.post(
            "/api/chat/stream",
            json={"message": "Refund me 5.", "session_id": "s", "events": "json"},
        )
        done = json.loads(first.text.rsplit("event: done\ndata: ", 1)[1].split("\n", 1)[0])
        assert done["finish_reason"] == "waiting_for_approval"
        (pending,) = done["pending_approvals"]
        resumed = await client.post(
            "/api/chat/stream",
            json=resume_body(pending),
        )

    body = resumed.text
    assert (
        'event: agent_selected\ndata: {"agent":"billing","selected_by":"handoff",'
        '"detail":"from triage, resuming its paused run"}' in body
    )
    assert '"finish_reason":"stop"' in body
    assert model_of(billing).requests[-1].messages[-1].content == "refunded 5"
