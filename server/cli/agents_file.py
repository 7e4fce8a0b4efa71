"""The ``--agents`` file: several named agents, the default one and an optional router.

Each agent's model settings fall back to the flags and environment (:class:`ServeConfig`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ..schemas import describe_validation_error
from .errors import CliError

__all__ = ["AgentSpec", "AgentsFile", "ModelSpec", "RouterSpec", "load_agents_file"]

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


class AgentsFile(BaseModel):
    """The ``--agents`` file: named agents, the default one and an optional model router."""

    model_config = ConfigDict(extra="forbid", strict=True)

    default: str | None = None
    router: RouterSpec | None = None
    agents: dict[str, AgentSpec] = Field(min_length=1)

    @field_validator("agents")
    @classmethod
    def _names(cls, agents: dict[str, AgentSpec]) -> dict[str, AgentSpec]:
        for name in agents:
            if not _AGENT_NAME_RE.fullmatch(name):
                raise ValueError(
                    f"invalid agent name {name[:80]!r}: use 1 to 64 letters, digits, '_' or '-'"
                )
        return agents

    @model_validator(mode="after")
    def _default_is_an_agent(self) -> AgentsFile:
        if self.default is not None and self.default not in self.agents:
            raise ValueError(
                f"default agent {self.default!r} is not one of the agents: "
                + ", ".join(self.agents)
            )
        return self


def load_agents_file(path: str, env: Mapping[str, str], *, mcp: bool) -> AgentsFile:
    """The validated ``--agents`` file, each ``api_key_env`` read from ``env`` into ``api_key``
    (:class:`CliError` naming the file and the problem). ``mcp``: ``--mcp`` is given."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise CliError(f"cannot read the agents file: {exc}") from None
    try:
        data = json.loads(text, object_pairs_hook=_no_duplicate_keys)
    except json.JSONDecodeError as exc:
        raise CliError(f"{path}: not valid JSON: {exc}") from None
    except ValueError as exc:
        raise CliError(f"{path}: {exc}") from None
    if not isinstance(data, dict):
        raise CliError(f"{path}: expected a JSON object with an 'agents' object")
    try:
        config = AgentsFile.model_validate(data)
    except ValidationError as exc:
        raise CliError(f"{path}: {describe_validation_error(exc)}") from None
    with_mcp = [name for name, agent in config.agents.items() if agent.mcp]
    if with_mcp and not mcp:
        raise CliError(
            f'{path}: agent {with_mcp[0]!r} has "mcp": true, but no --mcp CONFIG.json is given'
        )
    if mcp and not with_mcp:
        raise CliError(f'--mcp is given, but no agent of {path} has "mcp": true')
    return _with_keys(config, env)


def _with_keys(config: AgentsFile, env: Mapping[str, str]) -> AgentsFile:
    """``config`` with the keys its ``api_key_env`` entries name read from ``env``."""
    agents = {
        name: agent.model_copy(
            update={"api_key": agent.key(env, f"agent {name!r}"), "api_key_env": None}
        )
        for name, agent in config.agents.items()
    }
    router = config.router
    if router is not None:
        router = router.model_copy(
            update={"api_key": router.key(env, "router"), "api_key_env": None}
        )
    return config.model_copy(update={"agents": agents, "router": router})


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for key, value in pairs:
        if key in data:
            raise ValueError(f"the key {key!r} appears twice in one object")
        data[key] = value
    return data
