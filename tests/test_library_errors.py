"""Errors a script can see (issue 30, item 4).

- ``AgentExecutor(model="<provider>/<model>")`` without the provider's key is refused when it
  is built, naming the variable, by the same check the service runs at start-up; models of
  one's own, servers of one's own and providers with machine credentials are not refused.
- A failed run's ``ErrorEvent`` and ``AgentResult.error`` keep the generic message clients
  get and carry the cause in ``detail`` (the provider's text, the exception), which no JSON
  and no wire dialect of the service ever carries.
"""

from __future__ import annotations

import logging

import httpx
import pytest
from mcp import Client
from prometheus_client import CollectorRegistry

from agent_executor import (
    AgentCommand,
    AgentExecutor,
    DemoModel,
    ErrorEvent,
    InputValidationGuard,
    LiteLLMModel,
    ModelChunk,
    ModelError,
    OpenAICompatModel,
    RunContext,
    event_adapter,
)
from agent_executor.errors import ConfigurationError
from agent_executor.models import check_credentials
from agent_executor.models.scripted import ScriptedTurn
from server.cli.credentials import check_credentials as check_at_start_up
from server.cli.errors import CliError

from .helpers import collect, make_executor
from .server_helpers import serve

SECRET = "key sk-live-4242 revoked at 10.9.8.7"
"""A provider's text: what a script needs to see and no client may."""

PROVIDER_VARIABLES = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "LLM_API_KEY")


@pytest.fixture
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROVIDER_VARIABLES:
        monkeypatch.delenv(name, raising=False)


# ---- the key check, at construction -----------------------------------------------------------


@pytest.mark.usefixtures("no_keys")
@pytest.mark.parametrize(
    ("model", "variable"),
    [
        ("openai/gpt-4o-mini", "OPENAI_API_KEY"),
        ("anthropic/claude-sonnet-4-5", "ANTHROPIC_API_KEY"),
    ],
)
def test_a_provider_model_without_its_key_is_refused_naming_the_variable(
    model: str, variable: str
) -> None:
    with pytest.raises(ConfigurationError) as refused:
        AgentExecutor(model=model, metrics=CollectorRegistry())

    message = str(refused.value)
    assert f"model {model!r}" in message
    assert variable in message
    assert "api_key=" in message  # where else a key may come from, in the library's words


@pytest.mark.usefixtures("no_keys")
def test_a_model_no_provider_knows_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="unknown model 'nonexistent-model-9'"):
        AgentExecutor(model="nonexistent-model-9", metrics=CollectorRegistry())


def test_with_the_key_in_the_environment_it_builds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")

    fast = AgentExecutor(model="openai/gpt-4o-mini", metrics=CollectorRegistry())
    other = AgentExecutor(model="anthropic/claude-sonnet-4-5", metrics=CollectorRegistry())

    assert isinstance(fast.model, OpenAICompatModel) and isinstance(other.model, LiteLLMModel)


@pytest.mark.usefixtures("no_keys")
def test_models_of_ones_own_and_servers_of_ones_own_are_not_refused() -> None:
    for model in (
        OpenAICompatModel("openai/gpt-4o-mini"),  # a ChatModel: the caller built it
        OpenAICompatModel("llama3", base_url="http://127.0.0.1:11434/v1"),
        LiteLLMModel("anthropic/claude-sonnet-4-5", api_key="sk-ant-given"),
        DemoModel(),
    ):
        AgentExecutor(model=model, metrics=CollectorRegistry())
    check_credentials(OpenAICompatModel("llama3"), api_base="http://127.0.0.1:11434/v1")
    check_credentials(LiteLLMModel("ollama/llama3"), api_base="http://127.0.0.1:11434")


@pytest.mark.usefixtures("no_keys")
def test_a_provider_with_machine_credentials_only_warns(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION_NAME"):
        monkeypatch.delenv(name, raising=False)

    with caplog.at_level(logging.WARNING, logger="agent_executor.models"):
        AgentExecutor(model="bedrock/anthropic.claude-3-haiku", metrics=CollectorRegistry())

    [warning] = [r for r in caplog.records if r.name == "agent_executor.models"]
    assert "relying on the machine's bedrock credentials" in warning.getMessage()


@pytest.mark.usefixtures("no_keys")
def test_the_service_runs_the_same_check_in_its_own_words() -> None:
    model = OpenAICompatModel("openai/gpt-4o-mini")

    with pytest.raises(ConfigurationError) as library:
        check_credentials(model)
    with pytest.raises(CliError) as service:
        check_at_start_up(model, None, None)

    assert "OPENAI_API_KEY" in str(library.value) and "OPENAI_API_KEY" in str(service.value)
    assert "--api-key-file" in str(service.value) and "LLM_API_KEY" in str(service.value)
    assert "--api-key-file" not in str(library.value)


# ---- the cause, for the script ------------------------------------------------------------------


def failing(after_text: bool = False, runs: int = 1) -> AgentExecutor:
    """An executor whose model fails with the provider's :data:`SECRET` on each of ``runs``
    runs (after a first piece of text with ``after_text``: the stream has started then)."""
    failure = ModelError(SECRET, status_code=401)
    turn: ScriptedTurn = [ModelChunk(text="Par"), failure] if after_text else [failure]
    return make_executor([turn] * runs)


async def test_an_llm_error_event_carries_the_providers_text_as_its_detail() -> None:
    events = await collect(failing(), AgentCommand(user_prompt="hi"))

    [error] = [e for e in events if isinstance(e, ErrorEvent)]
    assert error.code == "llm_error"
    assert error.message.startswith("The model call failed; the server log has the details")
    assert SECRET not in error.message
    assert error.detail == f"ModelError (HTTP 401): {SECRET}"


async def test_the_result_carries_the_same_detail_and_leaves_it_out_of_its_json() -> None:
    result = await failing().execute(AgentCommand(user_prompt="hi"), request_id="req-1")

    assert result.error is not None
    assert result.error.message == (
        "The model call failed; the server log has the details (request id req-1)."
    )
    assert result.error.detail == f"ModelError (HTTP 401): {SECRET}"
    assert SECRET not in result.model_dump_json()
    assert "detail" not in result.model_dump()["error"]
    assert SECRET in repr(result.error)  # a script that prints the error sees the cause


async def test_an_internal_error_carries_the_exception_as_its_detail() -> None:
    class Broken:
        name = "broken"

        async def check(self, ctx: RunContext) -> None:
            raise KeyError("tenant 7 has no plan")

    executor = make_executor([], guards=[Broken()])

    events = await collect(executor, "hi")
    result = await executor.execute(AgentCommand(user_prompt="hi"))

    [error] = [e for e in events if isinstance(e, ErrorEvent)]
    assert error.code == "internal_error" and "tenant" not in error.message
    assert error.detail == "KeyError: 'tenant 7 has no plan'"
    assert result.error is not None and result.error.detail == error.detail


def test_events_serialise_without_the_detail() -> None:
    event = ErrorEvent(code="llm_error", message="failed", detail=SECRET)

    assert SECRET not in event_adapter.dump_json(event).decode()
    assert event_adapter.dump_python(event) == {
        "code": "llm_error",
        "message": "failed",
        "retry_after": None,
        "type": "error",
    }
    assert event == ErrorEvent(code="llm_error", message="failed")  # not compared either


async def test_a_guard_refusal_needs_no_detail() -> None:
    executor = make_executor([], guards=[InputValidationGuard()])

    result = await executor.execute(AgentCommand(user_prompt=" "))

    assert result.error is not None and result.error.code == "invalid_input"
    assert result.error.detail is None


# ---- the service never sends it -----------------------------------------------------------------

STREAMED: list[tuple[str, str, dict[str, object]]] = [
    ("POST", "/api/chat/stream", {"message": "hi"}),
    ("POST", "/api/chat/stream", {"message": "hi", "events": "json"}),
    ("GET", "/api/chat/stream", {"message": "hi", "events": "json"}),
    ("POST", "/v1/chat/completions", {"model": "default", "stream": True, "messages": []}),
    ("POST", "/v1/responses", {"model": "default", "stream": True, "input": "hi"}),
    ("POST", "/api/chat/ui", {"id": "c", "trigger": "submit-message", "messages": []}),
    ("POST", "/api/ag-ui", {"threadId": "t", "runId": "r", "messages": []}),
]
"""Every dialect of the service, each with a body that starts a run on ``hi``."""

_USER: dict[str, dict[str, object]] = {
    "/v1/chat/completions": {"messages": [{"role": "user", "content": "hi"}]},
    "/api/chat/ui": {
        "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}]
    },
    "/api/ag-ui": {
        "messages": [{"id": "u1", "role": "user", "content": "hi"}],
        "state": {},
        "tools": [],
        "context": [],
        "forwardedProps": {},
    },
}


async def send(client: httpx.AsyncClient, method: str, path: str, body: dict[str, object]) -> str:
    body = {**body, **_USER.get(path, {})}
    if method == "GET":
        response = await client.get(path, params={k: str(v) for k, v in body.items()})
    else:
        response = await client.post(path, json=body)
    return response.text


@pytest.mark.parametrize("after_text", [False, True], ids=["before-the-stream", "in-the-stream"])
async def test_no_endpoint_sends_the_detail(after_text: bool) -> None:
    """A run that fails before its first event (an HTTP error) and one that fails after it
    (an ``error`` event): no answer of any endpoint or dialect carries the provider's text."""
    executor = failing(after_text, runs=len(STREAMED) + 3)

    async with serve(executor) as client:
        answers = [await send(client, *request) for request in STREAMED]
        answers.append((await client.post("/api/chat", json={"message": "hi"})).text)
        completions = {"model": "default", "messages": [{"role": "user", "content": "hi"}]}
        answers.append((await client.post("/v1/chat/completions", json=completions)).text)
        responses = {"model": "default", "input": "hi"}
        answers.append((await client.post("/v1/responses", json=responses)).text)
        async with Client(str(client.base_url.join("/mcp"))) as mcp:
            outcome = await mcp.call_tool("default", {"message": "hi"})
        answers.append(outcome.model_dump_json())

    assert len(answers) == len(STREAMED) + 4
    for answer in answers:
        assert "llm_error" in answer or "model call failed" in answer, answer
        assert "sk-live" not in answer and "10.9.8.7" not in answer, answer
        assert "ModelError" not in answer, answer
