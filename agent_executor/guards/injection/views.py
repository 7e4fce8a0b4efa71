"""The other readings of a text the learned layer scores: what an attacker's transform hides.

The rules already read leetspeak, spaced-out letters, Unicode tags, base64 and hex (see
:mod:`.normalisation` and :mod:`.decoding`). The learned layer reads words, so it needs the
same readings as text: each one here is normalised and scored like the message itself, and the
highest score wins. Every reading is produced only when a cheap sign calls for it (a leet
character inside a word, a run of single letters, a blob, text that is not made of words), so
ordinary text pays for a few regex scans and nothing more.
"""

from __future__ import annotations

from collections.abc import Iterable

from .normalisation import clean, fold

__all__ = ["readings"]


def readings(
    decoded: Iterable[str], leet: list[str], spelled: Iterable[str | None] = ()
) -> list[str]:
    """Normalised readings of a text besides its normal form.

    ``decoded`` are the texts :func:`~.decoding.blobs` found in it, ``leet`` its leetspeak
    readings and ``spelled`` its letters spaced out, joined up (whole and word by word:
    :func:`~.normalisation.despaced`), as the rules made them (they are not made twice).
    """
    out = [*leet, *filter(None, spelled)]
    out += [fold(clean(text)) for text in decoded]
    return out
