"""The check that a model can be reached at all: a provider litellm knows, and the credentials
that provider reads.

Without it an executor builds cleanly and every run fails with ``llm_error``; a script sees
a generic message, a service answers 502 to its clients. ``AgentExecutor`` runs this check
for a model string and the service's start-up for its model, so both refuse the same thing
with a :class:`~agent_executor.errors.ConfigurationError` naming the variable to set.
"""

from __future__ import annotations

import logging
import os

from ..errors import ConfigurationError
from .base import ChatModel
from .litellm import LiteLLMModel, import_litellm
from .openai_compat import OpenAICompatModel

__all__ = ["AMBIENT_CREDENTIALS", "check_credentials"]

logger = logging.getLogger("agent_executor.models")

AMBIENT_CREDENTIALS = frozenset({"bedrock", "bedrock_converse", "sagemaker", "vertex_ai"})
"""Providers whose credentials may come from the machine (an IAM role, Google's application
default credentials) rather than variables: a missing variable is logged, not refused."""


def check_credentials(
    model: ChatModel,
    *,
    api_base: str | None = None,
    api_key: str | None = None,
    key_hint: str | None = None,
    base_hint: str | None = None,
) -> None:
    """Refuse ``model`` (:class:`ConfigurationError`) when its provider is unknown or no key
    for it is found in this process's environment, where the model clients look too.

    ``api_key`` and ``api_base`` are what the model was built with: a key given, or a server
    of one's own (a local one needs no key), passes. Nothing is checked for other models (the
    demo model, a :class:`ScriptedModel`, your own :class:`ChatModel`). The providers of
    :data:`AMBIENT_CREDENTIALS` only log a warning. ``key_hint`` and ``base_hint`` say where
    else a key or a server may come from (by default, :func:`resolve_model`'s arguments; the
    service names its flags).
    """
    key = key_hint or f"build the model with a key: resolve_model({model.name!r}, api_key=...)"
    base = base_hint or "resolve_model(..., api_base=URL)"
    if isinstance(model, OpenAICompatModel):
        if api_base is None and not api_key and not os.environ.get("OPENAI_API_KEY"):
            raise ConfigurationError(
                f"model {model.name!r} needs an OpenAI API key: set OPENAI_API_KEY, or "
                f"{key} (or {base} for another OpenAI-compatible server)"
            )
    elif isinstance(model, LiteLLMModel):
        _check_litellm(model.name, api_base, api_key, key, base)


def _check_litellm(
    name: str, api_base: str | None, api_key: str | None, key_hint: str, base_hint: str
) -> None:
    litellm = import_litellm()
    try:
        _, provider, _, _ = litellm.get_llm_provider(name, api_base=api_base)
    except Exception:  # litellm raises its BadRequestError; the class is an implementation detail
        raise ConfigurationError(
            f"unknown model {name!r}: no provider known for it; name one as provider/model "
            f"(e.g. anthropic/claude-sonnet-4-5, gemini/gemini-2.5-flash) or use {base_hint} "
            "for an OpenAI-compatible server"
        ) from None
    if api_key or api_base:
        return
    found = litellm.validate_environment(model=name)
    missing = list(found.get("missing_keys") or ())
    if found.get("keys_in_environment") or not missing:
        return
    variables = ", ".join(missing)
    if provider in AMBIENT_CREDENTIALS:
        logger.warning(
            "model %s: %s not set; relying on the machine's %s credentials",
            name,
            variables,
            provider,
        )
        return
    raise ConfigurationError(
        f"model {name!r} ({provider}) has no credentials: litellm looks for {variables} "
        f"in the environment; set it, or {key_hint}"
    )
