"""The run machinery behind agents, groups and flows (private).

Read it in the order a run flows: ``driver`` (guards via ``guarding``, hooks, permit, the
conductor, finish) → ``loop`` (the ReAct loop) → ``model_turn`` and ``streaming`` (one model
call, per-chunk events) → the tool path, one way: ``tool_plan`` (a turn's calls admitted or
refused), ``tool_exec`` (one call run), ``tool_calls`` (the turn collected and recorded) →
``approvals`` (pause and resume) → ``history`` (load and save). ``state`` is the run's state,
``telemetry`` its spans, metrics and outcome logs, ``stream`` the ``EventStream`` that
``execute_stream()`` returns, ``gate`` the concurrency permits, ``output_format`` structured
output, ``assembler`` streamed tool-call fragments, ``tool_scope`` what a running tool may do
to its run, ``orchestrator`` what conducts the runs of groups and flows in place of the loop
(their steps are nested agent runs).
"""

from .approvals import Approvals
from .driver import Conductor, Driver, RunSettings
from .gate import ConcurrencyGate
from .history import Conversations
from .loop import ReactLoop
from .model_turn import ModelHealth, ModelTurns
from .orchestrator import Orchestrator
from .state import RequestOrigin, RunCommand, drop
from .stream import EventStream
from .summary_spend import SummarySpend
from .telemetry import RunTelemetry
from .tool_calls import ToolRunner

__all__ = [
    "Approvals",
    "ConcurrencyGate",
    "Conductor",
    "Conversations",
    "Driver",
    "EventStream",
    "ModelHealth",
    "ModelTurns",
    "Orchestrator",
    "ReactLoop",
    "RequestOrigin",
    "RunCommand",
    "RunSettings",
    "RunTelemetry",
    "SummarySpend",
    "ToolRunner",
    "drop",
]
