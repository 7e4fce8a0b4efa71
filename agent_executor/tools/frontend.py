"""Frontend tools: tools the client runs, and where their answers meet the waiting run.

A :class:`FrontendTool` is declared with a JSON schema and has no body. The run registers each
call (:meth:`ToolResults.expect`) and waits; the client runs the tool and delivers the answer
(:meth:`ToolResults.deliver`, ``POST /api/chat/tool-result`` in the service). Only the run's own
user can deliver; an unknown, expired or someone else's call id is ``unknown`` (the service
answers 404 and does not say which), and a second answer to the same call is ``answered`` (409).
Either way nothing changes.

With several replicas the answer may reach another process than the run: a
:class:`ToolResultRelay` (``RedisToolResultRelay``) carries it there; :meth:`ToolResults.submit`
is the entry point that works in both cases.

A run nested in another (an agent used as a tool, a group's or flow's agent) waits in its own
agent's registry, while the client answers the agent it talks to, whose registry may be
another: the calls of nested runs are therefore known to every registry of the process while
they wait, and an answer a registry does not wait for itself goes to
the one that does.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from typing import Any, Literal, Protocol, runtime_checkable

from ..context import current_run_context
from .base import Tool

__all__ = ["ClientToolError", "Delivery", "FrontendTool", "ToolResultRelay", "ToolResults"]

Delivery = Literal["delivered", "unknown", "answered"]

_Key = tuple[str | None, str]
_Answer = asyncio.Future[tuple[Any, str | None]]

_NESTED_CALLS: dict[_Key, tuple[ToolResults, _Answer]] = {}
"""The calls nested runs of this process wait for, by user and call id, with the registry
each waits in: where an answer that reaches another registry goes (see the module's
docstring). An entry lives while its call waits."""


class FrontendTool(Tool):
    """A tool the client runs (a browser, a desktop app): declared with a JSON schema, no body.

    When the model calls it, the stream emits ``tool_call`` (call id, tool, arguments) and the
    run waits, up to ``timeout`` seconds (default 30), for the client to answer through
    ``AgentExecutor.tool_results.deliver`` (``POST /api/chat/tool-result`` in the service).
    Only the run's own user may answer. No answer in time gives the call status ``timeout``.
    ``strict`` asks the model to follow ``parameters`` exactly (OpenAI's strict mode).
    """

    def __init__(
        self,
        name: str,
        description: str,
        parameters: dict[str, Any] | None = None,
        *,
        timeout: float = 30.0,
        strict: bool = False,
    ) -> None:
        super().__init__(
            name=name,
            description=description,
            parameters=parameters or {"type": "object", "properties": {}},
            timeout=timeout,
        )
        self.strict = strict

    def spec(self) -> dict[str, Any]:
        """The function spec offered to the model; ``strict`` as the client declared it (the
        model must then follow ``parameters`` exactly, where the provider supports that)."""
        spec = super().spec()
        if self.strict:
            spec["function"]["strict"] = True
        return spec

    async def invoke(self, arguments: dict[str, Any]) -> Any:
        """Not called: the executor waits for the client's answer instead."""
        raise RuntimeError("a frontend tool is run by the client, not by the server")


class ClientToolError(Exception):
    """The client reported that running its tool failed; the message goes to the model."""


@runtime_checkable
class ToolResultRelay(Protocol):
    """Carries answers between replicas: registers the calls this process waits for and
    delivers an answer to whichever process waits for it."""

    async def start(self, local: ToolResults) -> None:
        """Begin handing answers for this process's calls to ``local.deliver``."""
        ...

    async def register(self, call_id: str, user_id: str | None, ttl: float) -> None:
        """This process waits for the call (at most ``ttl`` seconds)."""
        ...

    async def release(self, call_id: str, user_id: str | None) -> None:
        """This process stopped waiting for the call."""
        ...

    async def deliver(
        self, call_id: str, user_id: str | None, result: Any, error: str | None
    ) -> Delivery:
        """Hand an answer to the process waiting for the call."""
        ...

    async def aclose(self) -> None:
        """Stop and release connections."""
        ...


class ToolResults:
    """Frontend calls waiting for their client's answer (one registry per executor).

    Calls are keyed by user and call id, so two users' runs never meet even when a model
    reuses ids (``call_0``); one user's two runs waiting on the same id at once cannot be told
    apart, so the second call fails (:class:`ClientToolError`) instead of taking the first's
    answer.
    """

    def __init__(self, *, remember: int = 10_000, relay: ToolResultRelay | None = None) -> None:
        self.relay = relay
        self._relay_started = False
        self._waiting: dict[_Key, _Answer] = {}
        self._answered: OrderedDict[_Key, None] = OrderedDict()
        self._remember = remember

    def __len__(self) -> int:
        return len(self._waiting)

    def expect(self, call_id: str, user_id: str | None) -> _Answer:
        """Register a call; the future resolves to ``(result, error)`` when the client answers.

        A call of a nested run is made known to every registry of the process until it is
        answered or forgotten.
        """
        key = (user_id, call_id)
        ctx = current_run_context()
        nested = ctx is not None and ctx.parent is not None
        if key in self._waiting or (nested and key in _NESTED_CALLS):
            raise ClientToolError(
                f"another call with id {call_id!r} is already waiting for this user's answer"
            )
        future: _Answer = asyncio.get_running_loop().create_future()
        self._waiting[key] = future
        self._answered.pop(key, None)
        if nested:
            _NESTED_CALLS[key] = (self, future)
        return future

    async def aclose(self) -> None:
        """Stop the relay, if any (it starts with the first call this process waits for)."""
        if self.relay is not None:
            self._relay_started = False
            await self.relay.aclose()

    async def announce(self, call_id: str, user_id: str | None, ttl: float) -> None:
        """Tell the relay (if any) that this process waits for the call."""
        if self.relay is not None:
            if not self._relay_started:
                await self.relay.start(self)  # before any answer for this process can exist
                self._relay_started = True
            await self.relay.register(call_id, user_id, ttl)

    async def withdraw(self, call_id: str, user_id: str | None) -> None:
        """Tell the relay (if any) that this process stopped waiting for the call."""
        if self.relay is not None:
            await self.relay.release(call_id, user_id)

    async def submit(
        self, call_id: str, user_id: str | None, *, result: Any = None, error: str | None = None
    ) -> Delivery:
        """Deliver a client's answer here or, through the relay, to the process that waits."""
        if self.relay is None:
            return self.deliver(call_id, user_id, result=result, error=error)
        return await self.relay.deliver(call_id, user_id, result, error)

    def forget(self, call_id: str, user_id: str | None, future: asyncio.Future[Any]) -> None:
        """The run stopped waiting for ``future`` (answered, timed out or cancelled)."""
        key = (user_id, call_id)
        if self._waiting.get(key) is future:
            del self._waiting[key]
        _unlist(key, future)

    def waiting_for(self, call_id: str, user_id: str | None) -> bool:
        """Whether ``call_id`` is waiting for an answer from ``user_id``."""
        return (user_id, call_id) in self._waiting

    def deliver(
        self, call_id: str, user_id: str | None, *, result: Any = None, error: str | None = None
    ) -> Delivery:
        """Hand the client's answer to the waiting run (here, or the nested run of another
        registry of this process that waits for it)."""
        key = (user_id, call_id)
        future = self._waiting.pop(key, None)
        if future is None:
            elsewhere = _NESTED_CALLS.get(key)
            if elsewhere is None or elsewhere[0] is self:
                return "answered" if key in self._answered else "unknown"
            outcome = elsewhere[0].deliver(call_id, user_id, result=result, error=error)
            if outcome == "delivered":
                self._remember_answered(key)
            return outcome
        self._remember_answered(key)
        _unlist(key, future)
        if not future.done():
            future.set_result((result, error))
        return "delivered"

    def _remember_answered(self, key: _Key) -> None:
        self._answered[key] = None
        while len(self._answered) > self._remember:
            self._answered.popitem(last=False)


def _unlist(key: _Key, future: asyncio.Future[Any]) -> None:
    """Take ``future``'s call off the nested runs' calls (if it is the one listed)."""
    listed = _NESTED_CALLS.get(key)
    if listed is not None and listed[1] is future:
        del _NESTED_CALLS[key]
