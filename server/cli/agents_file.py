"""The ``--agents`` file: several named agents, the default one and an optional router; each
agent's handoffs and agents-as-tools, and groups of the agents. JSON, or YAML for ``.yaml`` /
``.yml`` files (read with PyYAML when it is installed).

Each agent's model settings, tools and retrieval folder fall back to the flags and environment
(:class:`ServeConfig`). Problems are reported with the flag, the file and (YAML) the line.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from .errors import CliError
from .files import Document, read_document

__all__ = [
    "AgentSpec",
    "AgentsFile",
    "GroupSpec",
    "ModelSpec",
    "ModeratorSpec",
    "RouterSpec",
    "load_agents_file",
]

_AGENT_NAME_RE = re.compile(r"[A-Za-z0-9_-]{1,64}")

_NonEmpty = Annotated[str, Field(min_length=1)]


class ModelSpec(BaseModel):
    """How to reach a model: each field left out falls back to the flags and environment."""

    model_config = ConfigDict(extra="forbid", strict=True)

    api_base: _NonEmpty | None = None
    api_key: _NonEmpty | None = None
    api_key_env: _NonEmpty | None = None

    @model_validator(mode="after")
    def _one_key(self) -> ModelSpec:
        if self.api_key is not None and self.api_key_env is not None:
            raise ValueError("give 'api_key' or 'api_key_env', not both")
        return self

    def key(self, env: Mapping[str, str], what: str) -> str | None:
        """The API key of the file or of the environment variable it names."""
        if self.api_key_env is None:
            return self.api_key
        key = env.get(self.api_key_env)
        if not key:
            raise CliError(f"{what}: api_key_env names {self.api_key_env}, which is not set")
        return key


class RouterSpec(ModelSpec):
    model: _NonEmpty
    timeout: float = Field(default=10.0, gt=0)


class AgentSpec(ModelSpec):
    description: str = ""
    system_prompt: str | None = None
    model: _NonEmpty | None = None
    tools: list[_NonEmpty] | None = None
    mcp: bool = False
    handoffs: list[_NonEmpty] = Field(default_factory=list)
    """Agents this one may hand the conversation over to (``transfer_to_<name>`` tools)."""
    agent_tools: list[_NonEmpty] = Field(default_factory=list)
    """Agents this one may call as tools (``<name>``, one ``input``)."""
    retrieval: _NonEmpty | Literal[False] | None = None
    """A folder whose passages a BM25 index gives the agent (``None``: ``--retrieval``'s;
    ``False``: none, even with ``--retrieval``)."""
    toolkits: list[_NonEmpty] | None = None
    """The toolkits (by name) of the agent's tool modules that it is given (``None``: all)."""
    tool_mode: Literal["native", "prompt", "auto"] | None = None
    """How the agent's model is offered tools (``None``: ``--tool-mode``'s)."""

    def retrieval_folder(self, default: str | None) -> str | None:
        """The folder of the agent's retrieval index, if it has one."""
        if self.retrieval is False:
            return None
        return self.retrieval or default


class ModeratorSpec(ModelSpec):
    """The model of a group's moderator (``auto``, ``hybrid``); ``model`` defaults to the
    flags' model."""

    model: _NonEmpty | None = None


class GroupSpec(BaseModel):
    """A group of agents of the file, served by its name like an agent."""

    model_config = ConfigDict(extra="forbid", strict=True)

    agents: list[_NonEmpty] = Field(min_length=1)
    strategy: Literal["direct", "auto", "hybrid"] = "direct"
    cycle: bool = False
    moderator: ModeratorSpec | None = None
    next: dict[str, _NonEmpty] = Field(default_factory=dict)
    max_rounds: int = Field(default=5, ge=1)
    termination: _NonEmpty | None = "TERMINATE"
    description: str = ""

    @model_validator(mode="after")
    def _strategy_options(self) -> GroupSpec:
        if len(set(self.agents)) != len(self.agents):
            raise ValueError("an agent appears twice in 'agents'")
        if self.cycle and self.strategy != "direct":
            raise ValueError("'cycle' is for the direct strategy only")
        if self.moderator is not None and self.strategy == "direct":
            raise ValueError("the direct strategy has no moderator")
        if self.next and self.strategy != "hybrid":
            raise ValueError("'next' is for the hybrid strategy only")
        if self.strategy == "hybrid" and not self.next:
            raise ValueError('the hybrid strategy needs \'next\' ({"agent": "its successor"})')
        return self


class AgentsFile(BaseModel):
    """The ``--agents`` file: named agents, the default one and an optional model router."""

    model_config = ConfigDict(extra="forbid", strict=True)

    default: str | None = None
    router: RouterSpec | None = None
    agents: dict[str, AgentSpec] = Field(min_length=1)
    groups: dict[str, GroupSpec] = Field(default_factory=dict)
    _path: str = PrivateAttr(default="")
    _document: Document = PrivateAttr(default_factory=lambda: Document(None))

    @property
    def path(self) -> str:
        """The file it was read from."""
        return self._path

    def origin(self, *loc: str) -> str:
        """Where an entry of the file is: ``--agents FILE``, and for a YAML file the line of
        ``loc`` (``origin("agents", "billing")``: ``--agents agents.yaml: line 12``)."""
        line = self._document.line_of(loc)
        return f"--agents {self._path}" + (f": line {line}" if line else "")

    @field_validator("agents", "groups")
    @classmethod
    def _names(cls, named: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        what = "agent" if info.field_name == "agents" else "group"
        for name in named:
            if not _AGENT_NAME_RE.fullmatch(name):
                raise ValueError(
                    f"invalid {what} name {name[:80]!r}: use 1 to 64 letters, digits, '_' or '-'"
                )
        return named

    @model_validator(mode="after")
    def _names_refer_to_agents(self) -> AgentsFile:
        agents = list(self.agents)
        known = ", ".join(agents)
        for name, agent in self.agents.items():
            for key, others in (("handoffs", agent.handoffs), ("agent_tools", agent.agent_tools)):
                for other in others:
                    if other == name:
                        raise ValueError(f"agent {name!r} names itself in {key!r}")
                    if other not in self.agents:
                        raise ValueError(
                            f"agent {name!r}: {key} names {other!r}, which is not one of the "
                            f"agents: {known}"
                        )
                if len(set(others)) != len(others):
                    raise ValueError(f"agent {name!r}: an agent appears twice in {key!r}")
        for name, group in self.groups.items():
            if name in self.agents:
                raise ValueError(f"group {name!r} has the name of an agent")
            members = set(group.agents)
            for member in group.agents:
                if member not in self.agents:
                    raise ValueError(
                        f"group {name!r} names {member!r}, which is not one of the agents: {known}"
                    )
            for source, target in group.next.items():
                for one in (source, target):
                    if one not in members:
                        raise ValueError(
                            f"group {name!r}: next names {one!r}, which is not one of its agents: "
                            + ", ".join(group.agents)
                        )
        if self.default is not None and self.default not in {*self.agents, *self.groups}:
            raise ValueError(
                f"default agent {self.default!r} is not one of the agents: "
                + ", ".join([*self.agents, *self.groups])
            )
        return self


def load_agents_file(path: str, env: Mapping[str, str], *, mcp: bool) -> AgentsFile:
    """The validated ``--agents`` file, each ``api_key_env`` read from ``env`` into ``api_key``
    (:class:`CliError` naming the flag, the file, the line where known, and the problem).
    ``mcp``: ``--mcp`` is given."""
    what = f"--agents {path}"
    document = read_document(path, what)
    if not isinstance(document.data, dict):
        raise CliError(f"{what}: expected an object with an 'agents' object")
    try:
        config = AgentsFile.model_validate(document.data)
    except ValidationError as exc:
        raise CliError(f"{what}: {document.problems(exc)}") from None
    config._path, config._document = path, document
    with_mcp = [name for name, agent in config.agents.items() if agent.mcp]
    if with_mcp and not mcp:
        raise CliError(
            f"{config.origin('agents', with_mcp[0], 'mcp')}: agent {with_mcp[0]!r} has "
            '"mcp": true, but no --mcp CONFIG.json is given'
        )
    if mcp and not with_mcp:
        raise CliError(f'--mcp is given, but no agent of {path} has "mcp": true')
    return _with_keys(config, env)


def _with_keys(config: AgentsFile, env: Mapping[str, str]) -> AgentsFile:
    """``config`` with the keys its ``api_key_env`` entries name read from ``env``."""
    agents = {
        name: agent.model_copy(
            update={
                "api_key": agent.key(env, f"{config.origin('agents', name)}: agent {name!r}"),
                "api_key_env": None,
            }
        )
        for name, agent in config.agents.items()
    }
    router = config.router
    if router is not None:
        router = router.model_copy(
            update={
                "api_key": router.key(env, f"{config.origin('router')}: router"),
                "api_key_env": None,
            }
        )
    groups = {
        name: group.model_copy(
            update={
                "moderator": group.moderator.model_copy(
                    update={
                        "api_key": group.moderator.key(
                            env, f"{config.origin('groups', name)}: group {name!r}: moderator"
                        ),
                        "api_key_env": None,
                    }
                )
            }
        )
        if group.moderator is not None
        else group
        for name, group in config.groups.items()
    }
    return config.model_copy(update={"agents": agents, "router": router, "groups": groups})
