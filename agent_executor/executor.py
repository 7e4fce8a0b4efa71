"""``AgentExecutor``: one agent, the public front of the one ReAct loop behind ``execute()`` and
``execute_stream()``.

The executor holds the configuration and builds the run machinery once (the private
``_engine`` package: loop, model turns, tool calls, approvals), which it hands to the driver
its serving surface runs (:class:`~agent_executor.serving.ServedAgent`). Both modes give a
command to that one driver; they differ only in what happens to the events (dropped by
``execute()``, forwarded by ``execute_stream()``) and both read their outcome from the same
run state.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from ._engine import Approvals, Driver, ModelTurns, ReactLoop, SummarySpend, ToolRunner
from ._engine.compaction import Compactor
from .approvals import ApprovalSigner
from .delegation import AgentTool, Handoff
from .errors import ConfigurationError
from .guards import Guard, OutputGuard, screens_among
from .hooks import Hook
from .memory import ConversationStore, HistoryCompressor
from .models import ChatModel, PooledModel, check_credentials, resolve_model
from .models.litellm import model_window
from .models.prompt_tools import ToolMode, with_tool_mode
from .serving import ServedAgent, driver_of
from .settings import Concurrency, ModelPolicy, RunLimits, Settings, ToolLimits, from_keywords
from .slash import SlashCommand
from .spend import PriceTable
from .tools import FunctionTool, Tool, Toolkit, ToolResults

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

__all__ = ["AgentExecutor"]


class AgentExecutor(ServedAgent):
    """Runs an agent: a model, tools, guards, hooks and limits around one streaming ReAct loop.

    ``model`` is a :class:`ChatModel` or a model string (``"openai/gpt-4o-mini"`` goes through
    litellm, ``"demo"`` is the offline :class:`DemoModel`); a model string whose provider is
    unknown, or whose key is not in the environment, is refused (:class:`ConfigurationError`
    naming the variable; see :func:`~agent_executor.models.check_credentials`).

    The limits come as settings objects (:mod:`agent_executor.settings`): ``model_policy``
    (retries and stream timeouts of model calls), ``tool_limits`` (how many tool calls, how
    long, how many at once), ``run_limits`` (the run's time, turns and spend: a run that would
    pass a spending limit stops with ``finish_reason="budget"``, keeping its whole turns, see
    docs/spend.md) and ``concurrency`` (runs at once and the queue before them). The keyword
    arguments they replace (``max_turns=`` ...) work for one more release, with a warning.

    ``memory``, ``metrics``, ``tracer`` and ``tool_results`` are those of every served agent
    (:class:`~agent_executor.serving.ServedAgent`). ``history_compressor`` summarises the older
    turns of a session whose stored history has grown too long, before the run.
    ``tool_mode`` is how tools are offered to the model: ``"native"`` function calling,
    ``"prompt"`` (tools described in the system prompt, the model answering in ReAct JSON, for
    models without function calling; see :class:`~agent_executor.models.PromptToolsModel`) or
    ``"auto"`` (native when litellm's model data says the model supports it).
    ``commands`` are its own slash commands besides ``/help`` and ``/reset``
    (:mod:`agent_executor.slash`). ``reasoning_events=False`` keeps the model's reasoning from
    the caller (no ``ReasoningEvent``, no ``AgentResult.reasoning``); what the provider needs
    back of it on the next turn still goes back. ``prices`` turns tokens into
    ``usage.cost_usd`` (default: litellm's model cost map, see
    :class:`~agent_executor.spend.PriceTable`).
    """

    def __init__(
        self,
        *,
        model: ChatModel | str,
        tools: Iterable[Tool | Toolkit | Callable[..., Any]] = (),
        guards: Sequence[Guard] = (),
        hooks: Sequence[Hook] = (),
        system_prompt: str | None = None,
        model_params: dict[str, Any] | None = None,
        name: str = "default",
        description: str = "",
        model_policy: ModelPolicy | None = None,
        tool_limits: ToolLimits | None = None,
        run_limits: RunLimits | None = None,
        concurrency: Concurrency | None = None,
        memory: ConversationStore | None = None,
        history_compressor: HistoryCompressor | None = None,
        output_guard: OutputGuard | None = None,
        prices: PriceTable | None = None,
        approval_secret: bytes | str | None = None,
        reasoning_events: bool = True,
        metrics: CollectorRegistry | None = None,
        tracer: object | bool | None = None,
        tool_results: ToolResults | None = None,
        tool_mode: ToolMode = "native",
        commands: Sequence[SlashCommand] = (),
        **deprecated: Any,
    ) -> None:
        settings = _settings(model_policy, tool_limits, run_limits, concurrency, deprecated)
        chat_model = with_tool_mode(_checked_model(model, settings.concurrency), tool_mode)
        tools = list(tools)
        registry = _registry(tools)
        _check_handoffs(registry)
        super().__init__(
            name=name,
            description=description,
            settings=settings,
            model_name=chat_model.name,
            guards=guards,
            hooks=hooks,
            memory=memory,
            history_compressor=history_compressor,
            metrics=metrics,
            tracer=tracer,
            tool_results=tool_results,
            output_guard=output_guard is not None,
            commands=commands,
            prices=prices,
        )
        self.model, self.tools = chat_model, registry
        self._toolkits = [item for item in tools if isinstance(item, Toolkit)]
        self._system_prompt, self._compressor = system_prompt, history_compressor
        self._signer = ApprovalSigner(approval_secret)
        self._driver = self._react_driver(
            self._model_turns(model_params, output_guard, reasoning_events), settings
        )
        self._register_tools()

    def _model_turns(
        self,
        params: dict[str, Any] | None,
        output_guard: OutputGuard | None,
        reasoning_events: bool,
    ) -> ModelTurns:
        """How this agent's model is called, turn by turn."""
        return ModelTurns(
            self.model,
            self._settings.model_policy,
            dict(params or {}),
            self._hooks,
            self._telemetry,
            output_guard,
            reasoning_events,
            self.model_health,
            self._prices,
            self._compactor_of(self._settings.model_policy.context_window),
        )

    def _compactor_of(self, window: int | Literal["auto"] | None) -> Compactor | None:
        """What keeps a run's requests within the model's ``window`` (``"auto"``: litellm's
        data for the model): summaries by the history compressor's model, else the agent's,
        each spent as a model call of the run."""
        if window == "auto":
            window = model_window(self.model.name)
        if window is None:
            return None
        if self._compressor is not None and self._summaries is not None:
            return Compactor(window, self._compressor, self._summaries)
        summariser = HistoryCompressor(
            self.model, max_tokens=window, keep_recent_tokens=window // 2
        )
        spend = SummarySpend(self.model.name, self._prices, self.metrics, self._hooks)
        return Compactor(window, summariser, spend)

    def _react_driver(self, turns: ModelTurns, settings: Settings) -> Driver:
        """The driver of this agent's runs: its ReAct loop over ``turns`` and its tools."""
        runner = ToolRunner(
            self.tools,
            settings.tool_limits,
            self._hooks,
            self._telemetry,
            screens_among(self._guards),
            self.tool_results,
        )
        approvals = Approvals(self._signer, runner)
        return self._driver_for(
            ReactLoop(turns, runner, approvals, settings.run_limits.max_turns),
            system_prompt=self._system_prompt,
            tool_runner=runner,
            approvals=approvals,
            handoffs=_handoffs(self.tools),
        )

    def _register_tools(self) -> None:
        """Known label values start at 0, so dashboards show them before the first event."""
        self.metrics.register_tools(self.tools)
        for tool in self.tools.values():
            if isinstance(tool, Handoff):
                self.metrics.register_handoff(tool.agent.name)

    def add_tools(self, *tools: Tool | Toolkit | Callable[..., Any]) -> None:
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
        self._toolkits += [item for item in tools if isinstance(item, Toolkit)]
        self._driver.tools_changed(_handoffs(self.tools))
        self._register_tools()

    def _parts(self) -> Iterable[object]:
        return (self.model, *self._toolkits, *self.tools.values(), *super()._parts())


def _settings(
    model_policy: ModelPolicy | None,
    tool_limits: ToolLimits | None,
    run_limits: RunLimits | None,
    concurrency: Concurrency | None,
    deprecated: dict[str, Any],
) -> Settings:
    """The agent's settings: the objects given (defaults for the others), and the old keyword
    arguments on top (each warns: see :func:`~agent_executor.settings.from_keywords`)."""
    given = Settings(
        model_policy=model_policy or ModelPolicy(),
        tool_limits=tool_limits or ToolLimits(),
        run_limits=run_limits or RunLimits(),
        concurrency=concurrency or Concurrency(),
    )
    return from_keywords("AgentExecutor", given, deprecated, stacklevel=4)


def _checked_model(model: ChatModel | str, concurrency: Concurrency) -> ChatModel:
    """The model of a model string or object; a string whose key is missing is refused now,
    not in every run's error. A pooled model reserves a connection per permit."""
    chat_model = resolve_model(model)
    if isinstance(model, str):
        check_credentials(chat_model)
    if isinstance(chat_model, PooledModel):
        chat_model.reserve_connections(concurrency.max_concurrency)
    return chat_model


def _check_handoffs(tools: Mapping[str, Tool]) -> None:
    for tool in tools.values():
        if isinstance(tool, Handoff) and driver_of(tool.agent).conducted:
            raise ConfigurationError(
                f"{tool.agent.name!r} is a group or flow: a handoff gives the conversation to "
                "one agent; offer a group or flow with as_tool() instead"
            )


def _handoffs(tools: Mapping[str, Tool]) -> dict[str, Driver]:
    """The driver of the agent each handoff tool gives the conversation to, by tool name."""
    return {t.name: driver_of(t.agent) for t in tools.values() if isinstance(t, Handoff)}


def _registry(tools: Iterable[Tool | Toolkit | Callable[..., Any]]) -> dict[str, Tool]:
    registry: dict[str, Tool] = {}
    for item in tools:
        each = item.tools() if isinstance(item, Toolkit) else [item]
        for given in each:
            tool = given if isinstance(given, Tool) else FunctionTool(given)
            if isinstance(tool, FunctionTool) and tool.unbound:
                raise ConfigurationError(
                    f"the tool {tool.name!r} is a method read from its class: give the "
                    "instance's (toolkit.method), or the toolkit itself"
                )
            if tool.name in registry:
                raise ConfigurationError(f"two tools are named {tool.name!r}")
            registry[tool.name] = tool
    return registry
