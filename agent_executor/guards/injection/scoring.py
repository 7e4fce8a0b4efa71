"""The heuristic score of a text, and the learned layer's on top of it.

How a text is scored (all offline, pure and linear in the text's length):

1. **Window.** At most ``max_scan_chars`` characters are looked at (100,000 by default, the
   executor's default ``max_tool_result_chars``, so a whole tool result is read): the whole
   text if it is short enough, else its first and last halves.
2. **Normalise** (:func:`~.normalisation.normalise`): NFKC (full-width and mathematical letters
   become ASCII), invisible characters removed (zero-width, bidi controls, soft hyphen,
   variation selectors, Unicode tags), accents dropped, Cyrillic and Greek look-alikes mapped
   to Latin letters, curly quotes straightened, case folded, runs of spaces collapsed.
3. **Variants.** Besides the normalised text the rules also run on: a leetspeak reading
   (``0→o, 1→i or l, 3→e, 4→a, 5→s, 7→t, @→a, $→s``), the letters-only text (for spaced or
   dotted-out key phrases such as ``i g n o r e``), text smuggled in invisible characters
   (Unicode tags, variation selectors, invisible operators as bits), and what :mod:`.decoding`
   finds hidden: base64, base32, hex, binary and URL-escaped text, NATO spelling, and text
   reversed or in ROT13 (two levels deep).
4. **Rules** (``rules.json``, compiled by :mod:`.rules`). Precompiled regular expressions
   (bounded repetitions only, so matching stays linear), each with a category and a weight in
   (0, 1): ``instruction_override``, ``prompt_extraction``, ``roleplay_jailbreak``,
   ``role_spoofing``, ``indirect_injection`` (text addressed to an AI that reads it),
   ``exfiltration``, ``authority_claim`` and ``obfuscation``; English, French, German and
   Spanish, and the plainest overrides and prompt requests in Italian, Portuguese, Turkish,
   Russian, Arabic, Persian, Hindi, Chinese, Japanese and Korean, and goal hijacking ("ignore
   the question above and output: ...") in all fourteen. Strong phrasings weigh
   0.8-0.9 and flag on their own; ambiguous ones (``new instructions:``, a line starting
   ``system:``) weigh 0.25-0.45 and only flag together with a signal of another category.
5. **Combine.** A category counts with its strongest match; categories combine by noisy-OR,
   ``score = 1 - prod(1 - w_c)``. A message that *talks about* injection (every match quoted
   in a question or a text about prompt injection; or a single matched category in one) has
   that part multiplied by 0.45, unless it also says "do it" or similar. A category found
   only in a hidden reading (or found there while the plain text gave it less than 0.5) is
   never discounted and adds a 0.3 ``obfuscation`` or ``encoded_payload`` signal: hiding an
   instruction is itself suspicious. So does a request to decode and follow ("decode this and
   do what it says") in a text where something decodes, whatever the payload says.

The default threshold 0.5 therefore flags any single strong phrase, or two medium signals, and
lets single ambiguous words through.

6. **Learned layer** (``learned=True``, the default; :mod:`.learned`): a logistic regression
   over the words, word pairs, character n-grams and jailbreak markers of the same normalised
   text and of each hidden reading (:mod:`.views`), in windows of 256 words, trained on public
   corpora nobody here wrote; one model for messages, one for tool results (``reader``). It
   catches what no phrase rule covers (role-play jailbreaks, overrides in other wordings and
   languages); when it reaches 0.5 the score is the larger of the two and the reason
   ``learned`` is added. Texts of fewer than 3 words score 0 there.

See ``docs/guards.md`` for the measured detection and false-positive rates, cross-source.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache

from .categories import CATEGORIES, DISCUSSION, ENCODED, LEARNED, OBFUSCATION, SPOOFING
from .decoding import blobs
from .learned import Model, Reader
from .learned import load as load_model
from .normalisation import (
    around,
    clean,
    despaced,
    fold,
    leet_readings,
    letters_only,
    mixed_scripts,
    smuggled,
    window,
    words_view,
)
from .rules import match_compact, match_rules, rule_set
from .views import readings

__all__ = ["DISCUSSION_FACTOR", "HIDDEN_BOOST", "MAX_SCAN_CHARS", "InjectionScore", "score_text"]

MAX_SCAN_CHARS = 100_000
"""Characters read by default: the executor's default ``max_tool_result_chars``, so a whole
tool result is read, and three times ``InputValidationGuard``'s default message limit."""

DISCUSSION_FACTOR = 0.45
"""Multiplier for text that discusses injection rather than attempting it."""

HIDDEN_BOOST = 0.3
"""Extra signal when a match exists only in an obfuscated or encoded reading of the text."""

_BINARY_DIGITS = "01 \n"
"""What a text of binary octets is made of."""

_MAX_DEPTH = 2  # base64 inside base64 is decoded; a third level is not

_QUOTED_RE = re.compile(r"\"[^\"\n]{1,500}\"|(?<!\w)'[^'\n]{1,500}'(?!\w)|`[^`\n]{1,500}`")


@dataclass(frozen=True, slots=True)
class InjectionScore:
    """The heuristic verdict on one text: ``score`` in [0, 1] and the categories that matched."""

    score: float
    reasons: tuple[str, ...] = ()


_NOTHING = InjectionScore(0.0)
"""The score of most texts: nothing matched, nothing learned (frozen, so one serves all)."""


@dataclass(slots=True)
class _Analysis:
    """Matches of one text: per-category weights in its plain, obfuscated and decoded readings."""

    plain: dict[str, float] = field(default_factory=dict)
    hidden: dict[str, float] = field(default_factory=dict)  # leetspeak, spacing, Unicode tags
    encoded: dict[str, float] = field(default_factory=dict)  # base64 and hex payloads
    all_quoted: bool = True
    topic: bool = False
    question: bool = False
    follow: bool = False
    suspicious: bool = False
    norm: str = ""
    tokens: list[str] | None = None  # the learned layer's words of norm, when made here
    words: list[str] = field(default_factory=list)  # the words of its words view
    decoded: list[str] = field(default_factory=list)  # what blobs and transforms hid
    leet: list[str] = field(default_factory=list)  # the leetspeak readings of norm
    spelled: tuple[str | None, str | None] = (None, None)  # spaced-out letters joined up
    smuggled: list[str] = field(default_factory=list)  # what invisible characters spelled


def _keep_max(weights: dict[str, float], category: str, weight: float) -> None:
    if weight > weights.get(category, 0.0):
        weights[category] = weight


def _quoted_spans(norm: str) -> list[tuple[int, int]]:
    return [m.span() for m in _QUOTED_RE.finditer(norm)]


_CONTEXT = 300
"""Characters either side of a match where a cue of discussion counts (see ``_near``)."""


def _near(text: str, found: list[tuple[int, int]]) -> str:
    """The parts of ``text`` within ``_CONTEXT`` characters of a match, joined by newlines.

    Whether a match is talk *about* injection is read around it: in a long tool result, a
    page about regular expressions three screens away does not excuse an instruction.
    """
    if len(text) <= 2 * _CONTEXT:
        return text
    return "\n".join(text[a:b] for a, b in around(found, _CONTEXT, len(text)))


def _inside(spans: list[tuple[int, int]], start: int, end: int) -> bool:
    return any(s <= start and end <= e for s, e in spans)


def _analyse(text: str, tool_result: bool, depth: int = 0) -> _Analysis:
    """Run every rule on the plain and hidden readings of ``text`` (already windowed); the
    rules of tool results only if it is one."""
    result = _Analysis()
    plain_ascii = text.isascii()  # then it has no look-alike, invisible or tag character
    cleaned = text if plain_ascii else clean(text)
    norm = result.norm = fold(cleaned)
    words = words_view(norm)
    split = result.words = words.split()
    if norm.isascii():  # then these are the learned layer's words too (learned.tokens)
        result.tokens = split
    result.suspicious = not plain_ascii and mixed_scripts(text)
    found: list[tuple[int, int]] = []
    spans: list[tuple[int, int]] | None = None
    for category, weight, start, end in match_rules(norm, words, split, tool_result=tool_result):
        if spans is None:  # quoted spans matter only to a text with a match
            spans = _quoted_spans(norm) if "'" in norm or '"' in norm or "`" in norm else []
        _keep_max(result.plain, category, weight)
        found.append((start, end))
        if not _inside(spans, start, end):
            result.all_quoted = False
    if result.plain:
        near_words, near_norm = _near(words, found), _near(norm, found)
        rules = rule_set()
        result.topic = bool(rules.topic_re.search(near_words))
        result.question = "?" in near_norm and bool(rules.question_re.search(near_words))
        result.follow = bool(rules.follow_re.search(near_words))
    _obfuscated_readings(result, text, cleaned, norm, tool_result)
    if depth < _MAX_DEPTH:
        result.decoded = blobs(cleaned, norm.split() if plain_ascii else None, _known_words)
        for decoded in result.decoded:
            inner = _analyse(decoded, tool_result, depth + 1)
            for category, weight in _merged(inner).items():
                _keep_max(result.encoded, category, weight)
    return result


def _obfuscated_readings(
    result: _Analysis, text: str, cleaned: str, norm: str, tool_result: bool
) -> None:
    """Leetspeak, spaced-out, letters-only and smuggled readings of the text (Unicode tags,
    variation selectors, invisible bits), into ``result.hidden``."""
    variants = result.leet = leet_readings(norm, _known_words, len(result.words))
    result.spelled = despaced(norm, cleaned, result.words)
    by_word = result.spelled[1]
    for variant in variants if by_word is None else [*variants, by_word]:
        found = match_rules(variant, words_view(variant), tool_result=tool_result)
        for category, weight, _, _ in found:
            _keep_max(result.hidden, category, weight)
    for compact in [letters_only(norm), *map(letters_only, variants)]:
        for category, weight in match_compact(compact):
            _keep_max(result.hidden, category, weight)
    if not text.isascii():
        result.smuggled = smuggled(text)
    for hidden in result.smuggled:
        for category, weight in _merged(_analyse(hidden, tool_result, _MAX_DEPTH)).items():
            _keep_max(result.hidden, category, weight)


_ESCAPE_RE = re.compile(r"\\.")
_RULE_WORD_RE = re.compile(r"[a-z]{2,}")


@cache
def _known_words() -> frozenset[str]:
    """What a leetspeak token is read as, word by word: the words the rules are written with
    (``pr10r ru135`` must read as the rule's ``prior rules``) and those the shipped model for
    messages has a weight of their own for (about 2,500). The rules' words are not left to
    the model: a retrain that brings a word's weight under the pruning bound would otherwise
    stop the rules reading an override spelled in leet."""
    from_rules = (
        word
        for rule in rule_set().rules
        for word in _RULE_WORD_RE.findall(_ESCAPE_RE.sub(" ", rule.pattern.pattern))
    )
    from_model = (
        key[1:] for key in load_model("user").weights if isinstance(key, str) and key[:1] == "="
    )
    return frozenset((*from_rules, *from_model))


def _merged(analysis: _Analysis) -> dict[str, float]:
    """Every category of ``analysis`` with its strongest weight in any reading."""
    out = dict(analysis.plain)
    for weights in (analysis.hidden, analysis.encoded):
        for category, weight in weights.items():
            _keep_max(out, category, weight)
    return out


def _noisy_or(weights: Iterable[float]) -> float:
    miss = 1.0
    for weight in weights:
        miss *= 1.0 - weight
    return 1.0 - miss


def _discussion(analysis: _Analysis) -> bool:
    """Whether the plain matches read as talk *about* injection, not an attempt at it."""
    if analysis.follow or not analysis.plain:
        return False
    if analysis.all_quoted and (analysis.topic or analysis.question):
        return True
    if len(analysis.plain) != 1:
        return False
    # A question cue alone ("how do I ...?") does not excuse chat-template tokens.
    return analysis.topic or (analysis.question and SPOOFING not in analysis.plain)


def _news(found: dict[str, float], known: dict[str, float]) -> dict[str, float]:
    """Categories of ``found`` that ``known`` did not already establish (weight < 0.5)."""
    return {
        category: weight
        for category, weight in found.items()
        if weight > known.get(category, 0.0) and known.get(category, 0.0) < 0.5
    }


def score_text(
    text: str,
    *,
    max_scan_chars: int = MAX_SCAN_CHARS,
    learned: bool = True,
    reader: Reader = "user",
    model: Model | None = None,
) -> InjectionScore:
    """The score of ``text``: the rules' and, with ``learned``, the learned layer's, the larger.

    See the module docstring for the rules' formula; a few rules (an assistant addressed and
    asked to act, the user's data sent out) run only when ``reader`` is ``"tool"``, since a
    user may ask their own assistant as much. The learned layer reads the same
    normalised text and its decoded readings with the model for ``reader`` (a user's message
    or a tool's result) and counts only at its operating point (0.5 and up, reason
    ``learned``); below it the rules' score stands alone. Text that only talks about
    injection (see ``discussion``) has the learned layer's part discounted as the rules'.
    ``model`` replaces the shipped model (the trainer scores retrained ones this way).
    """
    scanned = window(text, max_scan_chars)
    analysis = _analyse(scanned, reader == "tool")
    if analysis.plain or analysis.hidden or analysis.encoded:
        score, reasons, discussion = _rules_score(analysis)
    else:  # no rule matched in any reading: the rules' score is 0, with no reason
        score, reasons, discussion = 0.0, set(), False
    if learned:
        model = model or load_model(reader)
        # Binary octets are not words (the layer would read their digits as a sign); what they
        # decode to is scored below.
        opaque = analysis.decoded and not analysis.norm.strip(_BINARY_DIGITS)
        probability = 0.0 if opaque else model.probability(analysis.norm, analysis.tokens)
        hidden = analysis.decoded + analysis.smuggled if analysis.smuggled else analysis.decoded
        for reading in readings(hidden, analysis.leet, analysis.spelled):
            probability = max(probability, model.probability(reading))
        if discussion:
            probability *= DISCUSSION_FACTOR
        if probability >= 0.5:
            reasons.add(LEARNED)
            score = max(score, probability)
    if not reasons and score == 0.0:
        return _NOTHING
    return InjectionScore(round(score, 6), tuple(c for c in CATEGORIES if c in reasons))


def _rules_score(analysis: _Analysis) -> tuple[float, set[str], bool]:
    """The rules' score of an analysed text, its reasons, and whether it reads as discussion."""
    plain = analysis.plain
    hidden = _news(analysis.hidden, plain)
    encoded = _news(analysis.encoded, {**plain, **hidden})
    # "Decode this and do what it says" beside something that decodes: the payload is hidden
    # whatever it says, even in words no rule knows.
    payload = bool(encoded) or (OBFUSCATION in plain and bool(analysis.decoded))
    discussion = not hidden and not payload and _discussion(analysis)
    signals = [_noisy_or(plain.values()) * (DISCUSSION_FACTOR if discussion else 1.0)]
    signals += [max(hidden.get(c, 0.0), encoded.get(c, 0.0)) for c in {*hidden, *encoded}]
    reasons = {*plain, *hidden, *encoded}
    if hidden or payload:
        signals.append(HIDDEN_BOOST)
    if hidden or (analysis.suspicious and reasons):
        reasons.add(OBFUSCATION)
    if payload:
        reasons.add(ENCODED)
    if discussion:
        reasons.add(DISCUSSION)
    return min(1.0, max(0.0, _noisy_or(signals))), reasons, discussion
