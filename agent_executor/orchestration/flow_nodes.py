"""The parts of a :class:`~agent_executor.orchestration.flow.Flow`: its nodes and its edges.

A node turns the text it is given into the text it passes on and a route value (what the
flow's conditional edges are matched against; the text itself unless the node says
otherwise). Agent and model nodes run as agents nested in the flow's run (the flow runs
them); the other nodes are plain calls.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

import anyio

from ..agent import Agent
from ..errors import ConfigurationError, PlanRefused
from ..executor import AgentExecutor
from ..hooks import Hook
from ..models import ChatModel
from ..settings import RunLimits
from ..spend import PriceTable
from ..tools import Tool
from ..tools.base import ToolArgumentsError
from .run_view import RunView

__all__ = [
    "AgentNode",
    "Edge",
    "FilterNode",
    "FunctionNode",
    "ModelNode",
    "Node",
    "NodeFailed",
    "Setting",
    "ToolNode",
]

Predicate: TypeAlias = Callable[..., "bool | Awaitable[bool]"]
"""``(text) -> bool``, or ``(text, run) -> bool`` with the run's :class:`RunView`."""
TextFunction: TypeAlias = Callable[..., "str | Awaitable[str]"]
"""``(text) -> str``, or ``(text, run) -> str`` with the run's :class:`RunView`."""


class NodeFailed(Exception):
    """A plain node could not give an output (its tool or function failed, or its input does
    not fit its tool); the flow's run fails with this message."""


class AgentNode:
    """Runs ``agent`` (any executor: an agent, an :class:`AgentGroup`, another flow) on the
    text it is given; the agent's events are the flow's, its answer is passed on."""

    kind = "agent"

    def __init__(self, name: str, agent: Agent) -> None:
        self.name = name
        self.agent = agent


class ModelNode:
    """One model call on ``prompt`` (``{input}`` stands for the text given), with an optional
    system prompt; its text is the flow's text and is passed on.

    The flow builds a private agent for it (one turn, no memory); tools given to it with a
    :class:`Setting` (or put in ``tools``) make it an agent with those tools (and the
    executor's default turns).
    """

    kind = "model"

    def __init__(
        self,
        name: str,
        model: ChatModel | str,
        *,
        prompt: str = "{input}",
        system_prompt: str | None = None,
        model_params: dict[str, Any] | None = None,
    ) -> None:
        self.name = name
        self.model = model
        self.prompt = prompt
        self.system_prompt = system_prompt
        self.model_params = model_params
        self.tools: list[Tool] = []

    def query(self, text: str) -> str:
        """The prompt with the input put in (``str.replace``: braces elsewhere stay)."""
        return self.prompt.replace("{input}", text)

    def build(
        self,
        registry: Any,
        *,
        prices: PriceTable | None = None,
        hooks: Sequence[Hook] = (),
        tools: Sequence[Tool] = (),
    ) -> AgentExecutor:
        """The private agent that makes this node's call, with the flow's prices and hooks
        (so a budget's hook records what the call spends) and the ``tools`` its settings give
        it (beside its own ``tools``; the node itself is not changed)."""
        offered = [*self.tools, *tools]
        return AgentExecutor(
            model=self.model,
            tools=offered,
            system_prompt=self.system_prompt,
            model_params=self.model_params,
            run_limits=RunLimits(max_turns=10 if offered else 1),
            name=self.name,
            metrics=registry,
            prices=prices,
            hooks=hooks,
        )


class ToolNode:
    """Calls ``tool``: a JSON-object input is its arguments; other text goes into the tool's
    one required string parameter. Its result (as text, JSON for non-strings) is passed on.

    A tool node named only by :class:`Setting` edges is not run as a step: it gives its tool
    to an agent or model node.
    """

    kind = "tool"

    def __init__(self, name: str, tool: Tool) -> None:
        self.name = name
        self.tool = tool

    async def apply(self, text: str, run: RunView) -> tuple[str, str]:
        arguments = json.dumps(self._arguments(text))
        try:
            parsed = self.tool.parse_arguments(arguments)
        except ToolArgumentsError as exc:
            raise NodeFailed(f"tool {self.tool.name}: {exc}") from None
        try:
            with anyio.fail_after(self.tool.timeout):
                result = await self.tool.invoke(parsed)
        except TimeoutError:
            raise NodeFailed(f"tool {self.tool.name} timed out") from None
        except Exception as exc:
            raise NodeFailed(f"tool {self.tool.name} failed: {exc}") from exc
        output = result if isinstance(result, str) else json.dumps(result, default=str)
        return output, output

    def _arguments(self, text: str) -> dict[str, Any]:
        try:
            value = json.loads(text)
        except ValueError:
            value = None
        if isinstance(value, dict):
            return value
        schema = self.tool.parameters
        properties = schema.get("properties") or {}
        required = list(schema.get("required") or ())
        if len(required) == 1 and (properties.get(required[0]) or {}).get("type") == "string":
            return {required[0]: text}
        raise NodeFailed(
            f"tool {self.tool.name} needs a JSON object as its input: it has no single "
            "required string parameter to put the text in"
        )


class FilterNode:
    """Judges the text with ``predicate(text) -> bool`` (sync or async): the route value is
    ``"true"`` or ``"false"`` and the text is passed on unchanged. A predicate with a second
    parameter is given the run (a :class:`RunView`: its context, what it spent, ``ask``)."""

    kind = "filter"

    def __init__(self, name: str, predicate: Predicate) -> None:
        self.name = name
        self.predicate = predicate
        self._takes_run = _takes_run(predicate)

    async def apply(self, text: str, run: RunView) -> tuple[str, str]:
        verdict = await _call(self.predicate, text, run if self._takes_run else None)
        return text, "true" if verdict else "false"


class FunctionNode:
    """Transforms the text with ``function(text) -> str`` (sync or async; a sync one runs on
    the event loop, so keep it quick); its result is passed on and is the route value. A
    function with a second parameter is given the run (a :class:`RunView`); one that cannot
    go on raises :class:`~agent_executor.errors.PlanRefused` (``invalid_plan``)."""

    kind = "function"

    def __init__(self, name: str, function: TextFunction) -> None:
        self.name = name
        self.function = function
        self._takes_run = _takes_run(function)

    async def apply(self, text: str, run: RunView) -> tuple[str, str]:
        output = str(await _call(self.function, text, run if self._takes_run else None))
        return output, output


Node: TypeAlias = "AgentNode | ModelNode | ToolNode | FilterNode | FunctionNode"
"""Any node of a flow."""


async def _call(function: Callable[..., Any], text: str, run: RunView | None) -> Any:
    try:
        value = function(text) if run is None else function(text, run)
        if inspect.isawaitable(value):
            value = await value
    except PlanRefused:
        raise
    except Exception as exc:
        raise NodeFailed(f"{type(exc).__name__}: {exc}") from exc
    return value


def _takes_run(function: Callable[..., Any]) -> bool:
    """Whether ``function`` takes the run's view: a second positional parameter without a
    default (or ``*args``)."""
    try:
        parameters = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        return False
    if any(p.kind is p.VAR_POSITIONAL for p in parameters):
        return True
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 and positional[1].default is inspect.Parameter.empty


@dataclass(frozen=True)
class Edge:
    """A connection: after ``source``, ``target`` runs on ``source``'s output.

    ``when`` makes it conditional: a string matched against the route value (stripped and
    casefolded on both sides) or a callable ``(route) -> bool``. An edge without ``when``, or
    with ``default=True``, is taken when no conditional edge of its source matches; a node
    has at most one such edge.
    """

    source: str
    target: str
    when: str | Callable[[str], bool] | None = None
    default: bool = False

    @property
    def fallback(self) -> bool:
        """Taken when no conditional edge matches."""
        return self.default or self.when is None

    def matches(self, route: str) -> bool:
        """Whether this conditional edge takes ``route`` (never for an unconditional one)."""
        if self.when is None:
            return False
        if isinstance(self.when, str):
            return self.when.strip().casefold() == route.strip().casefold()
        return bool(self.when(route))


@dataclass(frozen=True)
class Setting:
    """A setting edge: ``tool_node``'s tool is given to ``node`` (an agent or model node)."""

    node: str
    tool_node: str


def check_setting(setting: Setting, node: Node, tool_node: Node) -> Tool:
    """The tool a setting gives (:class:`ConfigurationError` for nodes of the wrong kinds)."""
    if not isinstance(tool_node, ToolNode):
        raise ConfigurationError(
            f"setting {setting.node} <- {setting.tool_node}: {setting.tool_node!r} is a "
            f"{tool_node.kind} node; a setting gives a tool node's tool"
        )
    if not isinstance(node, (AgentNode, ModelNode)):
        raise ConfigurationError(
            f"setting {setting.node} <- {setting.tool_node}: {setting.node!r} is a "
            f"{node.kind} node; tools are given to agent and model nodes"
        )
    return tool_node.tool
