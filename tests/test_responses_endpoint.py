"""``POST /v1/responses`` driven by the official ``openai`` SDK against the real service, and
both OpenAI-style endpoints across two replicas on one Redis.

The service runs on a model that decides from what it is asked (tests/fakes/tool_model.py), so
every test can say what the model received: the client's tools beside the agent's own, the
results of a turn's server and client calls together, the response format as the SDK sent it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import openai
import pytest
from pydantic import BaseModel

from .fakes.tool_model import ThreadedModelServer, served_tool_model
from .redis_server import redis_server
from .server_helpers import service_process

REFUND = {
    "type": "function",
    "name": "refund",
    "description": "Refund an amount to the customer",
    "parameters": {
        "type": "object",
        "properties": {"amount": {"type": "number"}},
        "required": ["amount"],
    },
}
BOTH = 'lookup_order({"order_id": "42"}) then refund({"amount": 5})'


def model_args(model: ThreadedModelServer) -> tuple[str, ...]:
    return (
        "--model", "openai/test-model", "--api-base", model.base_url, "--api-key", "sk-test",
        "--tools", "tests/interop/server_tools.py",
    )  # fmt: skip


@pytest.fixture(scope="module")
def model() -> Iterator[ThreadedModelServer]:
    with served_tool_model() as served:
        yield served


@pytest.fixture(scope="module")
def sdk(model: ThreadedModelServer) -> Iterator[openai.OpenAI]:
    with (
        service_process(*model_args(model)) as (_, url),
        openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0) as client,
    ):
        yield client


def sent(model: ThreadedModelServer, since: int) -> list[dict[str, Any]]:
    return model.requests[since:]


def roles(body: dict[str, Any]) -> list[str]:
    return [m["role"] for m in body["messages"]]


def test_a_client_call_comes_back_as_a_function_call_item_and_the_run_goes_on(
    sdk: openai.OpenAI, model: ThreadedModelServer
) -> None:
    since = len(model.requests)
    first = sdk.responses.create(
        model="default", input=BOTH, tools=[REFUND], instructions="Be brief."
    )
    [item] = first.output
    assert (first.status, item.type) == ("completed", "function_call")
    assert (item.name, json.loads(item.arguments)) == ("refund", {"amount": 5})

    second = sdk.responses.create(
        model="default",
        previous_response_id=first.id,
        input=[{"type": "function_call_output", "call_id": item.call_id, "output": "refunded"}],
        tools=[REFUND],
    )

    assert second.output_text == "Done: order 42 shipped; refunded"
    asked, answered = sent(model, since)
    assert roles(asked) == ["system", "user"]
    assert [t["function"]["name"] for t in asked["tools"]] == ["lookup_order", "refund"]
    assert roles(answered) == ["user", "assistant", "tool", "tool"]  # no instructions kept
    assert [c["function"]["name"] for c in answered["messages"][1]["tool_calls"]] == [
        "lookup_order",
        "refund",
    ]
    assert second.usage is not None and second.usage.total_tokens == 17


def test_the_whole_input_again_continues_the_run_as_well(
    sdk: openai.OpenAI, model: ThreadedModelServer
) -> None:
    first = sdk.responses.create(model="default", input=BOTH, tools=[REFUND], store=False)
    call = first.output[0]
    since = len(model.requests)
    items = [
        {"role": "user", "content": BOTH},
        *[o.model_dump(exclude_none=True) for o in first.output],
        {"type": "function_call_output", "call_id": call.call_id, "output": "refunded"},
    ]

    again = sdk.responses.create(model="default", input=items, tools=[REFUND])

    assert again.output_text == "Done: order 42 shipped; refunded"
    [answered] = sent(model, since)
    assert [m.get("tool_call_id") for m in answered["messages"][2:]] == [
        answered["messages"][1]["tool_calls"][0]["id"],
        call.call_id,
    ]


def test_the_stream_is_the_standard_event_sequence(sdk: openai.OpenAI) -> None:
    with sdk.responses.stream(model="default", input=BOTH, tools=[REFUND]) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_response()
    with sdk.responses.stream(model="default", input="hello there") as stream:
        text_kinds = [event.type for event in stream]
        text = stream.get_final_response().output_text

    assert kinds == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert [o.type for o in final.output] == ["function_call"]
    assert text_kinds[:4] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
    ]
    assert set(text_kinds[4:-4]) == {"response.output_text.delta"}
    assert text_kinds[-4:] == [
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert text == "You said: hello there"


class City(BaseModel):
    name: str
    population: int


def test_parse_sends_the_schema_and_reads_the_answer(
    sdk: openai.OpenAI, model: ThreadedModelServer
) -> None:
    since = len(model.requests)

    parsed = sdk.responses.parse(model="default", input="Oslo", text_format=City)

    assert parsed.output_parsed == City(name="You said: Oslo", population=1)
    [asked] = sent(model, since)
    form = asked["response_format"]
    assert (form["type"], form["json_schema"]["name"], form["json_schema"]["strict"]) == (
        "json_schema",
        "City",
        True,
    )


def test_previous_response_id_continues_a_stored_conversation(
    sdk: openai.OpenAI, model: ThreadedModelServer
) -> None:
    first = sdk.responses.create(model="default", input="my name is Ada")
    since = len(model.requests)

    second = sdk.responses.create(model="default", input="and?", previous_response_id=first.id)

    assert second.previous_response_id == first.id
    [asked] = sent(model, since)
    assert [m["content"] for m in asked["messages"]] == [
        "my name is Ada",
        "You said: my name is Ada",
        "and?",
    ]


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ({"previous_response_id": "resp_unknown"}, "previous_response_id"),
        ({"tools": [{"type": "web_search"}]}, "tools"),
        ({"text": {"format": {"type": "xml"}}}, "text"),
        ({"background": True}, "background"),
        ({"input": [{"type": "item_reference", "id": "x"}]}, "input"),
        (
            {"input": [{"type": "function_call_output", "call_id": "c0", "output": "1"}]},
            "messages",
        ),
    ],
)
def test_requests_that_cannot_be_honoured_are_400s_naming_the_field(
    sdk: openai.OpenAI, fields: dict[str, Any], param: str
) -> None:
    arguments = {"model": "default", "input": "hi", **fields}
    with pytest.raises(openai.BadRequestError) as caught:
        sdk.responses.create(**arguments)
    assert caught.value.param == param


def test_an_unknown_model_is_a_404(sdk: openai.OpenAI) -> None:
    with pytest.raises(openai.NotFoundError):
        sdk.responses.create(model="gpt-99", input="hi")


@pytest.fixture
def replicas(tmp_path: Path, model: ThreadedModelServer) -> Iterator[list[openai.OpenAI]]:
    """Two replicas on one Redis, as behind a load balancer."""
    with ExitStack() as stack:
        redis = stack.enter_context(redis_server(tmp_path))
        urls = [
            stack.enter_context(service_process(*model_args(model), "--redis-url", redis.url))[1]
            for _ in range(2)
        ]
        yield [
            stack.enter_context(openai.OpenAI(base_url=f"{u}/v1", api_key="unused", max_retries=0))
            for u in urls
        ]


def test_a_run_paused_on_one_replica_goes_on_on_the_other(
    replicas: list[openai.OpenAI], model: ThreadedModelServer
) -> None:
    a, b = replicas
    tools = [{"type": "function", "function": {k: v for k, v in REFUND.items() if k != "type"}}]
    messages: list[Any] = [{"role": "user", "content": BOTH}]
    first = a.chat.completions.create(model="default", messages=messages, tools=tools)
    response = a.responses.create(model="default", input=BOTH, tools=[REFUND])
    since = len(model.requests)

    message = first.choices[0].message
    messages += [
        message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": message.tool_calls[0].id, "content": "refunded"},
    ]
    chat = b.chat.completions.create(model="default", messages=messages, tools=tools)
    item = response.output[0]
    output = [{"type": "function_call_output", "call_id": item.call_id, "output": "refunded"}]
    continued = b.responses.create(
        model="default", input=output, previous_response_id=response.id, tools=[REFUND]
    )

    assert chat.choices[0].message.content == "Done: order 42 shipped; refunded"
    assert continued.output_text == "Done: order 42 shipped; refunded"
    for body in sent(model, since):
        assert roles(body) == ["user", "assistant", "tool", "tool"]
        assert body["messages"][2]["content"] == "order 42 shipped"
