"""Chat models: the :class:`ChatModel` seam and the shipped implementations.

``LiteLLMModel`` imports litellm only when it is first used (litellm takes seconds to import).
"""

from __future__ import annotations

from .base import ChatModel, ModelChunk, ModelRequest, ModelResponse, ToolCallDelta
from .demo import DemoModel
from .litellm import LiteLLMModel
from .scripted import ScriptedModel

__all__ = [
    "ChatModel",
    "DemoModel",
    "LiteLLMModel",
    "ModelChunk",
    "ModelRequest",
    "ModelResponse",
    "ScriptedModel",
    "ToolCallDelta",
    "resolve_model",
]


def resolve_model(model: ChatModel | str) -> ChatModel:
    """A model from a :class:`ChatModel` or a string: ``"demo"`` or a litellm model name."""
    if not isinstance(model, str):
        return model
    if model == "demo":
        return DemoModel()
    return LiteLLMModel(model)
