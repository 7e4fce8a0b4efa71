"""The :class:`Tool` base class: what every tool is, whatever runs it.

A tool is a name, a description and a JSON schema offered to the model, and a way to run it.
The checks here (JSON decoding, a light top-level schema check, result serialisation) are the
ones every kind of tool shares; :mod:`~agent_executor.tools.function` adds pydantic validation
for Python functions.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic_core import to_json

from ..errors import ConfigurationError

__all__ = [
    "JSON_TYPES",
    "Tool",
    "ToolArgumentsError",
    "decode_arguments",
    "serialize_result",
]

_NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")

JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
    "null": (type(None),),
}
"""The Python types a JSON Schema ``type`` accepts once the JSON is decoded."""


class ToolArgumentsError(ValueError):
    """The model's arguments for a tool are not valid JSON or do not match its schema."""


class Tool:
    """A tool the model can call: a name, a description, a JSON schema and a way to run it.

    Subclass it for tools that are not Python functions (HTTP endpoints, MCP servers, ...):
    override :meth:`parse_arguments` and :meth:`invoke`. ``timeout`` (seconds) overrides the
    executor's ``tool_timeout`` for this tool. ``eager`` marks a read-only, idempotent tool
    that may start as soon as its arguments are complete in the stream, while the model is
    still writing; other tools wait for the end of the model's turn. ``requires_approval``
    pauses the run when the model calls the tool, until a person approves or rejects the call.
    """

    def __init__(
        self,
        *,
        name: str,
        description: str,
        parameters: dict[str, Any],
        timeout: float | None = None,
        eager: bool = False,
        requires_approval: bool = False,
    ) -> None:
        if not _NAME_RE.match(name):
            raise ConfigurationError(
                f"invalid tool name {name!r}: use 1-64 letters, digits, '_' or '-'"
            )
        self.name = name
        self.description = description
        self.parameters = parameters
        self.timeout = timeout
        self.eager = eager
        self.requires_approval = requires_approval

    def spec(self) -> dict[str, Any]:
        """The OpenAI-style function spec offered to the model."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }

    def parse_arguments(self, raw: str) -> dict[str, Any]:
        """Decode the model's JSON arguments; raise :class:`ToolArgumentsError` if invalid.

        The base class checks the arguments against the top level of ``parameters``: required
        names present, no others when ``additionalProperties`` is false, JSON types of the
        declared properties. Subclasses with richer validation override it.
        """
        value = decode_arguments(raw)
        problems = _schema_problems(value, self.parameters)
        if problems:
            raise ToolArgumentsError("invalid arguments: " + "; ".join(problems))
        return value

    async def invoke(self, arguments: dict[str, Any]) -> Any:
        """Run the tool with arguments returned by :meth:`parse_arguments`."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"


def decode_arguments(raw: str) -> dict[str, Any]:
    """The model's arguments as a JSON object (empty text is no arguments)."""
    try:
        value = json.loads(raw) if raw.strip() else {}
    except ValueError as exc:
        raise ToolArgumentsError(f"arguments are not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ToolArgumentsError("arguments must be a JSON object")
    return value


def _schema_problems(value: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    """What is wrong with ``value`` at the top level of an object ``schema`` (a light check)."""
    properties = schema.get("properties") or {}
    problems = [
        f"{name}: Field required" for name in schema.get("required", ()) if name not in value
    ]
    if schema.get("additionalProperties") is False:
        problems += [
            f"{name}: Extra inputs are not permitted" for name in value if name not in properties
        ]
    for name, item in value.items():
        expected = (properties.get(name) or {}).get("type")
        kinds = [expected] if isinstance(expected, str) else list(expected or ())
        allowed = tuple(t for kind in kinds for t in JSON_TYPES.get(kind, ()))
        if (allowed and not isinstance(item, allowed)) or (
            isinstance(item, bool) and kinds and not {"boolean"} & set(kinds)
        ):
            problems.append(f"{name}: expected {' or '.join(kinds)}")
    return problems


def serialize_result(value: Any) -> str:
    """Tool return value → text for the model: str as is, anything else as JSON."""
    if isinstance(value, str):
        return value
    return to_json(value, fallback=repr).decode()
