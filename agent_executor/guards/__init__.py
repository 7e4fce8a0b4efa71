"""Guards: checks that run before anything is spent, and screens on what comes back.

One package, one module per kind of guard:

- :mod:`.base`: the :class:`Guard` and :class:`ToolResultScreen` protocols (what a guard is),
  :class:`InputValidationGuard` and :func:`user_texts`;
- :mod:`.ratelimit`: :class:`RateLimitGuard`, per-user request rates (GCRA);
- :mod:`.injection`: :class:`InjectionGuard`, prompt-injection rules and learned layer;
- :mod:`.classifiers`: :class:`ONNXClassifier` and :class:`LLMJudgeGuard`, heavier
  injection detectors;
- :mod:`.output`: :class:`OutputGuard`, which keeps secrets out of the streamed answer.

Import from here (``from agent_executor.guards import InjectionGuard``); the modules above
are where the code lives.
"""

from __future__ import annotations

from .base import (
    Guard,
    InputValidationGuard,
    ScreenVerdict,
    ToolResultScreen,
    checks_content,
    error_codes,
    screens_among,
    user_texts,
)
from .classifiers import LLMJudgeGuard, ONNXClassifier
from .injection import InjectionGuard, InjectionScore
from .output import OutputBlocked, OutputFilter, OutputGuard
from .ratelimit import InMemoryRateLimitStorage, RateLimitGuard, RateLimitStorage

__all__ = [
    "Guard",
    "InMemoryRateLimitStorage",
    "InjectionGuard",
    "InjectionScore",
    "InputValidationGuard",
    "LLMJudgeGuard",
    "ONNXClassifier",
    "OutputBlocked",
    "OutputFilter",
    "OutputGuard",
    "RateLimitGuard",
    "RateLimitStorage",
    "ScreenVerdict",
    "ToolResultScreen",
    "checks_content",
    "error_codes",
    "screens_among",
    "user_texts",
]
