"""What every ``/v1`` endpoint answers with: the agent a ``model`` names, a failed run as an
OpenAI error, OpenAI's usage object, and the refusal of a field that would change the answer."""

from __future__ import annotations

import time
from typing import Any

from aiohttp import web

from agent_executor import ErrorEvent, ErrorInfo, ServedAgent, Usage

from ..errors import openai_error, retry_after_seconds, status_for
from ..state import AGENTS
from .conversation import WireError

__all__ = ["CREATED", "agent_for", "refusal", "run_error", "usage_object"]

CREATED = int(time.time())
"""When the service started: the ``created`` of the models it lists."""


def agent_for(request: web.Request, model: str) -> ServedAgent | web.Response:
    """The agent, group or flow ``model`` names (``default``: the default one), else a 404."""
    executor = request.app[AGENTS].get(None if model == "default" else model)
    if executor is None:
        return openai_error(
            404,
            f"The model `{model}` does not exist; see GET /v1/models",
            code="model_not_found",
            param="model",
        )
    return executor


def refusal(exc: WireError) -> web.Response:
    """A request that cannot be honoured: 400 naming the field."""
    return openai_error(400, str(exc), code="invalid_input", param=exc.param)


def run_error(error: ErrorInfo | ErrorEvent) -> web.Response:
    """A run that failed before its answer started, with its status (``Retry-After`` on the
    statuses worth retrying)."""
    status = status_for(error)
    headers = {}
    if error.retry_after is not None or status in (429, 503):
        headers["Retry-After"] = str(retry_after_seconds(error.retry_after))
    return openai_error(status, error.message, code=error.code, **headers)


def usage_object(usage: Usage | None) -> dict[str, Any]:
    """OpenAI's Chat Completions usage object; ``prompt_tokens_details.cached_tokens`` as
    OpenAI reports it, and ``cost_usd`` (ours, as LiteLLM's proxy adds ``cost``) when the cost
    is known."""
    prompt = usage.input_tokens if usage else 0
    completion = usage.output_tokens if usage else 0
    out: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    if usage is not None and usage.cached_input_tokens:
        out["prompt_tokens_details"] = {"cached_tokens": usage.cached_input_tokens}
    if usage is not None and usage.cost_usd is not None:
        out["cost_usd"] = usage.cost_usd
    return out
