"""Start-up checks that a configured model can be reached at all: a provider litellm knows,
and the credentials that provider reads.

Without them the service would start cleanly and answer every request 502; the operator
learns it from a client. The check is the library's own
(:func:`agent_executor.models.credentials.check_credentials`, which ``AgentExecutor`` runs for a
model string); here its refusal names the service's flags and becomes one line at start-up.
"""

from __future__ import annotations

from agent_executor import ChatModel
from agent_executor.errors import ConfigurationError
from agent_executor.models.credentials import AMBIENT_CREDENTIALS
from agent_executor.models.credentials import check_credentials as check_model

from .errors import CliError

__all__ = ["AMBIENT_CREDENTIALS", "check_credentials"]


def check_credentials(model: ChatModel, api_base: str | None, api_key: str | None) -> None:
    """Refuse ``model`` (:class:`CliError`) when its provider is unknown or no key for it is
    found (in this process's environment, where the model clients look too); nothing to check
    for other models (the demo model, your own :class:`ChatModel`)."""
    try:
        check_model(
            model,
            api_base=api_base,
            api_key=api_key,
            key_hint="use LLM_API_KEY or --api-key-file FILE",
            base_hint="--api-base",
        )
    except ConfigurationError as exc:
        raise CliError(str(exc)) from None
