"""Start-up checks that a configured model can be reached at all: a provider litellm knows,
and the credentials that provider reads.

Without them the service would start cleanly and answer every request 502; the operator
learns it from a client. These checks turn that into one line at start-up naming what to set.
"""

from __future__ import annotations

import logging
import os

from agent_executor import ChatModel, LiteLLMModel, OpenAICompatModel
from agent_executor.models.litellm import import_litellm

from .errors import CliError

__all__ = ["AMBIENT_CREDENTIALS", "check_credentials"]

logger = logging.getLogger("server")

AMBIENT_CREDENTIALS = frozenset({"bedrock", "bedrock_converse", "sagemaker", "vertex_ai"})
"""Providers whose credentials may come from the machine (an IAM role, Google's application
default credentials) rather than variables: a missing variable is logged, not refused."""


def check_credentials(model: ChatModel, api_base: str | None, api_key: str | None) -> None:
    """Refuse ``model`` (:class:`CliError`) when its provider is unknown or no key for it is
    found (in this process's environment, where the model clients look too); nothing to check
    for other models (the demo model, your own :class:`ChatModel`)."""
    if isinstance(model, OpenAICompatModel):
        if api_base is None and not api_key and not os.environ.get("OPENAI_API_KEY"):
            raise CliError(
                f"model {model.name!r} needs an OpenAI API key: set LLM_API_KEY or "
                "OPENAI_API_KEY, or give --api-key-file FILE (or --api-base for another "
                "OpenAI-compatible server)"
            )
    elif isinstance(model, LiteLLMModel):
        _check_litellm(model.name, api_base, api_key)


def _check_litellm(name: str, api_base: str | None, api_key: str | None) -> None:
    litellm = import_litellm()
    try:
        _, provider, _, _ = litellm.get_llm_provider(name, api_base=api_base)
    except Exception:  # litellm raises its BadRequestError; the class is an implementation detail
        raise CliError(
            f"unknown model {name!r}: no provider known for it; name one as provider/model "
            "(e.g. anthropic/claude-sonnet-4-5, gemini/gemini-2.5-flash) or give --api-base "
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
    raise CliError(
        f"model {name!r} ({provider}) has no credentials: litellm looks for {variables} "
        "in the environment (a key can also come from LLM_API_KEY or --api-key-file FILE)"
    )
