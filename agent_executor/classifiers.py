"""Where the ONNX and LLM-judge injection layers used to live: the code is now in
:mod:`agent_executor.guards.classifiers`.

This face keeps ``from agent_executor.classifiers import ONNXClassifier`` working.
"""

from __future__ import annotations

from .guards.classifiers import (
    INJECTION_LABELS,
    FailMode,
    LabelSpec,
    LLMJudgeGuard,
    ONNXClassifier,
)

__all__ = ["INJECTION_LABELS", "FailMode", "LLMJudgeGuard", "LabelSpec", "ONNXClassifier"]
