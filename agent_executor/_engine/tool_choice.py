"""What a model turn that offers tools is told about calling them: ``tool_choice`` and
``parallel_tool_calls``, from the command.

A forced choice (``required``, or a named tool) must still let the run end: while client tools
are on offer in a run that hands their calls back, a call of one ends it, so the choice holds
on every turn; otherwise it holds until the run has called a tool (the named one), and later
turns are ``auto`` so that the model can answer with the results.
"""

from __future__ import annotations

from typing import Any

from ..client_tools import NamedToolChoice
from ..errors import ErrorCode
from ..tools import FrontendTool
from .state import RunFailed, RunState

__all__ = ["tool_params"]


def tool_params(run: RunState, params: dict[str, Any]) -> None:
    """Add the command's ``tool_choice`` and ``parallel_tool_calls`` to a turn's ``params``."""
    command = run.ctx.command
    if command.parallel_tool_calls is not None:
        params["parallel_tool_calls"] = command.parallel_tool_calls
    choice = command.tool_choice
    if choice is None:
        return
    if not isinstance(choice, NamedToolChoice):
        params["tool_choice"] = (
            choice if choice != "required" or _still_forced(run, None) else "auto"
        )
        return
    if choice.name not in run.tools:
        raise RunFailed(
            ErrorCode.INVALID_INPUT,
            f"tool_choice names {choice.name!r}, which is not one of the tools on offer",
        )
    forced = _still_forced(run, choice.name)
    params["tool_choice"] = (
        {"type": "function", "function": {"name": choice.name}} if forced else "auto"
    )


def _still_forced(run: RunState, name: str | None) -> bool:
    """Whether a forced choice (of the tool ``name``, or of any) still holds this turn."""
    if run.ctx.command.client_tool_mode == "return":
        client = [n for n, tool in run.tools.items() if isinstance(tool, FrontendTool)]
        if (name in client) if name is not None else bool(client):
            return True
    return not any(name is None or record.tool == name for record in run.records)
