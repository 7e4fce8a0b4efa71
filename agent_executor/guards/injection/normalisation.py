"""What the injection rules read: the scanned window, the normal form and the hidden readings.

Attackers spell instructions so that a plain regex misses them: full-width or mathematical
letters, Cyrillic look-alikes, zero-width characters inside words, leetspeak, letters spaced
or dotted out, text smuggled in invisible Unicode tag characters. Everything here maps such
spellings back to plain lower-case Latin text, so that one rule covers them all.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

__all__ = [
    "LEET_I",
    "LEET_L",
    "around",
    "clean",
    "deleet",
    "despaced",
    "fold",
    "leet_readings",
    "letters_only",
    "mixed_scripts",
    "normalise",
    "smuggled",
    "window",
    "words_view",
]

# Characters that render as nothing: zero-width, bidi controls, soft hyphen, joiners, variation
# selectors, Hangul fillers, Unicode tags. Removed before matching.
_INVISIBLE_RE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\U000e0000-\U000e007f\U000e0100-\U000e01ef]"
)
_SMUGGLED_RE = re.compile(
    "[\U000e0020-\U000e007e]+|[\ufe00-\ufe0f\U000e0100-\U000e01ef]{8,}|[\u2062\u2064]{64,}"
)
"""Tag characters, eight variation selectors or more, 64 invisible operators or more."""
_SMUGGLING_SIGN_RE = re.compile("[\u2062\u2064\ufe00-\ufe0f\U000e0020-\U000e01ef]")
"""One of their characters: a single class, which ``re`` scans for faster than the runs."""
_BIT_DIGITS = str.maketrans("\u2062\u2064", "01")
_MARKS_RE = re.compile("[\u0300-\u036f\u0483-\u0489\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff]")
_LOOKALIKE = "\u0370-\u03ff\u0400-\u04ff\u0500-\u052f"
# A Latin letter next to a Greek/Cyrillic one, or an invisible character inside a word.
_IN_WORD_HIDDEN = "\u00ad\u200b-\u200d\u2060\ufeff"
"""Invisible characters found inside words: soft hyphen, zero-width spaces and joiners."""
_MIXED_RE = re.compile(
    f"[A-Za-z][{_LOOKALIKE}]|[{_LOOKALIKE}][A-Za-z]|[A-Za-z][{_IN_WORD_HIDDEN}]+[A-Za-z]"
)
_CONFUSABLES = str.maketrans(
    {
        # Cyrillic
        "а": "a", "в": "b", "е": "e", "ё": "e", "з": "3", "і": "i", "ї": "i", "ј": "j",
        "к": "k", "м": "m", "н": "h", "о": "o", "р": "p", "с": "c", "т": "t", "у": "y",
        "х": "x", "ѕ": "s", "ԁ": "d", "һ": "h", "ӏ": "l", "ԛ": "q", "ԝ": "w", "ь": "b",
        "А": "A", "В": "B", "Е": "E", "К": "K", "М": "M", "Н": "H", "О": "O", "Р": "P",
        "С": "C", "Т": "T", "Х": "X", "У": "Y", "І": "I", "Ј": "J", "Ѕ": "S",
        # Greek
        "α": "a", "β": "b", "γ": "y", "ε": "e", "ι": "i", "κ": "k", "ν": "v", "ο": "o",
        "ρ": "p", "τ": "t", "υ": "u", "χ": "x", "ϲ": "c", "ϳ": "j",
        "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M",
        "Ν": "N", "Ο": "O", "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X",
        # Latin and Armenian look-alikes
        "ı": "i", "ɑ": "a", "ɡ": "g", "ɩ": "i", "օ": "o", "ս": "u", "հ": "h",
        # quotes, so that quoted spans are found whatever the keyboard
        "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'",
        "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u00ab": '"',
        "\u00bb": '"', "\u2033": '"',
    }
    # Letters drawn as emoji that NFKC leaves alone: negative circled (U+1F150), negative
    # squared (U+1F170), regional indicators (U+1F1E6). PyRIT's EmojiConverter uses the first
    # two and the squared letters (U+1F130), which NFKC reads already.
    | {chr(base + n): chr(ord("a") + n) for base in (0x1F150, 0x1F170, 0x1F1E6) for n in range(26)}
)  # fmt: skip
_CONFUSED = {chr(code): str(latin) for code, latin in _CONFUSABLES.items()}


def _ranges(chars: list[str]) -> str:
    """A character class's ranges holding exactly ``chars``: neighbours with nothing between
    them share one."""
    spans: list[list[int]] = []
    for code in sorted(map(ord, chars)):
        if spans and code == spans[-1][1] + 1:
            spans[-1][1] = code
        else:
            spans.append([code, code])
    return "".join(re.escape(chr(a)) + ("-" + re.escape(chr(b)) if b > a else "") for a, b in spans)


_CONFUSABLES_WIDE = {code: code for code in range(0x530)} | _CONFUSABLES
_SCRIPTS_RE = re.compile(f"[{_LOOKALIKE}]")
_OTHER_CONFUSED_RE = re.compile(f"[{_ranges([c for c in _CONFUSED if not _SCRIPTS_RE.match(c)])}]")
"""The look-alikes outside Greek and Cyrillic, in a class of a few ranges: ``re`` tests such a
class quickly, and one of two hundred scattered characters slowly."""
_MIXED_HINT_RE = re.compile(f"[{_LOOKALIKE}{_IN_WORD_HIDDEN}]")
"""A character without which ``_MIXED_RE`` cannot match."""
_WIDE_RE = re.compile("[\u3000\uff01-\uff5e]")
_NARROW = {"\u3000": " "} | {chr(code): chr(code - 0xFEE0) for code in range(0xFF01, 0xFF5F)}
_PUNCT_RE = re.compile(r"[^\w\n ]")
_MIXED_TOKEN_RE = re.compile(
    r"(?<![a-z0-9@$!|])(?![a-z0-9@$!|]*[269])"
    r"[a-z0-9@$!|]*?(?:[a-z][0-9@$!|]|[0-9@$!|][a-z])[a-z0-9@$!|]*"
)
"""A token (a run of letters and leet characters) that mixes both: it has a letter beside a
leet character somewhere, so one regex finds it and plain words cost no Python call. A token
holding a digit no leetspeak table reads (2, 6, 9) is left alone: its reading would still hold
that digit, so it is no word in any reading, and such tokens are mostly identifiers (a run id,
a hash, an order number), whose reading would cost a second pass over the whole text."""
_LEET_HINT_RE = re.compile(r"[0134578@$|!](?:(?<=[a-z].)|(?<!!)(?=[a-z]))")
"""A letter before a leet character, or a leet character other than ``!`` before a letter.
Written to start with the leet characters, so that ``re`` skips to them in C instead of
trying two alternatives at every position (a tenth of the cost on ordinary text)."""
LEET_I = str.maketrans("0134578@$!|", "oieastbasil")
"""Leetspeak read with ``1`` and ``|`` as ``i``."""
LEET_L = str.maketrans("0134578@$!|", "oleastbasil")
"""Leetspeak read with ``1`` and ``|`` as ``l``."""
_NON_LETTERS_RE = re.compile(r"[^a-z]+")
_NON_LETTER_BYTES = bytes(code for code in range(256) if not 97 <= code <= 122)
_ASCII_PUNCT = bytes(
    code if chr(code).isalnum() or chr(code) in "_\n " or code > 127 else 32 for code in range(256)
)


def window(text: str, limit: int) -> str:
    """At most ``limit`` characters: the text, or its head and tail joined by a newline."""
    if len(text) <= limit:
        return text
    head = limit // 2
    tail = limit - head - 1
    return text[:head] + "\n" + (text[-tail:] if tail > 0 else "")


def clean(text: str) -> str:
    """NFKC with invisible characters removed; case and accents kept (for decoding blobs)."""
    if text.isascii():
        return text
    if not unicodedata.is_normalized("NFKC", text):
        text = unicodedata.normalize("NFKC", _narrowed(text))
    return _INVISIBLE_RE.sub("", text)


def _narrowed(text: str) -> str:
    """Full-width ASCII forms and the ideographic space as their NFKC forms, ahead of NFKC.

    ``unicodedata`` normalises a text that is already in normal form after a quick check (3
    µs per 1,000 characters), but one character that is not sends the whole text the slow
    way: Chinese or Japanese text, whose commas and exclamation marks are full-width, took
    about 200 µs per 1,000 characters. Each of these characters decomposes to one ASCII character,
    so replacing it first leaves every text's NFKC unchanged."""
    return _replaced(text, _WIDE_RE, _NARROW)


def fold(clean: str) -> str:
    """Accents dropped, look-alikes mapped to Latin, case folded, spaces collapsed."""
    if not clean.isascii():
        # Case is folded before look-alikes are mapped, so that a capital with no Latin twin
        # (``З``) reads as its small letter does (``з`` → ``3``).
        decomposed = _MARKS_RE.sub("", unicodedata.normalize("NFKD", clean))
        folded = _unconfused(decomposed.casefold())
    else:
        folded = clean.casefold()
    return _collapsed(folded)


def _unconfused(text: str) -> str:
    """``text.translate(_CONFUSABLES)``, faster. ``translate`` looks every character up in
    the table, and a character not in it costs an exception inside CPython: 130 µs per 1,000
    characters of English with one curly quote. A text with Greek or Cyrillic letters is
    translated with a table that also holds every other character of those scripts and of
    ASCII, as itself (two thirds of the time); in any other, the few look-alikes (quotes,
    ``ı``, letters drawn as emoji) are found by a class of a few ranges and each replaced in
    one pass (a quarter)."""
    if text.isascii():
        return text
    if _SCRIPTS_RE.search(text):
        return text.translate(_CONFUSABLES_WIDE)
    return _replaced(text, _OTHER_CONFUSED_RE, _CONFUSED)


def _replaced(text: str, found: re.Pattern[str], table: dict[str, str]) -> str:
    """``text`` with each character ``found`` finds replaced as ``table`` says, one pass per
    distinct character (a text holds few of them)."""
    for char in set(found.findall(text)):
        text = text.replace(char, table[char])
    return text


def _collapsed(text: str) -> str:
    """Each run of whitespace as one newline if it holds one, else as one space; none at
    either end. ``str.split`` reads whitespace as ``\\s`` does, and does it in C: a regex
    substitution cost a few hundred instructions per character."""
    if "\n" not in text:
        return " ".join(text.split())
    return "\n".join(filter(None, map(" ".join, map(str.split, text.split("\n")))))


def normalise(text: str) -> str:
    """The canonical form the rules match (see :mod:`.scoring`, step 2)."""
    return fold(clean(text))


def words_view(norm: str) -> str:
    """Normalised text with punctuation turned into spaces: what the word rules read."""
    if norm.isascii():
        return norm.encode("ascii").translate(_ASCII_PUNCT).decode("ascii")
    return _PUNCT_RE.sub(" ", norm)


def mixed_scripts(text: str) -> bool:
    """Whether ``text`` mixes Latin with Greek or Cyrillic letters, or hides characters in
    words: a sign that look-alikes were used on purpose."""
    if text.isascii() or not _MIXED_HINT_RE.search(text):  # one class: a tenth of the cost
        return False
    return bool(_MIXED_RE.search(text))


def deleet(text: str, table: dict[int, int]) -> str:
    """Leetspeak read as letters, only in tokens that mix letters and leet characters."""
    return _MIXED_TOKEN_RE.sub(lambda match: match.group().translate(table), text)


_LEET_MARGIN = 200
"""Characters kept around a leet token in a long text's reading: more than any rule spans."""


def leet_readings(
    norm: str, known: Callable[[], frozenset[str]] | None = None, words: int = 0
) -> list[str]:
    """The leetspeak readings of normalised text that differ from it (``1`` as i, then as l;
    then, in a text in leetspeak throughout, word by word against the words ``known()``
    returns, asked only then: see :func:`_by_word`; ``words``: how many the text has).

    A long text is read only around its leet tokens (``_LEET_MARGIN`` characters either side,
    the pieces joined by newlines): an ``mp3`` or ``h1`` in a long page no longer doubles the
    rules' work, and every match a leet token takes part in still lies inside a piece.
    """
    if not _LEET_HINT_RE.search(norm):
        return []
    leet = _mixed_tokens(norm)
    if not leet:
        return []
    if len(norm) <= 4 * _LEET_MARGIN:
        regions = [(0, len(norm))]
    else:
        regions = [
            (_word_start(norm, a), _word_end(norm, b))
            for a, b in around(leet, _LEET_MARGIN, len(norm))
        ]
    out: list[str] = []
    for table in (LEET_I, LEET_L):
        read = _read_tokens(norm, leet, table)
        if read != norm:
            joined = "\n".join(read[start:end] for start, end in regions)
            if joined not in out:  # without a 1 or a |, both tables read the same
                out.append(joined)
    if known is not None and len(leet) >= max(3, -(-words // 4)):
        by_word = _by_word(norm, known())
        if by_word not in out:
            out.append(by_word)
    return out


_LEET_PAIR_RE = re.compile(r"[0-9@$!|](?:(?<=[a-z].)|(?=[a-z]))")
"""A leet character beside a letter (written to start with the leet characters, so that ``re``
skips to them in C)."""
_NOT_LEET_RE = re.compile(r"[^a-z0-9@$!|]")
_LEET_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789@$!|")
_UNREAD_DIGITS = frozenset("269")


def _mixed_tokens(norm: str) -> list[tuple[int, int]]:
    """The spans of ``_MIXED_TOKEN_RE``'s matches in ``norm``, found from their letter-and-leet
    pairs: that regex tries its look-ahead at every word (about 100 µs for a 1,000-character
    text that has one); the pairs are few, and each one's token is read off around it (a
    fifth of that)."""
    spans: list[tuple[int, int]] = []
    end = 0
    for pair in _LEET_PAIR_RE.finditer(norm):
        start = pair.start()
        if start < end:
            continue  # a pair of a token already read
        while start and norm[start - 1] in _LEET_CHARS:
            start -= 1
        after = _NOT_LEET_RE.search(norm, pair.start())
        end = len(norm) if after is None else after.start()
        if _UNREAD_DIGITS.isdisjoint(norm[start:end]):
            spans.append((start, end))
    return spans


_LEET_WORD_RE = re.compile(r"(?<![a-z0-9@$!|])[a-z0-9@$!|]+(?![a-z0-9@$!|])")
_LEET_DIGITS = frozenset("0134578")


def _by_word(norm: str, known: frozenset[str]) -> str:
    """A text in leetspeak throughout (three tokens or more, and a quarter of its words, mix
    letters and leet characters) read word by word against ``known`` words: each ``1`` read as
    ``i`` or as ``l``, whichever makes a known word (``pr10r ru135`` reads ``prior rules``),
    and a token of leet digits alone read as the known word it spells (``411`` as ``all``,
    ``70`` as ``to``)."""

    def read(match: re.Match[str]) -> str:
        token = match.group()
        as_i, as_l = token.translate(LEET_I), token.translate(LEET_L)
        if token.isdigit() and not _LEET_DIGITS.issuperset(token):
            return token
        if as_i in known:
            return as_i
        if as_l in known:
            return as_l
        return token if token.isdigit() else as_i

    return _LEET_WORD_RE.sub(read, norm)


def _read_tokens(norm: str, spans: list[tuple[int, int]], table: dict[int, int]) -> str:
    """``norm`` with the tokens at ``spans`` read through ``table``: what :func:`deleet`
    gives, from tokens found once for both tables. (A token cut out of a long text keeps its
    offsets: every reading maps one character to one.)"""
    parts: list[str] = []
    last = 0
    for start, end in spans:
        parts += (norm[last:start], norm[start:end].translate(table))
        last = end
    parts.append(norm[last:])
    return "".join(parts)


def around(spans: list[tuple[int, int]], margin: int, size: int) -> list[tuple[int, int]]:
    """``spans`` widened by ``margin`` on each side within ``[0, size]``, overlaps merged, in order.

    The parts of a long text worth a second look: around its leet tokens (here), around a rule's
    matches (:mod:`.scoring`, for the cues of discussion).
    """
    merged: list[list[int]] = []
    for start, end in sorted(spans):
        start, end = max(0, start - margin), min(size, end + margin)
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(start, end) for start, end in merged]


def _word_start(text: str, at: int) -> int:
    """``at`` moved back to the start of the word it falls in."""
    return 0 if at == 0 else text.rfind(" ", 0, at) + 1


def _word_end(text: str, at: int) -> int:
    """``at`` moved on to the end of the word it falls in."""
    if at >= len(text):
        return len(text)
    found = text.find(" ", at)
    return len(text) if found < 0 else found


_SINGLES_RE = re.compile(r"(?<!\w)\w(?:[\W_]{1,3}\w(?!\w)){5,}")
_SEPARATORS_RE = re.compile(r"[\W_]+")


def despaced(norm: str, cleaned: str, words: list[str]) -> tuple[str | None, str | None]:
    """``i g n o r e   a l l``, ``i-g-n-o-r-e a-l-l`` or one letter per line, read two ways:
    its letters joined up whole (``ignoreall``, normalised text) and word by word (``ignore
    all``, from ``cleaned``, then folded); ``None`` for a reading that changes nothing.

    Word by word, a run drops the separator it uses most and reads any other (a wider gap, a
    space between dashed words) as a word boundary, so the rules can match its words;
    ``i-g-n-o-r-e-a-l-l`` has none to read. Joined whole, a text spelled out letter by letter
    is itself a sign the learned layer knows. The regex runs only when cheap counts allow it:
    six one-letter words, or a word of eleven characters or more (``i-g-n-o-r-e`` has no
    space); and, in a text without ``_`` (the only word character a separator can hold), six
    one-character ``words`` of its words view in a row, where each letter it joins is one
    (six anywhere, as before, let the regex run on four in five 1,000-character texts: an
    ``a``, an ``I`` and the ``s`` of ``it's`` are enough).
    """
    if "_" not in norm and not _six_singles(words):
        return None, None
    lengths = list(map(len, norm.split()))
    if lengths.count(1) < 6 and max(lengths, default=0) < 11:
        return None, None
    if not _SINGLES_RE.search(norm):
        return None, None
    whole = _SINGLES_RE.sub(lambda m: _SEPARATORS_RE.sub("", m.group()), norm)
    by_word = fold(_SINGLES_RE.sub(_joined, cleaned))
    return (None if whole == norm else whole), (None if by_word in (norm, whole) else by_word)


_SIX_SINGLES = b"\x01" * 6


def _six_singles(words: list[str]) -> bool:
    """Whether six one-character words come one after another in ``words`` (or a word is too
    long to tell: it is then left to the regex)."""
    try:
        return _SIX_SINGLES in bytes(map(len, words))
    except ValueError:  # a word of 256 characters or more
        return True


def _joined(run: re.Match[str]) -> str:
    """One run of single letters, its usual separator dropped and any other read as a space."""
    separators = _SEPARATORS_RE.findall(run.group())
    usual = max(separators, key=separators.count)
    return _SEPARATORS_RE.sub(lambda gap: "" if gap.group() == usual else " ", run.group())


def letters_only(norm: str) -> str:
    """Only the letters of normalised text: ``i g n o r e`` and ``i.g.n.o.r.e`` read ``ignore``."""
    if norm.isascii():
        return norm.encode("ascii").translate(None, _NON_LETTER_BYTES).decode("ascii")
    return _NON_LETTERS_RE.sub("", norm)


def smuggled(text: str) -> list[str]:
    """The texts hidden in invisible characters inside ``text`` (removed from its normal form):
    spelled in Unicode tag characters (``U+E0049`` for ``I``), or bytes written as variation
    selectors (``U+FE00``-``U+FE0F`` for 0-15, ``U+E0100``-``U+E01EF`` for 16-255) or as
    invisible operators, a bit each (``U+2062`` invisible times for 0, ``U+2064`` invisible
    plus for 1). PyRIT ships all three (its ASCII, variation-selector and "sneaky bits"
    smugglers); none of these characters has a use in ordinary text that a run of eight or more
    would serve."""
    if text.isascii() or not _SMUGGLING_SIGN_RE.search(text):
        return []
    out = []
    for run in _SMUGGLED_RE.findall(text):
        if run[0] in "\u2062\u2064":
            bits = run.translate(_BIT_DIGITS)
            data = bytes(int(bits[i : i + 8], 2) for i in range(0, len(bits) - 7, 8))
        elif "\U000e0020" <= run[0] <= "\U000e007e":  # tags: ASCII plus 0xE0000
            data = bytes(ord(ch) - 0xE0000 for ch in run)
        else:  # variation selectors: 0-15, then 16-255
            data = bytes(ord(ch) - (0xFE00 if ch < "\ufe10" else 0xE0100 - 16) for ch in run)
        out.append(data.decode("utf-8", "replace"))
    return out
