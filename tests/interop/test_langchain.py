"""LangChain's ``ChatOpenAI`` uses the service as its chat model.

Proves that ``bind_tools`` makes its round trip (``invoke`` → ``tool_calls`` → ``ToolMessage``
→ ``invoke``), also streamed with ``.stream`` and ``.astream`` (the summed chunks carry the
call and the answer): the model is offered LangChain's tool beside the service's
``lookup_order`` and sees LangChain's result; and that ``with_structured_output`` works both
ways LangChain asks for it: the default strict ``json_schema`` response format, and
``method="function_calling"`` (a named ``tool_choice`` of a schema tool, which the service
hands back as a client call), each reaching the model as LangChain sent it; and, with
``use_responses_api=True``, the round trip and the structured output over ``POST /v1/responses``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest
from pydantic import BaseModel

from ..fakes.tool_model import ThreadedModelServer
from .conftest import Sent, framework

langchain_openai = framework("langchain_openai")
messages = framework("langchain_core.messages")
tools = framework("langchain_core.tools")


class Order(BaseModel):
    order_id: str
    status: str


@tools.tool
def refund(amount: float) -> str:
    """Refund an amount to the customer."""
    return f"refunded {amount}"


@pytest.fixture
def llm(service: str, sent: Sent) -> Any:
    return langchain_openai.ChatOpenAI(
        base_url=f"{service}/v1", api_key="sk-interop", model="default", http_client=sent.client()
    )


def _names(body: dict[str, Any]) -> set[str]:
    return {tool["function"]["name"] for tool in body.get("tools") or ()}


def _summed(chunks: Iterable[Any]) -> Any:
    total = None
    for chunk in chunks:
        total = chunk if total is None else total + chunk
    return total


def _resumed(conversation: list[Any], ai: Any, result: str) -> list[Any]:
    (call,) = ai.tool_calls
    return [*conversation, ai, messages.ToolMessage(result, tool_call_id=call["id"])]


def test_bind_tools_round_trip(llm: Any, model: ThreadedModelServer) -> None:
    before = len(model.requests)
    bound = llm.bind_tools([refund])
    conversation = [messages.HumanMessage('refund({"amount": 5})')]

    ai = bound.invoke(conversation)

    assert [(c["name"], c["args"]) for c in ai.tool_calls] == [("refund", {"amount": 5})]
    assert ai.response_metadata["finish_reason"] == "tool_calls"
    answer = bound.invoke(_resumed(conversation, ai, "refunded 5"))

    assert answer.content == "Done: refunded 5"
    asked, resumed = model.requests[before:]
    assert _names(asked) == {"lookup_order", "refund"}
    assert resumed["messages"][-1] == {
        "role": "tool",
        "tool_call_id": ai.tool_calls[0]["id"],
        "content": "refunded 5",
    }


def test_bind_tools_round_trip_streamed(llm: Any, model: ThreadedModelServer) -> None:
    before = len(model.requests)
    bound = llm.bind_tools([refund])
    conversation = [messages.HumanMessage('refund({"amount": 6})')]

    ai = _summed(bound.stream(conversation))

    assert [(c["name"], c["args"]) for c in ai.tool_calls] == [("refund", {"amount": 6})]
    assert ai.tool_calls[0]["id"]
    assert ai.response_metadata["finish_reason"] == "tool_calls"
    answer = _summed(bound.stream(_resumed(conversation, ai, "refunded 6")))

    assert (answer.content, answer.tool_calls) == ("Done: refunded 6", [])
    asked, resumed = model.requests[before:]
    assert _names(asked) == {"lookup_order", "refund"}
    assert resumed["messages"][-1]["content"] == "refunded 6"


async def test_bind_tools_round_trip_astream(
    service: str, model: ThreadedModelServer, sent: Sent
) -> None:
    before = len(model.requests)
    conversation = [messages.HumanMessage('refund({"amount": 8})')]
    async with sent.async_client() as http:
        llm = langchain_openai.ChatOpenAI(
            base_url=f"{service}/v1", api_key="sk-interop", model="default", http_async_client=http
        )
        bound = llm.bind_tools([refund])
        ai = _summed([chunk async for chunk in bound.astream(conversation)])
        later = _resumed(conversation, ai, "refunded 8")
        answer = _summed([chunk async for chunk in bound.astream(later)])

    assert [(c["name"], c["args"]) for c in ai.tool_calls] == [("refund", {"amount": 8})]
    assert answer.content == "Done: refunded 8"
    assert len(model.requests) - before == 2
    assert all(body["stream"] is True for body in sent.bodies)


def test_structured_output_json_schema(llm: Any, model: ThreadedModelServer, sent: Sent) -> None:
    before = len(model.requests)

    order = llm.with_structured_output(Order).invoke("where is order 42?")

    assert order == Order(order_id="You said: where is order 42?", status="value")
    (asked,) = model.requests[before:]
    form = sent.bodies[-1]["response_format"]
    assert (form["type"], form["json_schema"]["strict"]) == ("json_schema", True)
    assert asked["response_format"] == form


def test_structured_output_function_calling(
    llm: Any, model: ThreadedModelServer, sent: Sent
) -> None:
    before = len(model.requests)

    order = llm.with_structured_output(Order, method="function_calling").invoke("where is 42?")

    assert order == Order(order_id="value", status="value")
    (asked,) = model.requests[before:]
    assert _names(asked) == {"lookup_order", "Order"}
    assert asked["tool_choice"] == sent.bodies[-1]["tool_choice"]
    assert asked["tool_choice"] == {"type": "function", "function": {"name": "Order"}}
    assert asked["parallel_tool_calls"] is sent.bodies[-1]["parallel_tool_calls"] is False


def test_responses_api(service: str, model: ThreadedModelServer, sent: Sent) -> None:
    """``use_responses_api=True``: the same round trip and structured output over
    ``POST /v1/responses``."""
    before = len(model.requests)
    llm = langchain_openai.ChatOpenAI(
        base_url=f"{service}/v1",
        api_key="sk-interop",
        model="default",
        http_client=sent.client(),
        use_responses_api=True,
    )
    bound = llm.bind_tools([refund])
    conversation = [messages.HumanMessage('refund({"amount": 5})')]

    ai = bound.invoke(conversation)
    answer = bound.invoke(_resumed(conversation, ai, "refunded 5"))
    order = llm.with_structured_output(Order).invoke("where is order 42?")

    assert answer.text == "Done: refunded 5"
    assert order == Order(order_id="You said: where is order 42?", status="value")
    assert sent.paths == ["/v1/responses"] * 3
    asked, resumed, structured = model.requests[before:]
    assert _names(asked) == {"lookup_order", "refund"}
    assert resumed["messages"][-1] == {
        "role": "tool",
        "tool_call_id": ai.tool_calls[0]["id"],
        "content": "refunded 5",
    }
    form = sent.bodies[-1]["text"]["format"]
    assert structured["response_format"]["json_schema"] == {
        "name": form["name"],
        "schema": form["schema"],
        "strict": True,
    }
