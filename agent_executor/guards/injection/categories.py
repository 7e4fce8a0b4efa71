"""The reasons an injection score gives: the rule categories and the signals added on top.

A module of its own because the rules file, the scoring and the guard all name them, and the
rules file is checked against them when it is loaded.
"""

from __future__ import annotations

__all__ = [
    "AUTHORITY",
    "CATEGORIES",
    "DISCUSSION",
    "ENCODED",
    "EXFILTRATION",
    "EXTRACTION",
    "INDIRECT",
    "JAILBREAK",
    "LEARNED",
    "OBFUSCATION",
    "OVERRIDE",
    "RULE_CATEGORIES",
    "SPOOFING",
]

OVERRIDE = "instruction_override"
EXTRACTION = "prompt_extraction"
JAILBREAK = "roleplay_jailbreak"
SPOOFING = "role_spoofing"
INDIRECT = "indirect_injection"
EXFILTRATION = "exfiltration"
AUTHORITY = "authority_claim"
OBFUSCATION = "obfuscation"
ENCODED = "encoded_payload"
DISCUSSION = "discussion"
LEARNED = "learned"

CATEGORIES: tuple[str, ...] = (
    OVERRIDE,
    EXTRACTION,
    JAILBREAK,
    SPOOFING,
    INDIRECT,
    EXFILTRATION,
    AUTHORITY,
    OBFUSCATION,
    ENCODED,
    DISCUSSION,
    LEARNED,
)
"""Every reason :meth:`InjectionGuard.score` can give, in the order it gives them."""

RULE_CATEGORIES: frozenset[str] = frozenset(CATEGORIES[:8])
"""The categories a rule in ``rules.json`` may have (the others are added by the scoring)."""
