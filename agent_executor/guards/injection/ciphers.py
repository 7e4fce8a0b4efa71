"""Letter ciphers and sign alphabets an instruction can be spelled in: a Caesar shift of any
size, Atbash, Morse code, Braille, the NATO spelling alphabet, and an acrostic (red-team tools
ship each as a converter).

Each has a cheap sign before any work. A Caesar or Atbash text is Latin text whose letters are
not a language's: ``e t a o i n`` make about 40% of the letters of English, German, French,
Spanish or Italian prose, much less once the alphabet is shifted or mirrored; only then are
the shifts whose letter counts come closest to English's tried. Morse code needs
dots and dashes side by side, Braille its own block of Unicode, NATO spelling ``echo`` (the
``e`` any English instruction has) and six code words among the text's words, an acrostic
eight lines or more of one word each.
"""

from __future__ import annotations

import re
from operator import mul
from string import ascii_lowercase, ascii_uppercase

__all__ = ["acrostic", "braille", "morse", "nato", "pig_latin", "pig_latin_share", "substitutions"]

_ATBASH = str.maketrans(
    ascii_lowercase + ascii_uppercase, ascii_lowercase[::-1] + ascii_uppercase[::-1]
)
_SHIFTS = tuple(
    str.maketrans(
        ascii_lowercase + ascii_uppercase,
        ascii_lowercase[n:] + ascii_lowercase[:n] + ascii_uppercase[n:] + ascii_uppercase[:n],
    )
    for n in range(26)
)
_FREQUENT = "etaoin"
_LANGUAGE_SHARE = 0.3
"""``e t a o i n`` make at least this share of a Latin-script language's letters (English 0.45;
German, French, Spanish, Italian about 0.4); a shifted or mirrored text's fall far below."""


_ENGLISH = (
    8.2, 1.5, 2.8, 4.3, 12.7, 2.2, 2.0, 6.1, 7.0, 0.15, 0.77, 4.0, 2.4,
    6.7, 7.5, 1.9, 0.095, 6.0, 6.3, 9.1, 2.8, 0.98, 2.4, 0.15, 2.0, 0.074,
)  # fmt: skip
"""How often each letter is used in English, per cent."""


def substitutions(head: str) -> list[dict[int, int]]:
    """Translation tables worth trying on ``head`` (ASCII text that reads as no English):
    Atbash and the two Caesar shifts whose undoing gives letter counts closest to English's
    (ROT13 is tried elsewhere); none for text whose letters are a language's."""
    lowered = head.lower()
    letters = len(lowered) - lowered.count(" ")
    if letters < 12 or sum(map(lowered.count, _FREQUENT)) >= _LANGUAGE_SHARE * letters:
        return []
    counts = list(map(lowered.count, ascii_lowercase))
    fit = {n: sum(map(mul, counts[n:] + counts[:n], _ENGLISH)) for n in range(1, 26) if n != 13}
    best = sorted(fit, key=fit.__getitem__, reverse=True)[:2]
    return [_ATBASH, *(_SHIFTS[26 - n] for n in best)]


_MORSE_CODE = {
    ".-": "a", "-...": "b", "-.-.": "c", "-..": "d", ".": "e", "..-.": "f", "--.": "g",
    "....": "h", "..": "i", ".---": "j", "-.-": "k", ".-..": "l", "--": "m", "-.": "n",
    "---": "o", ".--.": "p", "--.-": "q", ".-.": "r", "...": "s", "-": "t", "..-": "u",
    "...-": "v", ".--": "w", "-..-": "x", "-.--": "y", "--..": "z", ".----": "1",
    "..---": "2", "...--": "3", "....-": "4", ".....": "5", "-....": "6", "--...": "7",
    "---..": "8", "----.": "9", "-----": "0", ".-.-.-": ".", "--..--": ",", "..--..": "?",
}  # fmt: skip
_MORSE_RUN_RE = re.compile(r"(?:[.\-]{1,6}(?: {1,3}| ?/ ?|\n)){7,}[.\-]{1,6}")
_MORSE_WORD_RE = re.compile(r" ?/ ?| {2,}|\n")


def morse(clean: str) -> list[str]:
    """The runs of Morse code in ``clean`` (eight signs or more; letters apart by a space,
    words by ``/``, two spaces or a new line), read as text."""
    if clean.count("-") < 6:
        return []
    return [
        " ".join(
            "".join(_MORSE_CODE.get(sign, "") for sign in word.split())
            for word in _MORSE_WORD_RE.split(run)
        )
        for run in _MORSE_RUN_RE.findall(clean)
    ]


_BRAILLE_DOTS = {
    "a": 0x01, "b": 0x03, "c": 0x09, "d": 0x19, "e": 0x11, "f": 0x0B, "g": 0x1B, "h": 0x13,
    "i": 0x0A, "j": 0x1A, "k": 0x05, "l": 0x07, "m": 0x0D, "n": 0x1D, "o": 0x15, "p": 0x0F,
    "q": 0x1F, "r": 0x17, "s": 0x0E, "t": 0x1E, "u": 0x25, "v": 0x27, "w": 0x3A, "x": 0x2D,
    "y": 0x3D, "z": 0x35, ",": 0x02, ".": 0x32, "!": 0x16, "?": 0x26, "'": 0x04, " ": 0x00,
}  # fmt: skip
_BRAILLE = str.maketrans(
    {chr(0x2800 + dots): sign for sign, dots in _BRAILLE_DOTS.items()}
    | dict.fromkeys(map(chr, (0x2820, 0x283C)))  # the capital and number signs
)
_BRAILLE_RUN_RE = re.compile("[\u2800-\u28ff][\u2800-\u28ff \n]{6,}")


def braille(clean: str) -> list[str]:
    """The runs of Braille cells in ``clean`` (seven or more), read as grade 1 English
    Braille: a cell per letter."""
    return [run.translate(_BRAILLE) for run in _BRAILLE_RUN_RE.findall(clean)]


_NATO = {
    "alfa": "a", "alpha": "a", "bravo": "b", "charlie": "c", "delta": "d", "echo": "e",
    "foxtrot": "f", "golf": "g", "hotel": "h", "india": "i", "juliett": "j", "juliet": "j",
    "kilo": "k", "lima": "l", "mike": "m", "november": "n", "oscar": "o", "papa": "p",
    "quebec": "q", "romeo": "r", "sierra": "s", "tango": "t", "uniform": "u", "victor": "v",
    "whiskey": "w", "whisky": "w", "xray": "x", "x-ray": "x", "yankee": "y", "zulu": "z",
}  # fmt: skip
_NATO_WORDS = frozenset(form for word in _NATO for form in (word, word.title(), word.upper()))
"""The code words in the cases a text spells them."""
_NATO_RUN = 6
_NATO_ALTERNATIVES = "|".join(sorted(_NATO, key=len, reverse=True))
_NATO_SEPARATOR = r"(?:[^a-z<]|<space>)+"
_NATO_RUN_RE = re.compile(
    rf"(?<![a-z])(?:(?:{_NATO_ALTERNATIVES}){_NATO_SEPARATOR}){{{_NATO_RUN - 1},}}"
    rf"(?:{_NATO_ALTERNATIVES})(?![a-z])",
    re.IGNORECASE,
)
_NATO_TOKEN_RE = re.compile(rf"{_NATO_ALTERNATIVES}|<space>|/|\||\n", re.IGNORECASE)


def nato(clean: str, words: list[str]) -> list[str]:
    """The runs of six NATO code words or more in ``clean`` (``words``: its words), read as the
    letters they spell: words apart by ``<space>`` (PyRIT's ``NatoConverter``), ``/``, ``|`` or
    a new line; digits and punctuation between code words are dropped. A text with fewer than
    six code words among its words ("the hotel by the golf course") is not searched."""
    if sum(map(_NATO_WORDS.__contains__, words)) < _NATO_RUN:
        return []
    return [
        "".join(
            " " if token[0] in "</|\n" else _NATO[token.lower()]
            for token in _NATO_TOKEN_RE.findall(run)
        )
        for run in _NATO_RUN_RE.findall(clean)
    ]


_ACROSTIC_LINES = 8
_ACROSTIC_WORD = 24
_ACROSTIC_SPACES = frozenset("\u2014\u2013-_/|")
"""A line of only one of these is a space between the acrostic's words."""


def acrostic(clean: str) -> list[str]:
    """What the first characters of a list's lines spell, read top to bottom (PyRIT's
    ``AcrosticConverter``: ``Harbor / Island / — / Temple ...`` is ``HI T...``). A run of at
    least eight lines of one short word each is read, in a text whose lines are 24 characters
    long or less on average (the instruction above the list included). A line of a dash alone
    is a space, ``␠`` with a code point another whitespace character. What they spell is left
    to the rules and the learned layer, which a shopping list's initials do not trouble."""
    lines = clean.count("\n")
    if lines < _ACROSTIC_LINES or lines * _ACROSTIC_WORD < len(clean):  # prose's lines are long
        return []
    out = []
    run: list[str] = []
    for line in [*clean.split("\n"), ""]:
        word = line.strip()
        if word and len(word) <= _ACROSTIC_WORD and " " not in word:
            run.append(word)
            continue
        if len(run) >= _ACROSTIC_LINES:
            out.append("".join(map(_initial, run)))
        run = []
    return out


def _initial(word: str) -> str:
    if set(word) <= _ACROSTIC_SPACES:
        return " "
    if word[0] == "\u2420":
        try:
            code = chr(int(word[1:], 16))
        except (OverflowError, ValueError):
            return word[0]
        return code if code.isspace() else word[0]
    return word[0]


_PIG_WORD_RE = re.compile(r"[A-Za-z0-9]+")
_PUNCTUATION = ".,;:!?\"')]}"
_VOWELS = "aeiou"
_CONSONANTS = "bcdfghjklmnpqrstvwxyz"


def pig_latin_share(words: list[str]) -> float:
    """The share of ``words`` (in lower case) that end in ``ay``, as nearly every word does in
    Pig Latin (``ignoreway allway eviouspray``) and few do in any language."""
    if not words:
        return 0.0
    ends = (word.rstrip(_PUNCTUATION) for word in words)
    return sum(1 for word in ends if len(word) > 3 and word.endswith("ay")) / len(words)


def pig_latin(text: str, known: frozenset[str], common: frozenset[str] = frozenset()) -> str:
    """``text`` read back from Pig Latin, word by word, in lower case (promptfoo's ``piglatin``
    strategy: a word that starts with a vowel gains ``way``; any other has the consonants
    before its first vowel moved to its end, then ``ay``). Where the moved consonants begin is
    not written (``eviouspray`` is ``previous``, not ``sprevious``): the first reading that
    is a ``common`` word is taken, else the first that is a ``known`` one, in this order: the
    word before ``way`` (``allway``), then one consonant moved back, two, and so on
    (``owhay`` is ``how`` before ``who``). ``common`` goes first because ``known`` is larger
    and holds words of other languages: ``ethay`` is ``the``, not Dutch ``het``. With no
    known reading, the first is taken: most English words start with a vowel or with one
    consonant. Words that start with a consonant and end in ``ay`` are English already
    (``today``) and stay, but for those with no vowel but ``y`` (``myay`` is ``my``)."""
    return _PIG_WORD_RE.sub(lambda match: _unpigged(match.group(), known, common), text)


def _unpigged(word: str, known: frozenset[str], common: frozenset[str]) -> str:
    lower = word.lower()
    if len(lower) < 3 or not lower.endswith("ay"):
        return word
    stem = lower[:-2]
    if lower[0] not in _VOWELS:  # a word with no vowel but y (``myay``) only had ``ay`` added
        return stem if "y" in stem and not stem.strip(_CONSONANTS) else word
    moved = len(stem) - len(stem.rstrip(_CONSONANTS))
    readings = [stem[-k:] + stem[:-k] for k in range(1, moved + 1)]
    if lower.endswith("way"):  # a word that started with a vowel, or with a w
        readings.insert(0, lower[:-3])
    for vocabulary in (common, known):
        for reading in readings:
            if reading in vocabulary:
                return reading
    return readings[0] if readings else word  # ``ideaay`` was not written by the strategy
