"""``AgentExecutor``: the public front of the one ReAct loop behind ``execute()`` and
``execute_stream()``.

The executor holds the configuration and builds the run machinery once (the private
``_engine`` package: driver, loop, model turns, tool calls, approvals, history, telemetry).
Both modes hand a command to the same :class:`~agent_executor._engine.driver.Driver`; they differ
only in what happens to the events (dropped by ``execute()``, forwarded by ``execute_stream()``)
and both read their outcome from the same run state.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ._engine import (
    Approvals,
    Caller,
    ConcurrencyGate,
    Conversations,
    Driver,
    EventStream,
    ModelHealth,
    ModelPolicy,
    ModelTurns,
    Orchestrator,
    ReactLoop,
    RunSettings,
    RunTelemetry,
    ToolLimits,
    ToolRunner,
    drop,
)
from .approvals import ApprovalSigner
from .command import AgentCommand
from .errors import ConfigurationError
from .guards import Guard, OutputGuard, ToolResultScreen
from .hooks import Hook, HookChain
from .memory import ConversationStore, HistoryCompressor, InMemoryConversationStore
from .models import ChatModel, check_credentials, resolve_model
from .observability import Metrics, Tracing, install_log_context
from .orchestration import AgentTool, Handoff, SessionPolicy
from .results import AgentResult
from .spend import PriceTable, RunLimits, default_prices
from .tools import FunctionTool, Tool, ToolResults

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

__all__ = ["AgentExecutor"]


class AgentExecutor:
    """Runs agents: a model, tools, guards, hooks and limits around one streaming ReAct loop.

    ``model`` is a :class:`ChatModel` or a model string (``"openai/gpt-4o-mini"`` goes through
    litellm, ``"demo"`` is the offline :class:`DemoModel`). Durations are in seconds; ``None``
    disables a timeout. ``memory`` defaults to a fresh :class:`InMemoryConversationStore` and
    is used only for commands with a ``session_id``. ``metrics`` is the prometheus registry to
    record into (default: prometheus-client's default registry). ``tool_results`` is where
    frontend tools' answers arrive (several executors of one service may share one, and with
    a relay it spans replicas). ``history_compressor`` summarises the older turns of a session
    whose stored history has grown too long, before the run (see :class:`HistoryCompressor`).
    ``reasoning_events=False`` keeps the model's reasoning from the caller (no
    ``ReasoningEvent``, no ``AgentResult.reasoning``); what the provider needs back of it on
    the next turn still goes back. ``prices`` turns tokens into ``usage.cost_usd`` (default:
    litellm's model cost map, see :class:`~agent_executor.spend.PriceTable`).
    ``max_input_tokens``, ``max_output_tokens`` and ``max_cost_usd`` bound what one run may
    spend (summed over its model calls; a command may set lower ones): a run that would pass
    one is stopped with ``finish_reason="budget"`` and a ``budget_exceeded`` error, keeping its
    whole turns (docs/spend.md). A model string whose provider is unknown, or whose key is
    not in the environment, is refused (:class:`ConfigurationError` naming the variable; see
    :func:`~agent_executor.models.check_credentials`).
    """

    def __init__(
        self,
        *,
        model: ChatModel | str,
        tools: Iterable[Tool | Callable[..., Any]] = (),
        guards: Sequence[Guard] = (),
        hooks: Sequence[Hook] = (),
        system_prompt: str | None = None,
        model_params: dict[str, Any] | None = None,
        max_concurrency: int = 16,
        max_queue: int | None = None,
        queue_timeout: float | None = 30.0,
        request_timeout: float | None = 300.0,
        tool_timeout: float | None = 30.0,
        max_tool_calls: int = 20,
        max_turns: int = 10,
        max_parallel_tools: int = 8,
        max_identical_calls: int = 2,
        max_tool_result_chars: int = 100_000,
        model_retries: int = 2,
        retry_backoff: float = 0.5,
        retry_max_backoff: float = 8.0,
        first_token_timeout: float | None = 60.0,
        stream_idle_timeout: float | None = 60.0,
        memory: ConversationStore | None = None,
        history_compressor: HistoryCompressor | None = None,
        metrics: CollectorRegistry | None = None,
        output_guard: OutputGuard | None = None,
        tracer: object | bool | None = None,
        approval_secret: bytes | str | None = None,
        name: str = "default",
        description: str = "",
        tool_results: ToolResults | None = None,
        reasoning_events: bool = True,
        prices: PriceTable | None = None,
        max_input_tokens: int | None = None,
        max_output_tokens: int | None = None,
        max_cost_usd: float | None = None,
    ) -> None:
        _check_limits(max_concurrency, max_turns, max_parallel_tools, max_tool_calls)
        self.name, self.description = name, description
        self.model: ChatModel = resolve_model(model)
        if isinstance(model, str):
            check_credentials(self.model)  # no key: refused now, not in every run's error
        reserve = getattr(self.model, "reserve_connections", None)
        if reserve is not None:
            reserve(max_concurrency)  # every run holding a permit gets a pooled connection
        self.tools: dict[str, Tool] = _registry(tools)
        _check_handoffs(self.tools)
        self.memory: ConversationStore = InMemoryConversationStore() if memory is None else memory
        self.metrics = Metrics.for_registry(metrics)
        self.tool_results = ToolResults() if tool_results is None else tool_results
        self.model_health = ModelHealth()
        """What the last model calls say about the model's endpoint (``model_health.down``)."""
        self._guards = tuple(guards)
        self._compressor = history_compressor
        self._system_prompt = system_prompt
        self._signer = ApprovalSigner(approval_secret)
        telemetry = RunTelemetry(
            self.metrics,
            Tracing(tracer),
            name,
            self.model.name,
            output_guard=output_guard is not None,
        )
        chain = HookChain(hooks, self.metrics)
        policy = ModelPolicy(
            model_retries,
            retry_backoff,
            retry_max_backoff,
            first_token_timeout,
            stream_idle_timeout,
        )
        limits = ToolLimits(
            tool_timeout, max_parallel_tools, max_tool_result_chars, max_identical_calls
        )
        screens = [g for g in self._guards if isinstance(g, ToolResultScreen)]
        runner = ToolRunner(self.tools, limits, chain, telemetry, screens, self.tool_results)
        self._conversations = Conversations(self.memory, history_compressor, self.metrics)
        approvals = Approvals(self._signer, runner)
        turns = ModelTurns(
            self.model,
            policy,
            dict(model_params or {}),
            chain,
            telemetry,
            output_guard,
            reasoning_events,
            self.model_health,
            default_prices() if prices is None else prices,
        )
        self._gate = ConcurrencyGate(
            max_concurrency, max_queue=max_queue, queue_timeout=queue_timeout, metrics=self.metrics
        )
        self._driver = Driver(
            tools=self.tools,
            guards=self._guards,
            hooks=chain,
            gate=self._gate,
            conversations=self._conversations,
            approvals=approvals,
            loop=ReactLoop(turns, runner, approvals, max_turns),
            tool_runner=runner,
            telemetry=telemetry,
            settings=RunSettings(
                system_prompt,
                request_timeout,
                max_tool_calls,
                name,
                RunLimits(max_input_tokens, max_output_tokens, max_cost_usd),
            ),
            handoffs=_handoffs(self.tools),
            orchestrator=self._orchestrator(),
        )
        self._register_labels()
        install_log_context()

    def _orchestrator(self) -> Orchestrator | None:
        """What conducts this executor's runs in place of its ReAct loop: a group's rounds, a
        flow's nodes (their classes say); ``None``, the loop."""
        return None

    def _register_labels(self) -> None:
        """Known label values start at 0, so dashboards show them before the first event."""
        self.metrics.register_tools(self.tools)
        for tool in self.tools.values():
            if isinstance(tool, Handoff):
                self.metrics.register_handoff(tool.agent.name)
        for guard in self._guards:
            self.metrics.register_guard(guard.name, getattr(guard, "codes", ()))

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
        caller = Caller(request_id, client_address, request_headers)
        run = await self._driver.run(command, "execute", drop, caller)
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
        caller = Caller(request_id, client_address, request_headers)
        return EventStream(lambda emit: self._driver.run(command, "stream", emit, caller))

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

    def add_tools(self, *tools: Tool | Callable[..., Any]) -> None:
        """Register more tools, for the runs that start from now on; for agents that refer to
        each other (``a.add_tools(handoff(b))`` once ``b``, which hands back to ``a``, exists).

        An agent cannot be its own tool or hand over to itself (:class:`ConfigurationError`, as
        for a name already taken).
        """
        added = _registry(tools)
        taken = sorted(set(added) & set(self.tools))
        if taken:
            raise ConfigurationError(f"tools named {taken} are registered already")
        if any(isinstance(t, (AgentTool, Handoff)) and t.agent is self for t in added.values()):
            raise ConfigurationError(f"the agent {self.name!r} cannot be its own tool")
        _check_handoffs(added)
        self.tools.update(added)
        self._driver.tools_changed(_handoffs(self.tools))
        self._register_labels()

    async def waiting_for_approval(self, user_id: str | None, session_id: str) -> bool:
        """Whether a run of this session is paused (for a person's approval, or for the
        results of client tools it handed back) and may be resumed here."""
        store = self._conversations.pending_store
        return await store.load_pending(user_id, session_id) is not None

    async def aclose(self) -> None:
        """Release what the model, the tools, the stores and the guards hold (HTTP sessions,
        such as a :class:`~agent_executor.rest.RestTool`'s, Redis connections); the executor is
        unusable afterwards. Parts shared by several executors may be closed more than once."""
        parts = (self.model, *self.tools.values(), self.memory, self.tool_results, *self._guards)
        for part in parts:
            aclose = getattr(part, "aclose", None)
            if aclose is not None:
                await aclose()

    async def __aenter__(self) -> AgentExecutor:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


def _check_limits(concurrency: int, turns: int, parallel_tools: int, tool_calls: int) -> None:
    if concurrency < 1 or turns < 1 or parallel_tools < 1 or tool_calls < 0:
        raise ConfigurationError(
            "max_concurrency, max_turns and max_parallel_tools must be >= 1 and max_tool_calls >= 0"
        )


def _check_handoffs(tools: Mapping[str, Tool]) -> None:
    for tool in tools.values():
        if isinstance(tool, Handoff) and tool.agent._orchestrator() is not None:
            raise ConfigurationError(
                f"{tool.agent.name!r} is a group or flow: a handoff gives the conversation to "
                "one agent; offer a group or flow with as_tool() instead"
            )


def _handoffs(tools: Mapping[str, Tool]) -> dict[str, Driver]:
    """The agent each handoff tool gives the conversation to, by tool name."""
    return {t.name: t.agent._driver for t in tools.values() if isinstance(t, Handoff)}


def _registry(tools: Iterable[Tool | Callable[..., Any]]) -> dict[str, Tool]:
    registry: dict[str, Tool] = {}
    for item in tools:
        tool = item if isinstance(item, Tool) else FunctionTool(item)
        if tool.name in registry:
            raise ConfigurationError(f"two tools are named {tool.name!r}")
        registry[tool.name] = tool
    return registry
