"""Flows: nodes run one at a time along edges, in one streamed run.

A :class:`Flow` runs like an agent (``execute``, ``execute_stream``, served by name). It
starts at its ``start`` node with the user's message; each node is given the text the node
before passed on (see :mod:`~agent_executor.orchestration.flow_nodes` for the kinds of node).
After a node, its outgoing edges decide what runs next: the first conditional edge whose
``when`` matches the node's route value, else its one unconditional (default) edge; a node
without outgoing edges ends the flow, and a node whose edges all fail to match ends the run
with ``invalid_plan``. The flow's answer (kept in its memory for the session) is the last
node's output; its text is every agent's and model's text, and the last output when a plain
node gave it.

The graph is checked when the flow is built: unknown nodes, unreachable nodes, two default
edges from one node, and cycles, which need ``max_steps`` (node runs per run; reaching it
ends the run with ``max_turns`` and the last output as the answer).

Each node is announced with a ``node_start`` event and closed with ``node_end``; an agent
node's run begins with ``agent_selected`` (``selected_by="flow"``). An agent node that stops
to wait for a person pauses the flow as it does an :class:`AgentGroup`; the client resumes the
flow (same session) with the approvals, and the flow goes on from that node.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from .._engine.orchestrator import member_failed, member_session, run_member, say
from .._engine.state import RunCommand, RunFailed, RunState
from ..agent import Agent
from ..approvals import Approval, PendingRun
from ..command import AgentCommand
from ..errors import ConfigurationError, ErrorCode, PlanRefused
from ..events import AgentSelectedEvent, NodeEndEvent, NodeStartEvent, NodeStatus
from ..messages import AssistantMessage, Usage
from ..results import ToolCallRecord
from ..serving import driver_of
from ..tools import Tool
from ._orchestrated import Orchestrated, agent_runner
from .flow_nodes import (
    AgentNode,
    Edge,
    FilterNode,
    FunctionNode,
    ModelNode,
    Node,
    NodeFailed,
    Setting,
    ToolNode,
    check_setting,
)
from .run_view import RunView

if TYPE_CHECKING:
    from ..observability import Metrics

__all__ = [
    "AgentNode",
    "Edge",
    "FilterNode",
    "Flow",
    "FunctionNode",
    "ModelNode",
    "Node",
    "Setting",
    "ToolNode",
]

_OUTPUT_CHARS = 2000


class _Paused(BaseModel):
    """What a paused flow keeps: the node that paused, the text it was given, the node runs
    so far, the tool calls before and what the nodes before it spent (the resumed agent
    reports what it spent before the pause again, with the rest)."""

    node: str
    input: str
    steps: int
    tool_calls: list[ToolCallRecord]
    usage_before: Usage | None


class Flow(Orchestrated):
    """Nodes run along edges (see the module docstring).

    ``nodes`` (their names must differ), ``edges`` (connections, :class:`Edge`), ``settings``
    (tools given to agent and model nodes, :class:`Setting`), ``start`` (the first node's
    name), ``entry_points`` (other nodes a run may start at, named by the command's
    ``start``), ``max_steps`` (node runs per run; required when the edges make a cycle). The
    other options are those of every group and flow (see :class:`Orchestrated`).
    """

    def __init__(
        self,
        nodes: Sequence[Node],
        edges: Sequence[Edge] = (),
        *,
        start: str,
        entry_points: Sequence[str] = (),
        settings: Sequence[Setting] = (),
        max_steps: int | None = None,
        name: str = "flow",
        **options: Any,
    ) -> None:
        self.nodes: dict[str, Node] = _by_name(nodes)
        self.edges: tuple[Edge, ...] = tuple(edges)
        self.settings: tuple[Setting, ...] = tuple(settings)
        self.start = start
        self.entry_points: tuple[str, ...] = tuple(dict.fromkeys((start, *entry_points)))
        """The nodes a run may start at: ``start`` (the default), then the others."""
        self.max_steps = max_steps
        _check_graph(self)
        self._given = _given_tools(self, name)
        super().__init__(name=name, **options)
        self._models: dict[str, Agent] = {
            node.name: node.build(
                self.metrics.registry,
                prices=self.prices,
                hooks=self.own_hooks,
                tools=list(self.given(node.name).values()),
            )
            for node in self.nodes.values()
            if isinstance(node, ModelNode)
        }
        self.metrics.register_flow(name, self.nodes)
        self._conduct(_Steps(self, self.metrics))

    def given(self, node: str) -> Mapping[str, Tool]:
        """The tools this flow's settings give node ``node``, by name, beside its own: the
        agent of an agent node is offered them in this flow's runs only (it is not changed,
        so other flows and direct runs of it do not see them)."""
        return self._given.get(node, {})

    def _parts(self) -> Iterable[object]:
        """Also what the flow holds itself: its tool nodes' tools (given to agents by
        settings, or run as steps) and its model nodes' private agents. Its agent nodes'
        agents are not its own: close them where they are made."""
        tools = [node.tool for node in self.nodes.values() if isinstance(node, ToolNode)]
        return (*super()._parts(), *tools, *self._models.values())

    def outgoing(self, name: str) -> list[Edge]:
        """The connections leaving node ``name``, in the order given."""
        return [edge for edge in self.edges if edge.source == name]

    def route(self, name: str, route: str) -> str | None:
        """The node after ``name`` for its route value; ``None``: the flow ends there."""
        edges = self.outgoing(name)
        if not edges:
            return None
        for edge in edges:
            if edge.matches(route):
                return edge.target
        for edge in edges:
            if edge.fallback:
                return edge.target
        shown = route[:80] + ("..." if len(route) > 80 else "")
        raise RunFailed(
            ErrorCode.INVALID_PLAN,
            f"flow {self.name}: no edge from node {name} matches its output {shown!r} "
            "and it has no default edge",
        )

    def runner_of(self, node: AgentNode | ModelNode) -> Agent:
        """The agent that runs an agent or model node."""
        return node.agent if isinstance(node, AgentNode) else self._models[node.name]


class _Steps:
    """A flow's run, node by node (the flow's orchestrator)."""

    __slots__ = ("_flow", "_metrics")

    def __init__(self, flow: Flow, metrics: Metrics) -> None:
        self._flow = flow
        self._metrics = metrics

    async def start(self, run: RunState) -> None:
        flow, asked = self._flow, run.ctx.command.start
        if asked is not None and asked not in flow.entry_points:
            raise RunFailed(
                ErrorCode.INVALID_INPUT,
                f"flow {flow.name} does not start at {asked!r}; its entry points: "
                f"{', '.join(flow.entry_points)}",
            )
        await self._walk(run, asked or flow.start, run.ctx.command.user_prompt, 0)

    async def resume(self, run: RunState, paused: PendingRun) -> None:
        state = _Paused.model_validate(paused.orchestration)
        node = self._flow.nodes.get(state.node)
        if not isinstance(node, (AgentNode, ModelNode)):
            raise RunFailed(
                ErrorCode.INVALID_INPUT, f"the paused node {state.node!r} is not in this flow"
            )
        run.records.extend(state.tool_calls)
        run.usage = state.usage_before
        await self._walk(run, node.name, state.input, state.steps, run.ctx.command.approvals)

    async def _walk(
        self,
        run: RunState,
        name: str,
        text: str,
        steps: int,
        approvals: list[Approval] | None = None,
    ) -> None:
        """Node after node from ``name`` (given ``text``; ``approvals``: it resumes) to the
        end of the flow, or until a node pauses it."""
        flow = self._flow
        shown = False  # whether the text passed on is already in the stream
        while True:
            node = flow.nodes[name]
            if isinstance(node, (AgentNode, ModelNode)):
                result = await self._agent(run, node, text, steps, approvals)
                if result is None:
                    return
                approvals, shown = None, True
            else:
                result = await self._plain(run, node, text)
                shown = shown and isinstance(node, FilterNode)
            steps += 1
            output, route = result
            target = flow.route(name, route)
            if target is not None and flow.max_steps is not None and steps >= flow.max_steps:
                run.finish_reason = "max_turns"
                target = None
            if target is None:
                self._answer(run, output, shown)
                return
            name, text = target, output

    async def _agent(
        self,
        run: RunState,
        node: AgentNode | ModelNode,
        text: str,
        steps: int,
        approvals: list[Approval] | None,
    ) -> tuple[str, str] | None:
        """An agent or model node's run: its output, or ``None`` when it paused the flow."""
        flow = self._flow
        agent = flow.runner_of(node)
        run.emit(NodeStartEvent(node=node.name, kind=node.kind))
        if isinstance(node, AgentNode):
            detail = f"node {node.name}" + ("" if approvals is None else ", resumed")
            run.emit(AgentSelectedEvent(agent=agent.name, selected_by="flow", detail=detail))
        command = AgentCommand(
            user_prompt=text if isinstance(node, AgentNode) else node.query(text),
            session_id=member_session(run, flow.name, node.name)
            if isinstance(node, AgentNode)
            else None,
            approvals=approvals,
        )
        before = run.usage
        runner = _runner(agent, flow.given(node.name) if isinstance(node, AgentNode) else {})
        member = await run_member(run, runner, command, step=f"node-{node.name}")
        if member.error is not None:
            self._ended(run, node, "error", member.error.message)
            raise member_failed(member, f"node {node.name} ({agent.name})")
        if member.finish_reason == "waiting_for_approval":
            self._ended(run, node, "waiting", "")
            self._pause(
                run,
                _Paused(
                    node=node.name,
                    input=text,
                    steps=steps,
                    tool_calls=list(run.records),
                    usage_before=before,
                ),
            )
            return None
        output = "".join(member.texts)
        self._ended(run, node, "success", output)
        return output, output

    async def _plain(
        self, run: RunState, node: ToolNode | FilterNode | FunctionNode, text: str
    ) -> tuple[str, str]:
        run.emit(NodeStartEvent(node=node.name, kind=node.kind))
        try:
            output, route = await node.apply(text, RunView(run))
        except PlanRefused as exc:
            self._ended(run, node, "error", str(exc))
            raise RunFailed(ErrorCode.INVALID_PLAN, f"node {node.name}: {exc}") from None
        except NodeFailed as exc:
            self._ended(run, node, "error", str(exc))
            raise RunFailed(ErrorCode.INTERNAL_ERROR, f"node {node.name} failed: {exc}") from None
        self._ended(run, node, "success", output)
        return output, route

    def _ended(self, run: RunState, node: Node, status: NodeStatus, output: str) -> None:
        self._metrics.flow_node_runs.labels(self._flow.name, node.name, status).inc()
        run.emit(
            NodeEndEvent(
                node=node.name, kind=node.kind, status=status, output=output[:_OUTPUT_CHARS]
            )
        )

    def _pause(self, run: RunState, state: _Paused) -> None:
        run.finish_reason = "waiting_for_approval"
        run.paused = PendingRun(
            messages=list(run.new_messages),
            pending=[],
            usage=run.usage,
            orchestration=state.model_dump(mode="json"),
        )

    def _answer(self, run: RunState, output: str, shown: bool) -> None:
        """The flow's answer, kept in its memory: the last output (said, unless it already
        was)."""
        if not shown:
            say(run, output)
        run.add(AssistantMessage(content=output))


def _runner(agent: Agent, given: Mapping[str, Tool]) -> RunCommand:
    """How a node runs its agent: on the agent's own driver, offering the tools the flow's
    settings give it too."""
    return driver_of(agent).with_tools(given).run if given else agent_runner(agent)


def _given_tools(flow: Flow, name: str) -> dict[str, dict[str, Tool]]:
    """The tools the settings of flow ``name`` give each node, by node and tool name.

    A tool the node's agent has already (the same, or one the model cannot tell from it: the
    same name, description and parameters, such as a module's tool loaded twice) is not
    given again; another tool of a name the agent (or another setting) has already is a
    :class:`ConfigurationError` naming the flow, the node and the agent.
    """
    given: dict[str, dict[str, Tool]] = {}
    for setting in flow.settings:
        node = flow.nodes[setting.node]
        tool = check_setting(setting, node, flow.nodes[setting.tool_node])
        assert isinstance(node, (AgentNode, ModelNode))
        own = node.agent.tools if isinstance(node, AgentNode) else {t.name: t for t in node.tools}
        tools = given.setdefault(node.name, {})
        taken = own.get(tool.name)
        if taken is None:
            taken = tools.get(tool.name)
        if taken is None:
            tools[tool.name] = tool
        elif taken is not tool and taken.spec() != tool.spec():
            runner = f"agent {node.agent.name!r}" if isinstance(node, AgentNode) else "its model"
            raise ConfigurationError(
                f"flow {name!r}: setting {setting.node} <- {setting.tool_node}: node "
                f"{node.name!r} ({runner}) has another tool named {tool.name!r} already: "
                "rename one of them"
            )
    return given


def _by_name(nodes: Sequence[Node]) -> dict[str, Node]:
    if not nodes:
        raise ConfigurationError("a Flow needs at least one node")
    by_name: dict[str, Node] = {}
    for node in nodes:
        if node.name in by_name:
            raise ConfigurationError(f"two nodes of the flow are called {node.name!r}")
        by_name[node.name] = node
    return by_name


def _check_graph(flow: Flow) -> None:
    """The checks made when a flow is built (:class:`ConfigurationError`, one at a time)."""
    nodes = flow.nodes
    for entry in flow.entry_points:
        if entry not in nodes:
            raise ConfigurationError(f"the start node {entry!r} is not a node of the flow")
    for edge in flow.edges:
        for end in (edge.source, edge.target):
            if end not in nodes:
                raise ConfigurationError(
                    f"edge {edge.source} -> {edge.target} names an unknown node {end!r}"
                )
    for setting in flow.settings:
        for end in (setting.node, setting.tool_node):
            if end not in nodes:
                raise ConfigurationError(
                    f"setting {setting.node} <- {setting.tool_node} names an unknown node {end!r}"
                )
    for name in nodes:
        defaults = [edge.target for edge in flow.outgoing(name) if edge.fallback]
        if len(defaults) > 1:
            raise ConfigurationError(
                f"node {name} has {len(defaults)} default (unconditional) edges, to "
                f"{', '.join(defaults)}: give the others a 'when'"
            )
    if flow.max_steps is not None and flow.max_steps < 1:
        raise ConfigurationError("max_steps must be >= 1")
    reached = _reachable(flow)
    tool_settings = {setting.tool_node for setting in flow.settings}
    unreached = [n for n in nodes if n not in reached and n not in tool_settings]
    if unreached:
        raise ConfigurationError(
            f"nodes not reachable from the start node {flow.start}: {', '.join(unreached)}"
            if len(flow.entry_points) == 1
            else f"nodes not reachable from the entry points: {', '.join(unreached)}"
        )
    for name in reached:
        node = nodes[name]
        if isinstance(node, ToolNode) and node.tool.requires_approval:
            raise ConfigurationError(
                f"tool node {name}: {node.tool.name} requires approval, which a tool node "
                "cannot ask for; give the tool to an agent node with a Setting"
            )
    cycle = _cycle(flow)
    if cycle and flow.max_steps is None:
        raise ConfigurationError(
            f"the flow has a cycle ({' -> '.join(cycle)}): give max_steps to bound it"
        )


def _reachable(flow: Flow) -> set[str]:
    seen, todo = set(flow.entry_points), list(flow.entry_points)
    while todo:
        for edge in flow.outgoing(todo.pop()):
            if edge.target not in seen:
                seen.add(edge.target)
                todo.append(edge.target)
    return seen


def _cycle(flow: Flow) -> list[str] | None:
    """A cycle of the connections reachable from the start (its nodes, the first repeated
    at the end), or ``None``."""
    path: list[str] = []
    done: set[str] = set()

    def visit(name: str) -> list[str] | None:
        if name in path:
            return [*path[path.index(name) :], name]
        if name in done:
            return None
        path.append(name)
        for edge in flow.outgoing(name):
            found = visit(edge.target)
            if found:
                return found
        path.pop()
        done.add(name)
        return None

    for entry in flow.entry_points:
        found = visit(entry)
        if found:
            return found
    return None
