"""Chat models: the :class:`ChatModel` seam and the shipped implementations.

``OpenAICompatModel`` is the fast path for OpenAI and OpenAI-compatible servers;
``LiteLLMModel`` reaches every other provider and imports litellm only when first used
(litellm takes seconds to import).
"""

from __future__ import annotations

from typing import Any, Literal

from ..errors import ConfigurationError
from .base import ChatModel, ModelChunk, ModelRequest, ModelResponse, PooledModel, ToolCallDelta
from .credentials import check_credentials
from .demo import DemoModel
from .litellm import LiteLLMModel
from .openai_compat import OpenAICompatModel
from .prompt_tools import PromptToolsModel, ToolMode, with_tool_mode
from .scripted import ScriptedModel

ModelClient = Literal["auto", "fast", "litellm"]

__all__ = [
    "ChatModel",
    "DemoModel",
    "LiteLLMModel",
    "ModelChunk",
    "ModelClient",
    "ModelRequest",
    "ModelResponse",
    "OpenAICompatModel",
    "PooledModel",
    "PromptToolsModel",
    "ScriptedModel",
    "ToolCallDelta",
    "ToolMode",
    "check_credentials",
    "resolve_model",
    "with_tool_mode",
]


def resolve_model(
    model: ChatModel | str,
    *,
    api_base: str | None = None,
    api_key: str | None = None,
    client: ModelClient = "auto",
    max_connections: int | None = None,
    **params: Any,
) -> ChatModel:
    """A model from a :class:`ChatModel` or a model string.

    ``"demo"`` is the offline :class:`DemoModel`. With ``client="auto"``, ``openai/...`` models
    and any model with an ``api_base`` (an OpenAI-compatible server) take the fast path,
    :class:`OpenAICompatModel`; other providers (``anthropic/...``, ``gemini/...``, bare names
    litellm maps to a provider, ...) go through :class:`LiteLLMModel`. ``client`` forces either.
    Keys are not checked here (:func:`check_credentials` does, as ``AgentExecutor`` does for a
    model string).
    """
    if not isinstance(model, str):
        return model
    if model == "demo":
        return DemoModel()
    if client not in ("auto", "fast", "litellm"):
        raise ConfigurationError(f"unknown model client {client!r}: use auto, fast or litellm")
    fast = client == "fast" or (
        client == "auto" and (model.startswith("openai/") or api_base is not None)
    )
    if fast:
        return OpenAICompatModel(
            model, base_url=api_base, api_key=api_key, max_connections=max_connections, **params
        )
    return LiteLLMModel(model, api_base=api_base, api_key=api_key, **params)
