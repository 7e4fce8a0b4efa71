"""The run machinery behind :class:`~agent_executor.AgentExecutor` (private).

Read it in the order a run flows: ``driver`` (guards, hooks, permit, prepare, finish) →
``loop`` (the ReAct loop) → ``model_turn`` and ``streaming`` (one model call, per-chunk events)
→ ``tool_calls`` (a turn's calls) → ``approvals`` (pause and resume) → ``history`` (load and
save). ``state`` is the run's state, ``telemetry`` its spans, metrics and outcome logs,
``stream`` the ``EventStream`` that ``execute_stream()`` returns, ``gate`` the concurrency
permits, ``output_format`` structured output, ``assembler`` streamed tool-call fragments,
``tool_scope`` what a running tool may do to its run, ``orchestrator`` what conducts the runs
of groups and flows in place of the loop (their steps are nested agent runs).
"""

from .approvals import Approvals
from .driver import Driver, RunSettings
from .gate import ConcurrencyGate
from .history import Conversations
from .loop import ReactLoop
from .model_turn import ModelHealth, ModelTurns
from .orchestrator import Orchestrator
from .state import Caller, drop
from .stream import EventStream
from .streaming import ModelPolicy
from .telemetry import RunTelemetry
from .tool_calls import ToolLimits, ToolRunner

__all__ = [
    "Approvals",
    "Caller",
    "ConcurrencyGate",
    "Conversations",
    "Driver",
    "EventStream",
    "ModelHealth",
    "ModelPolicy",
    "ModelTurns",
    "Orchestrator",
    "ReactLoop",
    "RunSettings",
    "RunTelemetry",
    "ToolLimits",
    "ToolRunner",
    "drop",
]
