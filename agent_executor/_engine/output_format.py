"""Structured output: turning ``AgentCommand.response_format`` into what the model is asked and
how its answer is checked.

One mechanism serves the library's formats and the ones OpenAI clients send: every format is
sent to the model as the provider's own ``response_format`` (:attr:`OutputFormat.native`), so a
model that can constrain its output does. The library's ``"json"`` and pydantic types also add
instructions to the system prompt, validate the answer and give the model one repair round; an
OpenAI ``response_format`` object is the client's to check, so the answer comes back as the
model wrote it, refused only when it is not JSON at all (never prose in its place).
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import TypeAdapter, ValidationError

from ..errors import ErrorCode
from .state import RunFailed

__all__ = ["OutputFormat", "unfenced"]

_FENCE_RE = re.compile(r"^\s*```(?:json)?\s*\n?(.*?)\n?\s*```\s*$", re.S)
_NAME_RE = re.compile(r"[^A-Za-z0-9_-]+")
_JSON_OBJECT = {"type": "json_object"}


def unfenced(text: str) -> str:
    """A model's JSON answer without the Markdown code fence models like to put around it."""
    fenced = _FENCE_RE.match(text)
    return fenced.group(1) if fenced else text.strip()


class OutputFormat:
    """A requested output format: what to tell the model, what to send it, how to check."""

    __slots__ = ("_adapter", "instructions", "native", "repair")

    def __init__(
        self,
        adapter: TypeAdapter[Any] | None,
        instructions: str,
        native: dict[str, Any],
        *,
        repair: bool = True,
    ) -> None:
        self._adapter = adapter
        self.instructions = instructions
        self.native = native
        """The provider's ``response_format`` object sent with every model call."""
        self.repair = repair
        """Whether an answer that does not match gets one repair round."""

    @classmethod
    def resolve(cls, response_format: Any) -> OutputFormat | None:
        """``None`` for plain text; raises ``unsupported_format`` for what cannot be honoured."""
        if response_format is None or response_format == "text":
            return None
        if response_format == "json":
            return cls(None, "Answer with a single JSON value and nothing else.", _JSON_OBJECT)
        if isinstance(response_format, dict):
            return _openai_format(response_format)
        if isinstance(response_format, str):
            raise RunFailed(
                ErrorCode.UNSUPPORTED_FORMAT,
                f"unsupported response_format {response_format!r}: use 'text', "
                "'json', a pydantic model class or an OpenAI response_format object",
            )
        try:
            adapter: TypeAdapter[Any] = TypeAdapter(response_format)
            schema = adapter.json_schema()
        except Exception as exc:
            raise RunFailed(
                ErrorCode.UNSUPPORTED_FORMAT, f"cannot produce {response_format!r}: {exc}"
            ) from None
        name = _NAME_RE.sub("_", str(schema.get("title") or "answer"))[:64]
        native = {"type": "json_schema", "json_schema": {"name": name, "schema": schema}}
        return cls(
            adapter,
            "Answer with a single JSON value and nothing else, matching this "
            f"JSON schema:\n{json.dumps(schema)}",
            native,
        )

    def parse(self, text: str) -> Any:
        """The validated value of the model's answer; ``ValueError`` says what is wrong."""
        body = unfenced(text) if self.repair else text
        if self._adapter is None:
            try:
                return json.loads(body)
            except ValueError as exc:
                raise ValueError(f"the answer is not valid JSON: {exc}") from None
        try:
            return self._adapter.validate_json(body)
        except ValidationError as exc:
            raise ValueError(str(exc)) from None


def _openai_format(response_format: dict[str, Any]) -> OutputFormat | None:
    """An OpenAI ``response_format`` object: ``text``, ``json_object`` or ``json_schema``."""
    kind = response_format.get("type")
    if kind == "text":
        return None
    if kind == "json_object":
        return OutputFormat(None, "", dict(response_format), repair=False)
    if kind == "json_schema":
        spec = response_format.get("json_schema")
        if (
            isinstance(spec, dict)
            and isinstance(spec.get("name"), str)
            and isinstance(spec.get("schema", {}), dict)
        ):
            return OutputFormat(None, "", dict(response_format), repair=False)
        raise RunFailed(
            ErrorCode.UNSUPPORTED_FORMAT,
            "response_format json_schema needs json_schema.name and an object json_schema.schema",
        )
    raise RunFailed(
        ErrorCode.UNSUPPORTED_FORMAT,
        f"unsupported response_format type {kind!r}: use text, json_object or json_schema",
    )
