"""Texts hidden by an encoding or a transform, decoded so the rules and the learned layer read them.

An instruction encoded as ``aWdub3JlIGFsbC...`` passes every phrase rule; decoded, it does not.
The encodings are the ones red-team tools apply (PyRIT's converters, promptfoo's and spikee's
strategies): base64 and base32, hex, binary octets, URL escapes, HTML character references,
``\\u`` escapes, quoted-printable, UUencode, words run together in camelCase, Morse code,
Braille, NATO spelling and acrostics (:mod:`.ciphers`), and transforms of the whole text:
reversed, ROT13, any other Caesar shift, Atbash and Pig Latin. (Text smuggled in invisible
characters is read by :func:`~.normalisation.smuggled`, before they are removed.) Only blobs of
16+ characters that decode to mostly readable UTF-8 count, at most ``MAX_BLOBS`` candidates per
text are tried (decoy blobs cannot cost unbounded work), and the whole-text transforms are
tried only on text whose words are not words: fewer than one in five of its Latin words is a
common English one, and the transform makes at least one in four so. Typographic quotes,
dashes and ellipses (a word processor's or a phone keyboard's) do not make a text non-Latin.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import html
import itertools
import quopri
import re
import urllib.parse
from collections.abc import Callable, Iterable, Iterator
from operator import methodcaller

from .ciphers import acrostic, braille, morse, nato, pig_latin, pig_latin_share, substitutions

__all__ = ["MAX_BLOBS", "blobs"]

MAX_BLOBS = 32
"""Decoded candidates per text."""

_B64_RE = re.compile(r"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/_-]{16,}={0,2}")
_HEX_PREFIX_RE = re.compile(r"(?:\\x|0x|%)([0-9A-Fa-f]{2})")
# The two patterns run on whole texts open with the class of their first character and check
# what precedes it after it: ``re`` then skips to that class in C, where a leading look-behind
# was tried at every character (77 µs against 22 and 15 on a 1,000-character text).
_HEX_SPACED_RE = re.compile(
    r"[0-9A-Fa-f](?<![0-9A-Fa-f].)(?<![0-9A-Fa-f]{2}[ :,-].)[0-9A-Fa-f][ :,-]"
    r"(?:[0-9A-Fa-f]{2}[ :,-]){6,}[0-9A-Fa-f]{2}(?![0-9A-Fa-f])"
)
"""Eight hex pairs or more, each but the last followed by one separator."""
_HEX_RE = re.compile(r"(?<![0-9A-Fa-f])(?:[0-9A-Fa-f]{2}){8,}(?![0-9A-Fa-f])")
_HEX_SEPARATORS_RE = re.compile(r"[ :,-]")
_BINARY_RE = re.compile(r"[01](?<![01].)[01]{7}[ ,]?(?:[01]{8}[ ,]?){5,}")
"""Six octets of binary digits or more, each followed by at most one separator."""
_BASE32_RE = re.compile(r"(?<![A-Z2-7=])[A-Z2-7]{16,}={0,6}")
_URL_ESCAPE_RE = re.compile(r"%[0-9A-Fa-f]{2}")
_UNICODE_ESCAPE_RE = re.compile(r"\\u([0-9A-Fa-f]{4})")
_QUOTED_PRINTABLE_RE = re.compile(r"=[0-9A-F]{2}")
_UU_LINE_RE = re.compile(r"^[!-M][ -`]{11,}$", re.M)
"""A line UUencode could have written: a length character, then its alphabet (no lowercase)."""
_UU_TOKEN_RE = re.compile(r"(?<!\S)[!-M][!-`]{15,}(?!\S)")
"""A long token such a line holds (a zero among its bits is a space, which may split it)."""
_CAMEL_RE = re.compile(r"(?<=[^\sA-Z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_CAMEL_WORD_RE = re.compile(
    r"[^A-Za-z0-9]*(?:[A-Z]?[a-z]+(?:['\u2019][a-z]+)*|[A-Z]+|[0-9]+)[^A-Za-z0-9]*"
)
_CAMEL_TOKEN = 24
"""Words run together in camelCase (promptfoo's ``camelcase`` strategy: ``ignoreAllPrevious...``)
are read apart in a token of this many characters or more, when a word starts at four or more
capitals and nearly every piece is a word."""
_REFERENCE_RE = re.compile(r"&#(?:[xX]([0-9A-Fa-f]{1,6})|([0-9]{1,7}));")
_TYPOGRAPHIC = str.maketrans(
    dict.fromkeys("\u2018\u2019\u201a\u201b", "'")
    | dict.fromkeys("\u201c\u201d\u201e\u201f", '"')
    | {"\u2013": "-", "\u2014": "-", "\u2026": "..."}
)
"""Curly quotes, dashes and the ellipsis as ASCII."""
_TYPOGRAPHIC_MARKS = "".join(map(chr, _TYPOGRAPHIC))
_COMMON_WORDS = (
    "the of and to a in is you that it for on are with as be this was have or at not your"
    " from by all but we can if will an they my me do what so no one which there their"
    " any about would should must now i please instructions previous ignore tell say"
    " print write answer give make new"
)
_COMMON = frozenset(_COMMON_WORDS.split())
"""The most frequent English words (Norvig's counts of the Google corpus) and a few imperatives:
a text with none of them in ten words is not English as written."""


def _printable(data: bytes) -> str | None:
    """``data`` as text if it is mostly readable UTF-8 (a decoded payload worth scoring)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if len(text) < 8:
        return None
    readable = sum(1 for ch in text if ch.isprintable() or ch in "\n\r\t")
    wordy = sum(1 for ch in text if ch.isalpha() or ch == " ")
    if readable < 0.9 * len(text) or wordy < 0.5 * len(text):
        return None
    return text


def _decode_base64(blob: str) -> str | None:
    body = blob.rstrip("=")
    if len(body) % 4 == 1:
        return None
    body = body.replace("-", "+").replace("_", "/")
    try:
        data = base64.b64decode(body + "=" * (-len(body) % 4), validate=True)
    except (binascii.Error, ValueError):
        return None
    return _printable(data)


def _decode_hex(blob: str) -> str | None:
    try:
        return _printable(bytes.fromhex(_HEX_SEPARATORS_RE.sub("", blob)))
    except ValueError:
        return None


def _decode_base32(blob: str) -> str | None:
    body = blob.rstrip("=")
    try:
        data = base64.b32decode(body + "=" * (-len(body) % 8))
    except (binascii.Error, ValueError):
        return None
    return _printable(data)


def _decode_binary(blob: str) -> str | None:
    bits = "".join(ch for ch in blob if ch in "01")
    data = int(bits, 2).to_bytes(len(bits) // 8, "big")
    return _printable(data)


_ENGLISH_SHARE = 0.2
"""A text with at least this share of common English words reads as English as written."""


def _common_share(text: str, words: list[str] | None = None) -> float:
    """The share of ``text``'s words (``words``: them in lower case, if known) that are common
    English words."""
    words = text.lower().split() if words is None else words
    return sum(map(_COMMON.__contains__, words)) / len(words) if words else 0.0


_PIG_LATIN_SHARE = 0.5
"""A text is read back from Pig Latin when at least this share of its words end in ``ay``."""
_Vocabulary = Callable[[], frozenset[str]]
"""What gives the words a decoder may prefer among its readings (called once it needs them)."""

_TRANSFORMS: tuple[Callable[[str], str], ...] = (
    lambda text: text[::-1],
    lambda text: codecs.encode(text, "rot13"),
    lambda text: codecs.encode(text[::-1], "rot13"),
)


def _transformed(
    clean: str, words: list[str] | None = None, known: _Vocabulary | None = None
) -> list[str]:
    """The text reversed, in ROT13 or another letter cipher, if it is Latin text that reads
    far better that way.

    The test reads the first 600 characters: a text that opens in plain English is not a
    transformed one, and a long one costs no more than a short one. A text where one word in
    five or more is a common English one is English; below that, a transform must make at
    least one in four common, and twice as many as the text has. Between one in ten and one
    in five only the reversal is tried: a reversed text keeps ``a`` and turns ``on`` into
    ``no``, a cipher keeps no word. ``words`` are those characters' words in lower case, if the
    caller has them. (The common words counted once each, in C, settle most English texts
    before every word is counted.) A few typographic quotes or dashes in Latin text are read as
    ASCII ones; other non-ASCII text is not tried.
    """
    head = clean[:600]
    typographic = not head.isascii()
    if typographic:
        others = len(head) - len(head.encode("ascii", "ignore"))
        if others > 16 or others != sum(map(head.count, _TYPOGRAPHIC_MARKS)):
            return []
    lowered = head.lower().split() if words is None else words
    if len(lowered) < 3 or len(_COMMON.intersection(lowered)) / len(lowered) >= _ENGLISH_SHARE:
        return []
    share = _common_share(head, lowered)
    if share >= _ENGLISH_SHARE:
        return []
    needed = max(0.25, 2 * share)
    if typographic:
        head = head.translate(_TYPOGRAPHIC)
    for transform in _candidates(head, share, lowered, known):
        if _common_share(transform(head)) >= needed:
            return [transform(clean.translate(_TYPOGRAPHIC) if typographic else clean)]
    return []


def _candidates(
    head: str, share: float, lowered: list[str], known: _Vocabulary | None
) -> Iterator[Callable[[str], str]]:
    """The transforms worth trying on ``head`` (``lowered``: its words in lower case), in
    turn: the reversal, Pig Latin read back where half its words end in ``ay`` (with the
    common words, then those ``known`` gives), and unless a tenth of its words are common
    already, ROT13 and the letter ciphers :mod:`.ciphers` picks for it (worked out only if
    the others fail)."""
    yield _TRANSFORMS[0]
    ays = head.count("ay") + head.count("AY")  # counted in C: most texts stop here
    if ays >= _PIG_LATIN_SHARE * len(lowered) and pig_latin_share(lowered) >= _PIG_LATIN_SHARE:
        vocabulary = frozenset() if known is None else known()
        yield lambda text: pig_latin(text, vocabulary, _COMMON)
    if share < 0.1:
        yield from _TRANSFORMS[1:]
        for table in substitutions(head):
            yield methodcaller("translate", table)


def _unescaped(clean: str) -> list[str]:
    """The text with its URL escapes decoded, when it has several."""
    if clean.count("%") >= 3 and len(_URL_ESCAPE_RE.findall(clean)) >= 3:
        text = urllib.parse.unquote_plus(clean)
        if text != clean:
            return [text]
    return []


def _unicode_unescaped(clean: str) -> list[str]:
    """The text with its ``\\uXXXX`` escapes decoded, when it has six or more."""
    if clean.count("\\u") >= 6 and len(_UNICODE_ESCAPE_RE.findall(clean)) >= 6:
        return [_UNICODE_ESCAPE_RE.sub(lambda m: chr(int(m.group(1), 16)), clean)]
    return []


def _quoted_printable(clean: str) -> list[str]:
    """The text decoded as quoted-printable (``=49=67=6E``), when it has six or more escapes
    (counted when six escapes of ASCII letters, ``=4X`` to ``=7X``, or of spaces may be there:
    PyRIT's ``BinAsciiConverter`` encodes word by word and joins the words with ``=20``)."""
    letters = sum(map(clean.count, ("=4", "=5", "=6", "=7", "=20")))
    if letters >= 6 and len(_QUOTED_PRINTABLE_RE.findall(clean)) >= 6:
        return [quopri.decodestring(clean.encode()).decode("utf-8", "replace")]
    return []


def _uudecoded(clean: str) -> list[str]:
    """The text's UUencoded lines, decoded: each line one or more encoded chunks, each opened
    by its length (``&:6=N;W)E`` is ``ignore``). PyRIT's ``BinAsciiConverter`` encodes word by
    word and joins the chunks with nothing, so the chunks of a line are read as words; a
    ``uuencode`` file's lines are 45 bytes each and read as one stream. A line that does not
    parse to its end (a ``begin 644`` header, prose in capitals) is left out."""
    lines = []
    for match in _UU_LINE_RE.finditer(clean):
        line, at, chunks = match.group().rstrip(), 0, []
        while at < len(line):
            size = (ord(line[at]) - 32) & 0o77
            end = at + 1 + (size + 2) // 3 * 4
            if not 0 < size <= 45 or end > len(line) + 3:  # a chunk's trailing pads may go
                break
            try:
                chunks.append(binascii.a2b_uu(line[at:end]))
            except binascii.Error:
                break
            at = end
        if chunks and at >= len(line):
            lines.append(b" ".join(chunks) if len(chunks) > 1 else chunks[0])
    text = _printable(b"".join(lines)) if lines else None
    return [text] if text is not None else []


def _uncamelled(clean: str, tokens: list[str]) -> list[str]:
    """The text with its camelCased tokens read apart (``ignoreAllPreviousInstructions`` as
    ``ignore All Previous Instructions``, ``IMade`` as ``I Made``): tokens of 24 characters or
    more, split before each capital that follows anything but a capital or a space, and before
    the last of a run of capitals that a lower-case letter follows, where at least four splits
    give pieces of which four in five are words (so base64, whose pieces mix digits into
    letters, stays whole)."""
    if any(map(_camel_cased, [token for token in tokens if len(token) >= _CAMEL_TOKEN])):
        return [_CAMEL_RE.sub(" ", clean)]
    return []


def _camel_cased(token: str) -> bool:
    if token.islower():
        return False
    pieces = _CAMEL_RE.split(token)
    if len(pieces) < 5:
        return False
    return sum(1 for piece in pieces if _CAMEL_WORD_RE.fullmatch(piece)) >= 0.8 * len(pieces)


def _dereferenced(clean: str) -> list[str]:
    """The text with its numeric HTML character references decoded, when three or more of them
    are letters: pages escape quotes and symbols that way, not letters, unless the letters are
    being hidden (``&#x65;&#x76;&#x61;&#x6C;``)."""
    if clean.count("&#") < 3:
        return []
    letters = 0
    for hexadecimal, decimal in _REFERENCE_RE.findall(clean):
        code = int(hexadecimal, 16) if hexadecimal else int(decimal)
        letters += code < 0x110000 and chr(code).isalpha()
        if letters >= 3:
            return [html.unescape(clean)]
    return []


def blobs(
    clean: str, words: list[str] | None = None, known: _Vocabulary | None = None
) -> list[str]:
    """Readable texts hidden in ``clean`` by an encoding or transform, at most ``MAX_BLOBS``.

    Cheap signs come first, in C: a blob is one whitespace-free token of 16+ characters
    (base64, base32, unbroken hex, a UUencoded line), spaced hex or binary needs digits (every
    byte of hex-encoded text has one), URL escapes need ``%``, NATO spelling ``Echo`` (its
    ``e``), an acrostic eight lines. Prose has none of them, and pays for a ``split`` and a
    count of its digits. ``words``: the words of an ASCII ``clean`` in lower case (its normal
    form, split), when the caller has them; their lengths are those of its words. ``known``
    gives the words a reading that is not written (where Pig Latin's moved consonants
    began) may be: the common English ones without it.
    """
    tokens = clean.split() if words is None else words
    digits = _digits(clean)
    found: list[str] = []
    longest = max(map(len, tokens)) if tokens else 0
    if digits >= 8 or longest >= 16:
        split = tokens if words is None else clean.split()
        found += _decoded(clean, split, digits)
        if longest >= _CAMEL_TOKEN:
            found += _uncamelled(clean, split)
    if "%" in clean:
        found += _unescaped(clean)
    if "&#" in clean:
        found += _dereferenced(clean)
    if "\\u" in clean:
        found += _unicode_unescaped(clean)
    if clean.count("=") >= 6:
        found += _quoted_printable(clean)
    if ".-" in clean or "-." in clean:
        found += morse(clean)
    if "\n" in clean:
        found += acrostic(clean)
    if "echo" in clean or "Echo" in clean or "ECHO" in clean:  # e, in any instruction spelled
        found += nato(clean, tokens)
    if not clean.isascii():
        found += braille(clean)
    return found + _transformed(clean, words if len(clean) <= 600 else None, known)


def _digits(clean: str) -> int:
    """How many of ``0``-``9`` ``clean`` holds (in ASCII text, deleted in one C pass)."""
    if clean.isascii():
        return len(clean) - len(clean.encode("ascii").translate(None, b"0123456789"))
    return sum(map(clean.count, "0123456789"))


def _decoded(clean: str, tokens: list[str], digits: int) -> Iterator[str]:
    """What the blobs of ``clean`` (its whitespace-free ``tokens``) decode to."""
    long_tokens = " ".join([token for token in tokens if len(token) >= 16])
    sources: list[Iterable[tuple[str, Callable[[str], str | None]]]] = []
    if long_tokens:
        if _UU_TOKEN_RE.search(long_tokens):
            yield from _uudecoded(clean)
        hexed = _HEX_PREFIX_RE.sub(r"\1", long_tokens) if digits >= 8 else long_tokens
        sources += [
            ((m.group(), _decode_base64) for m in _B64_RE.finditer(long_tokens)),
            ((m.group(), _decode_base32) for m in _BASE32_RE.finditer(long_tokens)),
            ((m.group(), _decode_hex) for m in _HEX_RE.finditer(hexed)),
        ]
    if digits >= 8:
        spaced = _HEX_PREFIX_RE.sub(r"\1", clean)
        sources.append((m.group(), _decode_hex) for m in _HEX_SPACED_RE.finditer(spaced))
        if digits >= 48:
            sources.append((m.group(), _decode_binary) for m in _BINARY_RE.finditer(clean))
    for blob, decode in itertools.islice(itertools.chain(*sources), MAX_BLOBS):
        text = decode(blob)
        if text is not None:
            yield text
