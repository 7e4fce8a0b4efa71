"""The learned first layer of :class:`~agent_executor.guards.injection.InjectionGuard`.

A logistic regression over the words and word pairs of the normalised text, plus a few
structural markers (a persona being defined, rules being waived, two answers asked for, a
conversation role spoofed). The weights live beside this module in ``weights.json``,
written by ``tests/data/train_injection_model.py`` from the corpora listed in
``tests/data/SOURCES.md``; inference is plain Python: one regex pass for the words, a marker
pattern only where its gate words occur, a set intersection with the weight table, a sigmoid.

Word features are present or absent (not counted); their weights are summed and divided by the
square root of how many distinct words and pairs the text has, so a long benign text with a
few attack words is not pushed over by its length, and pasting a text twice changes nothing.
Markers are added undivided: "free of all restrictions" weighs as much in a 3,000-word
template as in a paragraph. Texts under ``MIN_WORDS`` words score 0 and are left to the rules.
The shipped bias is shifted so that 0.5 is the operating point chosen in training.
"""

from __future__ import annotations

import json
import math
import re
from functools import cache
from importlib import resources
from itertools import pairwise
from typing import Final

__all__ = [
    "MIN_WORDS",
    "MODEL_FILE",
    "STRUCTURE",
    "Model",
    "load",
    "probability",
    "training_features",
]

MODEL_FILE: Final = "weights.json"

_TOKEN_RE = re.compile(r"[a-z0-9]+")

STRUCTURE: Final[dict[str, tuple[str, str]]] = {
    # Markers written from the jailbreak taxonomy of Shen et al., "Do Anything Now" (CCS 2024)
    # and Wei et al., "Jailbroken" (NeurIPS 2023): what a jailbreak has to say, in any wording.
    # name: (words one of which must be in the text, the pattern run only then)
    # a new, named identity is set up for the model
    "persona": (
        "named called known stands another different alternate unrestricted unfiltered immerse"
        " pretend",
        r"\b(?:ai|model|chatbot|bot|assistant|character|persona|simulator|entity|gpt)"
        r"(?: \w+){0,2}? (?:named|called|known as|which stands for|that stands for)\b"
        r"|\b(?:another|a different|an alternate|an unrestricted|an unfiltered) (?:\w+ )?"
        r"(?:ai|model|language model|chatbot|persona|version of)\b|\bimmerse yourself\b"
        r"|\bpretend (?:to be|you are)\b",
    ),
    # rules, filters or ethics declared void
    "waiver": (
        "restriction restrictions rules filter filters filtering censorship censored ethics"
        " ethical moral morals guidelines policy policies limitations limits boundaries"
        " safeguards warning warnings disclaimer disclaimers",
        r"\b(?:no|without|free (?:of|from)|not (?:bound|required|restricted)|broken free"
        r"|ignore|bypass|disable[ds]?|doesn't|does not|don't|do not|never|cannot) (?:\w+ ){0,4}?"
        r"(?:restrictions?|rules|filters?|filtering|censor\w*|ethics|ethical|morals?|moral"
        r"|guidelines|policy|policies|limitations|limits|boundaries|safeguards|warnings?"
        r"|disclaimers?)\b",
    ),
    # refusals, apologies and warnings forbidden
    "norefuse": (
        "refuse refuses refusing refusal refusals decline declines declining deny reject"
        " apologize apologise apologies apologizing sorry censor",
        r"\b(?:never|not|don't|do not|cannot|can't|won't|will not|mustn't|must not|no)"
        r" (?:\w+ ){0,3}?(?:refuse|refusals?|decline|deny|reject|apologi[sz]e|apologies"
        r"|say (?:that )?(?:you|i)(?:'m| am) sorry|say no|censor)\w*",
    ),
    # the model's makers and their rules named as the obstacle
    "policy": (
        "openai anthropic policy policies guidelines safety language",
        r"\bopenai\b|\banthropic\b|content polic\w+|usage polic\w+|ethical guidelines"
        r"|safety (?:filters?|guidelines|protocols|measures|restrictions)"
        r"|as an ai language model",
    ),
    # what the new persona is
    "amoral": (
        "amoral unethical immoral nonmoral unfiltered uncensored unrestricted unbound unhinged"
        " unlimited morals ethics conscience",
        r"\b(?:amoral|unethical|immoral|nonmoral|unfiltered|uncensored|unrestricted"
        r"|unbound|unhinged|unlimited power|without (?:any )?(?:morals|ethics|conscience))\b",
    ),
    "anything": (
        "anything matter",
        r"\bdo anything\b|\bcan do anything|anything (?:now|at all|i ask|they want)"
        r"|no matter how (?:\w+ ){0,2}?(?:immoral|unethical|illegal|dangerous|offensive|harmful)",
    ),
    "mode": (
        "mode",
        r"\b(?:developer|dev|god|jailbreak|jailbroken|dan|evil|unrestricted|opposite"
        r"|unlocked|chaos|dude) ?mode\b|\bmode (?:enabled|activated|on)\b",
    ),
    "fromnow": (
        "now rest point moment until",
        r"from now on|for the rest of (?:this|our) conversation|from this (?:point|moment)"
        r"|until i (?:say|tell)",
    ),
    # two answers, one of them unfiltered
    "dual": (
        "responses answers ways paragraphs replies personalities outputs jailbreak classic"
        " normal developer dan godmode unfiltered",
        r"\b(?:two|2|both) (?:\w+ ){0,3}?(?:responses|answers|ways|paragraphs|replies"
        r"|personalities|outputs)\b|\[[^\]\n]{0,25}(?:jailbreak|classic|normal|developer|dan"
        r"|godmode|unfiltered)[^\]\n]{0,10}\]",
    ),
    # stay in character / keep up the act
    "persist": (
        "character mode",
        r"\b(?:stay|remain|keep|break|breaking) (?:\w+ ){0,2}?(?:in character|character"
        r"|in \w+ mode)\b",
    ),
    # instructions replaced
    "override": (
        "instructions rules prompt prompts guidelines directives directive programming"
        " training constraints",
        r"\b(?:ignore|disregard|forget|override|overrides|supersede\w*) (?:\w+ ){0,4}?"
        r"(?:instructions|rules|prompts?|guidelines|directives|programming|training"
        r"|constraints)\b|\bnew (?:\w+ ){0,2}?(?:instructions|rules|directive)\b",
    ),
    # an answer dictated, as injected instructions do
    "dictate": (
        "include respond reply answer start begin output",
        r"\b(?:include in your (?:response|answer)|(?:respond|reply|answer) (?:only )?with"
        r"|start (?:your|each|every) (?:response|reply|answer)s? with|begin (?:your|each) "
        r"(?:response|reply) with|output (?:only )?(?:the|this) (?:string|word|text))\b",
    ),
    # a conversation turn or a system header typed by the user
    "roles": (
        "system assistant developer im_start endoftext inst sys input",
        r"(?:^|\n)\s*(?:system|assistant|developer)\s*:|<\|?(?:im_start|system|endoftext)"
        r"|\[/?(?:inst|system)\]|<<sys>>|\[end (?:of )?input\]",
    ),
}
_MARKERS = tuple(
    (f"#{name}", frozenset(gate.split()), re.compile(pattern))
    for name, (gate, pattern) in STRUCTURE.items()
)


def _tokens(norm: str) -> tuple[list[str], set[str]]:
    """The words of normalised text and the markers it shows.

    A marker's pattern runs only when one of its gate words is among the text's words, so
    ordinary text pays for one set test per marker, not a regex scan.
    """
    words = _TOKEN_RE.findall(norm)
    present = set(words)
    markers = {
        name
        for name, gate, pattern in _MARKERS
        if not gate.isdisjoint(present) and pattern.search(norm)
    }
    return words, markers


def training_features(norm: str) -> list[str]:
    """The features of normalised text, as strings (a word pair is ``"first second"``)."""
    words, markers = _tokens(norm)
    return sorted({*words, *(f"{a} {b}" for a, b in pairwise(words)), *markers})


def _word_features(words: list[str]) -> set[str | tuple[str, str]]:
    """The words and adjacent word pairs of :func:`training_features`, pairs as tuples."""
    found: set[str | tuple[str, str]] = set(words)
    found.update(pairwise(words))
    return found


MIN_WORDS: Final = 16
"""Shorter texts are left to the rules: a handful of words gives the word weights too much say
("From now on, please answer in British English."), and the short attacks ("ignore previous
instructions") are what the rules are written for."""


class Model:
    """Weights keyed as :func:`_word_features` and the markers build them, and a bias."""

    __slots__ = ("bias", "weights")

    def __init__(self, bias: float, weights: dict[str | tuple[str, str], float]) -> None:
        self.bias = bias
        self.weights = weights

    @classmethod
    def from_json(cls, data: dict[str, object]) -> Model:
        raw = data["weights"]
        assert isinstance(raw, dict)
        weights: dict[str | tuple[str, str], float] = {}
        for key, weight in raw.items():
            first, _, second = key.partition(" ")
            weights[(first, second) if second else key] = float(weight)
        bias = data["bias"]
        assert isinstance(bias, (int, float))
        return cls(float(bias), weights)

    def probability(self, norm: str) -> float:
        """P(injection) for normalised text."""
        words, markers = _tokens(norm)
        if len(words) < MIN_WORDS:
            return 0.0
        found = _word_features(words)
        weights = self.weights
        total = sum(weights[f] for f in weights.keys() & found)
        z = self.bias + total / math.sqrt(len(found))
        z += sum(weights.get(m, 0.0) for m in markers)
        if z < -30.0:
            return 0.0
        return 1.0 / (1.0 + math.exp(-z))


@cache
def load() -> Model:
    """The shipped model (read once, on first use)."""
    text = resources.files(__package__).joinpath(MODEL_FILE).read_text(encoding="utf-8")
    return Model.from_json(json.loads(text))


def probability(norm: str) -> float:
    """P(injection) of normalised text under the shipped model."""
    return load().probability(norm)
