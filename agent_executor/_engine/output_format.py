"""Structured output: turning ``AgentCommand.response_format`` into instructions and a validator."""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import TypeAdapter, ValidationError

from ..errors import ErrorCode
from .state import RunFailed

__all__ = ["OutputFormat", "unfenced"]

_FENCE_RE = re.compile(r"^\s*```(?:json)?\s*\n?(.*?)\n?\s*```\s*$", re.S)


def unfenced(text: str) -> str:
    """A model's JSON answer without the Markdown code fence models like to put around it."""
    fenced = _FENCE_RE.match(text)
    return fenced.group(1) if fenced else text.strip()


class OutputFormat:
    """A requested output format: what to tell the model and how to check its answer."""

    __slots__ = ("_adapter", "instructions")

    def __init__(self, adapter: TypeAdapter[Any] | None, instructions: str) -> None:
        self._adapter = adapter
        self.instructions = instructions

    @classmethod
    def resolve(cls, response_format: Any) -> OutputFormat | None:
        """``None`` for plain text; raises ``unsupported_format`` for what cannot be honoured."""
        if response_format is None or response_format == "text":
            return None
        if response_format == "json":
            return cls(None, "Answer with a single JSON value and nothing else.")
        if isinstance(response_format, str):
            raise RunFailed(
                ErrorCode.UNSUPPORTED_FORMAT,
                f"unsupported response_format {response_format!r}: use 'text', "
                "'json' or a pydantic model class",
            )
        try:
            adapter: TypeAdapter[Any] = TypeAdapter(response_format)
            schema = adapter.json_schema()
        except Exception as exc:
            raise RunFailed(
                ErrorCode.UNSUPPORTED_FORMAT, f"cannot produce {response_format!r}: {exc}"
            ) from None
        return cls(
            adapter,
            "Answer with a single JSON value and nothing else, matching this "
            f"JSON schema:\n{json.dumps(schema)}",
        )

    def parse(self, text: str) -> Any:
        """The validated value of the model's answer; ``ValueError`` says what is wrong."""
        body = unfenced(text)
        if self._adapter is None:
            try:
                return json.loads(body)
            except ValueError as exc:
                raise ValueError(f"the answer is not valid JSON: {exc}") from None
        try:
            return self._adapter.validate_json(body)
        except ValidationError as exc:
            raise ValueError(str(exc)) from None
