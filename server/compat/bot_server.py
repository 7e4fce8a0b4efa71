"""The Bot Server's API under ``/compat/bot-server``: a client of that earlier service changes
only its base URL.

``POST /compat/bot-server/api/chat/stream`` takes its body (``messages`` of ``{type:
"human"|"ai"|"system", content}``, ``reactVerbose``, ``agentName``, ``reactInitialSteps``) and
answers in its stream (:mod:`..dialects.bot_server`): the answer as plain text, or one ReAct
step per line. Why it maps as it does:

- The last message is the task (the Bot Server reads it so); the ones before it are the
  conversation so far, sent by the client each time (that service kept no history, and nothing
  of a request is kept here after its response: its run's session is dropped).
- ``agentName`` picks a configured agent, group or flow; an unknown name or none leaves the
  choice to the router, as that service fell back to its own routing.
- ``reactInitialSteps`` are the steps of a run that stopped to ask the person (``user_input``),
  which the client sends back with the person's reply as the last message. They become the
  conversation again: each tool call with its observation an assistant call and its result (so
  no tool runs twice), a question the assistant asked, an answer it gave. The run goes on from
  there with the reply.
- ``GET /compat/bot-server/api/health`` answers ``{"success": true, "data": {"status",
  "timestamp", "uptime"}}``, and every error on the prefix is ``{"error": "<text>"}`` (the
  middleware answers in that shape too). Other fields the client sends (``maxSteps``,
  ``temperature``) are the agent's to set here, and are ignored.
"""

from __future__ import annotations

import json
import logging
import time
from datetime import datetime, timezone
from typing import Literal

import anyio
from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent_executor import (
    AgentCommand,
    AgentSelectedEvent,
    AssistantMessage,
    ConfigurationError,
    ErrorEvent,
    Message,
    ServedAgent,
    StoreUnavailable,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)

from ..dialects.base import Encoder
from ..dialects.bot_server import BotServerSteps, BotServerText
from ..errors import BOT_SERVER_PREFIX, bot_server_error, retry_after_seconds, status_for
from ..request import Caller, admission_refusal
from ..schemas import describe_validation_error
from ..state import AGENTS, STATE

__all__ = ["PREFIX", "BotServerRequest", "BotServerStep", "add_bot_server_routes", "conversation"]

PREFIX = BOT_SERVER_PREFIX.rstrip("/")

logger = logging.getLogger("server")


class BotServerMessage(BaseModel):
    """One message of the client's conversation."""

    model_config = ConfigDict(extra="ignore")

    type: Literal["human", "ai", "system"]
    content: str


class StepInput(BaseModel):
    """A step's action input: the tool and its parameters."""

    model_config = ConfigDict(extra="ignore")

    tool_name: str | None = None
    parameters: dict[str, object] = Field(default_factory=dict)


class BotServerStep(BaseModel):
    """One ReAct step as the client stored it."""

    model_config = ConfigDict(extra="ignore")

    thought: str = ""
    action: Literal["tool_call", "user_input", "final_answer"] = "final_answer"
    action_input: StepInput | None = None
    observation: str | None = None
    answer: str | None = None


class BotServerRequest(BaseModel):
    """The body of ``POST /api/chat/stream`` as a Bot Server client sends it."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    messages: list[BotServerMessage] = Field(min_length=1)
    react_verbose: bool = Field(default=False, alias="reactVerbose")
    agent_name: str | None = Field(default=None, alias="agentName")
    react_initial_steps: list[BotServerStep] = Field(
        default_factory=list, alias="reactInitialSteps"
    )


def add_bot_server_routes(app: web.Application) -> None:
    """Register the Bot Server's endpoints under :data:`PREFIX` on ``app``."""
    app.router.add_post(f"{PREFIX}/api/chat/stream", chat_stream)
    app.router.add_get(f"{PREFIX}/api/health", health)


async def health(request: web.Request) -> web.Response:
    """``{"success": true, "data": {"status", "timestamp", "uptime"}}``: ``healthy``, or
    ``degraded`` while a check of the service's own health is down."""
    state = request.app[STATE]
    checks = await state.health.run()
    down = any(check == "down" for check in checks.values())
    data = {
        "status": "degraded" if down else "healthy",
        "timestamp": datetime.now(timezone.utc).isoformat(timespec="milliseconds")[:-6] + "Z",
        "uptime": round(time.monotonic() - state.started_monotonic, 3),
    }
    return web.json_response({"success": True, "data": data})


async def chat_stream(request: web.Request) -> web.StreamResponse:
    """``POST /compat/bot-server/api/chat/stream``: run the task and stream it as the Bot
    Server did; a run refused before it says anything is a JSON error with its status."""
    caller = Caller.of(request)
    body = await _body(request)
    if isinstance(body, web.Response):
        return body
    *earlier, task = body.messages
    if task.type != "human" or not task.content.strip():
        return bot_server_error(400, "the last message must be the user's (type human), with text")
    command = AgentCommand(
        user_prompt=task.content,
        user_id=caller.user,
        session_id=f"{PREFIX}/{caller.request_id}",
        messages=conversation(earlier, body.react_initial_steps) or None,
    )
    picked = await _agent(request, body.agent_name, command)
    if isinstance(picked, web.Response):
        return picked
    executor, selection = picked
    refusal = admission_refusal(request, bot_server_error)
    if refusal is not None:
        return refusal
    encoder: Encoder = BotServerSteps() if body.react_verbose else BotServerText()
    events = caller.stream(executor, command)
    streams = request.app[STATE].streams
    try:
        return await streams.respond(
            request, events, encoder, _refused, before=selection, agent=executor.name
        )
    finally:
        with anyio.CancelScope(shield=True):
            await _forget(executor, command)


async def _forget(executor: ServedAgent, command: AgentCommand) -> None:
    """Drop the run's own session: the client keeps the conversation and sends it back (the
    session exists only so that a run may stop to ask the person, which needs one)."""
    assert command.session_id is not None
    try:
        await executor.memory.delete(command.user_id, command.session_id)
    except StoreUnavailable:
        logger.warning("could not drop the session %s of a Bot Server request", command.session_id)


def _refused(error: ErrorEvent) -> web.Response:
    """A run refused before it said anything: its status and message, and how long to wait."""
    headers = {}
    if error.retry_after is not None:
        headers["Retry-After"] = str(retry_after_seconds(error.retry_after))
    return bot_server_error(status_for(error), error.message, **headers)


async def _body(request: web.Request) -> BotServerRequest | web.Response:
    try:
        data = await request.json()
    except ValueError:
        return bot_server_error(400, "the body is not JSON")
    try:
        return BotServerRequest.model_validate(data)
    except ValidationError as exc:
        return bot_server_error(400, describe_validation_error(exc))


def conversation(earlier: list[BotServerMessage], steps: list[BotServerStep]) -> list[Message]:
    """The client's messages before the task's reply, then the steps of the run it resumes as
    the turns they were (see the module docstring)."""
    messages: list[Message] = [_message(message) for message in earlier]
    for number, step in enumerate(steps):
        messages += _turn(number, step)
    return messages


def _message(message: BotServerMessage) -> Message:
    if message.type == "human":
        return UserMessage(content=message.content)
    if message.type == "ai":
        return AssistantMessage(content=message.content)
    return SystemMessage(content=message.content)


def _turn(number: int, step: BotServerStep) -> list[Message]:
    """One step as the conversation's turn: a call and its result, a question, an answer; a
    call the client has no observation of never ran, and is left out."""
    given = step.action_input or StepInput()
    if step.action == "tool_call":
        if not given.tool_name or step.observation is None:
            return []
        call = ToolCall(
            id=f"bot_step_{number}",
            name=given.tool_name,
            arguments=json.dumps(given.parameters, ensure_ascii=False),
        )
        return [
            AssistantMessage(content=step.thought, tool_calls=[call]),
            ToolMessage(tool_call_id=call.id, name=call.name, content=step.observation),
        ]
    if step.action == "user_input":
        question = step.thought or str(given.parameters.get("question", ""))
        return [AssistantMessage(content=question)] if question else []
    return [AssistantMessage(content=step.answer)] if step.answer else []


async def _agent(
    request: web.Request, name: str | None, command: AgentCommand
) -> tuple[ServedAgent, AgentSelectedEvent | None] | web.Response:
    """The agent named, if there is one of that name; else the router's pick."""
    router = request.app[AGENTS]
    wanted = name.strip() if name else None
    try:
        return await router.resolve(command, wanted if wanted in router.agents else None)
    except ConfigurationError as exc:
        return bot_server_error(400, str(exc))
    except StoreUnavailable as exc:
        return bot_server_error(503, str(exc))
