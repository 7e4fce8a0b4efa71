"""The learned layer of :class:`~agent_executor.guards.injection.InjectionGuard`.

A logistic regression over what a normalised text is made of, in any language and script:

- **words and word pairs** (``\\w+`` runs; Chinese and Japanese, written without spaces, are
  read as overlapping pairs of characters, which play the part of words);
- **character n-grams** of each word (3 to 5 characters, the word padded ``<word>``, as
  fastText does), so an inflected or misspelt form shares most of its weight with the form seen
  in training: ``ignoriere``, ``ignorez``, ``ignora``, ``игнорируй`` all carry ``<ign``;
- a few **structural markers** written from the jailbreak taxonomies (a persona being defined,
  rules waived, two answers asked for, a conversation role spoofed).

Two models ship beside this module, trained by ``tests/data/train_injection_model.py`` from
the corpora listed in ``tests/data/SOURCES.md``: ``weights.json`` for what users send, and
``weights_tools.json`` for tool results, which are longer, more structured and more
imperative than a message and need their own operating point.

Inference is plain Python and linear in the text's length: a word's n-gram weights are summed
once and cached (ordinary text reuses a small vocabulary, so a text costs about one dictionary
lookup per word), word pairs are a set intersection with the weight table, markers run only
where their gate words occur. A word counts once however often it occurs; the sum is divided by
the square root of how many distinct words and pairs the text has, so a long benign text with a
few attack words is not pushed over by its length. Text longer than a window (256 words for
messages, 96 for tool results: :data:`WINDOW_WORDS`) is read in windows overlapping by half
and the highest window wins, so an instruction in the middle of a long tool result weighs
about as it would alone. The shipped bias is shifted so that 0.5 is the
operating point chosen in training.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator, Sequence
from functools import cache
from importlib import import_module, resources
from itertools import pairwise, repeat
from operator import itemgetter
from typing import TYPE_CHECKING, Final, Literal, TypeAlias

from .literal_gate import LiteralGate
from .normalisation import words_view

if TYPE_CHECKING:
    from ._learned_native import Table

__all__ = [
    "MIN_WORDS",
    "MODEL_FILES",
    "NATIVE",
    "SHORT_WORDS",
    "STRUCTURE",
    "WINDOW_WORDS",
    "Model",
    "Reader",
    "load",
    "probability",
    "tokens",
    "training_features",
    "window_features",
    "windows",
]

Reader: TypeAlias = Literal["user", "tool"]
"""Whose text is scored: a message from the user, or a tool's result."""

MODEL_FILES: Final[dict[Reader, str]] = {"user": "weights.json", "tool": "weights_tools.json"}

MIN_WORDS: Final = 3
"""Texts of fewer words score 0: two words say too little in any language."""

SHORT_WORDS: Final = 8
"""Texts of fewer words are held to their own operating point (``Model.short_shift``)."""

WINDOW_WORDS: Final[dict[Reader, int]] = {"user": 256, "tool": 96}
"""Long texts are scored in windows of this many words, a new one every half window. Tool
results get shorter windows: an instruction planted in a long page is a few dozen words."""


def _native_table() -> type[Table] | None:
    """The C table's class, built from ``_learned_native.c`` at install; ``None`` where no
    compiler was found, and Python sums the windows."""
    try:
        module = import_module(f"{__package__}._learned_native")
    except ImportError:
        return None
    table: type[Table] = module.Table
    return table


_NativeTable: Final = _native_table()
NATIVE: Final = _NativeTable is not None
"""Whether the window sums run in C (``_learned_native``), as installs with a compiler do."""

_CACHE_LIMIT = 200_000
_NGRAMS = (3, 4, 5)
_LONG_WORD = 40

_WORD_RE = re.compile(
    "[\\w\u0300-\u036f\u0483-\u0489\u0591-\u05bd\u0610-\u061a\u064b-\u065f\u0670"
    "\u06d6-\u06ed\u0900-\u0dff]+"
)
_PAIRED_RE = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]{2,}")

STRUCTURE: Final[dict[str, tuple[str, str]]] = {
    # Markers written from the jailbreak taxonomy of Shen et al., "Do Anything Now" (CCS 2024)
    # and Wei et al., "Jailbroken" (NeurIPS 2023): what a jailbreak has to say, in any wording.
    # name: (words one of which must be in the text, the pattern run only then). In "policy"
    # and "anything" every alternative opens with \b: searched for in a long text, each took
    # half the time it took with its words alone (docs/benchmarks.md); in "fromnow" it took
    # three times as long, so it has none.
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
        r"\bopenai\b|\banthropic\b|\b(?:content polic\w+|usage polic\w+|ethical guidelines"
        r"|safety (?:filters?|guidelines|protocols|measures|restrictions)"
        r"|as an ai language model)",
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
        r"\b(?:do anything\b|can do anything|anything (?:now|at all|i ask|they want)"
        r"|no matter how (?:\w+ ){0,2}?(?:immoral|unethical|illegal|dangerous|offensive"
        r"|harmful))",
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


def tokens(norm: str) -> list[str]:
    """The words of normalised text; runs of Chinese or Japanese become character pairs.

    In ASCII text the words are those of its words view (``\\w`` there is a letter, a digit
    or ``_``, and the view keeps only those and whitespace), split in C without a regex.
    """
    if norm.isascii():
        return words_view(norm).split()
    words = _WORD_RE.findall(norm)
    if not _PAIRED_RE.search(norm):
        return words
    out: list[str] = []
    for word in words:
        if _PAIRED_RE.search(word) is None:
            out.append(word)
            continue
        for piece in re.split(f"({_PAIRED_RE.pattern})", word):
            if not piece:
                continue
            if _PAIRED_RE.fullmatch(piece):
                out.extend(piece[i : i + 2] for i in range(len(piece) - 1))
            else:
                out.append(piece)
    return out


_MARKER_GATE = LiteralGate([pattern for _, _, pattern in _MARKERS])
"""Which markers' patterns can match a text at all, from the strings they need."""


_MARKER_WORDS: Final = frozenset().union(*(gate for _, gate, _ in _MARKERS))


def _markers(norm: str, present: set[str]) -> list[str]:
    """The structural markers ``norm`` shows: one of a marker's gate words is present and
    its pattern matches (run only if the strings it needs are in the text). A text with no
    gate word of any marker shows none, and is not searched."""
    if _MARKER_WORDS.isdisjoint(present):
        return []
    return [
        name
        for name, gate, pattern in map(_MARKERS.__getitem__, _MARKER_GATE.candidates(norm))
        if not gate.isdisjoint(present) and pattern.search(norm)
    ]


def _grams(slices: tuple[slice, ...]) -> Callable[[str], tuple[str, ...]]:
    """A function that cuts a padded word into the n-grams at ``slices``, in C (``itemgetter``
    of one slice returns a string, not a tuple, hence its own case)."""
    if len(slices) == 1:
        only = slices[0]
        return lambda padded: (padded[only],)
    return itemgetter(*slices) if slices else lambda padded: ()


_GRAMS: Final = tuple(
    _grams(tuple(slice(i, i + n) for n in _NGRAMS for i in range(size - n + 1)))
    for size in range(_LONG_WORD + 3)
)
"""The n-grams of a padded word of each length, cut in :func:`_subwords`' order."""


def _features(word: str) -> tuple[str, tuple[str, ...]]:
    """A word's own feature and its character n-grams (an overlong word has one shared
    feature and no n-grams)."""
    if len(word) > _LONG_WORD:
        return "=#long", ()
    padded = f"<{word}>"
    return f"={word}", _GRAMS[len(padded)](padded)


def _subwords(word: str) -> list[str]:
    """A word's own feature and its character n-grams, as strings."""
    own, grams = _features(word)
    return [own, *grams]


def window_features(words: Sequence[str], markers: Sequence[str]) -> dict[str, float]:
    """The features of one window as the trainer sees them: name → value.

    The same numbers :meth:`Model.logit` adds up: n-grams summed over the distinct words,
    everything divided by the square root of the number of distinct words and pairs; markers
    (found in the whole text) undivided, 1 each.
    """
    distinct = set(words)
    pairs = set(pairwise(words))
    scale = 1.0 / math.sqrt(max(1, len(distinct) + len(pairs)))
    out: dict[str, float] = {}
    for word in distinct:
        for gram in _subwords(word):
            out[gram] = out.get(gram, 0.0) + scale
    for first, second in pairs:
        key = f"{first} {second}"
        out[key] = out.get(key, 0.0) + scale
    out.update(dict.fromkeys(markers, 1.0))
    return out


def training_features(norm: str, size: int) -> list[dict[str, float]]:
    """The features of each window of ``size`` words of normalised text (see
    :func:`window_features`)."""
    words = tokens(norm)
    markers = _markers(norm, set(words))
    return [window_features(part, markers) for part in windows(words, size)]


def windows(words: Sequence[str], size: int) -> Iterator[Sequence[str]]:
    """``words`` whole, or windows of ``size`` words, a new one every half window."""
    if len(words) <= size:
        yield words
        return
    last = len(words) - size
    stride = max(1, size // 2)
    for start in range(0, last + stride, stride):
        yield words[min(start, last) : min(start, last) + size]


class Model:
    """Weights keyed as :func:`training_features` names them (pairs as tuples), and a bias."""

    __slots__ = ("_native", "_word_cache", "bias", "short_shift", "weights", "window")

    def __init__(
        self,
        bias: float,
        weights: dict[str | tuple[str, str], float],
        window: int = 256,
        short_shift: float = 0.0,
        *,
        native: bool = True,
    ) -> None:
        """``native=False`` sums in Python even where the C table is built (the tests compare
        the two). ``weights`` are read once: change them and the C table does not follow."""
        self.bias = bias
        self.weights = weights
        self.window = window
        self.short_shift = short_shift
        self._word_cache: dict[str, float] = {}
        self._native = _NativeTable(weights) if native and _NativeTable is not None else None

    @classmethod
    def from_json(cls, data: dict[str, object], *, native: bool = True) -> Model:
        raw = data["weights"]
        assert isinstance(raw, dict)
        weights: dict[str | tuple[str, str], float] = {}
        for key, weight in raw.items():
            first, _, second = key.partition(" ")
            weights[(first, second) if second else key] = float(weight)
        bias, window, short = data["bias"], data.get("window", 256), data.get("short_shift", 0)
        assert isinstance(bias, (int, float)) and isinstance(window, int)
        assert isinstance(short, (int, float))
        return cls(float(bias), weights, window, float(short), native=native)

    def _weigh(self, words: set[str]) -> dict[str, float]:
        """The summed weight of each word's own feature and n-grams, also cached."""
        get, cache = self.weights.get, self._word_cache
        if len(cache) + len(words) > _CACHE_LIMIT:
            cache.clear()
        weighed = {}
        for word in words:
            own, grams = _features(word)
            # :func:`_subwords`, summed in its order, without a Python step per n-gram.
            weighed[word] = sum(map(get, grams, repeat(0.0)), get(own, 0.0))
        cache.update(weighed)
        return weighed

    def _window(self, words: Sequence[str], distinct: set[str] | None = None) -> float:
        distinct = set(words) if distinct is None else distinct
        pairs = set(pairwise(words))
        # Looked up once and completed from what ``_weigh`` returns, not read back from the
        # cache: weighing new words may clear it (it is full), and a long text scored in a
        # worker thread shares it with the loop's.
        found = list(map(self._word_cache.get, distinct))
        if None in found:
            weighed = self._weigh({w for w, c in zip(distinct, found, strict=True) if c is None})
            found = [weighed[w] if c is None else c for w, c in zip(distinct, found, strict=True)]
        total: float = sum(found)  # type: ignore[arg-type]
        weights = self.weights
        total += sum(map(weights.__getitem__, weights.keys() & pairs))
        return total / math.sqrt(len(distinct) + len(pairs))

    def logit(self, norm: str, words: list[str] | None = None) -> float | None:
        """The decision value of normalised text (0 at the operating point), or ``None`` when
        it has fewer than :data:`MIN_WORDS` words. ``words`` are its :func:`tokens`, when
        the caller has them already."""
        words = tokens(norm) if words is None else words
        if len(words) < MIN_WORDS:
            return None
        distinct = set(words)
        if self._native is not None:
            best = self._native.best(words, self.window)
        elif len(words) <= self.window:
            best = self._window(words, distinct)
        else:
            best = max(self._window(part) for part in windows(words, self.window))
        markers = _markers(norm, distinct)
        z = self.bias + best
        if markers:
            z += sum(self.weights.get(m, 0.0) for m in markers)
        return z - self.short_shift if len(words) < SHORT_WORDS else z

    def probability(self, norm: str, words: list[str] | None = None) -> float:
        """P(injection) for normalised text (``words``: its :func:`tokens`, if known)."""
        z = self.logit(norm, words)
        if z is None or z < -30.0:
            return 0.0
        return 1.0 / (1.0 + math.exp(-z))


@cache
def load(reader: Reader = "user") -> Model:
    """The shipped model for ``reader`` (read once, on first use)."""
    files = resources.files(__package__)
    text = files.joinpath(MODEL_FILES[reader]).read_text(encoding="utf-8")
    return Model.from_json(json.loads(text))


def probability(norm: str, reader: Reader = "user") -> float:
    """P(injection) of normalised text under the shipped model for ``reader``."""
    return load(reader).probability(norm)
