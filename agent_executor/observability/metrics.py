"""Prometheus metrics (see docs/observability.md), one set per registry.

``AgentExecutor(metrics=registry)`` records into ``registry`` (default: prometheus-client's
default registry). Executors and the server sharing a registry share one :class:`Metrics`
(:meth:`Metrics.for_registry`), so two executors never register a name twice. Label values
are bounded: modes, outcomes, tool names from the registry (anything else is ``"unknown"``),
guard and hook names, model names.
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Iterable
from typing import ClassVar

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram

from .._version import __version__
from ..errors import ErrorCode

__all__ = [
    "GUARD_TARGETS",
    "HOOK_POINTS",
    "MODES",
    "OUTCOMES",
    "TOOL_STATUSES",
    "UNKNOWN_TOOL",
    "Metrics",
]

OUTCOMES: tuple[str, ...] = ("success", "cancelled", *(code.value for code in ErrorCode))
TOOL_STATUSES: tuple[str, ...] = (
    "success",
    "error",
    "invalid_arguments",
    "not_found",
    "timeout",
    "rejected",
    "cancelled",
)
HOOK_POINTS: tuple[str, ...] = (
    "before_agent_start",
    "before_model",
    "after_model",
    "before_tool_call",
    "after_tool_call",
)
MODES: tuple[str, ...] = ("stream", "execute")
UNKNOWN_TOOL = "unknown"
_PREFIX = "agent_executor_"

# Bucket boundaries follow the OpenTelemetry GenAI semantic conventions where they exist: model
# call durations double from 10 ms (gen_ai.client.operation.duration), time to first token uses
# the convention's list; runs extend the doubling down to 5 ms and up to about 11 minutes.
_DOUBLING = tuple(round(0.01 * 2**i, 2) for i in range(17))  # 0.01 .. 655.36
_RUN_BUCKETS = (0.005, *_DOUBLING)
_LLM_BUCKETS = _DOUBLING[:15]  # .. 163.84
_TTFT_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0,
                 7.5, 10.0, 30.0, 60.0)  # fmt: skip
_QUEUE_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
_TOOL_BUCKETS = (*_QUEUE_BUCKETS, 120.0, 300.0)
_COST_BUCKETS = (
    0.00001, 0.00005, 0.0001, 0.0005, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5
)  # fmt: skip
_TURN_BUCKETS = (1, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 50)
# A rule-based guard takes tens of microseconds, an LLM judge seconds: the buckets span both,
# finest where the rules' cost targets lie (100 µs per message, 300 µs per 1,000 characters).
_GUARD_BUCKETS = (0.000025, 0.00005, 0.0001, 0.0002, 0.0003, 0.0005, 0.001, 0.002, 0.005, 0.01,
                  0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)  # fmt: skip
GUARD_TARGETS: tuple[str, ...] = ("request", "tool_result")


class Metrics:
    """Every metric of docs/observability.md, registered in one registry."""

    _by_registry: ClassVar[weakref.WeakKeyDictionary[CollectorRegistry, Metrics]] = (
        weakref.WeakKeyDictionary()
    )

    @classmethod
    def for_registry(cls, registry: CollectorRegistry | None = None) -> Metrics:
        """The metrics of ``registry`` (created on first use)."""
        registry = REGISTRY if registry is None else registry
        metrics = cls._by_registry.get(registry)
        if metrics is None:
            metrics = cls._by_registry[registry] = cls(registry)
        return metrics

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        # Registration order is the order of the exposition: runs, tools, model calls, history,
        # then the service's own metrics.
        self._add_run_metrics(registry)
        self._add_tool_metrics(registry)
        self._add_model_metrics(registry)
        self._add_history_metrics(registry)
        self._add_orchestration_metrics(registry)
        self._add_service_metrics(registry)
        self._known_tools: set[str] = set()
        for mode in MODES:
            self.request_duration.labels(mode)
            self.time_to_first_token.labels(mode)
            for outcome in OUTCOMES:
                self.requests.labels(mode, outcome)
        for hook in HOOK_POINTS:
            self.hook_rejections.labels(hook)
        self.register_tools([UNKNOWN_TOOL])

    def _add_run_metrics(self, r: CollectorRegistry) -> None:
        self.requests = Counter(
            f"{_PREFIX}requests_total",
            "Runs by execution mode and outcome.",
            ["mode", "outcome"],
            registry=r,
        )
        self.request_duration = Histogram(
            f"{_PREFIX}request_duration_seconds",
            "Run duration.",
            ["mode"],
            buckets=_RUN_BUCKETS,
            registry=r,
        )
        self.time_to_first_token = Histogram(
            f"{_PREFIX}time_to_first_token_seconds",
            "From run start to the first text delta.",
            ["mode"],
            buckets=_TTFT_BUCKETS,
            registry=r,
        )
        self.in_flight = Gauge(
            f"{_PREFIX}in_flight_requests", "Runs holding a concurrency permit.", registry=r
        )
        self.queued = Gauge(
            f"{_PREFIX}queued_requests", "Runs waiting for a concurrency permit.", registry=r
        )
        self.queue_wait = Histogram(
            f"{_PREFIX}queue_wait_seconds",
            "Time spent waiting for a permit.",
            buckets=_QUEUE_BUCKETS,
            registry=r,
        )
        self.react_turns = Histogram(
            f"{_PREFIX}react_turns", "Model calls per run.", buckets=_TURN_BUCKETS, registry=r
        )
        self.run_cost = Histogram(
            f"{_PREFIX}run_cost_usd",
            "What a run's model calls cost in US dollars (top-level runs whose cost is known; "
            "a nested run's cost is in its parent's).",
            buckets=_COST_BUCKETS,
            registry=r,
        )

    def _add_tool_metrics(self, r: CollectorRegistry) -> None:
        self.tool_calls = Counter(
            f"{_PREFIX}tool_calls_total",
            "Tool calls by tool and status.",
            ["tool", "status"],
            registry=r,
        )
        self.tool_duration = Histogram(
            f"{_PREFIX}tool_duration_seconds",
            "Tool call duration.",
            ["tool"],
            buckets=_TOOL_BUCKETS,
            registry=r,
        )
        self.guard_rejections = Counter(
            f"{_PREFIX}guard_rejections_total",
            "Runs refused by a guard.",
            ["guard", "code"],
            registry=r,
        )
        self.guard_duration = Histogram(
            f"{_PREFIX}guard_duration_seconds",
            "Time a guard took to judge a run's request or to screen a tool's result.",
            ["guard", "target"],
            buckets=_GUARD_BUCKETS,
            registry=r,
        )
        self.hook_rejections = Counter(
            f"{_PREFIX}hook_rejections_total", "Steps refused by a hook.", ["hook"], registry=r
        )

    def _add_model_metrics(self, r: CollectorRegistry) -> None:
        self.llm_requests = Counter(
            f"{_PREFIX}llm_requests_total",
            "Model calls by model and outcome.",
            ["model", "outcome"],
            registry=r,
        )
        self.llm_duration = Histogram(
            f"{_PREFIX}llm_request_duration_seconds",
            "Model call duration.",
            ["model"],
            buckets=_LLM_BUCKETS,
            registry=r,
        )
        self.llm_retries = Counter(
            f"{_PREFIX}llm_retries_total", "Model calls retried.", ["model"], registry=r
        )
        self.llm_tokens = Counter(
            f"{_PREFIX}llm_tokens_total", "Tokens by model and type.", ["model", "type"], registry=r
        )
        self.budget_refusals = Counter(
            f"{_PREFIX}budget_refusals",
            "Runs stopped or refused by a spending limit: scope run (the run's own limits) or "
            "user (the user's budget for the period).",
            ["scope"],
            registry=r,
        )
        for scope in ("run", "user"):
            self.budget_refusals.labels(scope)
        self.llm_cost = Counter(
            f"{_PREFIX}llm_cost_usd",
            "What model calls cost in US dollars, by model (calls of unknown price not counted).",
            ["model"],
            registry=r,
        )

    def _add_history_metrics(self, r: CollectorRegistry) -> None:
        self.history_compressions = Counter(
            f"{_PREFIX}history_compressions_total",
            "Conversation histories whose older turns were summarised.",
            registry=r,
        )
        self.history_compression_failures = Counter(
            f"{_PREFIX}history_compression_failures_total",
            "History summaries that failed (the run went on with the full history).",
            registry=r,
        )

    def _add_orchestration_metrics(self, r: CollectorRegistry) -> None:
        self.handoffs = Counter(
            f"{_PREFIX}handoffs_total",
            "Runs handed over to another agent, by the agent that took over.",
            ["agent"],
            registry=r,
        )
        self.group_rounds = Counter(
            f"{_PREFIX}group_rounds_total",
            "Rounds of agent groups, by group and the agent that spoke.",
            ["group", "agent"],
            registry=r,
        )
        self.flow_node_runs = Counter(
            f"{_PREFIX}flow_node_runs_total",
            "Nodes of flows that ran, by flow, node and status (success, error, waiting).",
            ["flow", "node", "status"],
            registry=r,
        )

    def register_group(self, group: str, agents: Iterable[str]) -> None:
        """Initialise a group's round counters to 0 (its agents are its label values)."""
        for agent in agents:
            self.group_rounds.labels(group, agent)

    def register_handoff(self, agent: str) -> None:
        self.handoffs.labels(agent)

    def register_flow(self, flow: str, nodes: Iterable[str]) -> None:
        """Initialise a flow's node counters to 0 (its nodes are its label values)."""
        for node in nodes:
            for status in ("success", "error", "waiting"):
                self.flow_node_runs.labels(flow, node, status)

    def _add_service_metrics(self, r: CollectorRegistry) -> None:
        self.sse_streams_active = Gauge(
            f"{_PREFIX}sse_streams_active", "Open SSE streams.", registry=r
        )
        self.sse_disconnects = Counter(
            f"{_PREFIX}sse_disconnects_total", "SSE clients that went away before done.", registry=r
        )
        self.sse_refused = Counter(
            f"{_PREFIX}sse_streams_refused_total",
            "Streams refused before they started (503 overloaded), by reason.",
            ["reason"],
            registry=r,
        )
        self.sse_refused.labels("descriptors")
        build_info = Gauge(
            f"{_PREFIX}build_info",
            "Version information (value 1).",
            ["version", "python_version"],
            registry=r,
        )
        build_info.labels(__version__, ".".join(map(str, sys.version_info[:3]))).set(1)

    def register_tools(self, names: Iterable[str]) -> None:
        """Make tool names known label values, each status initialised to 0."""
        for name in names:
            if name in self._known_tools:
                continue
            self._known_tools.add(name)
            self.tool_duration.labels(name)
            for status in TOOL_STATUSES:
                self.tool_calls.labels(name, status)

    def tool_label(self, name: str) -> str:
        """``name`` if it is a registered tool, else ``"unknown"`` (keeps labels bounded)."""
        return name if name in self._known_tools else UNKNOWN_TOOL

    def register_model(self, name: str) -> None:
        """Initialise a model's label combinations to 0."""
        for outcome in ("success", "error"):
            self.llm_requests.labels(name, outcome)
        for kind in ("input", "output"):
            self.llm_tokens.labels(name, kind)
        self.llm_retries.labels(name)
        self.llm_duration.labels(name)
        self.llm_cost.labels(name)

    def register_guard(
        self, name: str, codes: Iterable[str], targets: Iterable[str] = ("request",)
    ) -> None:
        """Initialise a guard's rejection counters and its duration for each target to 0."""
        for code in codes:
            self.guard_rejections.labels(name, code)
        for target in targets:
            self.guard_duration.labels(name, target)
