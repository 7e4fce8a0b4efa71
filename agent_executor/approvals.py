"""Human approval: pausing a run on a tool call until a person approves, rejects or answers it.

A tool marked ``requires_approval`` (and the built-in :data:`ask_user`) is not run when the
model calls it: the run finishes its other calls, emits ``approval_required`` with a token per
pending call, ends with ``finish_reason="waiting_for_approval"``, and stores its state (the
messages of the interrupted turn and the pending calls) next to the session's history. The
client resumes with ``AgentCommand(approvals=[Approval(...)])`` on the same session: approved
calls run, rejected ones are reported to the model as refused, ``ask_user`` gets the answer,
and the loop goes on. Nothing reaches the history until the resumed run completes, so the
history never holds a tool call without its result.

Tokens are HMAC-SHA256 over (user, session, call id, tool, arguments) with the executor's
secret: a client cannot approve another call, another user's call, or change the arguments.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from ._deprecations import moved_names
from .client_tools import ClientTool
from .messages import Message, ToolCall, ToolMessage, Usage

__all__ = [
    "Approval",
    "ApprovalSigner",
    "PendingRun",
    "PendingRunStore",
]


class Approval(BaseModel):
    """A person's decision on one pending call; ``answer`` is the reply to ``ask_user``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    call_id: str
    approved: bool
    approval_token: str
    answer: str | None = None


class PendingRun(BaseModel):
    """What a paused run needs to go on: the messages it added up to the assistant turn that
    called tools, the results of that turn's calls that did run, the calls waiting for a
    person, the counters the limits use, and the agent speaking when it paused (``agent``:
    the name of the agent a handoff gave the run to; ``None``, as in runs stored before the
    field existed, for the agent the run was sent to), which the resumed run goes on with.

    ``orchestration`` is the state of a group or flow that paused because one of its agents
    did (its round or node, what was said so far), as that orchestrator wrote it; the agent's
    own paused run is kept in the agent's memory, under the session it was given.

    ``client_calls`` are the calls of client tools handed back to the caller (with the
    ``client_tools`` that were on offer, offered again if the resuming command declares none);
    ``history_length`` is how many of the command's explicit ``messages`` came before the run,
    so that a resume giving the whole conversation again (as OpenAI clients do) is cut there
    and the run's own messages, server tool calls included, take the place of the client's
    view of them."""

    model_config = ConfigDict(frozen=True)

    messages: list[Message]
    results: list[ToolMessage] = Field(default_factory=list)
    pending: list[ToolCall]
    turns: int = 0
    tool_calls_made: int = 0
    usage: Usage | None = None
    agent: str | None = None
    handoffs: int = 0
    orchestration: dict[str, Any] | None = None
    client_calls: list[ToolCall] = Field(default_factory=list)
    client_tools: list[ClientTool] = Field(default_factory=list)
    history_length: int | None = None


@runtime_checkable
class PendingRunStore(Protocol):
    """Where paused runs wait (the conversation store implements it)."""

    async def save_pending(self, user_id: str | None, session_id: str, run: PendingRun) -> None:
        """Keep the paused run of the session (replacing any earlier one)."""
        ...

    async def load_pending(self, user_id: str | None, session_id: str) -> PendingRun | None:
        """The session's paused run, if any."""
        ...

    async def delete_pending(self, user_id: str | None, session_id: str) -> None:
        """Forget the session's paused run."""
        ...


class ApprovalSigner:
    """Signs and checks approval tokens with a secret (random per process unless given)."""

    def __init__(self, secret: bytes | str | None = None) -> None:
        if isinstance(secret, str):
            secret = secret.encode()
        self._secret = secret or secrets.token_bytes(32)

    def token(self, user_id: str | None, session_id: str, call: ToolCall) -> str:
        """The token that approves exactly this call of this user's session."""
        digest = hmac.new(self._secret, self._message(user_id, session_id, call), hashlib.sha256)
        return base64.urlsafe_b64encode(digest.digest()).decode().rstrip("=")

    def verify(self, token: str, user_id: str | None, session_id: str, call: ToolCall) -> bool:
        """Whether ``token`` was made for this call (constant-time comparison)."""
        return hmac.compare_digest(token, self.token(user_id, session_id, call))

    @staticmethod
    def _message(user_id: str | None, session_id: str, call: ToolCall) -> bytes:
        try:
            arguments = json.dumps(json.loads(call.arguments), sort_keys=True)
        except ValueError:
            arguments = call.arguments
        return json.dumps([user_id or "", session_id, call.id, call.name, arguments]).encode()


# ``ASK_USER`` and ``AskUserTool`` live in :mod:`agent_executor.tools.ask_user` (a tool among
# the tools); asking for them here warns and hands them on, loaded only then so that this
# module, which the command imports, does not import the tools.
__getattr__ = moved_names(__name__)
