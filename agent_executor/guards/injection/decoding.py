"""Texts hidden in base64 and hex blobs, decoded so the rules can read them too.

An instruction encoded as ``aWdub3JlIGFsbC...`` passes every phrase rule; decoded, it does not.
Only blobs of 16+ characters that decode to mostly readable UTF-8 count, and at most
``MAX_BLOBS`` candidates per text are tried, so decoy blobs cannot cost unbounded work.
"""

from __future__ import annotations

import base64
import binascii
import itertools
import re
from collections.abc import Callable, Iterable, Iterator

__all__ = ["MAX_BLOBS", "blobs"]

MAX_BLOBS = 32
"""Decoded candidates per text."""

_B64_RE = re.compile(r"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/_-]{16,}={0,2}")
_HEX_PREFIX_RE = re.compile(r"(?:\\x|0x|%)([0-9A-Fa-f]{2})")
_HEX_SPACED_RE = re.compile(
    r"(?<![0-9A-Fa-f])(?<![0-9A-Fa-f]{2}[ :,-])(?:[0-9A-Fa-f]{2}[ :,-]){7,}[0-9A-Fa-f]{2}"
    r"(?![0-9A-Fa-f])"
)
_HEX_RE = re.compile(r"(?<![0-9A-Fa-f])(?:[0-9A-Fa-f]{2}){8,}(?![0-9A-Fa-f])")
_HEX_SEPARATORS_RE = re.compile(r"[ :,-]")


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


def blobs(clean: str) -> Iterator[str]:
    """Readable texts hidden in base64 or hex blobs of ``clean``, at most ``MAX_BLOBS``."""
    hexed = _HEX_PREFIX_RE.sub(r"\1", clean)
    candidates: Iterable[tuple[str, Callable[[str], str | None]]] = itertools.chain(
        ((m.group(), _decode_base64) for m in _B64_RE.finditer(clean)),
        ((m.group(), _decode_hex) for m in _HEX_SPACED_RE.finditer(hexed)),
        ((m.group(), _decode_hex) for m in _HEX_RE.finditer(hexed)),
    )
    for blob, decode in itertools.islice(candidates, MAX_BLOBS):
        text = decode(blob)
        if text is not None:
            yield text
