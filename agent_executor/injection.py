"""Where :class:`InjectionGuard` used to live: the code is now in
:mod:`agent_executor.guards.injection`.

This face keeps ``from agent_executor.injection import InjectionGuard`` (and every other public
name this module had) working.
"""

from __future__ import annotations

from .guards.injection import (
    AUTHORITY,
    CATEGORIES,
    DISCUSSION,
    DISCUSSION_FACTOR,
    ENCODED,
    EXFILTRATION,
    EXTRACTION,
    HIDDEN_BOOST,
    INDIRECT,
    JAILBREAK,
    LEARNED,
    OBFUSCATION,
    OVERRIDE,
    REJECTION_MESSAGE,
    SPOOFING,
    UNTRUSTED_NOTICE,
    Classifier,
    InjectionGuard,
    InjectionScore,
    ToolResultAction,
    normalise,
    score_text,
    wrap_untrusted,
)

__all__ = [
    "AUTHORITY",
    "CATEGORIES",
    "DISCUSSION",
    "DISCUSSION_FACTOR",
    "ENCODED",
    "EXFILTRATION",
    "EXTRACTION",
    "HIDDEN_BOOST",
    "INDIRECT",
    "JAILBREAK",
    "LEARNED",
    "OBFUSCATION",
    "OVERRIDE",
    "REJECTION_MESSAGE",
    "SPOOFING",
    "UNTRUSTED_NOTICE",
    "Classifier",
    "InjectionGuard",
    "InjectionScore",
    "ToolResultAction",
    "normalise",
    "score_text",
    "wrap_untrusted",
]
