"""The other readings of a text the learned layer scores: what an attacker's transform hides.

The rules already read leetspeak, spaced-out letters, Unicode tags, base64 and hex (see
:mod:`.normalisation` and :mod:`.decoding`). The learned layer reads words, so it needs the
same readings as text: each one here is normalised and scored like the message itself, and the
highest score wins. Every reading is produced only when a cheap sign calls for it (a leet
character inside a word, a run of single letters, a blob, text that is not made of words), so
ordinary text pays for a few regex scans and nothing more.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from .normalisation import clean, fold, leet_readings

__all__ = ["readings"]

_SINGLES_RE = re.compile(r"(?<!\w)\w(?:[\W_]{1,3}\w(?!\w)){5,}")
_SEPARATORS_RE = re.compile(r"[\W_]+")


def _despaced(norm: str, words: list[str] | None = None) -> list[str]:
    """``i g n o r e``, ``i-g-n-o-r-e`` or one letter per line, read as ``ignore``.

    The regex runs only when cheap counts allow it: six one-letter words, or a word of eleven
    characters or more (``i-g-n-o-r-e`` has no space); and, in a text without ``_`` (the only
    word character a separator can hold), six one-character words of its words view
    (``words``, when the caller has them), where each letter it joins is one.
    """
    if words is not None and "_" not in norm and list(map(len, words)).count(1) < 6:
        return []
    lengths = list(map(len, norm.split()))
    if lengths.count(1) < 6 and max(lengths, default=0) < 11:
        return []
    if not _SINGLES_RE.search(norm):
        return []
    joined = _SINGLES_RE.sub(lambda m: _SEPARATORS_RE.sub("", m.group()), norm)
    return [joined] if joined != norm else []


def readings(
    norm: str,
    decoded: Iterable[str],
    leet: list[str] | None = None,
    words: list[str] | None = None,
) -> list[str]:
    """Normalised readings of a text besides its normal form ``norm`` itself.

    ``decoded`` are the texts :func:`~.decoding.blobs` found in it, ``leet`` its leetspeak
    readings and ``words`` the words of its words view, when the rules made them already (they
    are not made twice).
    """
    out = leet_readings(norm) if leet is None else list(leet)
    out += _despaced(norm, words)
    out += [fold(clean(text)) for text in decoded]
    return out
