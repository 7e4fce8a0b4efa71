"""Several named agents in one place, and a router that picks one for a message.

An :class:`AgentRouter` holds agents by name (each an :class:`AgentExecutor`, a group or a
flow, with its own system prompt, tools and model). A request that names an agent gets it;
one that names none gets the default agent, or, with a ``router``, the agent the router
picks from the message: a :class:`ModelRouter` asks a (cheap) model, a
:class:`FunctionRouter` (or any function) decides in code. The pick is an
:class:`~agent_executor.events.AgentSelectedEvent` at the head of the stream. Routing never
fails a request: a router that errs, times out or answers with no known name leaves the
request with the default agent, and the event says why.

A :class:`ModelRouter`'s call is spent like an agent's model call (docs/spend.md): priced,
counted in the ``llm_*`` metrics, and charged to the user whose message it routes, through
its ``after_model`` hooks (a ``UserBudget``). It comes before any run, so no run's usage (no
``done``, no ``run_cost_usd``) includes it.
"""

from __future__ import annotations

import inspect
import logging
import re
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import anyio

from ._engine.budget import BudgetStop, CallSpend, Meter, estimate_input_tokens
from ._engine.state import drop
from ._engine.streaming import TurnOutput, stream_turn
from ._engine.telemetry import TurnMetrics
from .command import AgentCommand
from .context import RunContext
from .errors import ConfigurationError
from .events import AgentEvent, AgentSelectedEvent
from .hooks import Hook, HookChain
from .messages import SystemMessage, Usage, UserMessage
from .models import ChatModel, ModelRequest, resolve_model
from .models.base import ModelResponse
from .observability import Metrics
from .resources import aclose_all
from .results import AgentResult
from .serving import ServedAgent
from .settings import ModelPolicy
from .spend import PriceTable, default_prices

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

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
_ANSWER_TOKENS = 50
"""How much of its answer a :class:`ModelRouter` reads (about 200 characters): a name is
short, and a model that rambles is cut off there (charged what it wrote)."""
_POLICY = ModelPolicy(retries=0, first_token_timeout=None, idle_timeout=None)
"""A routing call is not retried and has no timeouts of its own: ``route_timeout`` bounds the
whole decision, and a failure leaves the request with the default agent."""


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

    Each call is spent as an agent's model call is: priced at ``prices`` (default: litellm's
    cost map), counted in the ``llm_*`` metrics of the ``metrics`` registry (default:
    prometheus-client's) under the router's model, and given to the ``after_model`` of
    ``hooks``, a ``UserBudget`` among them, which charges it to the user whose request is
    routed (``ctx.agent`` is ``"router"``).
    """

    def __init__(
        self,
        model: ChatModel | str,
        *,
        instructions: str = _INSTRUCTIONS,
        max_message_chars: int = 2000,
        params: Mapping[str, Any] | None = None,
        prices: PriceTable | None = None,
        hooks: Sequence[Hook] = (),
        metrics: CollectorRegistry | None = None,
    ) -> None:
        if "{agents}" not in instructions:
            raise ConfigurationError("ModelRouter instructions need an {agents} placeholder")
        self.model = resolve_model(model)
        self.instructions = instructions
        self.max_message_chars = max_message_chars
        self.params = {"temperature": 0, "max_tokens": 16} if params is None else dict(params)
        registry = Metrics.for_registry(metrics)
        self._calls = TurnMetrics(registry, self.model.name)
        self._spend = CallSpend(
            self.model.name, default_prices() if prices is None else prices, self._calls
        )
        self._hooks = HookChain(hooks, registry)

    async def route(
        self, message: str, agents: Mapping[str, str], *, command: AgentCommand | None = None
    ) -> str | None:
        """The agent of ``agents`` the model picks for ``message``; ``command`` is the request
        being routed, whose user the call is charged to (without it: a command of ``message``
        alone, the anonymous user)."""
        request = self._request(message, agents)
        texts: list[str] = []
        meter, call = Meter(_ANSWER_TOKENS), self._calls.call()
        try:
            response = await stream_turn(
                self.model, request, _POLICY, call, TurnOutput(drop, texts, _nothing, meter=meter)
            )
            spent, finish = self._spend.answered(response.usage), response.finish_reason
        except BudgetStop:
            input_tokens = estimate_input_tokens(request)
            spent, finish = self._spend.cut(call.reported, input_tokens, meter), "length"
        answer = "".join(texts)
        await self._charged(command or AgentCommand(user_prompt=message), answer, finish, spent)
        return _match(answer, agents)

    def _request(self, message: str, agents: Mapping[str, str]) -> ModelRequest:
        listing = "\n".join(
            f"- {name}: {description}" if description else f"- {name}"
            for name, description in agents.items()
        )
        return ModelRequest(
            messages=[
                SystemMessage(content=self.instructions.format(agents=listing)),
                UserMessage(content=message[: self.max_message_chars]),
            ],
            params=dict(self.params),
        )

    async def _charged(
        self, command: AgentCommand, answer: str, finish: str | None, spent: Usage | None
    ) -> None:
        """The call to the ``after_model`` hooks, in a context of its own (the routing comes
        before the run it routes)."""
        if not self._hooks:
            return
        ctx = RunContext(
            command=command, request_id=uuid.uuid4().hex, mode="execute", agent="router"
        )
        await self._hooks.after_model(ctx, ModelResponse(answer, (), finish, spent))

    async def aclose(self) -> None:
        await aclose_all([self.model])


def _nothing() -> None:
    """A routing call's first text: nothing to measure (it is no run's)."""


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
        agents: Mapping[str, ServedAgent] | Iterable[ServedAgent],
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
        self.agents: dict[str, ServedAgent] = by_name
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

    def get(self, name: str | None) -> ServedAgent | None:
        """The agent called ``name`` (the default for ``None``); ``None`` if there is none."""
        return self.agents.get(self.default if name is None else name)

    async def select(
        self, message: str, *, command: AgentCommand | None = None
    ) -> AgentSelectedEvent:
        """The router's pick for ``message`` (the default agent without a router);
        ``command``, the request it routes, says whom a :class:`ModelRouter`'s call is
        charged to.

        Bounded by ``route_timeout``; a failure, a timeout or an unknown name falls back to
        the default agent, with the reason in the event's ``detail``.
        """
        router = self.router
        if router is None:
            return AgentSelectedEvent(agent=self.default, selected_by="default")
        try:
            with anyio.fail_after(self.route_timeout):
                if isinstance(router, ModelRouter):
                    choice = await router.route(message, self.descriptions, command=command)
                else:
                    choice = await router.route(message, self.descriptions)
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
    ) -> tuple[ServedAgent, AgentSelectedEvent | None]:
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
        selection = await self.select(command.user_prompt, command=command)
        return self.agents[selection.agent], selection

    async def aclose(self) -> None:
        """Close every agent and the router."""
        await aclose_all([*self.agents.values(), self.router])
