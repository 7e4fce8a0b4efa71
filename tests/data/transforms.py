"""Encodings and transforms red-team tools put an attack through, to test the guard's decoding.

``CORPUS_TRANSFORMS`` are the ten ``collect_direct.py`` applies to a seeded quarter of each
source's short attacks (the ``encoded/...`` rows of ``injection_direct.jsonl.gz``; changing one
changes the corpus). ``TRANSFORMS`` adds the other encodings the guard decodes: each comment
names a public tool that ships the transform, or, where none is named, the standard it follows;
``benchmarks/injection_transforms.py`` and
``tests/test_injection_transforms.py`` put public attacks through every one.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import string
import urllib.parse
from collections.abc import Callable

# promptfoo's leetspeak strategy map (src/redteam/strategies/leetspeak.ts).
LEET = str.maketrans(
    {
        "a": "4",
        "e": "3",
        "i": "1",
        "o": "0",
        "s": "5",
        "t": "7",
        "l": "1",
        "A": "4",
        "E": "3",
        "I": "1",
        "O": "0",
        "S": "5",
        "T": "7",
        "L": "1",
    }
)


def _binary(text: str) -> str:
    return " ".join(f"{b:08b}" for b in text.encode())


CORPUS_TRANSFORMS: dict[str, Callable[[str], str]] = {
    "reverse": lambda t: t[::-1],  # PyRIT FlipConverter
    "rot13": lambda t: codecs.encode(t, "rot13"),  # PyRIT ROT13Converter, promptfoo rot13
    "base64": lambda t: base64.b64encode(t.encode()).decode(),  # PyRIT Base64Converter, promptfoo
    "base32": lambda t: base64.b32encode(t.encode()).decode(),
    "hex": lambda t: " ".join(f"{b:02X}" for b in t.encode()),  # promptfoo hex
    "binary": _binary,  # PyRIT BinaryConverter (8 bits)
    "url": lambda t: urllib.parse.quote(t),  # PyRIT UrlConverter
    "leetspeak": lambda t: t.translate(LEET),  # promptfoo leetspeak, PyRIT LeetspeakConverter
    "spaced": lambda t: " ".join(t),  # PyRIT CharacterSpaceConverter, spikee spacing
    "zero-width": lambda t: "\u200b".join(t),  # PyRIT ZeroWidthConverter
}


def _caesar(shift: int) -> Callable[[str], str]:
    low = string.ascii_lowercase
    moved = low[shift:] + low[:shift]
    table = str.maketrans(low + low.upper(), moved + moved.upper())
    return lambda text: text.translate(table)


_ATBASH = str.maketrans(
    string.ascii_lowercase + string.ascii_uppercase,
    string.ascii_lowercase[::-1] + string.ascii_uppercase[::-1],
)
# International Morse code (ITU-R M.1677-1), letters and digits.
_MORSE = {
    "a": ".-", "b": "-...", "c": "-.-.", "d": "-..", "e": ".", "f": "..-.", "g": "--.",
    "h": "....", "i": "..", "j": ".---", "k": "-.-", "l": ".-..", "m": "--", "n": "-.",
    "o": "---", "p": ".--.", "q": "--.-", "r": ".-.", "s": "...", "t": "-", "u": "..-",
    "v": "...-", "w": ".--", "x": "-..-", "y": "-.--", "z": "--..", "0": "-----", "1": ".----",
    "2": "..---", "3": "...--", "4": "....-", "5": ".....", "6": "-....", "7": "--...",
    "8": "---..", "9": "----.",
}  # fmt: skip
# Grade 1 English Braille letters as Unicode cells (the Unicode chart of block U+2800).
_BRAILLE = str.maketrans(
    dict(zip(string.ascii_lowercase, "⠁⠃⠉⠙⠑⠋⠛⠓⠊⠚⠅⠇⠍⠝⠕⠏⠟⠗⠎⠞⠥⠧⠺⠭⠽⠵", strict=True)) | {" ": "⠀"}
)


_NATO_CODE = (
    "Alfa", "Bravo", "Charlie", "Delta", "Echo", "Foxtrot", "Golf", "Hotel", "India", "Juliett",
    "Kilo", "Lima", "Mike", "November", "Oscar", "Papa", "Quebec", "Romeo", "Sierra", "Tango",
    "Uniform", "Victor", "Whiskey", "Xray", "Yankee", "Zulu",
)  # fmt: skip
_NATO = {word[0]: word for word in _NATO_CODE}


def _nato(text: str) -> str:
    """PyRIT's NatoConverter: each ASCII letter a code word, other characters kept, code words
    apart by a space, words by `` <space> ``."""
    return " <space> ".join(
        " ".join(_NATO.get(c.upper(), c) if c.isascii() else c for c in word)
        for word in text.split(" ")
    )


def _selectors(text: str) -> str:
    """PyRIT's VariationSelectorSmugglerConverter (its defaults): a smiley, then each UTF-8 byte
    as a variation selector (0-15: U+FE00-FE0F, 16-255: U+E0100-E01EF)."""
    return "\U0001f60a" + "".join(
        chr(0xFE00 + b if b < 16 else 0xE0100 + b - 16) for b in text.encode()
    )


def _invisible_bits(text: str) -> str:
    """PyRIT's SneakyBitsSmugglerConverter: each bit of the UTF-8 bytes an invisible operator,
    U+2062 for 0 and U+2064 for 1."""
    return "".join(
        "\u2064" if byte >> bit & 1 else "\u2062"
        for byte in text.encode()
        for bit in range(7, -1, -1)
    )


def _emoji_letters(text: str) -> str:
    """PyRIT's EmojiConverter: each letter drawn as one of three emoji (negative circled,
    negative squared with its emoji selector, squared), here in turn rather than at random."""
    out = []
    for i, c in enumerate(text):
        n = ord(c.lower()) - ord("a")
        if 0 <= n < 26:
            c = (chr(0x1F150 + n), chr(0x1F170 + n) + "\ufe0f", chr(0x1F130 + n))[i % 3]
        out.append(c)
    return "".join(out)


def _morse(text: str) -> str:
    return " / ".join(
        " ".join(_MORSE[c] for c in word if c in _MORSE) for word in text.lower().split()
    )


TRANSFORMS: dict[str, Callable[[str], str]] = {
    **CORPUS_TRANSFORMS,
    "caesar-3": _caesar(3),  # PyRIT CaesarConverter (Caesar's own shift)
    "caesar-19": _caesar(19),  # the same converter, another offset
    "atbash": lambda t: t.translate(_ATBASH),  # PyRIT AtbashConverter
    "morse": _morse,  # PyRIT MorseConverter
    "braille": lambda t: t.lower().translate(_BRAILLE),  # grade 1 Braille: letters only
    "html-references": lambda t: "".join(f"&#{ord(c)};" for c in t),  # HTML numeric references
    "unicode-escapes": lambda t: "".join(f"\\u{ord(c):04x}" for c in t),  # JSON / Python escapes
    "quoted-printable": lambda t: "".join(f"={b:02X}" for b in t.encode()),  # RFC 2045, every byte
    "pipes": lambda t: "|".join(t),  # TakSec's I|g|n|o|r|e
    "one-per-line": lambda t: "\n".join(t),  # split across lines (issue 31's list)
    # Unicode's full-width forms (U+FF01-FF5E) of the ASCII characters
    "fullwidth": lambda t: "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in t),
    "nato": _nato,  # PyRIT NatoConverter
    # PyRIT BinAsciiConverter(encoding_func="quoted-printable"): word by word, joined by =20
    "quoted-printable-words": lambda t: "=20".join(
        binascii.b2a_qp(w.encode()).decode() for w in t.split()
    ),
    "unicode-tags": lambda t: "".join(
        chr(0xE0000 + ord(c)) for c in t
    ),  # PyRIT UnicodeSubstitution
    "variation-selectors": _selectors,  # PyRIT VariationSelectorSmugglerConverter
    "invisible-bits": _invisible_bits,  # PyRIT SneakyBitsSmugglerConverter
    "dashes": lambda t: " ".join("-".join(w) for w in t.split()),  # PyRIT StringJoinConverter
    "emoji-letters": _emoji_letters,  # PyRIT EmojiConverter
}
