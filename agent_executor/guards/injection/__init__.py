"""Prompt-injection detection: :class:`InjectionGuard` and its heuristic score.

The guard refuses runs whose user text looks like an attempt to take over the model and
screens tool results for instructions planted in fetched data. Its parts, one module each:

- :mod:`.guard`: the guard itself, and the ``<untrusted>`` wrapper for flagged tool results;
- :mod:`.scoring`: how a text is scored (the formula is in its docstring);
- :mod:`.rules` and ``rules.json``: the phrase rules, as data, and the code that runs them;
- :mod:`.normalisation` and :mod:`.decoding`: the readings the rules see (normal form, leetspeak,
  letters only, Unicode tags, base64, base32, hex, binary, URL escapes, reversed and ROT13 text);
- :mod:`.views`: the same readings as text, for the learned layer;
- :mod:`.word_gate`: which word rules are worth running for a text;
- :mod:`.learned`, ``weights.json`` and ``weights_tools.json``: the learned layer, one model for
  messages and one for tool results;
- :mod:`.categories`: the reasons a score gives.
"""

from __future__ import annotations

from .categories import (
    AUTHORITY,
    CATEGORIES,
    DISCUSSION,
    ENCODED,
    EXFILTRATION,
    EXTRACTION,
    INDIRECT,
    JAILBREAK,
    LEARNED,
    OBFUSCATION,
    OVERRIDE,
    SPOOFING,
)
from .guard import (
    REJECTION_MESSAGE,
    UNTRUSTED_NOTICE,
    Classifier,
    InjectionGuard,
    ToolResultAction,
    VerdictCacheInfo,
    wrap_untrusted,
)
from .normalisation import normalise
from .scoring import DISCUSSION_FACTOR, HIDDEN_BOOST, InjectionScore, score_text

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
    "VerdictCacheInfo",
    "normalise",
    "score_text",
    "wrap_untrusted",
]
