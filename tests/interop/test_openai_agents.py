"""The OpenAI Agents SDK (``agents``) runs its agents on the service as their model.

Proves, with the SDK's Chat Completions model (``OpenAIChatCompletionsModel``), that a
``@function_tool`` makes its round trip (``Runner.run`` and ``Runner.run_streamed``): the model
is offered the SDK's tool beside the service's ``lookup_order`` and sees the SDK's result; that a
handoff (the SDK's client tool ``transfer_to_<agent>``), made beside a server tool call, reaches
the second agent, whose instructions and tools the model then gets with both calls' results; that
a finished run's items carry on as the next run's history; and that an ``output_type`` (a
pydantic model) goes to the model as the SDK's strict ``json_schema`` and comes back parsed.
With the SDK's default Responses API (a model named by a string, and ``OpenAIResponsesModel``)
it proves the same over ``POST /v1/responses``: the round trip with a server tool in the same
turn, streamed, with ``previous_response_id`` (only the tool's output sent), and the
``output_type``. Tracing is off and every client is explicit: nothing leaves 127.0.0.1.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from pydantic import BaseModel

from ..fakes.tool_model import ThreadedModelServer
from .conftest import Sent, framework

openai = framework("openai")
agents = framework("agents")

agents.set_tracing_disabled(True)


class Order(BaseModel):
    order_id: str
    status: str


@agents.function_tool
def refund(amount: float) -> str:
    """Refund an amount to the customer."""
    return f"refunded {amount}"


@pytest.fixture
async def client(service: str, sent: Sent) -> AsyncIterator[Any]:
    async with openai.AsyncOpenAI(
        base_url=f"{service}/v1", api_key="sk-interop", http_client=sent.async_client()
    ) as client:
        yield client


@pytest.fixture
def chat_model(client: Any) -> Any:
    return agents.OpenAIChatCompletionsModel(model="default", openai_client=client)


def _names(body: dict[str, Any]) -> set[str]:
    return {tool["function"]["name"] for tool in body.get("tools") or ()}


def _system(body: dict[str, Any]) -> str:
    return "\n".join(m["content"] for m in body["messages"] if m["role"] == "system")


async def test_function_tool_round_trip(chat_model: Any, model: ThreadedModelServer) -> None:
    before = len(model.requests)
    agent = agents.Agent(name="Support", instructions="Help.", model=chat_model, tools=[refund])

    result = await agents.Runner.run(agent, 'refund({"amount": 5})')

    assert result.final_output == "Done: refunded 5.0"
    asked, resumed = model.requests[before:]
    assert _names(asked) == _names(resumed) == {"lookup_order", "refund"}
    assert _system(asked) == "Help."
    call, answer = resumed["messages"][-2:]
    assert [c["function"]["name"] for c in call["tool_calls"]] == ["refund"]
    assert answer == {
        "role": "tool",
        "tool_call_id": call["tool_calls"][0]["id"],
        "content": "refunded 5.0",
    }


async def test_function_tool_round_trip_streamed(
    chat_model: Any, model: ThreadedModelServer
) -> None:
    before = len(model.requests)
    agent = agents.Agent(name="Support", instructions="Help.", model=chat_model, tools=[refund])

    result = agents.Runner.run_streamed(agent, 'refund({"amount": 2})')
    items, text = await _events(result)

    assert result.final_output == text == "Done: refunded 2.0"
    assert items == ["tool_called", "tool_output", "message_output_created"]
    assert len(model.requests) - before == 2
    assert model.requests[-1]["messages"][-1]["content"] == "refunded 2.0"


async def test_handoff(chat_model: Any, model: ThreadedModelServer, sent: Sent) -> None:
    """The handoff call, made beside a server tool's, is handed back; the SDK then asks with
    the second agent's instructions and tools, and the model sees both calls and results."""
    before = len(model.requests)
    billing = agents.Agent(name="Billing", instructions="Bill.", model=chat_model, tools=[refund])
    triage = agents.Agent(
        name="Triage", instructions="Route.", model=chat_model, handoffs=[billing]
    )

    result = await agents.Runner.run(
        triage, 'lookup_order({"order_id": "42"}) then transfer_to_billing'
    )

    assert result.last_agent is billing
    assert result.final_output == 'Done: order 42 shipped; {"assistant": "Billing"}'
    assert [c["function"]["name"] for c in sent.bodies[1]["messages"][-2]["tool_calls"]] == [
        "transfer_to_billing"
    ]
    asked, handed = model.requests[before:]
    assert (_system(asked), _names(asked)) == ("Route.", {"lookup_order", "transfer_to_billing"})
    assert (_system(handed), _names(handed)) == ("Bill.", {"lookup_order", "refund"})
    call, *answers = handed["messages"][-3:]
    names = [c["function"]["name"] for c in call["tool_calls"]]
    assert names == ["lookup_order", "transfer_to_billing"]
    assert [(a["tool_call_id"], a["content"]) for a in answers] == [
        (call["tool_calls"][0]["id"], "order 42 shipped"),
        (call["tool_calls"][1]["id"], '{"assistant": "Billing"}'),
    ]


async def test_output_type(chat_model: Any, model: ThreadedModelServer, sent: Sent) -> None:
    before = len(model.requests)
    agent = agents.Agent(name="Orders", instructions="Answer.", model=chat_model, output_type=Order)

    result = await agents.Runner.run(agent, "where is order 42?")

    assert result.final_output == Order(order_id="You said: where is order 42?", status="value")
    (asked,) = model.requests[before:]
    form = sent.bodies[-1]["response_format"]
    assert form["type"] == "json_schema"
    assert form["json_schema"]["strict"] is True
    assert asked["response_format"] == form


async def test_conversation_goes_on(chat_model: Any, model: ThreadedModelServer) -> None:
    """A finished run's items (the tool call and its output among them) as the next history."""
    agent = agents.Agent(name="Support", instructions="Help.", model=chat_model, tools=[refund])
    first = await agents.Runner.run(agent, 'refund({"amount": 5})')
    before = len(model.requests)

    result = await agents.Runner.run(
        agent, [*first.to_input_list(), {"role": "user", "content": "thanks"}]
    )

    assert result.final_output == "You said: thanks"
    (asked,) = model.requests[before:]
    roles = [m["role"] for m in asked["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert asked["messages"][3]["content"] == "refunded 5.0"


@pytest.fixture
def responses_model(client: Any) -> Any:
    return agents.OpenAIResponsesModel(model="default", openai_client=client)


async def test_responses_model_round_trip(
    client: Any, model: ThreadedModelServer, sent: Sent
) -> None:
    """The SDK's default way: a model named by a string, resolved by its OpenAI provider to
    its Responses model (given our client, not the global one)."""
    before = len(model.requests)
    agent = agents.Agent(name="Support", instructions="Help.", model="default", tools=[refund])
    provider = agents.OpenAIProvider(openai_client=client)

    result = await agents.Runner.run(
        agent,
        'lookup_order({"order_id": "42"}) then refund({"amount": 5})',
        run_config=agents.RunConfig(model_provider=provider),
    )

    assert result.final_output == "Done: order 42 shipped; refunded 5.0"
    assert sent.paths == ["/v1/responses", "/v1/responses"]
    assert [item["type"] for item in sent.bodies[1]["input"][1:]] == [
        "function_call",
        "function_call_output",
    ]
    asked, resumed = model.requests[before:]
    assert _names(asked) == _names(resumed) == {"lookup_order", "refund"}
    assert _system(asked) == "Help."
    calls = resumed["messages"][-3]["tool_calls"]
    assert [c["function"]["name"] for c in calls] == ["lookup_order", "refund"]
    assert [m["content"] for m in resumed["messages"][-2:]] == ["order 42 shipped", "refunded 5.0"]


async def test_responses_model_streamed(
    responses_model: Any, model: ThreadedModelServer, sent: Sent
) -> None:
    before = len(model.requests)
    agent = agents.Agent(
        name="Support", instructions="Help.", model=responses_model, tools=[refund]
    )

    result = agents.Runner.run_streamed(agent, 'refund({"amount": 2})')
    items, text = await _events(result)

    assert result.final_output == text == "Done: refunded 2.0"
    assert items == ["tool_called", "tool_output", "message_output_created"]
    assert sent.paths == ["/v1/responses", "/v1/responses"]
    assert [body["stream"] for body in sent.bodies] == [True, True]
    assert len(model.requests) - before == 2
    assert model.requests[-1]["messages"][-1]["content"] == "refunded 2.0"


async def test_responses_model_previous_response_id(
    responses_model: Any, model: ThreadedModelServer, sent: Sent
) -> None:
    """The SDK sends only the tool's output and the earlier response's id: the service has
    the rest of the conversation."""
    before = len(model.requests)
    agent = agents.Agent(
        name="Support", instructions="Help.", model=responses_model, tools=[refund]
    )

    result = await agents.Runner.run(agent, 'refund({"amount": 4})', auto_previous_response_id=True)

    assert result.final_output == "Done: refunded 4.0"
    resumed_body = sent.bodies[1]
    assert resumed_body["previous_response_id"] == result.raw_responses[0].response_id
    assert [item["type"] for item in resumed_body["input"]] == ["function_call_output"]
    _, resumed = model.requests[before:]
    assert [m["role"] for m in resumed["messages"]] == ["system", "user", "assistant", "tool"]
    assert resumed["messages"][-1]["content"] == "refunded 4.0"


async def test_responses_model_output_type(
    responses_model: Any, model: ThreadedModelServer, sent: Sent
) -> None:
    before = len(model.requests)
    agent = agents.Agent(
        name="Orders", instructions="Answer.", model=responses_model, output_type=Order
    )

    result = await agents.Runner.run(agent, "where is order 42?")

    assert result.final_output == Order(order_id="You said: where is order 42?", status="value")
    form = sent.bodies[-1]["text"]["format"]
    assert (form["type"], form["strict"]) == ("json_schema", True)
    (asked,) = model.requests[before:]
    assert asked["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": form["name"], "schema": form["schema"], "strict": True},
    }


async def _events(result: Any) -> tuple[list[str], str]:
    """The names of a streamed run's items, and the text of its output deltas."""
    items: list[str] = []
    text = ""
    async for event in result.stream_events():
        if event.type == "run_item_stream_event":
            items.append(event.name)
        elif event.type == "raw_response_event" and event.data.type == "response.output_text.delta":
            text += event.data.delta
    return items, text
