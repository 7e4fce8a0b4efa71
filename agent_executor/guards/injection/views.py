"""The other readings of a text the learned layer scores: what an attacker's transform hides.

The rules read leetspeak, letters spelled out, smuggled text and every decoded encoding (see
:mod:`.normalisation` and :mod:`.decoding`). The learned layer reads words, so it scores the
same readings as text: the rules' are gathered here, the decoded ones normalised, each scored
like the message itself, and the highest score wins. Every reading is produced only when a
cheap sign calls for it (a leet character inside a word, a run of single letters, a blob, text
that is not made of words), so ordinary text pays for a few scans and nothing more.
"""

from __future__ import annotations

from collections.abc import Iterable

from .normalisation import clean, fold

__all__ = ["readings"]


def readings(
    decoded: Iterable[str], leet: list[str], spelled: Iterable[str | None] = ()
) -> list[str]:
    """Normalised readings of a text besides its normal form.

    ``decoded`` are the texts :func:`~.decoding.blobs` found in it and those invisible
    characters spelled (:func:`~.normalisation.smuggled`), ``leet`` its leetspeak
    readings and ``spelled`` its letters spaced out, joined up (whole and word by word:
    :func:`~.normalisation.despaced`), as the rules made them (they are not made twice).
    """
    out = [*leet, *filter(None, spelled)]
    out += [fold(clean(text)) for text in decoded]
    return out
