"""Several named agents in one place, and a router that picks one for a message.

An :class:`AgentRouter` holds agents by name (each an :class:`AgentExecutor` with its own system
prompt, tools and model). A request that names an agent gets it; one that names none gets the
default agent, or, with a ``router``, the agent the router picks from the message: a
:class:`ModelRouter` asks a (cheap) model, a :class:`FunctionRouter` (or any function) decides
in code. The pick is an :class:`~agent_executor.events.AgentSelectedEvent` at the head of the
stream. Routing never fails a request: a router that errs, times out or answers with no known
name leaves the request with the default agent, and the event says why.
"""

from __future__ import annotations

import inspect
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from typing import Any, Protocol, runtime_checkable

import anyio

from .command import AgentCommand
from .errors import ConfigurationError
from .events import AgentEvent, AgentSelectedEvent
from .executor import AgentExecutor
from .messages import SystemMessage, UserMessage
from .models import ChatModel, ModelRequest, resolve_model
from .results import AgentResult

__all__ = ["AgentRouter", "FunctionRouter", "ModelRouter", "RouteFunction", "Router"]

logger = logging.getLogger("agent_executor.routing")

RouteFunction = Callable[[str, Mapping[str, str]], "str | Awaitable[str | None] | None"]
"""``(message, agents) -> name``: ``agents`` maps each name to its description; ``None`` (or an
unknown name) means the default agent. May be sync or async."""

_INSTRUCTIONS = (
    "You route a user's message to the one agent best suited to answer it. "
    "Answer with the agent's name only: no other words, no punctuation.\n\nThe agents:\n{agents}"
)
_WORD_RE = re.compile(r"[\w-]+")


@runtime_checkable
class Router(Protocol):
    """Picks the agent for a message: a name of ``agents`` (name → description), or ``None``
    for the default. An exception or an unknown name also means the default."""

    async def route(self, message: str, agents: Mapping[str, str]) -> str | None: ...


class FunctionRouter:
    """A router that is a function of yours: rules, a classifier, a lookup by customer."""

    def __init__(self, function: RouteFunction) -> None:
        self.function = function

    async def route(self, message: str, agents: Mapping[str, str]) -> str | None:
        choice = self.function(message, agents)
        if inspect.isawaitable(choice):
            choice = await choice
        return choice


class ModelRouter:
    """A router that asks a model which agent fits: one short, tool-less completion.

    The model sees the agents' names and descriptions and the first ``max_message_chars`` of
    the message, and answers with a name; the answer is matched case-insensitively, first as a
    whole, then as the first word that is an agent's name. Use a small fast model; ``params``
    (default: ``temperature`` 0, ``max_tokens`` 16) go to it with every call.
    """

    def __init__(
        self,
        model: ChatModel | str,
        *,
        instructions: str = _INSTRUCTIONS,
        max_message_chars: int = 2000,
        params: Mapping[str, Any] | None = None,
    ) -> None:
        if "{agents}" not in instructions:
            raise ConfigurationError("ModelRouter instructions need an {agents} placeholder")
        self.model = resolve_model(model)
        self.instructions = instructions
        self.max_message_chars = max_message_chars
        self.params = {"temperature": 0, "max_tokens": 16} if params is None else dict(params)

    async def route(self, message: str, agents: Mapping[str, str]) -> str | None:
        listing = "\n".join(
            f"- {name}: {description}" if description else f"- {name}"
            for name, description in agents.items()
        )
        request = ModelRequest(
            messages=[
                SystemMessage(content=self.instructions.format(agents=listing)),
                UserMessage(content=message[: self.max_message_chars]),
            ],
            params=dict(self.params),
        )
        parts: list[str] = []
        stream = self.model.stream(request)
        try:
            async for chunk in stream:
                if chunk.text:
                    parts.append(chunk.text)
                    if sum(map(len, parts)) > 200:
                        break
        finally:
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                await aclose()
        return _match("".join(parts), agents)

    async def aclose(self) -> None:
        aclose = getattr(self.model, "aclose", None)
        if aclose is not None:
            await aclose()


def _match(answer: str, agents: Mapping[str, str]) -> str | None:
    by_lower = {name.lower(): name for name in agents}
    whole = answer.strip().strip("`'\".*").strip().lower()
    if whole in by_lower:
        return by_lower[whole]
    for word in _WORD_RE.findall(answer.lower()):
        if word in by_lower:
            return by_lower[word]
    return None


class AgentRouter:
    """Named agents, the default one, and an optional router for requests that name none.

    ``agents`` is a mapping of names to executors, or executors (named by their ``name``).
    ``default`` (the first agent unless given) answers requests that name no agent when there
    is no router, or when the router gives no known name. ``router`` is a :class:`Router` or a
    :data:`RouteFunction`; ``route_timeout`` bounds each routing decision (seconds).
    """

    def __init__(
        self,
        agents: Mapping[str, AgentExecutor] | Iterable[AgentExecutor],
        *,
        default: str | None = None,
        router: Router | RouteFunction | None = None,
        route_timeout: float = 10.0,
    ) -> None:
        by_name = dict(agents) if isinstance(agents, Mapping) else {a.name: a for a in agents}
        if not by_name:
            raise ConfigurationError("an AgentRouter needs at least one agent")
        if default is not None and default not in by_name:
            raise ConfigurationError(f"default agent {default!r} is not one of {sorted(by_name)}")
        self.agents: dict[str, AgentExecutor] = by_name
        self.default = next(iter(by_name)) if default is None else default
        self.router: Router | None = (
            None
            if router is None
            else router
            if isinstance(router, Router)
            else FunctionRouter(router)
        )
        self.route_timeout = route_timeout
        self.descriptions = {name: agent.description for name, agent in by_name.items()}

    def get(self, name: str | None) -> AgentExecutor | None:
        """The agent called ``name`` (the default for ``None``); ``None`` if there is none."""
        return self.agents.get(self.default if name is None else name)

    async def select(self, message: str) -> AgentSelectedEvent:
        """The router's pick for ``message`` (the default agent without a router).

        Bounded by ``route_timeout``; a failure, a timeout or an unknown name falls back to
        the default agent, with the reason in the event's ``detail``.
        """
        if self.router is None:
            return AgentSelectedEvent(agent=self.default, selected_by="default")
        try:
            with anyio.fail_after(self.route_timeout):
                choice = await self.router.route(message, self.descriptions)
        except TimeoutError:
            return self._fallback(f"the router took longer than {self.route_timeout:g} s")
        except Exception as exc:  # routing must not fail the request
            logger.warning("router failed, using the default agent: %r", exc)
            return self._fallback(f"the router failed: {type(exc).__name__}")
        if choice is None:
            return self._fallback("the router picked no agent")
        if choice not in self.agents:
            return self._fallback(f"the router picked an unknown agent {str(choice)[:64]!r}")
        return AgentSelectedEvent(agent=choice, selected_by="router")

    def _fallback(self, detail: str) -> AgentSelectedEvent:
        return AgentSelectedEvent(agent=self.default, selected_by="default", detail=detail)

    async def execute(
        self, command: AgentCommand, *, agent: str | None = None, **caller: Any
    ) -> AgentResult:
        """Run ``command`` on ``agent`` (or the routed agent); ``caller`` as for
        :meth:`AgentExecutor.execute`."""
        executor, _ = await self.resolve(command, agent)
        return await executor.execute(command, **caller)

    async def execute_stream(
        self, command: AgentCommand, *, agent: str | None = None, **caller: Any
    ) -> AsyncIterator[AgentEvent]:
        """Stream ``command`` on ``agent``, or on the routed agent after an
        :class:`AgentSelectedEvent` saying which."""
        executor, selection = await self.resolve(command, agent)
        if selection is not None:
            yield selection
        async for event in executor.execute_stream(command, **caller):
            yield event

    async def resolve(
        self, command: AgentCommand, agent: str | None = None
    ) -> tuple[AgentExecutor, AgentSelectedEvent | None]:
        """The agent for ``command``, and the router's pick if a router chose it.

        ``agent`` names one (:class:`ConfigurationError` if unknown). A resume (``approvals``
        or client ``tool_results``) goes to the agent whose run of the session is waiting;
        otherwise the router picks, or the default agent answers.
        """
        if agent is not None:
            executor = self.agents.get(agent)
            if executor is None:
                raise ConfigurationError(
                    f"unknown agent {agent!r}; configured agents: {', '.join(sorted(self.agents))}"
                )
            return executor, None
        if command.resumes and command.session_id is not None:
            for executor in self.agents.values():
                if await executor.waiting_for_approval(command.user_id, command.session_id):
                    return executor, None
        if self.router is None or command.resumes:
            return self.agents[self.default], None
        selection = await self.select(command.user_prompt)
        return self.agents[selection.agent], selection

    async def aclose(self) -> None:
        """Close every agent and the router."""
        for part in (*self.agents.values(), self.router):
            aclose = getattr(part, "aclose", None)
            if aclose is not None:
                await aclose()
