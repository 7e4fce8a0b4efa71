"""The ``--flows`` file: named flows served next to the agents (JSON, or YAML for ``.yaml`` /
``.yml`` files, read with PyYAML when it is installed; problems are reported with the flag, the
file and, for YAML, the line).

Nodes name an agent of ``--agents`` (``default`` for the single agent), a model (as
``--model`` does), a tool of the ``--tools`` modules, or a filter (``contains``, ``equals``
or ``regex`` on the text); edges and settings connect them (see ``docs/orchestration.md``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from agent_executor import (
    AgentNode,
    ConfigurationError,
    Edge,
    FilterNode,
    Flow,
    ModelNode,
    ServedAgent,
    Setting,
    Tool,
    ToolNode,
)
from agent_executor.orchestration import Node

from .errors import CliError
from .files import Document, read_document

__all__ = ["FlowSpec", "FlowsFile", "build_flows", "load_flows_file"]

_NAME_RE = re.compile(r"[A-Za-z0-9_-]{1,64}")
_NonEmpty = Annotated[str, Field(min_length=1)]


class FilterSpec(BaseModel):
    """A filter's test of the text: exactly one of ``contains`` and ``equals`` (both
    ignoring case) or ``regex`` (a match anywhere)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    contains: str | None = None
    equals: str | None = None
    regex: str | None = None

    @model_validator(mode="after")
    def _one_test(self) -> FilterSpec:
        given = [k for k in ("contains", "equals", "regex") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of 'contains', 'equals' or 'regex'")
        if self.regex is not None:
            try:
                re.compile(self.regex)
            except re.error as exc:
                raise ValueError(f"invalid regex: {exc}") from None
        return self

    def predicate(self) -> Callable[[str], bool]:
        """The test as a function of the text."""
        if self.contains is not None:
            needle = self.contains.casefold()
            return lambda text: needle in text.casefold()
        if self.equals is not None:
            wanted = self.equals.strip().casefold()
            return lambda text: text.strip().casefold() == wanted
        pattern = re.compile(self.regex or "")
        return lambda text: pattern.search(text) is not None


class NodeSpec(BaseModel):
    """One node: exactly one of ``agent``, ``model`` (with ``prompt`` and ``system_prompt``),
    ``tool`` or ``filter``."""

    model_config = ConfigDict(extra="forbid", strict=True)

    agent: _NonEmpty | None = None
    model: _NonEmpty | None = None
    prompt: str | None = None
    system_prompt: str | None = None
    tool: _NonEmpty | None = None
    filter: FilterSpec | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> NodeSpec:
        given = [k for k in ("agent", "model", "tool", "filter") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of 'agent', 'model', 'tool' or 'filter'")
        if self.model is None and (self.prompt is not None or self.system_prompt is not None):
            raise ValueError("'prompt' and 'system_prompt' belong to a model node")
        return self


class EdgeSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)

    source: _NonEmpty = Field(alias="from")
    target: _NonEmpty = Field(alias="to")
    when: str | None = None
    default: bool = False


class SettingSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    node: _NonEmpty
    tool: _NonEmpty


class FlowSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    description: str = ""
    start: _NonEmpty
    entry_points: list[_NonEmpty] = []
    max_steps: int | None = Field(default=None, ge=1)
    nodes: dict[str, NodeSpec] = Field(min_length=1)
    edges: list[EdgeSpec] = []
    settings: list[SettingSpec] = []


class FlowsFile(BaseModel):
    """The ``--flows`` file: flows by name."""

    model_config = ConfigDict(extra="forbid", strict=True)

    flows: dict[str, FlowSpec] = Field(min_length=1)
    _path: str = PrivateAttr(default="")
    _document: Document = PrivateAttr(default_factory=lambda: Document(None))

    @field_validator("flows")
    @classmethod
    def _names(cls, flows: dict[str, FlowSpec]) -> dict[str, FlowSpec]:
        for name in flows:
            if not _NAME_RE.fullmatch(name):
                raise ValueError(
                    f"invalid flow name {name[:80]!r}: use 1 to 64 letters, digits, '_' or '-'"
                )
        return flows

    @property
    def path(self) -> str:
        """The file it was read from."""
        return self._path

    def origin(self, *loc: str) -> str:
        """Where an entry of the file is: ``--flows FILE``, and for a YAML file the line of
        ``loc`` (``origin("flows", "support")``: ``--flows flows.yaml: line 3``)."""
        line = self._document.line_of(loc)
        return f"--flows {self._path}" + (f": line {line}" if line else "")


def load_flows_file(path: str) -> FlowsFile:
    """The validated ``--flows`` file (:class:`CliError` naming the flag, the file, the line
    where known, and the problem)."""
    what = f"--flows {path}"
    document = read_document(path, what)
    if not isinstance(document.data, dict):
        raise CliError(f"{what}: expected an object with a 'flows' object")
    try:
        flows = FlowsFile.model_validate(document.data)
    except ValidationError as exc:
        raise CliError(f"{what}: {document.problems(exc)}") from None
    flows._path, flows._document = path, document
    return flows


def build_flows(
    flows: FlowsFile,
    agents: Mapping[str, ServedAgent],
    tools: Mapping[str, Tool],
    model: Callable[[str], Any],
    options: Callable[[str, str], dict[str, Any]],
) -> dict[str, Flow]:
    """The flows of the file, on the served ``agents`` and the loaded ``tools``; ``model``
    makes a model of a model string, ``options`` a flow's executor options (by name and
    description). :class:`CliError` for an unknown name or a graph that does not hold."""
    built: dict[str, Flow] = {}
    for name, spec in flows.flows.items():
        what = f"{flows.origin('flows', name)}: flow {name!r}"
        if name in agents:
            raise CliError(f"{what}: an agent has that name; flows and agents share names")
        nodes = [
            _node(
                f"{flows.origin('flows', name, 'nodes', node)}: flow {name!r}",
                node,
                node_spec,
                agents,
                tools,
                model,
            )
            for node, node_spec in spec.nodes.items()
        ]
        try:
            built[name] = Flow(
                nodes,
                [Edge(e.source, e.target, when=e.when, default=e.default) for e in spec.edges],
                start=spec.start,
                entry_points=spec.entry_points,
                settings=[Setting(s.node, s.tool) for s in spec.settings],
                max_steps=spec.max_steps,
                **options(name, spec.description),
            )
        except ConfigurationError as exc:
            problem = str(exc).removeprefix(f"flow {name!r}: ")  # named once, in `what`
            raise CliError(f"{what}: {problem}") from None
    return built


def _node(
    what: str,
    name: str,
    spec: NodeSpec,
    agents: Mapping[str, ServedAgent],
    tools: Mapping[str, Tool],
    model: Callable[[str], Any],
) -> Node:
    if spec.agent is not None:
        if spec.agent not in agents:
            raise CliError(
                f"{what}: node {name!r} names the agent {spec.agent!r}, which is not served "
                f"(agents: {', '.join(agents)})"
            )
        return AgentNode(name, agents[spec.agent])
    if spec.tool is not None:
        if spec.tool not in tools:
            raise CliError(
                f"{what}: node {name!r} names the tool {spec.tool!r}, which no --tools module "
                f"defines (tools: {', '.join(tools) or 'none'})"
            )
        return ToolNode(name, tools[spec.tool])
    if spec.filter is not None:
        return FilterNode(name, spec.filter.predicate())
    try:
        chat_model = model(spec.model or "")
    except CliError as exc:  # an unknown model, a missing key
        raise CliError(f"{what}: node {name!r}: {exc}") from None
    return ModelNode(
        name,
        chat_model,
        prompt="{input}" if spec.prompt is None else spec.prompt,
        system_prompt=spec.system_prompt,
    )
