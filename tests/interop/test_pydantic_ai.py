"""pydantic-ai's ``Agent`` runs on the service through ``OpenAIChatModel``.

Proves that a ``@agent.tool_plain`` tool makes its round trip (``run`` and ``run_stream``): the
model is offered pydantic-ai's tool beside the service's ``lookup_order`` and sees
pydantic-ai's result; that the default structured output (an output tool ``final_result``
forced with ``tool_choice: "required"``) ends the run with the model's arguments, the
``required`` choice reaching the model on every turn; and that ``NativeOutput`` goes to the
model as pydantic-ai's strict ``json_schema`` response format and comes back parsed; and, with
``OpenAIResponsesModel``, the round trip and the output tool over ``POST /v1/responses``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from pydantic import BaseModel

from ..fakes.tool_model import ThreadedModelServer
from .conftest import Sent, framework

pydantic_ai = framework("pydantic_ai")
models = framework("pydantic_ai.models.openai")
providers = framework("pydantic_ai.providers.openai")


class Order(BaseModel):
    order_id: str
    status: str


@pytest.fixture
async def chat_model(service: str, sent: Sent) -> AsyncIterator[Any]:
    async with sent.async_client() as http:
        provider = providers.OpenAIProvider(
            base_url=f"{service}/v1", api_key="sk-interop", http_client=http
        )
        yield models.OpenAIChatModel("default", provider=provider)


def _names(body: dict[str, Any]) -> set[str]:
    return {tool["function"]["name"] for tool in body.get("tools") or ()}


def _support(chat_model: Any) -> Any:
    agent = pydantic_ai.Agent(chat_model, instructions="Help.")

    @agent.tool_plain
    def refund(amount: float) -> str:
        """Refund an amount to the customer."""
        return f"refunded {amount}"

    return agent


async def test_tool_plain_round_trip(
    chat_model: Any, model: ThreadedModelServer, sent: Sent
) -> None:
    before = len(model.requests)

    result = await _support(chat_model).run('refund({"amount": 5})')

    assert result.output == "Done: refunded 5.0"
    asked, resumed = model.requests[before:]
    assert _names(asked) == _names(resumed) == {"lookup_order", "refund"}
    assert asked["tool_choice"] == sent.bodies[0]["tool_choice"] == "auto"
    call, answer = resumed["messages"][-2:]
    assert [c["function"]["name"] for c in call["tool_calls"]] == ["refund"]
    assert answer == {
        "role": "tool",
        "tool_call_id": call["tool_calls"][0]["id"],
        "content": "refunded 5.0",
    }


async def test_run_stream_round_trip(chat_model: Any, model: ThreadedModelServer) -> None:
    before = len(model.requests)

    async with _support(chat_model).run_stream('refund({"amount": 3})') as streamed:
        text = "".join([delta async for delta in streamed.stream_text(delta=True)])

    assert text == "Done: refunded 3.0"
    asked, resumed = model.requests[before:]
    assert _names(asked) == {"lookup_order", "refund"}
    assert resumed["messages"][-1]["content"] == "refunded 3.0"


async def test_output_tool(chat_model: Any, model: ThreadedModelServer, sent: Sent) -> None:
    before = len(model.requests)
    agent = pydantic_ai.Agent(chat_model, output_type=Order)

    result = await agent.run("where is order 42?")

    # Forced to call a tool, the model first calls the first on offer (the service's, which
    # runs it), then, still forced, pydantic-ai's output tool with what it learnt.
    assert result.output == Order(order_id="Done: order value shipped", status="value")
    assert sent.bodies[-1]["tool_choice"] == "required"
    first, second = model.requests[before:]
    assert _names(first) == {"lookup_order", "final_result"}
    assert [first["tool_choice"], second["tool_choice"]] == ["required", "required"]
    assert second["messages"][-1]["content"] == "order value shipped"


async def test_output_tool_streamed(chat_model: Any, model: ThreadedModelServer) -> None:
    before = len(model.requests)
    agent = pydantic_ai.Agent(chat_model, output_type=Order)

    async with agent.run_stream("where is order 42?") as streamed:
        outputs = [output async for output in streamed.stream_output()]

    assert outputs[-1] == Order(order_id="Done: order value shipped", status="value")
    assert len(model.requests) - before == 2


async def test_native_output(chat_model: Any, model: ThreadedModelServer, sent: Sent) -> None:
    before = len(model.requests)
    agent = pydantic_ai.Agent(chat_model, output_type=pydantic_ai.NativeOutput(Order))

    result = await agent.run("where is order 42?")

    assert result.output == Order(order_id="You said: where is order 42?", status="value")
    (asked,) = model.requests[before:]
    form = sent.bodies[-1]["response_format"]
    assert (form["type"], form["json_schema"]["strict"]) == ("json_schema", True)
    assert asked["response_format"] == form


async def test_responses_model(service: str, model: ThreadedModelServer, sent: Sent) -> None:
    """``OpenAIResponsesModel``: the tool round trip and the output tool over
    ``POST /v1/responses``."""
    before = len(model.requests)
    async with sent.async_client() as http:
        provider = providers.OpenAIProvider(
            base_url=f"{service}/v1", api_key="sk-interop", http_client=http
        )
        responses = models.OpenAIResponsesModel("default", provider=provider)
        answer = await _support(responses).run('refund({"amount": 5})')
        order = await pydantic_ai.Agent(responses, output_type=Order).run("where is order 42?")

    assert answer.output == "Done: refunded 5.0"
    assert order.output == Order(order_id="Done: order value shipped", status="value")
    assert sent.paths == ["/v1/responses"] * 3  # the output tool's run: one request, 2 turns
    asked, resumed, *forced = model.requests[before:]
    assert _names(asked) == {"lookup_order", "refund"}
    assert resumed["messages"][-1]["content"] == "refunded 5.0"
    assert sent.bodies[2]["tool_choice"] == "required"
    assert [body["tool_choice"] for body in forced] == ["required", "required"]
