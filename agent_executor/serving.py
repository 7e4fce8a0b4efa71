"""What an agent, a group and a flow share: the serving surface, over one driver each.

:class:`ServedAgent` makes the parts every run goes through (guards, hooks, the concurrency
gate, memory, telemetry) and offers what the service, routers, agent tools and handoffs use
(the :class:`~agent_executor.agent.Agent` protocol and a little more): ``execute()``,
``execute_stream()``, ``as_tool()``, resuming a paused run, closing what it holds. The class
that builds on it (:class:`~agent_executor.AgentExecutor`, ``AgentGroup``, ``Flow``) gives
the driver its conductor: a ReAct loop, or an orchestrator whose steps are nested agent runs.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, TypeVar

from ._engine import (
    Approvals,
    ConcurrencyGate,
    Conductor,
    Conversations,
    Driver,
    EventStream,
    ModelHealth,
    RequestOrigin,
    RunSettings,
    RunTelemetry,
    SummarySpend,
    ToolRunner,
    drop,
)
from .agent import Agent
from .command import AgentCommand
from .delegation import AgentTool, SessionPolicy
from .errors import ConfigurationError
from .guards import Guard, ToolResultScreen, error_codes, screens_among
from .hooks import Hook, HookChain
from .memory import ConversationStore, HistoryCompressor, InMemoryConversationStore
from .observability import Metrics, Tracing, install_log_context
from .observability.metrics import GUARD_TARGETS
from .resources import aclose_all
from .results import AgentResult
from .settings import Concurrency, ModelPolicy, RunLimits, Settings, ToolLimits
from .slash import SlashCommand, SlashCommands
from .spend import PriceTable, default_prices
from .tools import Tool, ToolResults

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

__all__ = ["ServedAgent", "driver_of"]

_Served = TypeVar("_Served", bound="ServedAgent")


class ServedAgent:
    """The serving surface of an agent, a group or a flow (see the module docstring).

    ``settings`` bound its runs (:mod:`agent_executor.settings`); ``memory`` defaults to a
    fresh :class:`InMemoryConversationStore`, used only for commands with a ``session_id``;
    ``metrics`` is the prometheus registry to record into (default: prometheus-client's);
    ``tool_results`` is where client tools' answers arrive (several agents of one service may
    share one, and with a relay it spans replicas). ``commands`` are the agent's own slash
    commands, besides ``/help`` and ``/reset`` (:mod:`agent_executor.slash`). ``prices``
    price the ``history_compressor``'s summary calls, which are charged to the runs they
    shorten (default: litellm's cost map).
    """

    _driver: Driver

    def __init__(
        self,
        *,
        name: str,
        description: str,
        settings: Settings,
        model_name: str,
        guards: Sequence[Guard] = (),
        hooks: Sequence[Hook] = (),
        memory: ConversationStore | None = None,
        history_compressor: HistoryCompressor | None = None,
        metrics: CollectorRegistry | None = None,
        tracer: object | bool | None = None,
        tool_results: ToolResults | None = None,
        output_guard: bool = False,
        commands: Sequence[SlashCommand] = (),
        prices: PriceTable | None = None,
    ) -> None:
        self.name, self.description = name, description
        self._settings = settings
        self.tools: dict[str, Tool] = {}
        self.memory: ConversationStore = InMemoryConversationStore() if memory is None else memory
        self.metrics = Metrics.for_registry(metrics)
        self.tool_results = ToolResults() if tool_results is None else tool_results
        self.model_health = ModelHealth()
        """What the last model calls say about the model's endpoint (``model_health.down``)."""
        self._guards = tuple(guards)
        self._commands = SlashCommands(commands)
        self._hooks = HookChain(hooks, self.metrics)
        self._telemetry = RunTelemetry(
            self.metrics, Tracing(tracer), name, model_name, output_guard=output_guard
        )
        self._prices = default_prices() if prices is None else prices
        self._summaries = (
            None
            if history_compressor is None
            else SummarySpend(
                history_compressor.model.name, self._prices, self.metrics, self._hooks
            )
        )
        """The spend of ``history_compressor``'s summaries (an executor's in-run compaction
        shares it when the compressor writes those summaries too)."""
        self._conversations = Conversations(
            self.memory, history_compressor, self.metrics, self._summaries
        )
        concurrency = settings.concurrency
        self._gate = ConcurrencyGate(
            concurrency.max_concurrency,
            max_queue=concurrency.max_queue,
            queue_timeout=concurrency.queue_timeout,
            metrics=self.metrics,
        )
        for guard in self._guards:
            targets = GUARD_TARGETS if isinstance(guard, ToolResultScreen) else ("request",)
            self.metrics.register_guard(guard.name, error_codes(guard), targets)
        install_log_context()

    def _driver_for(
        self,
        conductor: Conductor,
        *,
        system_prompt: str | None = None,
        tool_runner: ToolRunner | None = None,
        approvals: Approvals | None = None,
        handoffs: Mapping[str, Driver] | None = None,
    ) -> Driver:
        """The driver of this agent's runs, conducted by ``conductor``, over the parts made
        here (and, for a ReAct loop, its tools, tool runner, approvals and handoffs)."""
        return Driver(
            conductor=conductor,
            guards=self._guards,
            screens=screens_among(self._guards),
            hooks=self._hooks,
            gate=self._gate,
            conversations=self._conversations,
            telemetry=self._telemetry,
            settings=RunSettings(
                self.name,
                system_prompt,
                self._settings.tool_limits.max_calls,
                self._settings.run_limits,
            ),
            tools=self.tools,
            tool_runner=tool_runner,
            approvals=approvals,
            handoffs=handoffs,
            commands=self._commands,
        )

    @property
    def model_policy(self) -> ModelPolicy:
        """How its model calls are retried and timed out (for a group or flow: the default)."""
        return self._settings.model_policy

    @property
    def tool_limits(self) -> ToolLimits:
        """The limits of its runs' tool calls."""
        return self._settings.tool_limits

    @property
    def run_limits(self) -> RunLimits:
        """The bounds of its runs: time, turns, spend."""
        return self._settings.run_limits

    @property
    def concurrency(self) -> Concurrency:
        """How many runs it serves at once, and how many may wait."""
        return self._settings.concurrency

    @property
    def max_concurrency(self) -> int:
        """Runs that may hold a permit at once."""
        return self._gate.capacity

    async def execute(
        self,
        command: AgentCommand,
        *,
        request_id: str | None = None,
        client_address: str | None = None,
        request_headers: Mapping[str, str] | None = None,
    ) -> AgentResult:
        """Run to the end and return the result; failures come back as ``success=False``.

        ``request_id`` names the run in logs (one is generated otherwise); ``client_address``
        is the caller's address, for guards such as rate limits; ``request_headers`` are the
        caller's HTTP headers, for tools that pass some on (see ``RestTool``).
        """
        origin = RequestOrigin(request_id, client_address, request_headers)
        run = await self._driver.run(command, "execute", drop, origin)
        return run.result()

    def execute_stream(
        self,
        command: AgentCommand,
        *,
        request_id: str | None = None,
        client_address: str | None = None,
        request_headers: Mapping[str, str] | None = None,
    ) -> EventStream:
        """Yield the run's events as they happen; the last one is always a ``DoneEvent``.

        The returned :class:`EventStream` is an async generator: ``async for`` it. Leaving early
        (``break``, ``aclose()``, cancelling the consuming task) cancels the run: running tools
        are cancelled and the permit is released. The run starts at the first ``__anext__``.
        """
        origin = RequestOrigin(request_id, client_address, request_headers)
        return EventStream(lambda emit: self._driver.run(command, "stream", emit, origin))

    def as_tool(
        self,
        name: str | None = None,
        description: str | None = None,
        *,
        input_description: str | None = None,
        session: SessionPolicy = "none",
        timeout: float = math.inf,
    ) -> AgentTool:
        """This agent as another agent's tool: a call runs it on the task the calling model
        writes (one string, ``input``), nested in the calling run (see :class:`AgentTool` and
        ``docs/orchestration.md``).

        ``name`` defaults to the agent's name, ``description`` to one made from the agent's
        ``description``. ``session="linked"`` lets it remember its earlier tasks within each
        session of the caller; by default each call starts afresh. ``timeout`` bounds a call
        (default: only the agent's own ``request_timeout`` and the caller's).
        """
        return AgentTool(
            self,
            self._driver.run,
            name=name,
            description=description,
            input_description=input_description,
            session=session,
            timeout=timeout,
        )

    async def waiting_for_approval(self, user_id: str | None, session_id: str) -> bool:
        """Whether a run of this session is paused (for a person's approval, or for the
        results of client tools it handed back) and may be resumed here."""
        store = self._conversations.pending_store
        return await store.load_pending(user_id, session_id) is not None

    def _parts(self) -> Iterable[object]:
        """What this agent holds that may need closing."""
        return (self.memory, self.tool_results, *self._guards)

    async def aclose(self) -> None:
        """Release what the agent holds (HTTP sessions, Redis connections: its model's, its
        tools', its stores', its guards'); it is unusable afterwards. Parts shared by several
        agents may be closed more than once."""
        await aclose_all(self._parts())

    async def __aenter__(self: _Served) -> _Served:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


def driver_of(agent: Agent) -> Driver:
    """The driver that runs ``agent``'s commands: how handoffs, groups and flows nest its runs
    in theirs (and so share their stream, usage, limits and cancellation)."""
    if not isinstance(agent, ServedAgent):
        raise ConfigurationError(
            f"{agent.name!r} is not an AgentExecutor, AgentGroup or Flow: only those can be "
            "handed over to or run inside a group or flow"
        )
    return agent._driver
